"""The operator declares exactly the packages it imports, and requirements.lock (what the
image installs, with hashes) pins exactly those and what they need.

`pip install .` then pulls in nothing the operator does not import: the synchronous
``kubernetes`` client is only in the ``sdk`` extra (and ``dev``)."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
LOCK = ROOT / "requirements.lock"
BUILD_LOCK = ROOT / "requirements-build.lock"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^ ;\\]+)")


def _runtime() -> dict[str, Requirement]:
    reqs = [Requirement(r) for r in PROJECT["project"]["dependencies"]]
    return {canonicalize_name(r.name): r for r in reqs}


def _imported_top_levels(package: str = "mpi_operator", skip: str = "sdk") -> set[str]:
    """Third-party top-level modules imported under ``package`` (without ``skip``: the
    SDK, whose dependencies are the ``sdk`` extra)."""
    names: set[str] = set()
    base = ROOT / package
    for path in base.rglob("*.py"):
        if skip and path.relative_to(base).parts[0] == skip:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n != "mpi_operator"}


def _parse_lock(path: Path) -> dict[str, tuple[str, list[str], set[str]]]:
    """name -> (version, hashes, the packages it is required by)."""
    out: dict[str, tuple[str, list[str], set[str]]] = {}
    current = ""
    in_via = False
    for line in path.read_text().splitlines():
        match = PIN.match(line)
        if match:
            current = canonicalize_name(match[1])
            out[current] = (match[2], [], set())
            in_via = False
            continue
        stripped = line.strip()
        if not current or not stripped:
            continue
        if stripped.startswith("--hash=sha256:"):
            out[current][1].append(stripped.split()[0])
        elif stripped.startswith("# via"):
            rest = stripped.removeprefix("# via").strip()
            in_via = not rest
            if rest:
                out[current][2].add(rest)
        elif in_via and stripped.startswith("#   "):
            out[current][2].add(stripped.removeprefix("#").strip())
    return out


def test_runtime_dependencies_are_exactly_what_the_operator_imports() -> None:
    providers = importlib.metadata.packages_distributions()
    imported = {
        canonicalize_name(dist)
        for module in _imported_top_levels()
        for dist in providers.get(module, [f"<no distribution provides {module}>"])
    }
    assert imported == set(_runtime()), "declare exactly what mpi_operator/ imports"


def test_the_sdk_imports_only_the_runtime_and_its_extra() -> None:
    providers = importlib.metadata.packages_distributions()
    extra = {
        canonicalize_name(Requirement(r).name)
        for r in PROJECT["project"]["optional-dependencies"]["sdk"]
    }
    imported = {
        canonicalize_name(dist)
        for module in _imported_top_levels("mpi_operator/sdk", skip="")
        for dist in providers.get(module, [f"<no distribution provides {module}>"])
    }
    assert imported <= set(_runtime()) | extra


def test_the_sync_kubernetes_client_is_only_an_extra() -> None:
    assert "kubernetes" not in _runtime()
    extras = PROJECT["project"]["optional-dependencies"]
    for extra in ("sdk", "dev"):
        names = {canonicalize_name(Requirement(r).name) for r in extras[extra]}
        assert "kubernetes" in names, extra


def test_lockfile_is_in_sync_with_pyproject() -> None:
    locked = _parse_lock(LOCK)
    direct = {
        name for name, (_, _, via) in locked.items() if "mpi-operator (pyproject.toml)" in via
    }
    assert direct == set(_runtime()), "run `make lock` and commit requirements.lock"
    for name, req in _runtime().items():
        version = locked[name][0]
        assert req.specifier.contains(version, prereleases=True), f"{name}=={version} vs {req}"
    for name, (version, hashes, via) in locked.items():
        assert hashes, f"{name}=={version} has no hash"
        assert via, f"{name} is locked but required by nothing"
        assert via <= set(locked) | {"mpi-operator (pyproject.toml)"}, (name, via)


def test_build_lockfile_pins_the_build_system() -> None:
    locked = _parse_lock(BUILD_LOCK)
    for spec in PROJECT["build-system"]["requires"]:
        req = Requirement(spec)
        version, hashes, _ = locked[canonicalize_name(req.name)]
        assert req.specifier.contains(version), f"{req.name}=={version} vs {req}"
        assert hashes


def test_lockfiles_come_from_make_lock() -> None:
    """Both files carry the command of `make lock` in their header: regenerate, don't edit."""
    makefile = (ROOT / "Makefile").read_text()
    flags = re.search(r"^UV_COMPILE = \$\(BIN\)/uv pip compile --quiet (.*)$", makefile, re.M)
    assert flags
    for path in (LOCK, BUILD_LOCK):
        header = path.read_text().splitlines()[1]
        assert header.startswith(f"#    uv pip compile {flags[1]} --output-file {path.name}")
