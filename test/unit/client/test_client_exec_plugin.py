"""An exec credential plugin run for real, as a subprocess: its ExecCredential read,
its failures named without its output, and a plugin that never answers killed."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from kubernetes_asyncio.config.kube_config import ConfigNode

from mpi_operator.client.exec_plugin import run_exec_plugin
from mpi_operator.client.lean_imports import ExecProvider

API = "client.authentication.k8s.io/v1"


def plugin(tmp_path: Path, body: str) -> ExecProvider:
    script = tmp_path / "plugin.py"
    script.write_text(body)
    config = {"command": sys.executable, "args": [str(script)], "apiVersion": API}
    return ExecProvider(ConfigNode("exec", config))


async def test_the_status_of_the_credential_is_returned(tmp_path: Path) -> None:
    provider = plugin(
        tmp_path,
        "import json, os\n"
        "info = json.loads(os.environ['KUBERNETES_EXEC_INFO'])\n"
        "assert info['spec'] == {'interactive': False}, info\n"
        f"print(json.dumps({{'apiVersion': '{API}', 'kind': 'ExecCredential',"
        " 'status': {'token': 'secret-t0ken'}}))\n",
    )
    assert await run_exec_plugin(provider, 10) == {"token": "secret-t0ken"}


async def test_a_failing_plugin_is_named_with_its_stderr(tmp_path: Path) -> None:
    provider = plugin(tmp_path, "import sys\nsys.stderr.write('no such profile')\nsys.exit(3)\n")
    with pytest.raises(ValueError, match="plugin exited 3: no such profile"):
        await run_exec_plugin(provider, 10)


async def test_output_that_is_not_a_credential_is_not_quoted(tmp_path: Path) -> None:
    provider = plugin(tmp_path, "print('token=secret-t0ken')\n")
    with pytest.raises(ValueError) as raised:
        await run_exec_plugin(provider, 10)
    assert "secret-t0ken" not in str(raised.value)


async def test_a_plugin_that_never_answers_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    provider = plugin(
        tmp_path,
        f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(600)\n",
    )
    with pytest.raises(TimeoutError, match=r"no answer within 1\.5s"):
        await run_exec_plugin(provider, 1.5)
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped
