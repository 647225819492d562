#!/usr/bin/env bash
# The builder `make example-image` uses without a container engine (hack/build-image.sh's
# MPI_OPERATOR_OCI_BUILDER interface): builds the image of the example MPI_OPERATOR_EXAMPLE
# names (mpi4py-sgd, the default: examples/v2beta1/mpi4py-sgd's; t9k-pi: examples/t9k's)
# with debootstrap and umoci (root), as the real node's image of that name is built
# (hack/build-node-images.sh --example <name>, cached); with --print, prints the archive's
# path and the name it was built as (two lines).
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/build-node-images.sh" --example "${MPI_OPERATOR_EXAMPLE:-mpi4py-sgd}" "$@"
