"""The kubernetes client's ``ApiException`` turned into the SDK's typed errors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kubernetes.client.exceptions import ApiException

from .errors import from_api_exception


@contextmanager
def translated() -> Iterator[None]:
    try:
        yield
    except ApiException as e:
        raise from_api_exception(int(e.status or 0), str(e.reason or ""), e.body) from e
