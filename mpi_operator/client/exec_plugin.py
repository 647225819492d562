"""A kubeconfig ``exec`` credential plugin, run once, within a time limit.

kubernetes_asyncio's ``ExecProvider`` reads the plugin's configuration (command, args,
env, apiVersion), and we run the process ourselves: its ``run()`` cannot be bounded,
since a cancelled call leaves the plugin's process running. Here a plugin that does not
answer within the limit is killed and reaped, and its stdout (the token) never goes
into an error message."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import orjson


async def run_exec_plugin(provider: Any, limit_s: float) -> dict[str, Any]:
    """The ExecCredential ``status`` the plugin printed (``provider``: an
    ``ExecProvider``); raises ValueError or TimeoutError naming what went wrong."""
    info = {
        "apiVersion": provider.api_version,
        "kind": "ExecCredential",
        # An operator never has a terminal to ask its user at.
        "spec": {"interactive": False},
    }
    env = {**provider.env, "KUBERNETES_EXEC_INFO": orjson.dumps(info).decode()}
    proc = await asyncio.create_subprocess_exec(
        *provider.args,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(limit_s):
            stdout, stderr = await proc.communicate()
    except BaseException as err:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await asyncio.shield(proc.wait())
        if isinstance(err, TimeoutError):
            raise TimeoutError(f"no answer within {limit_s:g}s (the plugin was killed)") from None
        raise
    if proc.returncode != 0:
        detail = stderr.decode("utf-8", "replace").strip()
        raise ValueError(f"plugin exited {proc.returncode}" + (f": {detail}" if detail else ""))
    try:
        data = orjson.loads(stdout)
    except ValueError:
        raise ValueError("plugin output is not JSON") from None
    if not isinstance(data, dict) or not isinstance(data.get("status"), dict):
        raise ValueError("plugin output is not an ExecCredential with a status")
    if data.get("apiVersion") != provider.api_version:
        raise ValueError(
            f"plugin answered apiVersion {data.get('apiVersion')}, not {provider.api_version}"
        )
    status: dict[str, Any] = data["status"]
    return status
