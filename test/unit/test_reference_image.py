"""hack/reference_image.py: the Go operator's binary as a named OCI archive, with no
container engine, for the migration test on the real node."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "hack" / "reference_image.py"


def _build(binary: Path, dest: Path) -> list[str]:
    out = subprocess.run(
        [sys.executable, SCRIPT, binary, dest, "mpioperator/mpi-operator:0.8.2"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split()


def _json(tar: tarfile.TarFile, name: str) -> Any:
    member = tar.extractfile(name)
    assert member is not None
    return json.load(member)


def test_archive_runs_the_binary_under_the_manifests_image_name(tmp_path: Path) -> None:
    binary = tmp_path / "mpi-operator"
    binary.write_bytes(b"\x7fELF not really")
    digest, name = _build(binary, tmp_path / "image.tar")
    assert name == "docker.io/mpioperator/mpi-operator:0.8.2"
    with tarfile.open(tmp_path / "image.tar") as tar:
        (entry,) = _json(tar, "index.json")["manifests"]
        assert entry["digest"] == digest
        assert entry["annotations"]["io.containerd.image.name"] == name
        manifest = _json(tar, f"blobs/sha256/{digest.split(':')[1]}")
        config = _json(tar, f"blobs/sha256/{manifest['config']['digest'].split(':')[1]}")
        assert config["config"]["Entrypoint"] == ["/opt/mpi-operator"]
        (layer,) = manifest["layers"]
        layer_file = tar.extractfile(f"blobs/sha256/{layer['digest'].split(':')[1]}")
        assert layer_file is not None
        with tarfile.open(fileobj=layer_file) as rootfs:
            exe = rootfs.getmember("opt/mpi-operator")
            assert exe.mode == 0o755
            extracted = rootfs.extractfile(exe)
            assert extracted is not None and extracted.read() == binary.read_bytes()


def test_same_binary_same_archive(tmp_path: Path) -> None:
    binary = tmp_path / "mpi-operator"
    binary.write_bytes(b"same")
    _build(binary, tmp_path / "one.tar")
    binary.touch()
    _build(binary, tmp_path / "two.tar")
    assert (tmp_path / "one.tar").read_bytes() == (tmp_path / "two.tar").read_bytes()
