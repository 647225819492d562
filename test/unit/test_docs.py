"""The documentation: the site builds with ``mkdocs build --strict`` (a broken link or
anchor, or a page out of the nav, fails), its pages describe the product rather than
its history, the generated field reference is current, and README.md stays short and
opens with the two commands."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
# Pages that may tell history: measured runs and what changed between them.
HISTORY_PAGES = {"development/benchmarks.md", "changelog.md"}
HISTORY = re.compile(
    r"\bthis round\b|\bround \d+|\bissue #\d+|\bsession\b"
    # A commit hash: 7 to 40 hex digits with a digit and a letter among them.
    r"|\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"
)


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert out.returncode == 0, out.stderr[-4000:]
    assert (tmp_path / "index.html").exists()
    # mkdocstrings rendered the SDK's docstrings.
    reference = (tmp_path / "sdk" / "reference" / "index.html").read_text()
    assert "SDKConnectionError" in reference and "create_from_yaml" in reference


PAGES = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))


@pytest.mark.parametrize("page", [p for p in PAGES if p not in HISTORY_PAGES])
def test_a_page_describes_the_product_not_its_history(page: str) -> None:
    text = (DOCS / page).read_text()
    assert HISTORY.findall(text) == []


def test_the_field_reference_is_current() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "hack" / "docs_fields.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr


def test_the_readme_is_short_and_opens_with_the_two_commands() -> None:
    text = README.read_text()
    assert len(text.encode()) <= 12 * 1024
    assert HISTORY.findall(text) == []
    first_block = text.split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in first_block.splitlines()]
    assert commands[:2] == ["make demo", "make test"]
    # Nothing but the title comes before them.
    assert text.index("```sh\n") == text.index("\n") + 2
    # CI runs the test command as the README shows it.
    assert "make test" in (ROOT / ".ci" / "run").read_text().splitlines()[-1]


def test_the_readme_links_into_the_docs() -> None:
    text = README.read_text()
    links = re.findall(r"\]\((docs/[^)#]+)", text)
    assert links
    for link in links:
        assert (ROOT / link).exists(), link
