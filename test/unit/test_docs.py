"""The documentation: the site builds with ``mkdocs build --strict`` (a broken link or
anchor, or a page out of the nav, fails), its pages describe the product rather than
its history, the generated field reference is current, and README.md stays short and
opens with the two commands."""

from __future__ import annotations

import ast
import importlib
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
# What a user page (any but docs/development/) must not name either: the test that
# proves a promise (a ``test_...`` function or module, a ``test/.../*.py`` path; which
# test proves what is listed in development/tests.md) or a calendar date (YYYY-MM-DD).
USER_PAGE_ONLY = re.compile(
    r"\btest/[\w./-]*\.py\b|\btest_[a-z0-9_]+"
    r"|\b(?:19|20)\d{2}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])\b"
)
# What looks like a commit hash but is not one, removed before matching: an image or
# file digest. Nothing else is allowed; a version string (1.36.4, v0.8.2) has no hex
# run of 7 and needs no entry.
NOT_HISTORY = re.compile(r"\bsha256:[0-9a-f]{64}\b")


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
    text = NOT_HISTORY.sub("", (DOCS / page).read_text())
    found = [m.group() for m in HISTORY.finditer(text)]
    if not page.startswith("development/"):
        found += [m.group() for m in USER_PAGE_ONLY.finditer(text)]
    assert found == [], f"docs/{page} names tests, commits or dates: {found}"


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("`test/e2e/test_migrate_running_jobs.py` runs it", True),
        ("(`test_chaos_three_fan_outs_and_a_scale_down`, 200 QPS)", True),
        ("the latest run (4538d53)", True),
        ("released on 2026-11-28", True),
        ("tested on a real node with running jobs", False),
        ("`python:3.11-slim@sha256:" + "0a1b2c3d" * 8 + "`", False),
        ("Open MPI 5.0.7, Kubernetes 1.36.4, v0.8.2, 14144344 of 100000000", False),
        ("`make test`, `test/chaos`, `MPI_TEST_X`, latest_test_run", False),
    ],
)
def test_the_history_check_tells_history_from_product(text: str, found: bool) -> None:
    text = NOT_HISTORY.sub("", text)
    hits = HISTORY.findall(text) + USER_PAGE_ONLY.findall(text)
    assert bool(hits) is found, hits


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


# -- every event reason the code emits is in troubleshooting's table ---------------
#
# Reasons are found in the source, where an event is made: ``Event(type, REASON, ...)``,
# ``recorder.event(obj, type, REASON, ...)``, ``warn(ctx, owner, REASON, ...)`` and the
# status's ``_fail(job, update, REASON, ...)``; a create's ``failed=(REASON, message)``
# (or such a pair bound to a name ending in ``failed``); and every module constant whose
# name ends in ``REASON``. A reason given as a literal or a module constant is resolved;
# any other (a variable) must be one of DYNAMIC_REASON_SITES, whose reasons come from
# constants found above, or from the API server.

PACKAGE = ROOT / "mpi_operator"
TROUBLESHOOTING = DOCS / "operations" / "troubleshooting.md"
#: Where the reason argument is, by the called name.
REASON_ARGUMENT = {"Event": 1, "event": 2, "warn": 2, "_fail": 2}
#: Event sites whose reason is a variable: where it comes from.
DYNAMIC_REASON_SITES = {
    # The launcher Job's Failed condition's reason (the API server's), else MPIJobFailed.
    "mpi_operator.controller.kubeflow.job_status:_launcher_status",
    # _fail's callers pass constants (found at their calls).
    "mpi_operator.controller.kubeflow.status:_fail",
    # A failure policy's Decision: one of policy.py's *_REASON constants.
    "mpi_operator.controller.kubeflow.status:mark",
    # The launcher builder's warnings: builders' *_REASON constants.
    "mpi_operator.controller.kubeflow.children:_report_warnings",
    # owner.warn and create_or_adopt's ``failed``: constants at their callers.
    "mpi_operator.controller.core.owner:warn",
    "mpi_operator.controller.core.owner:_create",
    "mpi_operator.controller.core.writes:write_status",
}


def _called_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _reasons_in(path: Path) -> tuple[set[str], set[str]]:
    """The reasons ``path`` emits, and the sites whose reason is a variable."""
    module_name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    module = importlib.import_module(module_name)
    tree = ast.parse(path.read_text())
    reasons: set[str] = set()
    dynamic: set[str] = set()

    def resolve(node: ast.expr, site: str) -> None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            reasons.add(node.value)
        elif isinstance(node, ast.Name) and isinstance(getattr(module, node.id, None), str):
            reasons.add(getattr(module, node.id))
        else:
            dynamic.add(f"{module_name}:{site}")

    def pair(node: ast.expr | None, site: str) -> None:
        if isinstance(node, ast.Tuple) and len(node.elts) == 2:
            resolve(node.elts[0], site)

    def visit(node: ast.AST, site: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = site
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner = child.name
            if isinstance(child, ast.Call):
                index = REASON_ARGUMENT.get(_called_name(child))
                if index is not None and len(child.args) > index:
                    resolve(child.args[index], inner)
                for keyword in child.keywords:
                    if keyword.arg == "failed":
                        pair(keyword.value, inner)
            if isinstance(child, ast.Assign):
                for target in child.targets:
                    name = getattr(target, "id", "")
                    if name.lower().endswith("failed"):
                        pair(child.value, inner)
                    if name.endswith("REASON"):
                        resolve(child.value, inner)
            visit(child, inner)

    visit(tree, "<module>")
    return reasons, dynamic


def _emitted_reasons() -> tuple[set[str], set[str]]:
    reasons: set[str] = set()
    dynamic: set[str] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        if "sdk" in path.relative_to(PACKAGE).parts:
            continue  # the SDK emits no events
        found, sites = _reasons_in(path)
        reasons |= found
        dynamic |= sites
    return reasons, dynamic


def test_every_event_reason_the_code_emits_is_in_troubleshooting() -> None:
    reasons, dynamic = _emitted_reasons()
    assert dynamic <= DYNAMIC_REASON_SITES, "say where these sites' reasons come from"
    assert {"MPIJobCreated", "SyncFailed", "ValidationError"} <= reasons  # the scan works
    table = set(re.findall(r"^\| `([^|]*)`", TROUBLESHOOTING.read_text(), re.MULTILINE))
    documented = {r.strip() for row in table for r in row.replace("`", "").split(",")}
    assert sorted(reasons - documented) == []
