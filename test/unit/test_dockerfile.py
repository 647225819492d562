"""Static checks of the operator's Dockerfile (no Docker engine is needed or used).

The image installs this package's wheel and runs its console script, so the
entry point must be one the package declares, as an unprivileged user.
"""

from __future__ import annotations

import fnmatch
import importlib.metadata
import json
import re
import shlex
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"


def _instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        word, _, rest = line.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def _stages(instructions: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    stages: list[list[tuple[str, str]]] = []
    for ins in instructions:
        if ins[0] == "FROM":
            stages.append([])
        if stages:  # an ARG before the first FROM belongs to no stage
            stages[-1].append(ins)
    return stages


def _entrypoint() -> list[str]:
    entries = [args for word, args in _instructions(DOCKERFILE) if word == "ENTRYPOINT"]
    assert entries, "no ENTRYPOINT"
    value = json.loads(entries[-1])  # exec form: no shell between signals and the process
    assert isinstance(value, list) and all(isinstance(v, str) for v in value)
    return value


def test_entrypoint_is_a_console_script_of_the_package() -> None:
    command = _entrypoint()[0]
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert command in declared
    installed = {
        ep.name: ep
        for ep in importlib.metadata.distribution("mpi-operator").entry_points
        if ep.group == "console_scripts"
    }
    assert command in installed
    assert installed[command].value == declared[command]
    assert callable(installed[command].load())


def test_runtime_stage_runs_as_a_non_root_user() -> None:
    runtime = _stages(_instructions(DOCKERFILE))[-1]
    users = [args for word, args in runtime if word == "USER"]
    assert users, "the runtime stage sets no USER (it would run as root)"
    user, _, group = users[-1].partition(":")
    assert user not in ("root", "0") and group not in ("root", "0")
    assert user.isdigit() and int(user) >= 1000, "a numeric uid lets runAsNonRoot verify it"
    # USER comes after the last RUN, so nothing later needs root.
    words = [word for word, _ in runtime]
    assert max(i for i, w in enumerate(words) if w == "USER") > max(
        (i for i, w in enumerate(words) if w == "RUN"), default=-1
    )


def _base_image() -> str:
    args = [a for w, a in _instructions(DOCKERFILE) if w == "ARG" and a.startswith("PYTHON_IMAGE=")]
    assert len(args) == 1
    return args[0].partition("=")[2]


def test_multi_stage_wheel_build_on_slim_python() -> None:
    stages = _stages(_instructions(DOCKERFILE))
    assert len(stages) == 2
    builder, runtime = stages
    assert _base_image() == "python:3.11-slim"
    assert builder[0][1].split()[0] == "${PYTHON_IMAGE}"
    alias = builder[0][1].split()[-1]
    assert runtime[0][1] == "${PYTHON_IMAGE}"
    assert any("pip wheel" in args for w, args in builder if w == "RUN")
    copies = [shlex.split(args) for w, args in runtime if w == "COPY"]
    assert any(f"--from={alias}" in c for c in copies), "the runtime copies the built wheels"
    # Of the source tree, only the lockfile and the licence reach the runtime stage.
    local = [c[-2] for c in copies if not any(a.startswith("--from=") for a in c)]
    assert sorted(local) == ["LICENSE", "requirements.lock"]


def _pip_installs(stage: list[tuple[str, str]]) -> list[list[str]]:
    commands = []
    for word, args in stage:
        if word != "RUN":
            continue
        for part in re.split(r"&&|;", args):
            argv = shlex.split(part)
            if argv[:2] in (["pip", "install"], ["pip", "wheel"]):
                commands.append(argv)
    return commands


def test_every_package_comes_from_a_lockfile_with_hashes() -> None:
    """Nothing is resolved from the index at build time: each pip install is
    --require-hashes from a lockfile, or the wheel itself with --no-deps."""
    builder, runtime = _stages(_instructions(DOCKERFILE))
    for stage, lock in ((builder, "requirements-build.lock"), (runtime, "/tmp/requirements.lock")):
        installs = _pip_installs(stage)
        assert installs
        for argv in installs:
            if "--require-hashes" in argv:
                assert argv[argv.index("-r") + 1] == lock
            else:
                assert "--no-deps" in argv, argv
    (wheel,) = [a for a in _pip_installs(runtime) if "--no-deps" in a]
    assert wheel[-1] == "/wheels/mpi_operator-*.whl"
    (build,) = [a for a in _pip_installs(builder) if a[1] == "wheel"]
    assert {"--no-deps", "--no-build-isolation"} <= set(build)


def test_license_is_in_the_image() -> None:
    runtime = _stages(_instructions(DOCKERFILE))[-1]
    copies = [shlex.split(args) for w, args in runtime if w == "COPY"]
    assert ["LICENSE", "/usr/share/doc/mpi-operator/LICENSE"] in copies


def test_build_context_holds_what_the_stages_copy() -> None:
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]

    def included(rel: str) -> bool:
        keep = True
        for pattern in patterns:
            negated = pattern.startswith("!")
            pat = pattern[1:] if negated else pattern
            if fnmatch.fnmatch(rel, pat.rstrip("/")) or fnmatch.fnmatch(rel, pat):
                keep = negated
        return keep

    for word, args in _instructions(DOCKERFILE):
        if word != "COPY" or "--from=" in args:
            continue
        sources = [a for a in shlex.split(args) if not a.startswith("--")][:-1]
        for src in sources:
            assert (ROOT / src).exists(), src
            assert included(src.rstrip("/")), f"{src} is excluded by .dockerignore"


@pytest.mark.parametrize("port", ["8080", "8081"])
def test_exposed_ports_match_the_deployment(port: str) -> None:
    exposed = " ".join(args for word, args in _instructions(DOCKERFILE) if word == "EXPOSE")
    assert port in exposed.split()
    deployment = (ROOT / "manifests/base/deployment.yaml").read_text()
    assert f"containerPort: {port}" in deployment
