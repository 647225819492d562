"""The client's TLS context, built once from the loaded configuration, with no key
material left on disk.

kubernetes_asyncio's kubeconfig loader writes ``certificate-authority-data``,
``client-certificate-data`` and ``client-key-data`` to files in the temp directory
(Python's ``ssl`` loads a certificate chain only from files) and removes them only at
a normal interpreter exit. An operator that is killed (SIGKILL, OOM) would leave its
client key in ``/tmp`` for good. :func:`take_tls` builds the ``ssl.SSLContext`` while
those files exist, then deletes them: the process keeps the context in memory, and the
transports' connectors use it (:class:`~mpi_operator.client.transport.ApiTransport`).
Files the kubeconfig names by path are the user's, read and left alone.
"""

from __future__ import annotations

import contextlib
import os
import ssl

from mpi_operator.client.lean_imports import Configuration, loader_temp_files

#: The configuration's TLS file settings, as kubernetes_asyncio names them.
_FILE_FIELDS = ("ssl_ca_cert", "cert_file", "key_file")


def tls_context(config: Configuration) -> ssl.SSLContext:
    """The context kubernetes_asyncio's REST client would build from ``config``."""
    context = ssl.create_default_context(cafile=config.ssl_ca_cert)
    if config.cert_file:
        context.load_cert_chain(config.cert_file, keyfile=config.key_file)
    if not config.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if config.disable_strict_ssl_verification:
        context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    return context


def take_tls(config: Configuration) -> ssl.SSLContext:
    """Builds the TLS context of ``config``, then deletes the files the kubeconfig
    loader wrote for it and clears those settings (an ``ApiClient`` made on
    ``config`` later then reads nothing from disk).

    Called right after the load, with no await in between: a concurrent load that found
    the same files in the loader's cache cannot see them deleted before its own call."""
    try:
        return tls_context(config)
    finally:
        # Also when the material does not load: the error names the kubeconfig.
        _delete_loader_files(config)


def _delete_loader_files(config: Configuration) -> None:
    written = loader_temp_files()
    for field in _FILE_FIELDS:
        path = getattr(config, field)
        if not path:
            continue
        for content, temp in list(written.items()):
            if temp == path:
                # Forgotten too, so that a later load writes the file again.
                del written[content]
                with contextlib.suppress(FileNotFoundError):
                    os.remove(temp)
                setattr(config, field, None)
