"""`make example-image` builds the mpi4py-sgd example's image (the name sgd.yaml gives),
and `make example-image EXAMPLE=t9k` the T9k example's (the name t9k/pi.yaml gives),
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
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

import mpi_operator

ROOT = Path(__file__).resolve().parents[2]
SGD = ROOT / "examples" / "v2beta1" / "mpi4py-sgd"
IMAGE = f"mpi-operator-python/mpi4py-sgd:{mpi_operator.__version__}"
CONTEXT = "examples/v2beta1/mpi4py-sgd"
T9K_IMAGE = f"mpi-operator-python/t9k-pi:{mpi_operator.__version__}"
T9K_CONTEXT = "examples/t9k"


@dataclass(frozen=True)
class Example:
    """One example image: what `make example-image` is given, what it builds, from where."""

    args: tuple[str, ...]
    image: str
    context: str
    tag: str  # the real node's tag, and the name the engineless build prints
    command: str  # how the messages name the command
    yaml: Path

    def __str__(self) -> str:
        return self.tag


SGD_EXAMPLE = Example((), IMAGE, CONTEXT, "mpi4py-sgd", "make example-image", SGD / "sgd.yaml")
T9K_EXAMPLE = Example(
    ("EXAMPLE=t9k",),
    T9K_IMAGE,
    T9K_CONTEXT,
    "t9k-pi",
    "make example-image EXAMPLE=t9k",
    ROOT / T9K_CONTEXT / "pi.yaml",
)
EXAMPLES = [SGD_EXAMPLE, T9K_EXAMPLE]


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


@pytest.mark.parametrize("example", EXAMPLES, ids=str)
def test_the_example_names_the_image_the_command_builds(example: Example) -> None:
    (job,) = [d for d in yaml.safe_load_all(example.yaml.read_text()) if d]
    specs = job["spec"].get("mpiReplicaSpecs") or {"Worker": job["spec"].get("worker")}
    images = {c["image"] for spec in specs.values() for c in spec["template"]["spec"]["containers"]}
    assert images == {example.image}
    dockerfile = (ROOT / example.context / "Dockerfile").read_text()
    assert f"#   {example.command}\n" in dockerfile
    assert f"docker build -t {example.image} {example.context}" in dockerfile


def test_the_t9k_dockerfiles_run_is_the_real_nodes_recipe() -> None:
    """The node's t9k-pi is mpioperator/mpi-pi:openmpi's tree (built as the public image
    is) with the Dockerfile's RUN run on it: the script holds that RUN verbatim."""
    dockerfile = (ROOT / T9K_CONTEXT / "Dockerfile").read_text()
    assert "\nFROM mpioperator/mpi-pi:openmpi\n" in dockerfile
    run = dockerfile.split("\nRUN ", 1)[1].rstrip("\n")
    script = subprocess.run(
        [
            "bash",
            "-c",
            f'source <(grep -A1 "^T9K_PI_RUN=" {ROOT}/hack/build-node-images.sh); '
            'printf %s "$T9K_PI_RUN"',
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    assert script == run


def test_an_unknown_example_is_one_clear_line(tmp_path: Path) -> None:
    result = _make(_bin(tmp_path, ["docker"]), "EXAMPLE=t9k-pi")
    assert result.returncode != 0
    assert result.stderr.splitlines()[0] == (
        "make example-image: EXAMPLE=t9k-pi: no such example image (mpi4py-sgd or t9k)"
    )
    assert not (tmp_path / "called").exists()


@pytest.mark.parametrize("example", EXAMPLES, ids=str)
@pytest.mark.parametrize(
    ("present", "expected"),
    [
        (["docker", "podman", "buildah"], "docker build --tag"),
        (["podman", "buildah"], "podman build --tag"),
        (["buildah"], "buildah bud --tag"),
    ],
)
def test_first_engine_found_builds_the_examples_folder(
    tmp_path: Path, present: list[str], expected: str, example: Example
) -> None:
    """No GIT_COMMIT build argument: the examples' Dockerfiles declare none."""
    result = _make(_bin(tmp_path, present), *example.args)
    assert result.returncode == 0, result.stderr
    called = (tmp_path / "called").read_text().strip()
    assert called == f"{expected} {example.image} {example.context}"


@pytest.mark.parametrize("example", EXAMPLES, ids=str)
def test_no_engine_and_no_tools_is_one_clear_line(tmp_path: Path, example: Example) -> None:
    result = _make(_bin(tmp_path, []), *example.args)
    assert result.returncode != 0
    assert result.stderr.startswith(f"{example.command}: no container engine found on PATH, ")
    assert not (tmp_path / "called").exists()


def _layout_archive(tmp_path: Path, tag: str) -> Path:
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
                "annotations": {"org.opencontainers.image.ref.name": tag},
            }
        ],
    }
    (layout / "index.json").write_text(json.dumps(index))
    (layout / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    archive = tmp_path / f"{tag}.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(layout, arcname=".")
    return archive


@pytest.mark.parametrize("example", EXAMPLES, ids=str)
def test_no_engine_writes_the_named_archive(tmp_path: Path, example: Example) -> None:
    """The builder is told which example (MPI_OPERATOR_EXAMPLE: the node's tag)."""
    bin_dir = _bin(tmp_path, ["umoci", "debootstrap"], tools=("python3", "tar", "sha256sum"))
    archive = _layout_archive(tmp_path, example.tag)
    builder = tmp_path / "build-example-image.sh"
    builder.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = --print ]; then printf "%s\\n%s\\n" "{archive}" "$MPI_OPERATOR_EXAMPLE"; '
        f'else echo "build $MPI_OPERATOR_EXAMPLE" >> "{tmp_path}/builds"; fi\n'
    )
    builder.chmod(0o755)
    out = tmp_path / f"dist/{example.tag}.oci.tar"
    env = {"MPI_OPERATOR_EXAMPLE_OCI_BUILDER": str(builder), "IMAGE_ARCHIVE": str(out)}
    result = _make(bin_dir, *example.args, env=env)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "builds").read_text() == f"build {example.tag}\n"
    assert result.stderr.startswith(f"{example.command}: no container engine found on PATH: ")
    lines = [line.strip() for line in result.stdout.splitlines()]
    assert lines[0] == f"{example.command}: {out}"
    assert lines[1].startswith(
        f"image docker.io/{example.image} (built as {example.tag}), manifest "
    )
    assert f"ctr -n k8s.io images import {out}" in result.stdout
    assert "helm install" not in result.stdout  # the operator's image only
    with tarfile.open(out) as tar:
        member = tar.extractfile("index.json")
        assert member is not None
        (entry,) = json.load(member)["manifests"]
    assert entry["annotations"]["io.containerd.image.name"] == f"docker.io/{example.image}"


@pytest.mark.parametrize("example", EXAMPLES, ids=str)
def test_the_engineless_builder_is_the_real_nodes_recipe(example: Example) -> None:
    """hack/build-example-image.sh is hack/build-node-images.sh --example <tag> (tag
    MPI_OPERATOR_EXAMPLE, default mpi4py-sgd): the archive it prints is that script's,
    tagged as the node's image of the same name."""
    from devcluster.nodeconfig import NODE_IMAGES, SGD_IMAGE, T9K_PI_IMAGE

    env = dict(os.environ)
    env.pop("MPI_OPERATOR_EXAMPLE", None)
    if example.args:
        env["MPI_OPERATOR_EXAMPLE"] = example.tag
    printed = subprocess.run(
        [str(ROOT / "hack/build-example-image.sh"), "--print"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
        env=env,
    ).stdout.splitlines()
    assert printed[0].endswith(f"/{example.tag}.tar") and printed[1] == example.tag
    assert NODE_IMAGES[example.tag] == f"docker.io/{example.image}"
    assert {SGD_IMAGE, T9K_PI_IMAGE} == {e.image for e in EXAMPLES}
