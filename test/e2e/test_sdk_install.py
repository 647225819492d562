"""The SDK installs and imports alone: ``pip install ./sdk`` in a clean virtualenv
brings pydantic, PyYAML and kubernetes (and theirs), none of the operator's runtime,
and ``mpi_operator.sdk`` imports there. Needs the package index (as ``make test``'s
own install does)."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OPERATOR_RUNTIME = {
    "kubernetes-asyncio",
    "prometheus-client",
    "structlog",
    "orjson",
    "cryptography",
}
SDK_DEPENDENCIES = {"pydantic", "pyyaml", "kubernetes"}

IMPORT_CHECK = """
import json, sys
import mpi_operator.sdk
from mpi_operator.sdk import MPIJobClient, T9kMPIJobClient, v2beta1
from mpi_operator.sdk.aio import AsyncMPIJobClient
job = v2beta1.MPIJob.from_dict({"metadata": {"name": "pi"}})
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


def _normalised(name: str) -> str:
    return name.lower().replace("_", "-")


def test_sdk_wheel_holds_the_models_and_the_client_only(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "-w",
            str(tmp_path),
            str(ROOT / "sdk"),
        ],
        check=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("mpi_operator_sdk-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    packages = {n.rsplit("/", 1)[0] for n in names if n.endswith(".py")}
    assert packages == {
        "mpi_operator",
        "mpi_operator/api",
        "mpi_operator/api/crdgen",
        "mpi_operator/api/t9k",
        "mpi_operator/api/v2beta1",
        "mpi_operator/sdk",
    }
    assert "mpi_operator/py.typed" in names
    assert not [n for n in names if "__pycache__" in n]


@pytest.fixture(scope="module")
def sdk_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clean virtualenv with only ``pip install ./sdk`` in it, built once for the
    module: neither test below installs anything more into it."""
    env_dir = tmp_path_factory.mktemp("sdk") / "venv"
    venv.create(env_dir, with_pip=True)
    python = str(env_dir / "bin" / "python")
    subprocess.run(
        [python, "-m", "pip", "install", "-q", str(ROOT / "sdk")], check=True, timeout=540
    )
    return env_dir


def test_sdk_installs_and_imports_without_the_operator_runtime(
    tmp_path: Path, sdk_venv: Path
) -> None:
    env_dir = sdk_venv
    python = str(env_dir / "bin" / "python")
    listed = subprocess.run(
        [python, "-m", "pip", "list", "--format=json"], check=True, capture_output=True, text=True
    )
    installed = {_normalised(p["name"]) for p in json.loads(listed.stdout)}
    assert installed >= SDK_DEPENDENCIES
    assert not installed & OPERATOR_RUNTIME, installed & OPERATOR_RUNTIME
    assert "mpi-operator" not in installed
    # Run from elsewhere, so the checkout's mpi_operator is not on the path.
    out = subprocess.run(
        [python, "-c", IMPORT_CHECK], check=True, capture_output=True, text=True, cwd=tmp_path
    )
    imported = set(json.loads(out.stdout))
    assert {"mpi_operator", "kubernetes", "pydantic", "yaml"} <= imported
    assert not imported & {"kubernetes_asyncio", "prometheus_client", "structlog", "orjson"}
    located = subprocess.run(
        [python, "-c", "import mpi_operator; print(mpi_operator.__file__)"],
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert located.stdout.startswith(str(env_dir))


USER_CODE_OK = """
from mpi_operator.sdk import MPIJobClient, SDKError, v2beta1

spec = v2beta1.MPIJobSpec(slots_per_worker=2)
slots: int | None = spec.slots_per_worker
policy: v2beta1.CleanPodPolicy | None = v2beta1.RunPolicy().clean_pod_policy
def run(client: MPIJobClient) -> str:
    try:
        return client.get("pi").name
    except SDKError as e:
        return str(e)
"""
USER_CODE_WRONG = """
from mpi_operator.sdk import v2beta1

slots: str = v2beta1.MPIJobSpec().slots_per_worker
"""


def test_mypy_checks_the_users_code_against_the_installed_sdk(
    tmp_path: Path, sdk_venv: Path
) -> None:
    """The wheel ships py.typed: mypy, pointed at a virtualenv where only the SDK is
    installed, reads its types (a wrong one is an error, not an Any)."""
    python = str(sdk_venv / "bin" / "python")
    # A cache of this test's own, fresh, shared by its two runs: the second reads the
    # SDK's (and pydantic's) analysis from the first instead of redoing it.
    cache = tmp_path / "mypy-cache"
    results = {}
    for name, code in (("ok", USER_CODE_OK), ("wrong", USER_CODE_WRONG)):
        (tmp_path / f"{name}.py").write_text(code)
        results[name] = subprocess.run(
            [
                sys.executable,
                "-m",
                "mypy",
                "--strict",
                "--cache-dir",
                str(cache),
                "--python-executable",
                python,
                f"{name}.py",
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,  # the checkout's mpi_operator is not on the path
            timeout=300,
        )
    assert results["ok"].returncode == 0, results["ok"].stdout
    wrong = results["wrong"].stdout
    assert results["wrong"].returncode == 1, wrong
    assert 'Incompatible types in assignment (expression has type "int | None"' in wrong
