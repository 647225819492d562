#!/usr/bin/env bash
# Builds the operator's image (`make image IMG=...`):
#   with the first usable container engine on PATH: docker (when its daemon answers),
#   podman or buildah, from the Dockerfile; or
#   with none of them, as an OCI archive: hack/build-operator-image.sh's debootstrap +
#   umoci image (root; pinned and reproducible, cached), named IMAGE by
#   hack/oci_archive.py and written to dist/, with the commands that load it.
# Usage: hack/build-image.sh IMAGE [CONTEXT]
# Exits 1 with one line when it can do neither.
# `make example-image [EXAMPLE=t9k]` builds an example's image the same way: CONTEXT the
# example's folder, MPI_OPERATOR_OCI_BUILDER hack/build-example-image.sh, and BUILD_IMAGE_CMD
# (how the messages name the command; default: make image). GIT_COMMIT is passed to a
# Dockerfile that declares it (the operator's) only.
set -euo pipefail

image="${1:?usage: hack/build-image.sh IMAGE [CONTEXT]}"
context="${2:-.}"
here="${BASH_SOURCE[0]%/*}"; [[ "$here" != "${BASH_SOURCE[0]}" ]] || here=. # no dirname needed
ROOT="$(cd "$here/.." && pwd)"
# The build context has no .git: the image's --version gets the commit this way.
commit="$(git -C "$context" rev-parse HEAD 2>/dev/null || true)"
cmd="${BUILD_IMAGE_CMD:-make image}"
build_args=()
dockerfile="$(<"$context/Dockerfile")" 2>/dev/null || dockerfile=""
if [[ $'\n'"$dockerfile" == *$'\nARG GIT_COMMIT'* ]]; then
    build_args=(--build-arg "GIT_COMMIT=$commit")
fi

if command -v docker >/dev/null 2>&1; then
    if docker info >/dev/null 2>&1; then
        exec docker build "${build_args[@]}" --tag "$image" "$context"
    fi
    no_daemon=" (docker is installed but its daemon does not answer)"
fi
if command -v podman >/dev/null 2>&1; then
    exec podman build "${build_args[@]}" --tag "$image" "$context"
fi
if command -v buildah >/dev/null 2>&1; then
    exec buildah bud "${build_args[@]}" --tag "$image" "$context"
fi

# No engine: the OCI archive. BUILDER is replaceable for the tests (same interface).
builder="${MPI_OPERATOR_OCI_BUILDER:-$ROOT/hack/build-operator-image.sh}"
missing=()
for tool in python3 tar sha256sum umoci debootstrap; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [[ ${#missing[@]} -gt 0 ]]; then
    echo "$cmd: no container engine found on PATH${no_daemon:-}, and no ${missing[*]} for the build without one: install docker, podman or buildah, or (as root) run hack/install-node-packages.sh for debootstrap and umoci" >&2
    exit 1
fi
echo "$cmd: no container engine found on PATH${no_daemon:-}: building an OCI archive with debootstrap and umoci ($builder; cold: minutes, then seconds)" >&2
"$builder"
printed="$("$builder" --print)"
built="${printed%%$'\n'*}"; built_name="${printed#*$'\n'}"
tag="${image##*/}"
if [[ "$tag" == *:* ]]; then tag="${tag##*:}"; else tag=latest; fi
repo="${image%:"$tag"}"
out="${IMAGE_ARCHIVE:-$ROOT/dist/${repo##*/}-$tag.oci.tar}"
printed="$(python3 "$ROOT/hack/oci_archive.py" "$built" "$out" "$image")"
digest="${printed%%$'\n'*}"; name="${printed#*$'\n'}"
read -r sum _ < <(sha256sum "$out")
first="${image%%/*}"
if [[ "$image" == */* && ( "$first" == *.* || "$first" == *:* || "$first" == localhost ) ]]; then
    pushed="$repo" # IMG names its registry
else
    pushed="<registry>/$repo"
fi
while IFS= read -r line; do printf '%s\n' "$line"; done <<EOF
$cmd: $out
  image $name (built as $built_name), manifest $digest
  archive sha256:$sum
Load it into a cluster's nodes with one of:
  kind load image-archive $out [--name CLUSTER]
  minikube image load $out
  ctr -n k8s.io images import $out          (on each containerd node, as root)
  podman load -i $out
  docker load -i $out                        (Docker 25 or later)
or push it to a registry the nodes pull from:
  skopeo copy oci-archive:$out docker://$pushed:$tag
EOF
if [[ "$cmd" == "make image" ]]; then
    echo "then install with that image (docs/install.md), e.g. helm install ... --set image.repository=$pushed"
fi
