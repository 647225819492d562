"""What a sync reads for an MPIJob after our own status write: the cached object, or the
one the write returned while the cache still shows the object that write replaced."""

from __future__ import annotations

import pytest

from mpi_operator.controller.core.state import CONFIG_MAP, OwnWrites

KEY = "ns/pi"


def job(rv: str | None, marker: str = "") -> dict[str, object]:
    meta: dict[str, object] = {"name": "pi", "namespace": "ns"}
    if rv is not None:
        meta["resourceVersion"] = rv
    return {"metadata": meta, "status": {"marker": marker}}


@pytest.mark.parametrize(
    ("replaced", "returned", "cached", "read"),
    [
        pytest.param("1", "2", "1", "returned", id="cache not caught up: the write's answer"),
        pytest.param("1", "2", "2", "cached", id="cache caught up"),
        pytest.param("1", "2", "3", "cached", id="cache newer still"),
        pytest.param(None, "2", "1", "cached", id="no version replaced: nothing kept"),
        pytest.param("1", None, "1", "cached", id="no version returned: nothing kept"),
        pytest.param("1", "1", "1", "cached", id="same version: nothing to tell apart"),
    ],
)
def test_which_object_a_sync_reads(
    replaced: str | None, returned: str | None, cached: str, read: str
) -> None:
    writes = OwnWrites()
    writes.wrote(KEY, job(replaced), job(returned, "returned"))
    got = writes.latest(KEY, job(cached, "cached"))
    assert got is not None
    assert got["status"] == {"marker": read}


def test_what_was_kept_goes_once_the_cache_moved_on() -> None:
    writes = OwnWrites()
    writes.wrote(KEY, job("1"), job("2", "returned"))
    assert writes.latest(KEY, job("5", "cached")) == job("5", "cached")
    assert len(writes) == 0
    # A later stale read is not answered from a write that is gone.
    assert writes.latest(KEY, job("1", "cached")) == job("1", "cached")


def test_a_job_gone_from_the_cache_is_gone() -> None:
    writes = OwnWrites()
    writes.wrote(KEY, job("1"), job("2"))
    assert writes.latest(KEY, None) is None
    assert len(writes) == 0


def test_the_kept_object_has_no_managed_fields() -> None:
    writes = OwnWrites()
    answer = job("2", "returned")
    answer["metadata"]["managedFields"] = [{"manager": "mpi-operator"}]  # type: ignore[index]
    writes.wrote(KEY, job("1"), answer)
    got = writes.latest(KEY, job("1"))
    assert got is not None
    assert "managedFields" not in got["metadata"]


def test_jobs_are_kept_apart_and_forgotten_one_by_one() -> None:
    writes = OwnWrites()
    writes.wrote("ns/a", job("1"), job("2", "a"))
    writes.wrote("ns/b", job("1"), job("2", "b"))
    writes.clear("ns/a")
    assert writes.latest("ns/a", job("1", "cached"))["status"] == {"marker": "cached"}  # type: ignore[index]
    assert writes.latest("ns/b", job("1", "cached"))["status"] == {"marker": "b"}  # type: ignore[index]


def test_a_jobs_status_and_config_map_are_kept_apart_and_forgotten_together() -> None:
    writes = OwnWrites()
    writes.wrote(KEY, job("1"), job("2", "status"))
    writes.wrote(KEY, job("5"), job("6", "configmap"), CONFIG_MAP)
    assert len(writes) == 2
    assert writes.latest(KEY, job("1"))["status"] == {"marker": "status"}  # type: ignore[index]
    got = writes.latest(KEY, job("5"), CONFIG_MAP)
    assert got is not None and got["status"] == {"marker": "configmap"}
    assert writes.latest(KEY, job("7", "cached"), CONFIG_MAP) == job("7", "cached")
    assert len(writes) == 1  # the ConfigMap's went; the status's stays
    writes.clear(KEY)
    assert len(writes) == 0


@pytest.mark.parametrize(
    ("cached", "read"),
    [
        pytest.param("1", "second", id="cache two writes behind"),
        pytest.param("2", "second", id="cache one write behind"),
        pytest.param("3", "cached", id="cache caught up"),
    ],
)
def test_a_write_over_our_own_last_answer_supersedes_both_versions(cached: str, read: str) -> None:
    writes = OwnWrites()
    writes.wrote(KEY, job("1"), job("2", "first"))
    kept = writes.latest(KEY, job("1"))
    assert kept is not None
    writes.wrote(KEY, kept, job("3", "second"))
    got = writes.latest(KEY, job(cached, "cached"))
    assert got is not None
    assert got["status"] == {"marker": read}


def test_a_write_over_a_newer_cache_starts_afresh() -> None:
    writes = OwnWrites()
    writes.wrote(KEY, job("1"), job("2"))
    writes.wrote(KEY, job("5"), job("6", "returned"))  # the cache had moved on to "5"
    assert writes.latest(KEY, job("1", "cached"))["status"] == {"marker": "cached"}  # type: ignore[index]
