# The mpi-operator image: a wheel built in a throw-away stage, installed into a
# slim Python runtime that runs as an unprivileged user.
#   make image IMG=<registry>/mpi-operator-python:0.1.0    (docker, podman or buildah)
# Reproducible: every package comes from a lockfile with hashes (`make lock`
# regenerates them from pyproject.toml): requirements-build.lock for the build
# backend, requirements.lock for the operator's runtime dependencies; the wheel
# itself is installed with --no-deps. Pin the base image by digest with
# --build-arg PYTHON_IMAGE=python:3.11-slim@sha256:<digest>.
# The Deployment (deploy/v2beta1/mpi-operator.yaml) runs it with a read-only
# root filesystem; the process writes nothing to disk.
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS builder
WORKDIR /src
COPY requirements-build.lock ./
RUN pip install --no-cache-dir --require-hashes -r requirements-build.lock
COPY pyproject.toml setup.py README.md LICENSE ./
COPY mpi_operator ./mpi_operator
# The build context has no .git: the commit comes in as a build argument, and
# setup.py's build hook writes it into the wheel (mpi-operator --version shows it).
ARG GIT_COMMIT=""
ENV MPI_OPERATOR_GIT_COMMIT=$GIT_COMMIT
RUN pip wheel --no-cache-dir --no-deps --no-build-isolation --wheel-dir /wheels .

FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY requirements.lock /tmp/requirements.lock
COPY --from=builder /wheels /wheels
RUN pip install --no-cache-dir --require-hashes -r /tmp/requirements.lock \
 && pip install --no-cache-dir --no-deps /wheels/mpi_operator-*.whl \
 && rm -rf /wheels /tmp/requirements.lock \
 && groupadd --gid 65532 nonroot \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin nonroot
COPY LICENSE /usr/share/doc/mpi-operator/LICENSE
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["mpi-operator"]
