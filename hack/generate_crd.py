#!/usr/bin/env python3
"""Generate ``crd/kubeflow.org_mpijobs.yaml`` (and ``crd/t9k/``) from our pydantic models.

The MPIJob fields come from :mod:`mpi_operator.api.v2beta1.types`, walked field by
field; the pod templates and label selectors come from the Kubernetes OpenAPI v3
document of the core group (``/openapi/v3/api/v1``) served by a real kube-apiserver,
with every ``$ref`` inlined and everything a structural CRD schema may not hold
removed. The generator is :mod:`mpi_operator.api.crdgen` (printer columns, names,
descriptions and CEL rules are declared there); this script fetches the document
and writes the file.

The T9k MPIJob CRD (``crd/t9k/batch.tensorstack.dev_mpijobs.yaml``) needs no cluster:
``--t9k`` writes (or with ``--check`` checks) only that one, from
:mod:`mpi_operator.api.crdgen.t9k`.

Usage::

    hack/generate_crd.py            # write crd/kubeflow.org_mpijobs.yaml
    hack/generate_crd.py --check    # exit 1 when the committed file differs
    hack/generate_crd.py -o -       # print to stdout

The OpenAPI document is read from the cluster of ``$KUBECONFIG`` when it is set
(through ``kubectl get --raw``), otherwise from an api-only
:class:`devcluster.LocalCluster` started for the occasion, or from a
file saved earlier with ``--openapi FILE``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mpi_operator.api.crdgen import OPENAPI_PATH, fetch_document, generate  # noqa: E402
from mpi_operator.api.crdgen.t9k import generate_t9k  # noqa: E402

OUTPUT = REPO / "crd" / "kubeflow.org_mpijobs.yaml"
T9K_OUTPUT = REPO / "crd" / "t9k" / "batch.tensorstack.dev_mpijobs.yaml"


def fetch_from_kubeconfig(kubeconfig: str) -> tuple[dict[str, Any], str]:
    from devcluster import binaries

    kubectl = str(binaries.find(("kubectl",))["kubectl"])

    def raw(path: str) -> Any:
        out = subprocess.run(
            [kubectl, f"--kubeconfig={kubeconfig}", "get", "--raw", path],
            check=True,
            capture_output=True,
            text=True,
        )
        return json.loads(out.stdout)

    return raw(OPENAPI_PATH), str(raw("/version")["gitVersion"])


def fetch_from_local_cluster() -> tuple[dict[str, Any], str]:
    from devcluster import API, LocalCluster

    with tempfile.TemporaryDirectory(prefix="generate-crd-") as tmp:
        cluster = LocalCluster(Path(tmp), API, crd_files=[])
        cluster.start()
        try:
            return fetch_document(cluster)
        finally:
            cluster.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", default=str(OUTPUT), help="file to write, - for stdout")
    parser.add_argument("--check", action="store_true", help="compare with --output instead")
    parser.add_argument("--openapi", help="read the OpenAPI document from this JSON file")
    parser.add_argument("--version", default="", help="server version named with --openapi")
    parser.add_argument("--t9k", action="store_true", help="only the T9k CRD (no cluster)")
    args = parser.parse_args(argv)

    if args.t9k:
        return _write_or_check(
            T9K_OUTPUT if args.output == str(OUTPUT) else Path(args.output),
            generate_t9k(),
            args.check,
        )
    if args.openapi:
        document, version = json.loads(Path(args.openapi).read_text()), args.version
    elif os.environ.get("KUBECONFIG"):
        document, version = fetch_from_kubeconfig(os.environ["KUBECONFIG"])
    else:
        document, version = fetch_from_local_cluster()
    return _write_or_check(Path(args.output), generate(document, version), args.check)


def _write_or_check(path: Path, text: str, check: bool) -> int:
    if check:
        if not path.is_file() or path.read_text() != text:
            print(f"{path} is out of date: run make crd", file=sys.stderr)
            return 1
        return 0
    if str(path) == "-":
        sys.stdout.write(text)
    else:
        path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
