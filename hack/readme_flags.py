"""Writes (or, with --check, checks) the table of flags of docs/operations/flags.md from
their declarations.

    .venv/bin/python hack/readme_flags.py [--check]

The table sits between the markers ``<!-- flags:begin -->`` and ``<!-- flags:end -->``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mpi_operator.server.flags import markdown_table  # noqa: E402
from mpi_operator.server.options import all_flags  # noqa: E402

README = ROOT / "docs" / "operations" / "flags.md"
BEGIN, END = "<!-- flags:begin -->\n", "<!-- flags:end -->\n"


def rendered(text: str) -> str:
    head, _, rest = text.partition(BEGIN)
    _, found, tail = rest.partition(END)
    if not found:
        raise SystemExit(f"{README}: the markers {BEGIN.strip()} and {END.strip()} are missing")
    return head + BEGIN + markdown_table(all_flags()) + END + tail


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the page is stale")
    args = parser.parse_args()
    text = README.read_text()
    want = rendered(text)
    if want == text:
        return 0
    if args.check:
        print(f"{README} has a stale table of flags: run hack/readme_flags.py", file=sys.stderr)
        return 1
    README.write_text(want)
    return 0


if __name__ == "__main__":
    sys.exit(main())
