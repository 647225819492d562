# Conventional entry points. Everything installs itself: a Python virtualenv in
# .venv and the Go-built control-plane binaries in a cache outside the checkout.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: version image example-image helm kueue lock venv binaries mpi node node-packages node-binaries node-images operator-image lint typecheck test test-unit cluster-up cluster-down bench clean crd demo deploy-manifests docs

# pip itself and uv (a dev dependency) with pip; the rest with uv, which installs the
# same versions several times faster (about 10 s instead of 45 on a fresh clone).
$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip uv
	$(BIN)/uv pip install -q --python $(BIN)/python -e '.[dev]'
	touch $@

venv: $(BIN)/.installed

# The release's version: mpi_operator/__init__.py's __version__, the one place it is
# written (the package, the image tag, the Helm chart and --version share it); read
# with make's own functions, so that `make image` needs no other tool to know it.
VERSION := $(subst ",,$(patsubst __version__=%,%,$(filter __version__=%,$(subst __version__ = ,__version__=,$(file < mpi_operator/__init__.py)))))

version:
	@echo $(VERSION)

# The operator's image, with docker, podman or buildah (whichever is installed); with
# none of them, an OCI archive from debootstrap + umoci (root), and how to load it.
IMG ?= mpi-operator-python:$(VERSION)
image:
	hack/build-image.sh $(IMG)

# An example's own image (EXAMPLE: mpi4py-sgd, the default, from
# examples/v2beta1/mpi4py-sgd/Dockerfile; t9k, from examples/t9k/Dockerfile), the way
# `make image` builds the operator's: docker, podman or buildah, whichever is installed;
# with none, an OCI archive in dist/ from debootstrap + umoci (root), as the real node's.
EXAMPLE ?= mpi4py-sgd
EXAMPLE_DIR_mpi4py-sgd := examples/v2beta1/mpi4py-sgd
EXAMPLE_TAG_mpi4py-sgd := mpi4py-sgd
EXAMPLE_DIR_t9k := examples/t9k
EXAMPLE_TAG_t9k := t9k-pi
EXAMPLE_IMG ?= mpi-operator-python/$(EXAMPLE_TAG_$(EXAMPLE)):$(VERSION)
example-image:
	@[ -n "$(EXAMPLE_DIR_$(EXAMPLE))" ] || { echo "make example-image: EXAMPLE=$(EXAMPLE): no such example image (mpi4py-sgd or t9k)" >&2; exit 2; }
	BUILD_IMAGE_CMD="make example-image$(if $(filter-out mpi4py-sgd,$(EXAMPLE)), EXAMPLE=$(EXAMPLE))" \
	MPI_OPERATOR_EXAMPLE="$(EXAMPLE_TAG_$(EXAMPLE))" \
	MPI_OPERATOR_OCI_BUILDER="$${MPI_OPERATOR_EXAMPLE_OCI_BUILDER:-$(CURDIR)/hack/build-example-image.sh}" \
	  hack/build-image.sh $(EXAMPLE_IMG) $(EXAMPLE_DIR_$(EXAMPLE))

# Regenerates the lockfiles the image installs from (pinned, with hashes), from
# pyproject.toml's dependencies and build-system requirements.
UV_COMPILE = $(BIN)/uv pip compile --quiet --universal --python-version 3.11 --generate-hashes
lock: venv
	$(UV_COMPILE) --output-file requirements.lock pyproject.toml
	$(BIN)/python -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"], sep="\n")' \
	  | $(UV_COMPILE) --output-file requirements-build.lock -

# Builds kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, etcd,
# kwok and kwokctl from their Go modules, only when missing from the cache.
binaries:
	hack/build-binaries.sh

# Helm (helm.sh/helm/v3, pinned in hack/tools/helm) for the chart's tests and the in-cluster
# e2e, built from the Go module proxy into the cache next to the binaries, when missing.
helm:
	hack/build-helm.sh

# Kueue (sigs.k8s.io/kueue, pinned in hack/tools/kueue) for the Kueue suite
# (test/integration/kueue), built from the Go module proxy into the cache next to the
# binaries with its CRDs and webhook manifests, when missing.
kueue:
	hack/build-kueue.sh

# Open MPI for the test that compiles and runs the pi example (as root, when missing).
mpi:
	hack/install-mpi.sh

# The real node of the `real` cluster shape (make demo, the real-node e2e tests):
# containerd, runc, CNI plugins, debootstrap and umoci from Debian's packages (root);
# the kubelet, kube-proxy and CoreDNS from Go modules; the MPI, example, T9k init and
# pause images from debootstrap. Each only when missing, into the cache next to the binaries.
node-packages:
	hack/install-node-packages.sh

node-binaries:
	hack/build-node-binaries.sh

node-images: venv node-packages
	hack/build-node-images.sh

# The operator's image from the project's wheel on a debootstrap base, for the test that
# deploys deploy/v2beta1/mpi-operator.yaml on the real node (hack/build-operator-image.sh;
# only `make test` needs it).
operator-image: venv node-packages
	hack/build-operator-image.sh

node: node-packages node-binaries node-images

lint: venv
	$(BIN)/ruff check .

typecheck: venv
	$(BIN)/mypy mpi_operator devcluster

test-unit: venv
	$(BIN)/pytest test/unit

# Every build and test, the builds overlapped with the checks and the unit tests
# (hack/test.sh says how); the cluster suites run once the builds are done.
test:
	hack/test.sh

cluster-up: venv binaries
	@$(BIN)/python -m devcluster up

cluster-down: venv
	@$(BIN)/python -m devcluster down

# Regenerates deploy/v2beta1/mpi-operator.yaml (and the CRD copy kustomize
# reads) from crd/ and manifests/.
deploy-manifests: venv
	$(BIN)/python hack/generate_deploy.py

# Runs examples/v2beta1/pi/pi.yaml for real (containers on the real node) on a local
# cluster with the operator, prints the launcher's log, then stops everything it
# started. DEMO_ARGS=--kwok: the fast demo on KWOK's fake nodes, which needs no real node:
# neither root nor Debian's packages. MPI=openmpi (Open MPI 5, the default), openmpi4
# (Open MPI 4.1) or mpich: pi on that stack's image.
demo: venv binaries $(if $(findstring --kwok,$(DEMO_ARGS)),,node)
	@$(BIN)/python -m devcluster.demo $(strip $(if $(MPI),--mpi=$(MPI)) $(DEMO_ARGS))

# Regenerates crd/kubeflow.org_mpijobs.yaml from the models and a local kube-apiserver,
# and crd/t9k/ from the T9k models.
crd: venv binaries
	$(BIN)/python hack/generate_crd.py
	$(BIN)/python hack/generate_crd.py --t9k

# The documentation site (docs/, mkdocs.yml) into site/; --strict: a broken link or
# anchor, or a page left out of the nav, fails the build. test/unit/test_docs.py builds
# it too, so make test (and CI) does.
docs: venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

bench: venv binaries
	$(BIN)/python -m bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache site
