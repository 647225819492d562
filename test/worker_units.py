"""The cluster suites side by side in pytest-xdist workers (``make test``: ``-n 2
--dist loadgroup``), each test in one worker with the isolation it has in one process.

Each worker starts the clusters its tests ask for, so no cluster is shared between
processes. Tests go to the workers in units, each unit whole to one worker:

* a module, so its module-scoped fixtures are set up once; its package when one of its
  fixtures is package-scoped (the Kueue suite's one Kueue);
* ``host-wide``: everything using what exists once per host: the real node (containerd,
  the kubelet's ports, the node's bridge: ``real_cluster``, or a test marked
  ``host_wide``, like the demo with a real node of its own) and the reference operator's
  fixed :8080. One worker runs them one after another. The unit is handed out first,
  since it is the longest (the workers take units in their collection order).

pytest-xdist's own ``loadgroup`` scheduler groups by a suffix it adds to each item's
``_nodeid``, which pytest 9.2 no longer reads (a node's id is ``_id``): so the workers
write each test's unit to a file at collection, and ``UnitScheduling`` reads it.
test/conftest.py registers this module as a plugin.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

HOST_WIDE = "host-wide"
_FILE_KEY = "mpi_operator_units"
_PATH = pytest.StashKey[Path]()


def unit_of(item: pytest.Item) -> str:
    if item.get_closest_marker("real_cluster") or item.get_closest_marker("host_wide"):
        return HOST_WIDE
    path = item.nodeid.split("::")[0]
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else ()
    if any(d.scope == "package" for chain in defs for d in chain):
        return path.rsplit("/", 1)[0]
    return path


def pytest_configure(config: pytest.Config) -> None:
    """In the controller of a ``--dist loadgroup`` run: where the workers write the units."""
    if config.getoption("numprocesses", None) and config.getoption("dist", "no") == "loadgroup":
        config.stash[_PATH] = Path(tempfile.mkdtemp(prefix="pytest-units-")) / "units.json"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    path = node.config.stash.get(_PATH, None)
    if path is not None:
        node.workerinput[_FILE_KEY] = str(path)


@pytest.hookimpl(trylast=True)  # after conftest.py marked the clusters' tests
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a worker: each test's unit to the controller's file, the host-wide unit first."""
    path = getattr(config, "workerinput", {}).get(_FILE_KEY)
    if path is None:
        return
    units = {item.nodeid: unit_of(item) for item in items}
    items.sort(key=lambda item: units[item.nodeid] != HOST_WIDE)
    # Every worker collects the same tests: each writes the same file, whole at once.
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))
    with os.fdopen(fd, "w") as out:
        json.dump(units, out)
    os.replace(tmp, path)


@pytest.hookimpl(optionalhook=True, tryfirst=True)  # before pytest-xdist's own
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    path = config.stash.get(_PATH, None)
    if path is None:
        return None
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):  # type: ignore[misc]
        """pytest-xdist's load-by-scope scheduling, a scope being a unit above."""

        units: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.units is None:  # read once the workers have collected
                self.units = json.loads(path.read_text())
            return self.units.get(nodeid, nodeid.split("::")[0])

    return UnitScheduling(config, log)


def pytest_unconfigure(config: pytest.Config) -> None:
    path = config.stash.get(_PATH, None)
    if path is not None:
        shutil.rmtree(path.parent, ignore_errors=True)
