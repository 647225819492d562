#!/usr/bin/env python3
"""An image of the reference Go operator without a container engine: its static binary
(``hack/install-reference-operator.sh``, built from the Go module proxy) in one layer at
``/opt/mpi-operator``, the entrypoint its own Dockerfile gives it, written as an OCI
archive named as its manifests name the image (``mpioperator/mpi-operator:<version>``).

With that name in the node's containerd, the reference's unmodified manifests
(``imagePullPolicy`` unset, a tag other than ``latest``: IfNotPresent) start it without
a pull. Its Dockerfile's base (distroless) adds CA certificates, tzdata and
``/etc/passwd``; the operator needs none of them in a cluster (the in-cluster config
reads the ServiceAccount's CA; it runs as root, uid 0, as there).

Reproducible: fixed mtimes, owners and modes, members sorted; the same binary gives the
same manifest digest. Standard library only.

Usage: ``python3 hack/reference_image.py BINARY DEST.tar NAME:TAG``; prints the manifest
digest and the full name (two lines).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import platform
import sys
import tarfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from oci_archive import CONTAINERD_NAME, OCI_REF_NAME, full_reference, tar_member

ENTRYPOINT = "/opt/mpi-operator"
ARCH = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"


def _json(obj: object) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def _descriptor(media_type: str, blob: bytes) -> dict[str, object]:
    return {
        "mediaType": media_type,
        "digest": f"sha256:{hashlib.sha256(blob).hexdigest()}",
        "size": len(blob),
    }


def _layer(binary: Path) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        tar.addfile(tar_member("opt", 0, directory=True))
        data = binary.read_bytes()
        member = tar_member(ENTRYPOINT.lstrip("/"), len(data))
        member.mode = 0o755
        tar.addfile(member, io.BytesIO(data))
        tmp = tar_member("tmp", 0, directory=True)
        tmp.mode = 0o1777
        tar.addfile(tmp)
    return out.getvalue()


def build(binary: Path, dest: Path, name: str) -> str:
    """Writes ``dest``; returns the manifest's digest."""
    layer = _layer(binary)
    layer_desc = _descriptor("application/vnd.oci.image.layer.v1.tar", layer)
    config = _json(
        {
            "architecture": ARCH,
            "os": "linux",
            "config": {"Entrypoint": [ENTRYPOINT], "Cmd": ["--help"]},
            "rootfs": {"type": "layers", "diff_ids": [layer_desc["digest"]]},
        }
    )
    manifest = _json(
        {
            "schemaVersion": 2,
            "mediaType": MANIFEST_TYPE,
            "config": _descriptor("application/vnd.oci.image.config.v1+json", config),
            "layers": [layer_desc],
        }
    )
    ref = full_reference(name)
    manifest_desc = {
        **_descriptor(MANIFEST_TYPE, manifest),
        "annotations": {CONTAINERD_NAME: ref, OCI_REF_NAME: ref},
    }
    files = {
        "oci-layout": _json({"imageLayoutVersion": "1.0.0"}),
        "index.json": _json({"schemaVersion": 2, "manifests": [manifest_desc]}),
    }
    for blob in (layer, config, manifest):
        files[f"blobs/sha256/{hashlib.sha256(blob).hexdigest()}"] = blob
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(dest.name + ".partial")
    with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as out:
        for directory in ("blobs", "blobs/sha256"):
            out.addfile(tar_member(directory, 0, directory=True))
        for path in sorted(files):
            out.addfile(tar_member(path, len(files[path])), io.BytesIO(files[path]))
    partial.replace(dest)
    return str(manifest_desc["digest"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binary", type=Path)
    parser.add_argument("dest", type=Path)
    parser.add_argument("name", help="the image's name, e.g. mpioperator/mpi-operator:0.8.2")
    args = parser.parse_args(argv)
    print(build(args.binary, args.dest, args.name))
    print(full_reference(args.name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
