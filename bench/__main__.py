"""``make bench``: runs the benchmarks that need no cluster and prints one JSON line each.

Cluster benchmarks (for example ``python -m bench.informer_memory``) start
their own control plane and are run by name. ``python -m bench --full [ARGS]``
(``make bench BENCH_ARGS=--full``) runs the side-by-side comparison with the
reference operator instead (``python -m bench.sidebyside ARGS``, bench/README.md).
"""

from __future__ import annotations

import json
import sys

from bench import model_parsing

if __name__ == "__main__":
    if sys.argv[1:2] == ["--full"]:
        from bench.sidebyside.__main__ import main

        sys.exit(main(sys.argv[2:]))
    for bench in (model_parsing,):
        print(json.dumps(bench.run()))
