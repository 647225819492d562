"""Answers orjson refuses (nesting past its 1,024 levels): the list is decoded item by item,
the refused items identified, and a watch line's object decoded alone."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from aiohttp import web
from local_http import client_to

from mpi_operator.client.decoding import (
    MalformedJSON,
    Undecodable,
    array_elements,
    decode_list,
    decode_watch_line,
    object_members,
)
from mpi_operator.client.kubeapi import MPIJOBS, ApiError, KubeClient


def nested(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


def deep_job(name: str, namespace: str, depth: int = 1100) -> bytes:
    """An MPIJob as kube-apiserver writes a custom resource: keys sorted, so managedFields
    (which mirror the deep field) come before the name."""
    return (
        b'{"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","metadata":{'
        b'"managedFields":[{"fieldsV1":' + nested(depth) + b'}],"name":"' + name.encode() + b'",'
        b'"namespace":"'
        + namespace.encode()
        + b'","resourceVersion":"7","uid":"uid-'
        + name.encode()
        + b'"},"spec":{"mpiReplicaSpecs":{"Worker":{"template":{"metadata":'
        + nested(depth)
        + b"}}}}}"
    )


def job(name: str, namespace: str) -> dict[str, Any]:
    # Strings holding brackets, quotes and escapes must not confuse the scanner.
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": name, "namespace": namespace, "annotations": {"x": 'a"]}{[\\'}},
        "spec": {"slotsPerWorker": 1, "list": [1, 2.5, True, None, "]"]},
    }


def page(*items: bytes, cont: str = "") -> bytes:
    meta = orjson.dumps({"resourceVersion": "42", "continue": cont})
    return (
        b'{"apiVersion":"kubeflow.org/v2beta1","items":[ '
        + b" ,\n ".join(items)
        + b' ],"kind":"MPIJobList","metadata":'
        + meta
        + b"}"
    )


def test_a_page_with_one_deep_item_serves_the_others_and_names_the_refused_one() -> None:
    good_a, good_b = job("a", "ns-a"), job("b", "ns-b")
    body = page(orjson.dumps(good_a), deep_job("bad", "ns-bad"), orjson.dumps(good_b), cont="c1")
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(body)

    decoded = decode_list(body)

    assert decoded["kind"] == "MPIJobList"
    assert decoded["metadata"] == {"resourceVersion": "42", "continue": "c1"}
    first, refused, last = decoded["items"]
    assert (first, last) == (good_a, good_b)
    assert isinstance(refused, Undecodable)
    assert (refused.kind, refused.api_version) == ("MPIJob", "kubeflow.org/v2beta1")
    assert (refused.namespace, refused.name, refused.key) == ("ns-bad", "bad", "ns-bad/bad")
    assert (refused.uid, refused.resource_version) == ("uid-bad", "7")
    assert "depth" in refused.reason


def test_an_item_deep_only_with_the_page_around_it_is_decoded_alone() -> None:
    # 1,024 levels in the item: the item alone passes, the page (two levels more) not.
    item = deep_job("edge", "ns", depth=1019)
    body = page(item)
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(body)
    (decoded,) = decode_list(body)["items"]
    assert isinstance(decoded, dict)  # (too deep for ==: Python's recursion limit)
    assert decoded["metadata"]["name"] == "edge" and "Worker" in decoded["spec"]["mpiReplicaSpecs"]


def test_a_decodable_page_is_decoded_at_once() -> None:
    body = page(orjson.dumps(job("a", "ns")))
    assert decode_list(body) == orjson.loads(body)


def test_an_answer_that_is_not_json_still_fails() -> None:
    for body in (
        b"<html>bad gateway</html>",
        b'{"items":[{"a":1}',
        b'{"items":[],"x":tru e}',
        page(deep_job("bad", "ns"), b'{"a":tru e}'),
    ):
        with pytest.raises(ValueError):
            decode_list(body)


def test_the_scanner_walks_members_and_elements_without_decoding_them() -> None:
    text = ' { "k" : [ 1 , "x]" , {"y": [2]} ] , "s":"\\"}" , "n":null }'
    members = [(key, text[s:e]) for key, s, e in object_members(text, 0)]
    assert members == [("k", '[ 1 , "x]" , {"y": [2]} ]'), ("s", '"\\"}"'), ("n", "null")]
    start = text.index("[")
    assert [text[s:e] for s, e in array_elements(text, start)] == ["1", '"x]"', '{"y": [2]}']
    assert list(object_members("{}", 0)) == []
    with pytest.raises(MalformedJSON):
        list(object_members('{"a" 1}', 0))


def test_a_watch_line_with_a_deep_object_is_identified_with_its_event_type() -> None:
    line = b'{"type":"MODIFIED","object":' + deep_job("bad", "ns") + b"}"
    event = decode_watch_line(line)
    assert isinstance(event, Undecodable)
    assert (event.event_type, event.key, event.resource_version) == ("MODIFIED", "ns/bad", "7")


def test_a_watch_line_deep_only_with_its_envelope_is_decoded() -> None:
    obj = deep_job("edge", "ns", depth=1019)
    line = b'{"type":"ADDED","object":' + obj + b"}"
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(line)
    event = decode_watch_line(line)
    assert isinstance(event, dict) and event["type"] == "ADDED"
    assert event["object"]["metadata"]["name"] == "edge"


def test_a_watch_line_that_is_not_json_is_undecodable_and_anonymous() -> None:
    event = decode_watch_line(b"{not json")
    assert isinstance(event, Undecodable) and event.key is None
    assert decode_watch_line(b'{"type":"ADDED","object":{}}') == {"type": "ADDED", "object": {}}


async def test_the_client_lists_item_by_item_only_when_asked() -> None:
    body = page(orjson.dumps(job("a", "ns")), deep_job("bad", "ns"))

    async def answer(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/json")

    app = web.Application()
    app.router.add_get(MPIJOBS.path("ns"), answer)
    async with client_to(app, lambda api: KubeClient(api, qps=-1)) as client:
        listed = await client.list(MPIJOBS, "ns", undecodable_items=True)
        assert listed["items"][0] == job("a", "ns")
        assert isinstance(listed["items"][1], Undecodable)
        with pytest.raises(ApiError) as err:
            await client.list(MPIJOBS, "ns")
        assert err.value.status == 502
