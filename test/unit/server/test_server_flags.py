"""The flag table: one declaration per flag, from which the parser, --help and the
table of docs/operations/flags.md come; -v=N as a log level."""

from __future__ import annotations

import argparse
import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mpi_operator.cmd import main
from mpi_operator.server.flags import KLOG, KLOG_FLAGS, Flag, flag, option_flags
from mpi_operator.server.options import ServerOptions, all_flags, new_parser, parse_args

ROOT = Path(__file__).resolve().parents[3]


def _help_entries(text: str) -> dict[str, str]:
    """Each option's entry in --help: its first line (the option strings) and its help."""
    entries: dict[str, str] = {}
    current = ""
    for line in text.splitlines():
        match = re.match(r"^  (-{1,2}[\w-]+)", line)
        if match:
            current = match.group(1)
            entries[current] = line
        elif current and line.startswith("    "):
            entries[current] += " " + line.strip()
        else:
            current = ""
    return entries


def test_every_option_field_declares_one_flag() -> None:
    fields = [f.name for f in dataclasses.fields(ServerOptions)]
    assert [spec.dest for spec in option_flags(ServerOptions)] == fields
    names = [spec.name for spec in all_flags()]
    assert len(names) == len(set(names))
    # The parser has exactly the declared flags (and --help).
    parser = new_parser({})
    parsed = [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]
    assert [a.option_strings[-1] for a in parsed] == [f"--{n}" for n in names]


def test_a_field_without_a_flag_is_refused() -> None:
    @dataclasses.dataclass(frozen=True)
    class Bad:
        ok: int = flag("ok", 1, "fine")
        bare: int = 2

    with pytest.raises(TypeError, match=r"Bad\.bare declares no flag"):
        option_flags(Bad)


def test_help_shows_every_flag_with_help_and_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    entries = _help_entries(out)
    for spec in all_flags():
        entry = entries[spec.option_strings[0]]
        assert spec.help.split()[0] in entry, entry
        assert f"(default: {spec.shown_default})" in " ".join(entry.split()), entry
    # As the check: `mpi-operator --help | grep -c default` covers every flag.
    assert sum("default" in line for line in out.splitlines()) >= len(all_flags())


@pytest.mark.parametrize(
    ("spec", "shown"),
    [
        (Flag("x", "x", "", "h"), '""'),
        (Flag("x", "x", 2, "h"), "2"),
        (Flag("x", "x", 15.0, "h"), "15"),
        (Flag("x", "x", 0.5, "h"), "0.5"),
        (Flag("x", "x", True, "h"), "true"),
        (Flag("x", "x", "", "h", default_text="$VAR, else y"), "$VAR, else y"),
    ],
)
def test_defaults_shown_as_go_prints_them(spec: Flag, shown: str) -> None:
    assert spec.shown_default == shown


#: Flags whose values have a form of their own.
_EXAMPLES = {"metrics-bind-address": "127.0.0.1:9090", "health-probe-bind-address": ":9440"}


def _other_value(spec: Flag) -> tuple[str, object]:
    """A value other than the default, as typed and as parsed."""
    if spec.name in _EXAMPLES:
        return _EXAMPLES[spec.name], _EXAMPLES[spec.name]
    if isinstance(spec.default, bool):
        return str(not spec.default).lower(), not spec.default
    if isinstance(spec.default, int | float):
        # +1 keeps the leader-election timings in their valid order.
        return str(spec.default + 1), spec.default + 1
    if spec.choices:
        other = next(c for c in spec.choices if c != spec.default)
        return other, other
    return "team-a", "team-a"


@pytest.mark.parametrize("spec", option_flags(ServerOptions), ids=lambda s: s.name)
def test_each_flag_parses_into_its_option(spec: Flag) -> None:
    typed, parsed = _other_value(spec)
    for argv in ([f"--{spec.name}={typed}"], [f"-{spec.name}", typed]):
        opts = parse_args(argv, {})
        assert getattr(opts, spec.dest) == parsed
        assert dataclasses.replace(opts, **{spec.dest: spec.default}) == ServerOptions()


@pytest.mark.parametrize(
    ("argv", "level"),
    [
        ([], "info"),
        (["-v=0"], "info"),
        (["-v=2"], "info"),
        (["-v=3"], "info"),
        (["-v=4"], "debug"),
        (["-v=10"], "debug"),
        (["--v=4"], "debug"),
        (["-v", "5"], "debug"),
        (["-alsologtostderr", "-v=4"], "debug"),
        # The last of -v and --log-level wins.
        (["--log-level=error", "-v=4"], "debug"),
        (["-v=4", "--log-level=error"], "error"),
        (["-v=1", "--log-level=warning"], "warning"),
        (["--log-level=warning", "-v=1"], "info"),
    ],
)
def test_klog_verbosity_maps_onto_the_log_level(argv: list[str], level: str) -> None:
    assert parse_args(argv, {}).log_level == level


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-v=x"], "argument -v/--v: invalid verbosity 'x': not an integer"),
        (["-v=-1"], "argument -v/--v: invalid verbosity '-1': negative"),
    ],
)
def test_bad_verbosity_exits_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args(argv, {})
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_klog_flags_other_than_v_set_no_option() -> None:
    argv = [
        "-alsologtostderr",
        "-logtostderr=false",
        "-add_dir_header",
        "-skip_headers=true",
        "-vmodule=x=2",
        "-stderrthreshold=INFO",
        "-log_dir=/tmp",
        "-log_file=/tmp/x",
    ]
    assert parse_args(argv, {}) == ServerOptions()
    assert {spec.group for spec in KLOG_FLAGS} == {KLOG}


def test_docs_table_of_flags_is_current() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "hack" / "readme_flags.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    readme = (ROOT / "docs" / "operations" / "flags.md").read_text()
    for spec in all_flags():
        assert f"| `{spec.option_strings[0]}` |" in readme


def test_t9k_init_image_defaults_to_pinned_busybox_and_takes_another() -> None:
    from mpi_operator.builders.t9k.pods import DEFAULT_INIT_IMAGE

    assert parse_args([], {}).t9k_init_image == DEFAULT_INIT_IMAGE
    opts = parse_args(["--t9k-init-image=registry.example.org/tools/wait:1"], {})
    assert opts.t9k_init_image == "registry.example.org/tools/wait:1"
    for bad in ("", "a b"):
        with pytest.raises(SystemExit):
            parse_args([f"--t9k-init-image={bad}"], {})
