"""A test double of the operator's API client that records every action.

Modelled on client-go's fake clientset as kubernetes/sample-controller's
``controller_test.go`` uses it: every call is recorded as an :class:`Action`
(verb, resource, namespace, name, body) before anything else happens, and
reactors chosen by the test may answer a call or fail it with an
:class:`~mpi_operator.client.errors.ApiError`. It is NOT an API server: it
stores nothing, validates nothing and runs no admission; without a reactor a
create or a write echoes its body, a get is answered 404 and a list is empty.

It depends only on the client layer's error type and resource names, which
are stable; nothing here knows the controllers.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from mpi_operator.client.errors import ApiError

__all__ = ["Action", "ApiError", "RecordingClient", "merge_patch"]

Obj = dict[str, Any]

#: The verbs, as client-go's testing actions name them.
VERBS = ("create", "get", "list", "update", "patch", "delete", "deletecollection")
#: Verbs that read; everything else writes.
READS = ("get", "list")


@dataclass(frozen=True)
class Action:
    """One call on the client. ``resource`` is the plural, with ``/status`` for the
    status subresource (``mpijobs/status``), as client-go's action strings read."""

    verb: str
    resource: str
    namespace: str | None
    name: str
    body: Any = None
    options: Mapping[str, Any] = field(default_factory=dict)
    error: ApiError | None = None
    """What a reactor failed the call with (None: it succeeded)."""

    @property
    def short(self) -> tuple[str, str, str]:
        """``(verb, resource, name)``: what the tables compare."""
        return (self.verb, self.resource, self.name)

    def is_write(self) -> bool:
        return self.verb not in READS


Reaction = Callable[[Action], Any]


@dataclass
class _Reactor:
    verb: str
    resource: str
    name: str | None
    react: Reaction
    times: int | None  # None: for ever

    def matches(self, action: Action) -> bool:
        return (
            self.verb in ("*", action.verb)
            and self.resource in ("*", action.resource)
            and self.name in (None, action.name)
            and self.times != 0
        )


# -- errors as the API server sends them -------------------------------------
def api_error(status: int, reason: str, message: str = "") -> ApiError:
    body = {"kind": "Status", "status": "Failure", "reason": reason, "code": status}
    body["message"] = message or reason
    return ApiError(status, body)


def already_exists(name: str = "") -> ApiError:
    return api_error(409, "AlreadyExists", f'"{name}" already exists')


def conflict(name: str = "") -> ApiError:
    return api_error(409, "Conflict", f'Operation cannot be fulfilled on "{name}"')


def invalid(message: str = "spec.containers[0].image: Required value") -> ApiError:
    return api_error(422, "Invalid", message)


def forbidden(message: str = "forbidden by policy") -> ApiError:
    return api_error(403, "Forbidden", message)


def not_found(name: str = "") -> ApiError:
    return api_error(404, "NotFound", f'"{name}" not found')


def internal_error(message: str = "etcdserver: request timed out") -> ApiError:
    return api_error(500, "InternalError", message)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch, returning a new value."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


class RecordingClient:
    """Duck-types :class:`~mpi_operator.client.kubeapi.KubeClient`'s verbs."""

    def __init__(self) -> None:
        self.actions: list[Action] = []
        self._reactors: list[_Reactor] = []
        self._uids = 0

    # -- configuring -------------------------------------------------------
    def react(
        self,
        verb: str,
        resource: str,
        reaction: Reaction,
        name: str | None = None,
        times: int | None = None,
    ) -> None:
        """Answers matching calls with ``reaction(action)`` (raise to fail). The reactor
        added last is tried first, as client-go's PrependReactor."""
        self._reactors.insert(0, _Reactor(verb, resource, name, reaction, times))

    def fail(
        self,
        verb: str,
        resource: str,
        error: ApiError,
        name: str | None = None,
        times: int | None = None,
    ) -> None:
        """Fails matching calls with ``error`` (``times`` of them; None: all)."""

        def raise_it(_: Action) -> Any:
            raise error

        self.react(verb, resource, raise_it, name, times)

    def answer(self, verb: str, resource: str, name: str, obj: Obj) -> None:
        """Answers matching calls with a copy of ``obj`` (e.g. a get of an object
        our label-filtered caches cannot see)."""
        self.react(verb, resource, lambda _: copy.deepcopy(obj), name)

    def clear(self) -> None:
        self.actions.clear()

    # -- the verbs ---------------------------------------------------------
    def _do(self, action: Action, default: Callable[[], Any]) -> Any:
        self.actions.append(action)
        try:
            for reactor in self._reactors:
                if reactor.matches(action):
                    if reactor.times is not None:
                        reactor.times -= 1
                    return reactor.react(action)
            return default()
        except ApiError as err:
            self.actions[-1] = replace(action, error=err)
            raise

    def _created(self, body: Obj) -> Obj:
        self._uids += 1
        obj = copy.deepcopy(body)
        meta = obj.setdefault("metadata", {})
        meta.setdefault("uid", f"uid-{meta.get('name', '')}-{self._uids}")
        meta.setdefault("resourceVersion", "1")
        return obj

    async def create(
        self,
        resource: Any,
        namespace: str | None,
        body: Mapping[str, Any],
        *,
        discard_answer: bool = False,
    ) -> Obj:
        sent: Obj = copy.deepcopy(dict(body))
        name = str((sent.get("metadata") or {}).get("name") or "")
        action = Action("create", resource.plural, namespace, name, sent)
        result: Obj = self._do(action, lambda: self._created(sent))
        return {} if discard_answer else result

    async def get(self, resource: Any, namespace: str | None, name: str) -> Obj:
        action = Action("get", resource.plural, namespace, name)

        def missing() -> Obj:
            raise not_found(name)

        result: Obj = self._do(action, missing)
        return result

    async def list(self, resource: Any, namespace: str | None = None, **options: Any) -> Obj:
        action = Action("list", resource.plural, namespace, "", options=options)
        result: Obj = self._do(action, lambda: {"items": []})
        return result

    async def replace(
        self,
        resource: Any,
        namespace: str | None,
        name: str,
        body: Mapping[str, Any],
        *,
        subresource: str | None = None,
    ) -> Obj:
        body = copy.deepcopy(dict(body))
        plural = f"{resource.plural}/{subresource}" if subresource else resource.plural
        action = Action("update", plural, namespace, name, body)
        result: Obj = self._do(action, lambda: copy.deepcopy(body))
        return result

    async def replace_status(
        self, resource: Any, namespace: str | None, name: str, body: Mapping[str, Any]
    ) -> Obj:
        return await self.replace(resource, namespace, name, body, subresource="status")

    async def patch(
        self,
        resource: Any,
        namespace: str | None,
        name: str,
        patch: Any,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
        **options: Any,
    ) -> Obj:
        plural = f"{resource.plural}/{subresource}" if subresource else resource.plural
        options = {"patch_type": patch_type, **options}
        action = Action("patch", plural, namespace, name, copy.deepcopy(patch), options)
        base = {"metadata": {"name": name, "namespace": namespace}}
        result: Obj = self._do(action, lambda: merge_patch(base, patch))
        return result

    async def delete(
        self,
        resource: Any,
        namespace: str | None,
        name: str,
        *,
        propagation_policy: str | None = None,
        preconditions: Mapping[str, str] | None = None,
    ) -> Obj:
        options: dict[str, Any] = {}
        if propagation_policy:
            options["propagation_policy"] = propagation_policy
        if preconditions:
            options["preconditions"] = dict(preconditions)
        action = Action("delete", resource.plural, namespace, name, options=options)
        result: Obj = self._do(action, lambda: {})
        return result

    async def delete_collection(
        self,
        resource: Any,
        namespace: str,
        *,
        label_selector: str,
        field_selector: str | None = None,
        **_: Any,
    ) -> None:
        options: dict[str, Any] = {"label_selector": label_selector}
        if field_selector:
            options["field_selector"] = field_selector
        action = Action("deletecollection", resource.plural, namespace, "", options=options)
        self._do(action, lambda: None)

    async def request(self, method: str, path: str, **_: Any) -> Any:
        raise AssertionError(f"unexpected raw request {method} {path} in a sync test")
