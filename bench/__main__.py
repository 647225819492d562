"""``make bench`` (``python -m bench [ARGS]``): the benchmarks that need no cluster (one
JSON line each), then this operator side by side with the reference Go operator on the
local cluster (``python -m bench.sidebyside ARGS``, preset ``full`` unless ARGS say
otherwise; see bench/README.md). ``python -m bench --quick`` runs only the first part.
With ``--preset smoke`` the first part is sized down too (one small round of each: the
plumbing, not the figures), as the test suite runs it.

Cluster benchmarks of our own alone (for example ``python -m bench.informer_memory``)
start their own control plane and are run by name.
"""

from __future__ import annotations

import json
import sys

from bench import cache_memory, hot_path, model_parsing


def _preset(argv: list[str]) -> str | None:
    for i, arg in enumerate(argv):
        if arg == "--preset" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--preset="):
            return arg.split("=", 1)[1]
    return None


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    if _preset(argv) == "smoke":
        results = (
            model_parsing.run(jobs=100, repetitions=1),
            hot_path.run(hot_path.SMOKE),
            cache_memory.run(pods=200),
        )
        for result in results:
            print(json.dumps(result), flush=True)
    else:
        for bench in (model_parsing, hot_path, cache_memory):
            print(json.dumps(bench.run()), flush=True)
    if quick:
        return 0
    from bench.sidebyside.__main__ import main as sidebyside

    return sidebyside(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
