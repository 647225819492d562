"""`make example-image` builds the mpi4py-sgd example's image (the name sgd.yaml gives)
as `make image` builds the operator's: docker, podman or buildah, whichever is on PATH,
from the example's folder; with none, an OCI archive from the real node's recipe
(hack/build-example-image.sh), named and with the commands that load it. PATH holds only
the tools each case needs and stand-in builders that record their arguments (as in
test_make_image.py); no image is built here (the real node's is, by make node-images)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

import mpi_operator

ROOT = Path(__file__).resolve().parents[2]
SGD = ROOT / "examples" / "v2beta1" / "mpi4py-sgd"
IMAGE = f"mpi-operator-python/mpi4py-sgd:{mpi_operator.__version__}"
CONTEXT = "examples/v2beta1/mpi4py-sgd"


def _bin(tmp_path: Path, builders: list[str], tools: tuple[str, ...] = ()) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("make", "bash", *tools):
        found = str(Path(sys.executable).resolve()) if tool == "python3" else shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    for builder in builders:
        stub = bin_dir / builder
        stub.write_text(
            "#!/bin/sh\n"
            'if [ "$1" = info ]; then exit 0; fi\n'
            f'echo "{builder} $*" > "{tmp_path}/called"\n'
        )
        stub.chmod(0o755)
    return bin_dir


def _make(
    bin_dir: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "-s", "example-image", *args],
        cwd=ROOT,
        env={**os.environ, **(env or {}), "PATH": str(bin_dir)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_sgd_example_names_the_image_the_command_builds() -> None:
    (job,) = [d for d in yaml.safe_load_all((SGD / "sgd.yaml").read_text()) if d]
    images = {
        c["image"]
        for spec in job["spec"]["mpiReplicaSpecs"].values()
        for c in spec["template"]["spec"]["containers"]
    }
    assert images == {IMAGE}
    dockerfile = (SGD / "Dockerfile").read_text()
    assert "make example-image" in dockerfile
    assert f"docker build -t {IMAGE} {CONTEXT}" in dockerfile


@pytest.mark.parametrize(
    ("present", "expected"),
    [
        (["docker", "podman", "buildah"], f"docker build --tag {IMAGE} {CONTEXT}"),
        (["podman", "buildah"], f"podman build --tag {IMAGE} {CONTEXT}"),
        (["buildah"], f"buildah bud --tag {IMAGE} {CONTEXT}"),
    ],
)
def test_first_engine_found_builds_the_examples_folder(
    tmp_path: Path, present: list[str], expected: str
) -> None:
    """No GIT_COMMIT build argument: the example's Dockerfile declares none."""
    result = _make(_bin(tmp_path, present))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "called").read_text().strip() == expected


def test_no_engine_and_no_tools_is_one_clear_line(tmp_path: Path) -> None:
    result = _make(_bin(tmp_path, []))
    assert result.returncode != 0
    assert result.stderr.startswith("make example-image: no container engine found on PATH, ")
    assert not (tmp_path / "called").exists()


def _layout_archive(tmp_path: Path) -> Path:
    """An OCI layout as umoci leaves it: one manifest, tagged with a bare tag."""
    layout = tmp_path / "layout"
    (layout / "blobs/sha256").mkdir(parents=True)
    manifest = b'{"schemaVersion": 2}'
    import hashlib

    digest = hashlib.sha256(manifest).hexdigest()
    (layout / "blobs/sha256" / digest).write_bytes(manifest)
    index = {
        "schemaVersion": 2,
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": f"sha256:{digest}",
                "size": len(manifest),
                "annotations": {"org.opencontainers.image.ref.name": "mpi4py-sgd"},
            }
        ],
    }
    (layout / "index.json").write_text(json.dumps(index))
    (layout / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    archive = tmp_path / "mpi4py-sgd.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(layout, arcname=".")
    return archive


def test_no_engine_writes_the_named_archive(tmp_path: Path) -> None:
    bin_dir = _bin(tmp_path, ["umoci", "debootstrap"], tools=("python3", "tar", "sha256sum"))
    archive = _layout_archive(tmp_path)
    builder = tmp_path / "build-example-image.sh"
    builder.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = --print ]; then printf "%s\\n%s\\n" "{archive}" mpi4py-sgd; '
        f'else echo build >> "{tmp_path}/builds"; fi\n'
    )
    builder.chmod(0o755)
    out = tmp_path / "dist/mpi4py-sgd.oci.tar"
    env = {"MPI_OPERATOR_EXAMPLE_OCI_BUILDER": str(builder), "IMAGE_ARCHIVE": str(out)}
    result = _make(bin_dir, env=env)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "builds").read_text() == "build\n"
    assert result.stderr.startswith("make example-image: no container engine found on PATH: ")
    lines = [line.strip() for line in result.stdout.splitlines()]
    assert lines[0] == f"make example-image: {out}"
    assert lines[1].startswith(f"image docker.io/{IMAGE} (built as mpi4py-sgd), manifest ")
    assert f"ctr -n k8s.io images import {out}" in result.stdout
    assert "helm install" not in result.stdout  # the operator's image only
    with tarfile.open(out) as tar:
        member = tar.extractfile("index.json")
        assert member is not None
        (entry,) = json.load(member)["manifests"]
    assert entry["annotations"]["io.containerd.image.name"] == f"docker.io/{IMAGE}"


def test_the_engineless_builder_is_the_real_nodes_recipe() -> None:
    """hack/build-example-image.sh is hack/build-node-images.sh --example mpi4py-sgd: the
    archive it prints is that script's, tagged mpi4py-sgd, the tag the node imports."""
    from devcluster.nodeconfig import NODE_IMAGES, SGD_IMAGE

    printed = subprocess.run(
        [str(ROOT / "hack/build-example-image.sh"), "--print"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout.splitlines()
    assert printed[0].endswith("/mpi4py-sgd.tar") and printed[1] == "mpi4py-sgd"
    assert NODE_IMAGES["mpi4py-sgd"] == f"docker.io/{SGD_IMAGE}" == f"docker.io/{IMAGE}"
