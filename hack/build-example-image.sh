#!/usr/bin/env bash
# The builder `make example-image` uses without a container engine (hack/build-image.sh's
# MPI_OPERATOR_OCI_BUILDER interface): builds examples/v2beta1/mpi4py-sgd's image with
# debootstrap and umoci (root), as the real node's mpi4py-sgd image is built
# (hack/build-node-images.sh --example mpi4py-sgd, cached); with --print, prints the
# archive's path and the name it was built as (two lines).
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/build-node-images.sh" --example mpi4py-sgd "$@"
