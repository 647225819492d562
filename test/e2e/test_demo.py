"""``make demo`` (``python -m devcluster.demo``): the pi example ends
Succeeded, for real on the real node (printing the value of pi the launcher computed)
and with ``--kwok`` on the fake nodes, and the demo leaves no process, directory,
mount or network device behind, whether it succeeds, fails or is interrupted. Each
test starts its own fresh cluster."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from devcluster import EXIT_CODE, BinariesMissingError
from devcluster.binaries import FULL_BINARIES, find
from devcluster.nodeconfig import NodeLayout

ROOT = Path(__file__).resolve().parents[2]
PI = ROOT / "examples" / "v2beta1" / "pi" / "pi.yaml"

# Its own real node (the demo's default), beside the session's: one host's worth.
pytestmark = [pytest.mark.full_cluster, pytest.mark.host_wide]


@pytest.fixture(autouse=True)
def _binaries() -> None:
    try:
        find(FULL_BINARIES)
    except BinariesMissingError as err:
        pytest.fail(str(err), pytrace=False)


def _processes_mentioning(*needles: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if any(n in cmdline for n in needles):
            found.append(f"{entry.name}: {cmdline}")
    return found


def _sigint_as_in_a_terminal() -> None:  # in the child, between fork and exec
    # A suite started in the background by a non-interactive shell (`.ci/run &`)
    # inherits SIGINT ignored, and Python then keeps ignoring it; Ctrl-C in a
    # terminal, which the interrupt test stands for, meets the default action.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Demo:
    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "devcluster.demo", "--fresh", *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={k: v for k, v in os.environ.items() if k != "KUBECONFIG"},
            preexec_fn=_sigint_as_in_a_terminal,
        )
        self.lines: list[str] = []

    def read_until(self, pattern: str, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.append(line.rstrip("\n"))
            if re.search(pattern, line):
                return line
        raise AssertionError(f"no line matching {pattern!r} in:\n{self.output}")

    def finish(self, timeout: float) -> int:
        out, _ = self.proc.communicate(timeout=timeout)
        self.lines.extend(out.splitlines())
        return self.proc.returncode

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def workdirs(self) -> list[str]:
        return re.findall(r"(/\S*mpi-operator-demo-[^/\s]+)", self.output)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def demos() -> Iterator[list[Demo]]:
    started: list[Demo] = []
    yield started
    for demo in started:
        demo.kill()
        print(demo.output)
        # The operator's log directory, which the demo keeps after a failure for its
        # user, goes with the test.
        for d in set(demo.workdirs()):
            if "demo-logs" in d:
                shutil.rmtree(d, ignore_errors=True)


def _assert_nothing_left(demo: Demo) -> None:
    dirs = demo.workdirs()
    assert dirs, demo.output
    for d in set(dirs):
        # The component logs are under the cluster's directory; the operator's log
        # directory is kept only after a failure.
        if "demo-logs" not in d:
            assert not Path(d).exists(), f"{d} left behind"
    # containerd's shims name its socket, under the cluster's directory.
    left = _processes_mentioning(*set(dirs))
    assert left == [], left
    mounts = [
        m
        for m in Path("/proc/self/mountinfo").read_text().splitlines()
        if any(d in m for d in dirs)
    ]
    assert mounts == [], mounts
    for d in set(dirs):
        bridge = NodeLayout.for_cluster(Path(d), (0, 0, 0)).bridge
        assert not Path("/sys/class/net", bridge).exists(), f"bridge {bridge} left behind"


def test_demo_runs_pi_for_real_prints_it_and_cleans_up(demos: list[Demo]) -> None:
    demo = Demo()
    demos.append(demo)
    assert demo.finish(timeout=600) == 0, demo.output
    out = demo.output
    assert "starting a local cluster with a real node" in out, out
    assert re.search(r"mpijob demo-\w+/pi Succeeded after", out), out
    assert "The launcher's log (kubectl logs job/pi-launcher):" in out, out
    assert re.search(r"^  pi is approximately 3\.14\d+ \(2 ranks", out, re.M), out
    assert re.search(r"^  rank 1 of 2 on pi-worker-\d", out, re.M), out
    # Open MPI 5 (the default image) runs each rank on the worker the hostfile gives it.
    assert "Where the ranks ran:\n  rank 0 on pi-worker-0\n  rank 1 on pi-worker-1\n" in out, out
    assert out.rstrip().endswith("everything the demo started is stopped"), out
    _assert_nothing_left(demo)


def test_kwok_demo_runs_pi_to_success_and_cleans_up(demos: list[Demo]) -> None:
    demo = Demo("--kwok")
    demos.append(demo)
    assert demo.finish(timeout=300) == 0, demo.output
    out = demo.output
    assert re.search(r"mpijob/pi\s+Running", out), out
    assert re.search(r"mpijob/pi\s+Succeeded", out), out
    assert re.search(r"mpijob demo-\w+/pi Succeeded after", out), out
    for line in [
        "Service    pi",
        "ConfigMap  pi-config",
        "Secret     pi-ssh",
        "Job        pi-launcher",
        "Pod        pi-worker-0",
        "Pod        pi-worker-1",
    ]:
        assert line in out, out
    assert re.search(r"Pod        pi-launcher-\w+ \(Succeeded\)", out), out
    assert "The launcher's log" not in out, out
    assert out.rstrip().endswith("everything the demo started is stopped"), out
    _assert_nothing_left(demo)


def test_demo_reports_a_failed_job(demos: list[Demo], tmp_path: Path) -> None:
    job = yaml.safe_load(PI.read_text())
    job["spec"]["runPolicy"]["backoffLimit"] = 0
    launcher = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]
    launcher.setdefault("metadata", {}).setdefault("annotations", {})[EXIT_CODE] = "1"
    failing = tmp_path / "failing.yaml"
    failing.write_text(yaml.safe_dump(job))
    demo = Demo("--kwok", "--example", str(failing))
    demos.append(demo)
    assert demo.finish(timeout=300) == 1, demo.output
    assert re.search(r"mpijob demo-\w+/pi Failed after", demo.output), demo.output
    assert "demo: error: mpijob pi failed" in demo.output
    assert "end of the operator's log" in demo.output
    _assert_nothing_left(demo)


def test_demo_interrupted_stops_everything(demos: list[Demo]) -> None:
    demo = Demo("--kwok", "--launcher-runs-for", "10m")  # still running when interrupted
    demos.append(demo)
    demo.read_until(r"mpijob\.kubeflow\.org/pi created", timeout=120)
    demo.proc.send_signal(signal.SIGINT)
    assert demo.finish(timeout=60) == 130, demo.output
    assert "interrupted" in demo.output
    _assert_nothing_left(demo)


def test_make_demo_runs_the_module() -> None:
    out = subprocess.run(
        ["make", "-n", "demo", "DEMO_ARGS=--kwok --fresh"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "-m devcluster.demo --kwok --fresh" in out
    assert "hack/build-node-images.sh" not in out  # KWOK's demo needs no real node
    for mpi in ("openmpi", "openmpi4", "mpich", "intel"):
        out = subprocess.run(
            ["make", "-n", "demo", f"MPI={mpi}"], cwd=ROOT, capture_output=True, text=True
        ).stdout
        assert f"-m devcluster.demo --mpi={mpi}" in out
        assert "hack/build-node-images.sh" in out  # the real node's images, when missing


def test_kwok_behaviour_is_added_to_a_copy() -> None:
    from devcluster import COMPLETE_AFTER, START_DELAY
    from devcluster.demo_job import job_state, load_mpijob
    from devcluster.sample_jobs import with_kwok_behaviour

    original = load_mpijob(PI)
    job = with_kwok_behaviour(original, launcher_runs_for="3s", start_delay="1s")
    assert original == load_mpijob(PI)
    specs = job["spec"]["mpiReplicaSpecs"]
    launcher = specs["Launcher"]["template"]["metadata"]["annotations"]
    worker = specs["Worker"]["template"]["metadata"]["annotations"]
    assert launcher == {COMPLETE_AFTER: "3s", START_DELAY: "1s"}
    assert worker == {START_DELAY: "1s"}
    assert job_state({}) == "Pending"
    conditions = [
        {"type": "Created", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
        {"type": "Running", "status": "False", "lastTransitionTime": "2026-01-01T00:00:09Z"},
        {"type": "Succeeded", "status": "True", "lastTransitionTime": "2026-01-01T00:00:09Z"},
    ]
    assert job_state({"status": {"conditions": conditions}}) == "Pending"
    assert job_state({"status": {"conditions": conditions, "state": "Succeeded"}}) == "Succeeded"
