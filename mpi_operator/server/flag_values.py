"""The values of the flags that have a form of their own: ports, positive durations,
namespace lists, DNS domains, ``host:port`` addresses. Each parser raises
``argparse.ArgumentTypeError``, which argparse reports naming the flag (exit 2)."""

from __future__ import annotations

import argparse
import ipaddress
import re

#: --metrics-bind-address's value that turns /metrics off (controller-runtime's).
METRICS_OFF = "0"
DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def port(value: str) -> int:
    number = int(value)
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"port {number} out of range 0-65535")
    return number


def dns_domain(value: str) -> str:
    """``--cluster-domain``: empty, or a DNS-1123 subdomain (lowercase labels joined by
    dots, at most 253 characters), with an optional final dot. It is written into the
    hostfile and, unquoted, into discover_hosts.sh: nothing else may get through."""
    name = value.removesuffix(".")
    if value and (
        len(name) > 253 or not all(DNS1123_LABEL.fullmatch(label) for label in name.split("."))
    ):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a DNS domain (lowercase letters, digits and '-' in labels of "
            "at most 63 characters, starting and ending with a letter or digit, joined by "
            "'.', at most 253 characters in all, such as cluster.local)"
        )
    return value


def split_host_port(value: str) -> tuple[str, int]:
    """``host:port`` as Go's net.SplitHostPort reads it: an IPv6 host in brackets, an
    empty host for every address."""
    host, sep, port_text = value.rpartition(":")
    if not sep:
        raise ValueError(f"{value!r} is not host:port (missing port)")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(f"{value!r}: {host!r} is not an IPv6 address") from None
    elif ":" in host or "[" in host or "]" in host:
        raise ValueError(f"{value!r} is not host:port (an IPv6 host goes in brackets)")
    elif host and any(c.isspace() for c in host):
        raise ValueError(f"{value!r}: the host has spaces")
    if not port_text.isdigit() or int(port_text) > 65535:
        raise ValueError(f"{value!r}: port {port_text!r} is not a number from 0 to 65535")
    return host, int(port_text)


def bind_address(value: str) -> str:
    """``--health-probe-bind-address``: empty (the older flags decide) or host:port."""
    if value:
        try:
            split_host_port(value)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
    return value


def metrics_bind_address(value: str) -> str:
    """``--metrics-bind-address``: as :func:`bind_address`, or ``0`` (disabled)."""
    return value if value == METRICS_OFF else bind_address(value)


def positive(value: str) -> float:
    number = float(value)
    if number <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {value}")
    return number


def namespace_list(value: str) -> str:
    """``--namespace``: one namespace as given (the reference's flag, unchecked), or a
    comma-separated list of distinct DNS-1123 labels (an addition of this implementation)."""
    if "," not in value:
        return value
    names = value.split(",")
    for name in names:
        if not DNS1123_LABEL.fullmatch(name):
            raise argparse.ArgumentTypeError(
                f"{name!r} in the list {value!r} is not a valid namespace name (a DNS-1123 "
                "label: at most 63 lowercase letters, digits or '-', starting and ending "
                "with a letter or digit)"
            )
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise argparse.ArgumentTypeError(
            f"namespace {', '.join(map(repr, duplicates))} is listed more than once in {value!r}"
        )
    return value


def image_reference(value: str) -> str:
    """``--t9k-init-image``: a container image reference, non-empty and without
    whitespace (the kubelet checks the rest when it pulls)."""
    if not value or any(c.isspace() for c in value):
        raise argparse.ArgumentTypeError(f"{value!r} is not an image reference")
    return value
