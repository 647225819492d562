#!/usr/bin/env python3
"""Names the image in an OCI archive so that every loader finds it by that name.

``hack/build-operator-image.sh`` writes an OCI image layout (a tar) whose one manifest is
tagged ``<version>-<wheel hash>`` only; ``ctr images import --base-name`` is needed to give it
a repository. This copies the layout into a new archive whose ``index.json`` names the
manifest with the full reference (``docker.io/library/mpi-operator-python:0.1.0``) in both
annotations loaders read: ``io.containerd.image.name`` (containerd's ``ctr images import``,
``kind load image-archive``, ``minikube image load``, ``docker load``) and
``org.opencontainers.image.ref.name`` (``podman load``, ``skopeo copy oci-archive:``).

The blobs are copied byte for byte, so the image's manifest digest is the source's; the
archive itself is reproducible too: members sorted by name, owner 0, mtime 0, fixed modes.

Usage: ``python3 hack/oci_archive.py SOURCE.tar DEST.tar NAME[:TAG]``; prints the manifest
digest and the full name (two lines). Standard library only (``make image`` may run it
without the project's venv).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tarfile
from pathlib import Path

CONTAINERD_NAME = "io.containerd.image.name"
OCI_REF_NAME = "org.opencontainers.image.ref.name"
INDEX = "index.json"


def full_reference(name: str) -> str:
    """``name`` as a container runtime resolves it: Docker Hub's domain (and its
    ``library/`` namespace for one-component names) when ``name`` names no registry,
    and ``:latest`` when it has neither a tag nor a digest."""
    first, slash, _ = name.partition("/")
    if not slash or not ("." in first or ":" in first or first == "localhost"):
        name = f"docker.io/{name}" if slash else f"docker.io/library/{name}"
    last = name.rsplit("/", 1)[-1]
    if ":" not in last and "@" not in last:
        name += ":latest"
    return name


def tar_member(name: str, size: int, directory: bool = False) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = 0 if directory else size
    info.type = tarfile.DIRTYPE if directory else tarfile.REGTYPE
    info.mode = 0o755 if directory else 0o644
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def rename(source: Path, dest: Path, name: str) -> str:
    """Writes ``dest`` from ``source`` with its one manifest named ``name``; returns the
    manifest's digest."""
    ref = full_reference(name)
    with tarfile.open(source) as src:
        files = {
            os.path.normpath(m.name): m
            for m in src.getmembers()
            if m.isfile() and os.path.normpath(m.name) != "."
        }
        index_member = files.get(INDEX)
        if index_member is None:
            raise SystemExit(f"oci_archive: {source} is not an OCI image layout (no {INDEX})")
        index_file = src.extractfile(index_member)
        assert index_file is not None
        index = json.load(index_file)
        manifests = index.get("manifests") or []
        if len(manifests) != 1:
            raise SystemExit(
                f"oci_archive: {source} holds {len(manifests)} manifests; expected exactly one"
            )
        manifests[0]["annotations"] = {
            **(manifests[0].get("annotations") or {}),
            CONTAINERD_NAME: ref,
            OCI_REF_NAME: ref,
        }
        new_index = json.dumps(index, sort_keys=True, separators=(",", ":")).encode()
        dest.parent.mkdir(parents=True, exist_ok=True)
        partial = dest.with_name(dest.name + ".partial")
        with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as out:
            dirs = {str(d) for p in files for d in Path(p).parents} - {"."}
            entries = sorted([(d, True) for d in dirs] + [(p, False) for p in files])
            for path, is_dir in entries:
                if is_dir:
                    out.addfile(tar_member(path, 0, directory=True))
                elif path == INDEX:
                    out.addfile(tar_member(path, len(new_index)), io.BytesIO(new_index))
                else:
                    out.addfile(tar_member(path, files[path].size), src.extractfile(files[path]))
        partial.replace(dest)
    return str(manifests[0]["digest"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("dest", type=Path)
    parser.add_argument("name", help="the image's name, e.g. mpi-operator-python:0.1.0")
    args = parser.parse_args(argv)
    print(rename(args.source, args.dest, args.name))
    print(full_reference(args.name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
