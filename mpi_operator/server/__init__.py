"""The ``mpi-operator`` process: flags, logging, HTTP endpoints, leader election.

* :mod:`.flags` - one declaration per flag; the parser, ``--help`` and the docs' table.
* :mod:`.options` - the flags' declarations, parsed into a frozen :class:`ServerOptions`.
* :mod:`.version` - what ``--version`` prints (the git commit, from git or the wheel).
* :mod:`.logging` - structlog set-up (JSON lines or a console renderer).
* :mod:`.http` - ``/healthz`` and ``/metrics`` servers on aiohttp.
* :mod:`.preflight` - start-up checks: API server reachable, CRD present, RBAC.
* :mod:`.app` - the lifecycle: preflight, leader election, the controllers, signals.
"""
