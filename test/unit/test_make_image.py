"""`make image IMG=...` builds with docker, podman or buildah, whichever is on PATH; with
none, it writes an OCI archive from hack/build-operator-image.sh's image (debootstrap +
umoci), names the image in it and prints how to load it; and it says in one line when it
can do neither. PATH holds only the tools each case needs (and stand-in builders that
record their arguments), so the test does not depend on this machine's tools; no image
is built (the engine-less builder is a stand-in with the real one's interface, writing a
small OCI layout)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAKE_ERROR = re.compile(r"^make(\[\d+\])?: \*\*\*")


NO_ENGINE = "make image: no container engine found on PATH"
INSTALL_HINT = (
    "install docker, podman or buildah, or (as root) run hack/install-node-packages.sh "
    "for debootstrap and umoci"
)


def _path_with(
    tmp_path: Path, builders: list[str], daemon: bool = True, tools: tuple[str, ...] = ()
) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("make", "bash", *tools):
        # python3 may be a shim that needs the rest of PATH: the interpreter itself.
        found = str(Path(sys.executable).resolve()) if tool == "python3" else shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    for builder in builders:
        stub = bin_dir / builder
        # `docker info` answers as the daemon would; a build records its arguments.
        stub.write_text(
            "#!/bin/sh\n"
            f'if [ "$1" = info ]; then exit {0 if daemon else 1}; fi\n'
            f'echo "{builder} $*" > "{tmp_path}/called"\n'
        )
        stub.chmod(0o755)
    return bin_dir


def _make_image(
    bin_dir: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **(env or {}), "PATH": str(bin_dir)}
    return subprocess.run(
        ["make", "-s", "image", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_no_builder_is_one_clear_line(tmp_path: Path) -> None:
    result = _make_image(_path_with(tmp_path, []), "IMG=example.org/mpi-operator:1")
    assert result.returncode != 0
    # make's own "Error" line (make[1] when make test runs this test under make).
    lines = [line for line in result.stderr.splitlines() if not MAKE_ERROR.match(line)]
    assert lines == [
        f"{NO_ENGINE}, and no python3 tar sha256sum umoci debootstrap for the build "
        f"without one: {INSTALL_HINT}"
    ]
    assert not (tmp_path / "called").exists()


def test_docker_without_its_daemon_is_named(tmp_path: Path) -> None:
    result = _make_image(_path_with(tmp_path, ["docker"], daemon=False), "IMG=x:1")
    assert result.returncode != 0
    assert (
        f"{NO_ENGINE} (docker is installed but its daemon does not answer), and no python3 "
        f"tar sha256sum umoci debootstrap for the build without one: {INSTALL_HINT}"
    ) in result.stderr.splitlines()
    assert not (tmp_path / "called").exists()


def test_docker_without_its_daemon_falls_back_to_podman(tmp_path: Path) -> None:
    result = _make_image(_path_with(tmp_path, ["docker", "podman"], daemon=False), "IMG=x:1")
    assert result.returncode == 0, result.stderr
    assert (
        tmp_path / "called"
    ).read_text().strip() == "podman build --build-arg GIT_COMMIT= --tag x:1 ."


@pytest.mark.parametrize(
    ("present", "expected"),
    [
        (["podman"], "podman build --build-arg GIT_COMMIT= --tag example.org/mpi-operator:1 ."),
        (["buildah"], "buildah bud --build-arg GIT_COMMIT= --tag example.org/mpi-operator:1 ."),
        (
            ["docker", "podman", "buildah"],
            "docker build --build-arg GIT_COMMIT= --tag example.org/mpi-operator:1 .",
        ),
        (
            ["podman", "buildah"],
            "podman build --build-arg GIT_COMMIT= --tag example.org/mpi-operator:1 .",
        ),
    ],
)
def test_first_builder_found_builds(tmp_path: Path, present: list[str], expected: str) -> None:
    result = _make_image(_path_with(tmp_path, present), "IMG=example.org/mpi-operator:1")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "called").read_text().strip() == expected


def test_default_image_name_is_the_deployments(tmp_path: Path) -> None:
    result = _make_image(_path_with(tmp_path, ["podman"]))
    assert result.returncode == 0, result.stderr
    import mpi_operator

    tag = f"mpi-operator-python:{mpi_operator.__version__}"
    assert (tmp_path / "called").read_text().split() == [
        "podman",
        "build",
        "--build-arg",
        "GIT_COMMIT=",
        "--tag",
        tag,
        ".",
    ]
    assert f"image: {tag}" in (ROOT / "manifests/base/deployment.yaml").read_text()


# The engine-less path: the tools it needs, the stand-ins of the two that only the real
# builder runs, and a builder with hack/build-operator-image.sh's interface.
ARCHIVE_TOOLS = ("python3", "tar", "sha256sum")
LOADERS = (
    "kind load image-archive {out} [--name CLUSTER]",
    "minikube image load {out}",
    "ctr -n k8s.io images import {out}",
    "podman load -i {out}",
    "skopeo copy oci-archive:{out} docker://<registry>/{repo}:{tag}",
)


def _blob(layout: Path, data: bytes) -> dict[str, object]:
    digest = hashlib.sha256(data).hexdigest()
    (layout / "blobs/sha256").mkdir(parents=True, exist_ok=True)
    (layout / "blobs/sha256" / digest).write_bytes(data)
    return {"digest": f"sha256:{digest}", "size": len(data)}


def _umoci_like_archive(tmp_path: Path) -> tuple[Path, str]:
    """An OCI layout as umoci leaves it (one manifest, tagged with a bare tag), as a tar."""
    layout = tmp_path / "layout"
    layer = _blob(layout, b"a layer")
    config = _blob(layout, json.dumps({"architecture": "amd64", "os": "linux"}).encode())
    manifest = _blob(
        layout,
        json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **config},
                "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", **layer}],
            }
        ).encode(),
    )
    index = {
        "schemaVersion": 2,
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                **manifest,
                "annotations": {"org.opencontainers.image.ref.name": "0.1.0-abcdef"},
            }
        ],
    }
    (layout / "index.json").write_text(json.dumps(index))
    (layout / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    archive = tmp_path / "built/mpi-operator.tar"
    archive.parent.mkdir()
    with tarfile.open(archive, "w") as tar:
        tar.add(layout, arcname=".")
    return archive, str(manifest["digest"])


def _engineless(tmp_path: Path) -> tuple[Path, dict[str, str], str]:
    bin_dir = _path_with(tmp_path, ["umoci", "debootstrap"], tools=ARCHIVE_TOOLS)
    archive, digest = _umoci_like_archive(tmp_path)
    builder = tmp_path / "build-operator-image.sh"
    builder.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = --print ]; then\n'
        f'  printf "%s\\n%s\\n" "{archive}" localhost/mpi-operator-python:0.1.0-abcdef\n'
        "else\n"
        f'  echo build >> "{tmp_path}/builds"\n'
        "fi\n"
    )
    builder.chmod(0o755)
    return bin_dir, {"MPI_OPERATOR_OCI_BUILDER": str(builder)}, digest


def _index(archive: Path) -> dict[str, Any]:
    with tarfile.open(archive) as tar:
        member = tar.extractfile("index.json")
        assert member is not None
        index: dict[str, Any] = json.load(member)
    return index


def test_no_engine_writes_a_named_oci_archive_and_says_how_to_load_it(tmp_path: Path) -> None:
    import mpi_operator

    bin_dir, env, digest = _engineless(tmp_path)
    out = tmp_path / "dist/mpi-operator-python.oci.tar"
    result = _make_image(bin_dir, env={**env, "IMAGE_ARCHIVE": str(out)})
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "builds").read_text() == "build\n"
    assert result.stderr.startswith(f"{NO_ENGINE}: building an OCI archive with debootstrap")
    version = mpi_operator.__version__
    lines = [line.strip() for line in result.stdout.splitlines()]
    assert lines[0] == f"make image: {out}"
    assert lines[1] == (
        f"image docker.io/library/mpi-operator-python:{version} "
        f"(built as localhost/mpi-operator-python:0.1.0-abcdef), manifest {digest}"
    )
    for loader in LOADERS:
        command = loader.format(out=out, repo="mpi-operator-python", tag=version)
        assert any(line.startswith(command) for line in lines), command
    # Named as every loader reads it; the manifest (so the image's digest) unchanged.
    (entry,) = _index(out)["manifests"]
    full = f"docker.io/library/mpi-operator-python:{version}"
    assert entry["digest"] == digest
    assert entry["annotations"]["io.containerd.image.name"] == full
    assert entry["annotations"]["org.opencontainers.image.ref.name"] == full
    with tarfile.open(out) as new, tarfile.open(tmp_path / "built/mpi-operator.tar") as old:
        blobs = sorted(m.name.lstrip("./") for m in new.getmembers() if "blobs/sha256/" in m.name)
        assert blobs and all(m.mtime == 0 and m.uid == 0 for m in new.getmembers())
        for name in blobs:
            new_blob, old_blob = new.extractfile(name), old.extractfile(f"./{name}")
            assert new_blob and old_blob and new_blob.read() == old_blob.read()
    # Reproducible: the same inputs give the same archive, byte for byte.
    first = hashlib.sha256(out.read_bytes()).hexdigest()
    out.unlink()
    again = _make_image(bin_dir, env={**env, "IMAGE_ARCHIVE": str(out)})
    assert again.returncode == 0, again.stderr
    assert hashlib.sha256(out.read_bytes()).hexdigest() == first
    assert f"archive sha256:{first}" in again.stdout


def test_no_engine_archive_takes_img_as_its_name(tmp_path: Path) -> None:
    bin_dir, env, _ = _engineless(tmp_path)
    result = _make_image(bin_dir, "IMG=registry.example.org:5000/team/mpi:2.0.0", env=env)
    assert result.returncode == 0, result.stderr
    out = ROOT / "dist/mpi-2.0.0.oci.tar"
    try:
        assert f"make image: {out}" in result.stdout
        (entry,) = _index(out)["manifests"]
        assert (
            entry["annotations"]["io.containerd.image.name"]
            == "registry.example.org:5000/team/mpi:2.0.0"
        )
        assert (
            f"skopeo copy oci-archive:{out} docker://registry.example.org:5000/team/mpi:2.0.0"
            in result.stdout
        )
    finally:
        out.unlink(missing_ok=True)


@pytest.mark.parametrize(
    ("name", "full"),
    [
        ("mpi-operator-python:0.1.0", "docker.io/library/mpi-operator-python:0.1.0"),
        ("team/mpi", "docker.io/team/mpi:latest"),
        ("localhost/mpi:1", "localhost/mpi:1"),
        ("localhost:5000/mpi", "localhost:5000/mpi:latest"),
        ("ghcr.io/org/mpi:1.2.3", "ghcr.io/org/mpi:1.2.3"),
        ("ghcr.io/org/mpi@sha256:" + "0" * 64, "ghcr.io/org/mpi@sha256:" + "0" * 64),
    ],
)
def test_archive_names_are_full_references(name: str, full: str) -> None:
    sys.path.insert(0, str(ROOT / "hack"))
    try:
        import oci_archive
    finally:
        sys.path.remove(str(ROOT / "hack"))
    assert oci_archive.full_reference(name) == full
