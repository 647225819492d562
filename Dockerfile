# The mpi-operator image: a wheel built in a throw-away stage, installed into a
# slim Python runtime that runs as an unprivileged user.
#   docker build --build-arg GIT_COMMIT=$(git rev-parse HEAD) -t mpi-operator-python:0.1.0 .
# The Deployment (deploy/v2beta1/mpi-operator.yaml) runs it with a read-only
# root filesystem; the process writes nothing to disk.

FROM python:3.11-slim AS builder
WORKDIR /src
RUN pip install --no-cache-dir --upgrade pip build
COPY pyproject.toml setup.py README.md ./
COPY mpi_operator ./mpi_operator
# The build context has no .git: the commit comes in as a build argument, and
# setup.py's build hook writes it into the wheel (mpi-operator --version shows it).
ARG GIT_COMMIT=""
RUN MPI_OPERATOR_GIT_COMMIT="$GIT_COMMIT" python -m build --wheel --outdir /wheels . \
 && pip wheel --no-cache-dir --wheel-dir /wheels /wheels/mpi_operator-*.whl

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=builder /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links /wheels mpi-operator \
 && rm -rf /wheels \
 && groupadd --gid 65532 nonroot \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin nonroot
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["mpi-operator"]
