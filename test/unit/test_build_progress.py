"""Build steps that take minutes name their log when they start and print a line every
30 s while they run (hack/lib/progress.sh), and stop printing when they end."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROGRESS = ROOT / "hack/lib/progress.sh"


def test_a_line_per_interval_while_running_and_none_after() -> None:
    script = (
        f"source {PROGRESS}; progress_start step /x/build.log; sleep 2.5; progress_stop; "
        "echo stopped >&2; sleep 2"
    )
    started = time.monotonic()
    out = subprocess.run(
        ["bash", "-c", script],
        env={"PATH": "/usr/bin:/bin", "PROGRESS_INTERVAL": "1"},
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert time.monotonic() - started >= 4.5
    lines = out.stderr.splitlines()
    assert lines[-1] == "stopped"
    ticks = lines[:-1]
    assert len(ticks) >= 2, lines
    # bash's SECONDS counts whole seconds since the shell started, so a tick one interval
    # after the start reads 1 or 2 s, depending on where in a second the step began.
    seconds = []
    for tick in ticks:
        found = re.fullmatch(r"step: still building \((\d+) s; log: /x/build\.log\)", tick)
        assert found, tick
        seconds.append(int(found[1]))
    assert seconds[0] in (1, 2) and seconds == sorted(seconds), ticks


def test_the_ticker_stops_when_the_step_fails() -> None:
    script = f"set -e; source {PROGRESS}; trap progress_stop EXIT; progress_start step /l; false"
    proc = subprocess.Popen(
        ["bash", "-c", script],
        env={"PATH": "/usr/bin:/bin", "PROGRESS_INTERVAL": "1"},
        stderr=subprocess.PIPE,
        text=True,
    )
    # The ticker holds stderr open: communicate returns only when it is gone too.
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 1
    assert err == ""


@pytest.mark.parametrize(
    "script",
    [
        "build-binaries.sh",
        "build-node-binaries.sh",
        "build-helm.sh",
        "build-kueue.sh",
        "build-node-images.sh",
    ],
)
def test_slow_builds_use_it_and_name_their_log(script: str) -> None:
    text = (ROOT / "hack" / script).read_text()
    assert 'source "$ROOT/hack/lib/progress.sh"' in text
    assert "progress_start " in text and "progress_stop" in text
    starts = [line for line in text.splitlines() if ": building " in line and "echo" in line]
    assert starts and all("log: $LOG" in line for line in starts), starts
