"""One declaration per command-line flag, from which the parser, ``--help`` and the
the table of docs/operations/flags.md are derived.

A flag of :class:`~mpi_operator.server.options.ServerOptions` is declared once,
as the dataclass field's default: ``threadiness: int = flag("threadiness", 2,
"...")``. The field gives the destination and the type, :func:`flag` the
command-line name, the default and the help text. :func:`build_parser` turns
every field, plus the klog flags below (which set no option of their own), into
an argparse parser whose help shows each flag's default.

Go's ``flag`` package accepts ``-name`` as well as ``--name``;
:func:`go_style_argv` rewrites the single-dash spelling of our long flags so
both work here too.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

T = TypeVar("T")

_META_KEY = "mpi_operator.flag"

# Sections of --help (and the flags table's order).
REFERENCE = "flags of the reference operator (same names and defaults, but --kube-api-qps/burst)"
OURS = "flags of this implementation"
TIMINGS = "leader election and shutdown timings, in seconds (this implementation's)"
KLOG = "klog flags of the reference's manifests"
GROUPS = (REFERENCE, OURS, TIMINGS, KLOG)

# klog's -v: V(4) is where the reference's controller logs its per-sync details.
KLOG_DEBUG_VERBOSITY = 4


@dataclass(frozen=True, slots=True)
class Flag:
    """One command-line flag: ``--name`` parsed by ``parse`` into ``dest``."""

    name: str
    dest: str
    default: Any
    help: str
    group: str = REFERENCE
    parse: Callable[[str], Any] | None = None
    """Converts the command-line string; None: from the default's type."""
    choices: tuple[str, ...] | None = None
    env: str = ""
    """An environment variable whose value, when set, is the default."""
    default_text: str = ""
    """How the default is shown, when not as the value itself."""
    reference: str | None = None
    """The reference operator's default, when it differs from ours."""
    spelling_of: str = ""
    """Another flag that sets ``dest`` too; this one then leaves it alone when absent."""

    @property
    def shown_default(self) -> str:
        return self.default_text or show(self.default)

    @property
    def option_strings(self) -> tuple[str, ...]:
        """``--name``; a one-letter flag (klog's ``-v``) also as ``-v``, first."""
        long = f"--{self.name}"
        return (f"-{self.name}", long) if len(self.name) == 1 else (long,)

    @property
    def kind(self) -> str:
        """The value's kind, as Go's flag package names it in its help."""
        if isinstance(self.default, bool):
            return "bool"
        return {int: "int", float: "float"}.get(type(self.default), "string")

    @property
    def is_bool(self) -> bool:
        return isinstance(self.default, bool)


def show(value: object) -> str:
    """A default as Go's flag package would print it."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    if value == "":
        return '""'
    return str(value)


def flag(
    name: str,
    default: T,
    help: str,
    *,
    group: str = REFERENCE,
    parse: Callable[[str], Any] | None = None,
    choices: tuple[str, ...] | None = None,
    env: str = "",
    default_text: str = "",
    reference: str | None = None,
) -> T:
    """A dataclass field default that declares its command-line flag as well."""
    spec = Flag(
        name,
        "",
        default,
        help,
        group=group,
        parse=parse,
        choices=choices,
        env=env,
        default_text=default_text,
        reference=reference,
    )
    return dataclasses.field(default=default, metadata={_META_KEY: spec})


def option_flags(options: type[Any]) -> list[Flag]:
    """The flags declared on the fields of the dataclass ``options``."""
    out = []
    for f in dataclasses.fields(options):
        spec = f.metadata.get(_META_KEY)
        if spec is None:
            raise TypeError(f"{options.__name__}.{f.name} declares no flag")
        out.append(dataclasses.replace(spec, dest=f.name))
    return out


def go_bool(value: str) -> bool:
    """Go's strconv.ParseBool spellings."""
    if value in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if value in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean value {value!r}")


def klog_verbosity(value: str) -> str:
    """``-v=N`` as a ``--log-level``: 0 to 3 is info, 4 and more is debug."""
    try:
        level = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid verbosity {value!r}: not an integer") from None
    if level < 0:
        raise argparse.ArgumentTypeError(f"invalid verbosity {value!r}: negative")
    return "debug" if level >= KLOG_DEBUG_VERBOSITY else "info"


def _ignored(what: str) -> str:
    return f"klog's {what}; accepted and ignored (logs go to stderr, see --log-format)"


KLOG_FLAGS = (
    Flag(
        "v",
        "log_level",
        0,
        f"klog's verbosity, another spelling of --log-level: 0 to "
        f"{KLOG_DEBUG_VERBOSITY - 1} is info, {KLOG_DEBUG_VERBOSITY} and more is debug; "
        "the last of -v and --log-level given wins",
        group=KLOG,
        parse=klog_verbosity,
        spelling_of="log-level",
    ),
    Flag("alsologtostderr", "klog_alsologtostderr", False, _ignored("stderr copy"), group=KLOG),
    Flag("logtostderr", "klog_logtostderr", True, _ignored("stderr switch"), group=KLOG),
    Flag("add_dir_header", "klog_add_dir_header", False, _ignored("header"), group=KLOG),
    Flag("skip_headers", "klog_skip_headers", False, _ignored("header"), group=KLOG),
    Flag("vmodule", "klog_vmodule", "", _ignored("per-file verbosity"), group=KLOG),
    Flag("stderrthreshold", "klog_stderrthreshold", "2", _ignored("threshold"), group=KLOG),
    Flag("log_dir", "klog_log_dir", "", _ignored("log directory"), group=KLOG),
    Flag("log_file", "klog_log_file", "", _ignored("log file"), group=KLOG),
)


def _add(group: Any, spec: Flag, environ: Mapping[str, str]) -> None:
    default = argparse.SUPPRESS if spec.spelling_of else spec.default
    if spec.env and spec.env in environ:
        default = environ[spec.env]
    kwargs: dict[str, Any] = {
        "dest": spec.dest,
        "default": default,
        "help": f"{spec.help} (default: {spec.shown_default})".replace("%", "%%"),
    }
    if spec.is_bool:
        # ``--flag`` or ``--flag=false``, as Go's boolean flags.
        kwargs.update(nargs="?", const=True, type=go_bool, metavar="bool")
    else:
        kwargs["type"] = spec.parse or type(spec.default)
        kwargs["choices"] = spec.choices
        kwargs["metavar"] = "{" + ",".join(spec.choices) + "}" if spec.choices else spec.kind
    group.add_argument(*spec.option_strings, **kwargs)


def suggestion(arg: str, known: Iterable[str]) -> str | None:
    """The known option ``arg`` most likely misspells: the same name in another case
    (``--kubeconfig`` for ``--kubeConfig``) or with ``_`` for ``-``, else a close one."""
    name = arg.split("=", 1)[0]
    if not name.startswith("-"):
        return None
    options = sorted(set(known))

    def folded(option: str) -> str:
        return option.lstrip("-").lower().replace("_", "-")

    same = [o for o in options if folded(o) == folded(name) and o != name]
    if same:
        return same[0]
    import difflib  # only on a usage error: not loaded (about 0.15 MiB) at every start

    close = difflib.get_close_matches(name, options, n=1, cutoff=0.8)
    return close[0] if close else None


class HintingParser(argparse.ArgumentParser):
    """argparse's parser, whose "unrecognized arguments" error names the flag each
    unknown one probably meant."""

    def error(self, message: str) -> NoReturn:
        prefix = "unrecognized arguments: "
        if message.startswith(prefix):
            known = [o for action in self._actions for o in action.option_strings]
            hints = [
                f"{arg} (did you mean {hint}?)"
                for arg in message[len(prefix) :].split()
                if (hint := suggestion(arg, known))
            ]
            if hints:
                message += "; " + "; ".join(hints)
        super().error(message)


def build_parser(
    flags: Iterable[Flag], environ: Mapping[str, str], *, prog: str, description: str
) -> argparse.ArgumentParser:
    parser = HintingParser(prog=prog, description=description, allow_abbrev=False)
    groups = {name: parser.add_argument_group(name) for name in GROUPS}
    for spec in flags:
        _add(groups[spec.group], spec, environ)
    return parser


def long_flag_names(parser: argparse.ArgumentParser) -> set[str]:
    return {
        opt[2:] for action in parser._actions for opt in action.option_strings if opt[:2] == "--"
    }


def go_style_argv(argv: Sequence[str], long_names: set[str]) -> list[str]:
    """Rewrites ``-name[=value]`` to ``--name[=value]`` for known long flags."""
    out: list[str] = []
    for i, arg in enumerate(argv):
        if arg == "--":
            out.extend(argv[i:])
            break
        if arg.startswith("-") and not arg.startswith("--"):
            name = arg[1:].split("=", 1)[0]
            if name in long_names:
                arg = "-" + arg
        out.append(arg)
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def markdown_table(flags: Iterable[Flag]) -> str:
    """The table of flags of docs/operations/flags.md."""
    rows = [
        "| flag | default | reference's default | meaning |",
        "| --- | --- | --- | --- |",
    ]
    for spec in flags:
        if spec.group == REFERENCE:
            reference = spec.reference if spec.reference is not None else "same"
        else:
            reference = "(klog)" if spec.group == KLOG else "(ours)"
        default = _cell(spec.default_text) if spec.default_text else f"`{show(spec.default)}`"
        text = _cell(spec.help)
        name = spec.option_strings[0]
        rows.append(f"| `{name}` | {default} | {reference} | {text} |")
    return "\n".join(rows) + "\n"
