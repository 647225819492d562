"""Every example names an image that pulls as written (a public image of the reference's
examples, which `make node` also builds for the local real node as the reference's
Dockerfiles build it), the project's own image (``mpi-operator-python/...``, with the
Dockerfile that builds it next to the YAML and `make example-image` building it), or a
placeholder (``<registry>/...``) that the user must replace, with the Dockerfile that
builds it next to the YAML and the examples README saying so."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
# Published by the reference operator's project (Docker Hub).
PUBLIC = {
    "mpioperator/mpi-pi:openmpi",
    "mpioperator/mpi-pi:mpich",
    "mpioperator/mpi-pi:intel",
    "mpioperator/tensorflow-benchmarks:latest",
}
PLACEHOLDER = "<registry>/"
OWN = "mpi-operator-python/"


def _images(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "image" and isinstance(value, str):
                yield value
            else:
                yield from _images(value)
    elif isinstance(node, list):
        for value in node:
            yield from _images(value)


def _only_kueue_objects(path: Path) -> bool:
    """Kueue's queues and flavors (examples/kueue): no pod, no image."""
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    return all(str(d.get("apiVersion", "")).startswith("kueue.x-k8s.io/") for d in docs)


FILES = [p for p in sorted(EXAMPLES.rglob("*.yaml")) if not _only_kueue_objects(p)]


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_each_image_pulls_or_is_a_placeholder_with_its_dockerfile(path: Path) -> None:
    images = {i for doc in yaml.safe_load_all(path.read_text()) for i in _images(doc)}
    assert images
    readme = (EXAMPLES / "v2beta1" / "README.md").read_text()
    for image in images:
        if image in PUBLIC:
            continue
        if image.startswith(OWN):
            dockerfile = (path.parent / "Dockerfile").read_text()
            assert f"docker build -t {image} " in dockerfile
            assert "make example-image" in dockerfile
            assert f"`{image}`" in readme and "make example-image" in readme
            continue
        assert image.startswith(PLACEHOLDER), f"{image}: neither public nor a placeholder"
        name = image.removeprefix(PLACEHOLDER)
        dockerfile = (path.parent / "Dockerfile").read_text()
        assert f"docker build -t {image} " in dockerfile
        assert f"placeholder: `{image}`" in readme, name
        assert "replace" in path.read_text().splitlines()[0]


def test_examples_readme_says_where_make_demo_runs() -> None:
    readme = (EXAMPLES / "v2beta1" / "README.md").read_text()
    assert "`make demo` runs `pi/pi.yaml` on a local control plane with a real node" in readme
    assert "`make demo DEMO_ARGS=--kwok`" in readme


def test_examples_readme_says_which_image_each_row_ran() -> None:
    """The table's last column names, for each example file, the image it ran on
    locally, or says it did not run and why."""
    readme = (EXAMPLES / "v2beta1" / "README.md").read_text()
    rows = [line for line in readme.splitlines() if line.startswith("| `")]
    files = {
        str(p.relative_to(EXAMPLES / "v2beta1")) for p in (EXAMPLES / "v2beta1").rglob("*.yaml")
    }
    assert {row.split("`")[1] for row in rows} == files
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert len(cells) == 4, row
        ran = cells[3]
        assert ran.startswith("ran, on `") or ran.startswith("not run: "), row
        if ran.startswith("ran, on `"):
            image = ran.split("`")[1]
            assert f"`{image}`" in cells[2] or image in cells[2], row
