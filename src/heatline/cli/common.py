"""What every subcommand's command line shares: the parser whose usage errors are one line,
options added from the options table (heatline/options.py), the split between heatline's
options and the program's command line, and the check of an output file."""

from __future__ import annotations

import os
import sys

from heatline.options import RENAMED_FLAGS, RUN_OPTIONS, Option

# typing and collections.abc only for type checkers: a run's path imports neither
# (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import Any, NoReturn

    class Parser(argparse.ArgumentParser): ...


def _parser_class() -> type:
    """Parser: argparse, but a usage error is one line, not the usage text plus a message; and
    its help is as wide as the terminal without argparse importing shutil (and with it bz2,
    lzma, zlib, fnmatch) to ask: it makes a help formatter for every option added, so every run
    paid about 2 ms and 1.7 MB of the main process's memory (mapped again by every fork child)
    for an import only --help needs. Made on first use (this module's __getattr__): a run whose
    command line cli/run.py reads without argparse does not import it (10 M instructions)."""
    import argparse

    class Parser(argparse.ArgumentParser):
        __doc__ = _parser_class.__doc__

        def __init__(self, *args: Any, formatter_class: Any = argparse.HelpFormatter,
                     **kwargs: Any) -> None:
            def formatter(prog: str, **more: Any) -> argparse.HelpFormatter:
                return formatter_class(prog, width=terminal_columns() - 2, **more)

            super().__init__(*args, formatter_class=formatter, **kwargs)

        def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
            refuse_renamed(sys.argv[1:] if args is None else args)
            return super().parse_known_args(args, namespace)

        def error(self, message: str) -> NoReturn:
            fail(message)

    return Parser


def __getattr__(name: str) -> Any:
    if name == "Parser":
        made = globals()["Parser"] = _parser_class()
        return made
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def terminal_columns() -> int:
    """The terminal's width as shutil.get_terminal_size() finds it: $COLUMNS, else the width of
    the terminal on stdout, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


def fail(message: str, status: int = 2) -> NoReturn:
    sys.stderr.write(f"heatline: error: {message}\n")
    sys.stderr.flush()
    raise SystemExit(status)


def refuse_renamed(option_args: Sequence[str]) -> None:
    """A usage error naming the new flag when heatline's options use a renamed one."""
    for argument in option_args:
        flag = argument.partition("=")[0]
        if flag in RENAMED_FLAGS:
            fail(f"{flag} is now {RENAMED_FLAGS[flag]}")


def add_pid(parser: argparse.ArgumentParser) -> None:
    """The PID argument of dump, top and attach (read with parse_pid)."""
    parser.add_argument("pid", metavar="PID", help="the process id of a running Python program")


def parse_pid(text: str) -> int:
    """The PID argument of dump, top and attach; a one-line error unless a whole number."""
    try:
        return int(text)
    except ValueError:
        fail(f"PID must be a process id (a whole number), not {text!r}")


def option_default(option: Option) -> Any:
    """The value an option not given has on the command line (add_option's, and cli/run.py's
    parse_plainly's): a repeatable option's None, a flag's False."""
    if option.repeat:
        return None
    return option.default if option.takes_value or option.negatable else False


def add_option(parser: argparse.ArgumentParser, option: Option) -> None:
    import argparse

    if option.takes_value:
        kwargs: dict = {"metavar": option.metavar, "default": option_default(option)}
        if option.repeat:
            kwargs["action"] = "append"
        if option.parse is not None:
            kwargs["type"] = option.parse
    elif option.negatable:
        kwargs = {"action": argparse.BooleanOptionalAction, "default": option_default(option)}
    else:
        kwargs = {"action": "store_true", "default": option_default(option)}
    parser.add_argument(*option.flags, dest=option.dest, help=option.help, **kwargs)


def add_format_shortcuts(parser: argparse.ArgumentParser) -> None:
    for name in ("html", "json"):
        parser.add_argument(f"--{name}", dest="format", action="store_const", const=name,
                            help=f"same as --format {name} (without -o: writes profile.{name})")


def option_sets(options: Sequence[Option]) -> tuple[frozenset[str], frozenset[str]]:
    """What split_argv needs to know of a parser's options: which take a value (so the scan
    skips it), and which single letters are flags that may be combined (-q; -h from argparse)."""
    values = frozenset(flag for option in options if option.takes_value for flag in option.flags)
    shorts = frozenset(
        {"h"}
        | {
            flag[1]
            for option in options
            if not option.takes_value
            for flag in option.all_flags
            if len(flag) == 2
        }
    )
    return values, shorts


VALUE_OPTIONS, SHORT_FLAGS = option_sets(RUN_OPTIONS)


def split_argv(
    argv: Sequence[str], value_options: frozenset[str] = VALUE_OPTIONS,
    short_flags: frozenset[str] = SHORT_FLAGS,
) -> tuple[list[str], list[str]]:
    """Split ``argv`` into heatline's options and the program's command line.

    The program's command line starts at the first positional argument (the script) or at
    ``-m``; it is handed over untouched, so the program's own options never reach argparse.
    Returns (options, program) where program is [] (none given), [script, *args] or
    ["-m", module, *args].
    """
    argv = list(argv)
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return argv[:i], argv[i + 1 :]
        if arg.startswith("--"):
            # "--opt=value" carries its own value; "--opt value" takes the next argument.
            i += 2 if arg in value_options else 1
        elif arg.startswith("-") and arg != "-":
            cluster = arg[1:]  # short options, possibly combined: -q, -ofile, -qo file, -mmod
            for position, letter in enumerate(cluster):
                attached = cluster[position + 1 :]
                if letter == "m":
                    flags = [f"-{cluster[:position]}"] if position else []
                    if attached:
                        return argv[:i] + flags, ["-m", attached, *argv[i + 1 :]]
                    if i + 1 == len(argv):
                        return argv, []  # argparse reports the missing module name
                    return argv[:i] + flags, ["-m", *argv[i + 1 :]]
                if letter not in short_flags:  # -o (or an unknown option argparse reports)
                    i += 2 if f"-{letter}" in value_options and not attached else 1
                    break
            else:
                i += 1
        else:
            return argv[:i], argv[i:]
    return argv, []


def check_outfile(path: str) -> str:
    """The absolute path of a writable -o file, or a usage error before anything runs."""
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    if os.path.isdir(path):
        fail(f"can't write the profile to '{path}': it is a directory")
    if not os.path.isdir(parent):
        fail(f"can't write the profile to '{path}': directory '{parent}' does not exist")
    if os.path.exists(path):
        if not os.access(path, os.W_OK):
            fail(f"can't write the profile to '{path}': permission denied")
    elif not os.access(parent, os.W_OK | os.X_OK):
        fail(f"can't write the profile to '{path}': directory '{parent}' is not writable")
    return path

