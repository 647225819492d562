"""The operator loads only the parts of kubernetes_asyncio it uses, and the rest of the
library still works for anyone who asks for it."""

from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return done.stdout.strip()


def test_the_server_imports_a_few_kubernetes_asyncio_modules_not_the_whole_library() -> None:
    count, pool = _run(
        "import sys, mpi_operator.server.app\n"
        "print(sum(1 for m in sys.modules if m.startswith('kubernetes_asyncio')),"
        " 'multiprocessing.pool' in sys.modules)"
    ).split()
    # The whole library is about 860 modules; the operator needs about 15. The
    # ApiClient's module (and the process pool it imports) is not one of them.
    assert int(count) < 40
    assert pool == "False"


def test_a_model_class_asked_for_later_loads_the_whole_package() -> None:
    out = _run(
        "import mpi_operator.client.lean_imports as lean\n"
        "import kubernetes_asyncio\n"
        "from kubernetes_asyncio import client\n"
        "from kubernetes_asyncio.client.api_client import ApiClient\n"
        "pod = client.V1Pod(metadata=client.V1ObjectMeta(name='p'))\n"
        "print(pod.metadata.name, client.ApiClient is ApiClient,"
        " client.Configuration is lean.Configuration, hasattr(kubernetes_asyncio, 'watch'))"
    )
    assert out == "p True True True"


def test_the_kubeconfig_loaders_client_is_the_real_api_client() -> None:
    out = _run(
        "import asyncio\n"
        "import mpi_operator.client.lean_imports as lean\n"
        "from kubernetes_asyncio.config import kube_config\n"
        "from kubernetes_asyncio.client.api_client import ApiClient\n"
        "async def main():\n"
        "    api = kube_config.ApiClient(configuration=lean.Configuration())\n"
        "    print(type(api) is ApiClient)\n"
        "    await api.close()\n"
        "asyncio.run(main())"
    )
    assert out == "True"


def test_a_library_imported_in_full_first_is_left_alone() -> None:
    out = _run(
        "import kubernetes_asyncio, sys\n"
        "before = sys.modules['kubernetes_asyncio.client']\n"
        "import mpi_operator.client.lean_imports as lean\n"
        "print(sys.modules['kubernetes_asyncio.client'] is before,"
        " lean.Configuration is kubernetes_asyncio.client.Configuration)"
    )
    assert out == "True True"
