"""Paths, error predicates and throttling settings of the REST client."""

from __future__ import annotations

import itertools
from types import SimpleNamespace
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpi_operator.client.kubeapi import (
    CONFIGMAPS,
    JOBS,
    MPIJOBS,
    NAMESPACES,
    ApiError,
    KubeClient,
    LineSplitter,
    _decode_line,
    is_already_exists,
    is_conflict,
    is_gone,
    is_not_found,
)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (CONFIGMAPS.path("ns"), "/api/v1/namespaces/ns/configmaps"),
        (CONFIGMAPS.path(None), "/api/v1/configmaps"),
        (JOBS.path("ns", "j"), "/apis/batch/v1/namespaces/ns/jobs/j"),
        (
            MPIJOBS.path("ns", "pi", "status"),
            "/apis/kubeflow.org/v2beta1/namespaces/ns/mpijobs/pi/status",
        ),
        (NAMESPACES.path("ignored", "team"), "/api/v1/namespaces/team"),
    ],
)
def test_resource_paths_cover_core_groups_crds_and_cluster_scope(path: str, expected: str) -> None:
    assert path == expected


def test_api_versions() -> None:
    assert CONFIGMAPS.api_version == "v1"
    assert MPIJOBS.api_version == "kubeflow.org/v2beta1"


def test_error_predicates_follow_status_and_reason() -> None:
    assert is_not_found(ApiError(404, {"reason": "NotFound"}))
    assert is_already_exists(ApiError(409, {"reason": "AlreadyExists"}))
    assert not is_conflict(ApiError(409, {"reason": "AlreadyExists"}))
    assert is_conflict(ApiError(409, {"reason": "Conflict"}))
    assert is_gone(ApiError(410, {"reason": "Gone"}))
    assert is_gone(ApiError(500, {"reason": "Expired", "message": "x"}))
    assert is_gone(ApiError(500, {"message": "too old resource version: 1 (5)"}))
    assert not is_gone(ValueError("410"))


def test_watch_lines_that_are_not_json_objects_come_back_raw() -> None:
    assert _decode_line(b'{"type":"ADDED","object":{}}') == {"type": "ADDED", "object": {}}
    assert _decode_line(b"{broken") == b"{broken"
    assert _decode_line(b"[1,2]") == b"[1,2]"


def client(qps: float, burst: int) -> KubeClient:
    stub = cast(Any, SimpleNamespace(host="https://x"))
    return KubeClient(stub, qps=qps, burst=burst)


def test_qps_zero_means_client_go_defaults_and_negative_disables_throttling() -> None:
    default = client(0, 0).throttles.bucket("kube")
    assert default is not None
    assert (default.qps, default.burst) == (5.0, 10)
    assert client(-1, 0).throttles.bucket("kube") is None
    custom = client(20, 30).throttles.bucket("mpijob")
    assert custom is not None
    assert (custom.qps, custom.burst) == (20.0, 30)


@given(
    records=st.lists(st.binary(min_size=1, max_size=30).map(lambda b: b.replace(b"\n", b"x"))),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=20),
)
def test_watch_lines_survive_any_chunking(records: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(r + b"\n" for r in records)
    bounds = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
    splitter = LineSplitter()
    out: list[bytes] = []
    for a, b in itertools.pairwise(bounds):
        out += splitter.feed(stream[a:b])
    out += splitter.end()
    assert out == [r for r in records if r.strip()]


def test_a_last_record_without_a_newline_comes_at_the_end() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b'{"a":1}\n{"b"') == [b'{"a":1}']
    assert splitter.feed(b":2}") == []
    assert splitter.end() == [b'{"b":2}']


def test_a_client_makes_the_tls_read_buffers_64_kib() -> None:
    import asyncio.sslproto

    from mpi_operator.client.transport import TLS_READ_BUFFER

    client(0, 0)
    assert asyncio.sslproto.SSLProtocol.max_size == TLS_READ_BUFFER == 64 * 1024
