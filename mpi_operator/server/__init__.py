"""The ``mpi-operator`` process: flags, logging, HTTP endpoints, leader election.

* :mod:`.options` - command-line flags parsed into a frozen :class:`ServerOptions`.
* :mod:`.logging` - structlog set-up (JSON lines or a console renderer).
* :mod:`.http` - ``/healthz`` and ``/metrics`` servers on aiohttp.
* :mod:`.preflight` - start-up checks: API server reachable, CRD present, RBAC.
* :mod:`.app` - the lifecycle: preflight, leader election, controller, signals.
"""
