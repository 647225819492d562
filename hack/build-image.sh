#!/usr/bin/env bash
# Builds the operator's image with the first usable container builder on PATH:
# docker (when its daemon answers), podman or buildah.
# Usage: hack/build-image.sh IMAGE [CONTEXT] (`make image IMG=...`).
# Exits 1 with one line when there is none.
set -euo pipefail

image="${1:?usage: hack/build-image.sh IMAGE [CONTEXT]}"
context="${2:-.}"
# The build context has no .git: the image's --version gets the commit this way.
commit="$(git -C "$context" rev-parse HEAD 2>/dev/null || true)"

if command -v docker >/dev/null 2>&1; then
    if docker info >/dev/null 2>&1; then
        exec docker build --build-arg "GIT_COMMIT=$commit" --tag "$image" "$context"
    fi
    no_daemon=" (docker is installed but its daemon does not answer)"
fi
if command -v podman >/dev/null 2>&1; then
    exec podman build --build-arg "GIT_COMMIT=$commit" --tag "$image" "$context"
fi
if command -v buildah >/dev/null 2>&1; then
    exec buildah bud --build-arg "GIT_COMMIT=$commit" --tag "$image" "$context"
fi
echo "make image: no container builder found on PATH${no_daemon:-}: install docker, podman or buildah" >&2
exit 1
