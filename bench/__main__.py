"""``make bench``: runs the benchmarks that need no cluster and prints one JSON line each.

Cluster benchmarks (for example ``python -m bench.informer_memory``) start
their own control plane and are run by name.
"""

from __future__ import annotations

import json

from bench import model_parsing

if __name__ == "__main__":
    for bench in (model_parsing,):
        print(json.dumps(bench.run()))
