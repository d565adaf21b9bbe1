"""docs/cli.md, the reference of every command and option, generated from the parsers the
commands build (their options come from the tables of heatline/options.py), so the reference
and ``--help`` cannot disagree. ``python -m heatline.cli.reference [PATH]`` (``make docs``)
writes it; tests/unit/test_cli_reference.py checks the file is what this writes."""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from heatline import options as table

# The commands, in the order of the reference: (command, the module whose parser it uses).
COMMANDS = (
    ("run", "run"),
    ("view", "view"),
    ("diff", "diff"),
    ("merge", "merge"),
    ("check", "check"),
    ("attach", "attach"),
    ("dump", "dump"),
    ("top", "top"),
    ("ctl", "ctl"),
)

# The synopsis of `heatline [run]`, whose parser's usage lists every command.
RUN_SYNOPSIS = """\
heatline [run] [options] script.py [args...]
heatline [run] [options] -m module [args...]
heatline [run] [options] console-script [args...]
heatline [options] -- command [args...]
python -m heatline [options] script.py [args...]"""

# What an option's one-line help leaves out, keyed by the option's first flag (a negatable
# option's --FLAG) for the options of `heatline run` (wherever they appear), and by "COMMAND
# FLAG" for another command's own. Links are relative to docs/.
NOTES = {
    "-o": (
        "The suffix picks the format: `.html`, `.json`, `.pb.gz`/`.pprof`, `.speedscope.json`, "
        "`.collapsed`/`.folded`, `.trace.json`/`.perfetto.json`, `.otlp.pb` (OTLP profiles), "
        "`.txt` (the terminal report); "
        "any other suffix writes JSON (profile-format.md). The file is replaced atomically, "
        "keeping its permissions and symlink; heatline refuses to overwrite the script itself. "
        "If the profile cannot be written, heatline says so in one line and exits with status 1. "
        "The formats: running.md."
    ),
    "--sampling-interval": (
        "The intervals are drawn at random around the mean, so that periodic work in the program "
        "is not sampled in step. Smaller is more precise and costs more (overhead.md). The "
        "engine accepts greater than 0 and at most 1 second. `ctl on`/`off` are applied within "
        "about 100 ms, or one interval when it is longer."
    ),
    "--cpu-only": (
        "No allocator hooks and no copy redirection: slightly lower overhead on "
        "allocation-heavy code. The memory columns, leaks and the memory plot are absent."
    ),
    "--memory-sampling-window": (
        "A size in bytes, or with a binary suffix: `16K`, `1M` (K, M, G are powers of 1024). "
        "An allocation of at least the window is always counted exactly; smaller ones are "
        "sampled so that each line's total is right on average. From 64 bytes to 1G."
    ),
    "--gpu": (
        "Per line: device time of the kernels, copies and memsets it launched, copy bytes, "
        "device memory allocated; per device: utilisation and memory over time; the top kernels "
        "with the lines that launched them. heatline loads the driver's `libnvidia-ml.so.1` and "
        "CUPTI's `libcupti.so` at run time (nothing CUDA is needed to install heatline). Where "
        "CUPTI is not on the library path (it ships with the CUDA toolkit and in the "
        "`nvidia-cuda-cupti-cu12` wheel), `HEATLINE_CUPTI_LIBRARY` names it; "
        "`HEATLINE_NVML_LIBRARY` does the same for NVML. When CUPTI is missing or used by another "
        "profiler (torch.profiler, Nsight), a warning says so and only device utilisation and "
        "memory are reported."
    ),
    "--native": (
        "Under each line with native time, the C functions that time went to "
        "(`dgemm_kernel_HASWELL (libopenblas) 87%`): in the report, in the profile file "
        "(`native_functions`), as one more frame under the Python stack in the flame graph and "
        "the collapsed, speedscope, pprof and Chrome exports, and in the HTML report's "
        "\"Native functions\" table. The samples come from one user-space CPU-clock event per "
        "thread (`perf_event_open`), read by heatline's sampler thread: no signal, no descriptor "
        "in the program's table. Where the kernel refuses the event "
        "(`kernel.perf_event_paranoid` 3, a container's seccomp profile) a warning says how to "
        "allow it (`sysctl kernel.perf_event_paranoid=2`, `--cap-add PERFMON`) and the rest of "
        "the profile is unchanged. Threads that run no Python (a BLAS or OpenMP pool, a C "
        "library's own pthread) are listed as threads of their own, "
        "`native thread 4242 (libopenblas)`, with their CPU time and native functions, not under "
        "a line: the line that handed them their work cannot be known. Only the innermost "
        "function is named (most wheels are built without frame pointers, so callers are not "
        "reliable); a library stripped of its `.symtab` names only its exported functions, the "
        "rest is `[unknown]`."
    ),
    "--cpu-percent-threshold": (
        "Lines at or above the threshold are highlighted in the report and kept by "
        "`--reduced-profile`."
    ),
    "--reduced-profile": (
        "Also keeps, with memory on, the lines and functions that allocate at least 1% of all "
        "bytes allocated."
    ),
    "--malloc-threshold": (
        "As Scalene's option, it counts allocation samples, one per sampling window of bytes: a "
        "line's or function's allocation figures (allocated, freed, growth, peak, timeline, leak) "
        "are shown only when it allocated at least N x `--memory-sampling-window` bytes (a large "
        "allocation counts as the windows it spans). Copies are always shown. The report only: "
        "the `-o` profile keeps every figure."
    ),
    "--use-virtual-time": (
        "Blocked time (sleep, I/O, locks) is dropped from the profile and shares are of running "
        "time. A thread waiting for a CPU still counts as running, except one woken from a wait "
        "that has not run since (its wake-up on a busy machine is the tail of its sleep)."
    ),
    "--profile-all": (
        "By default only your own code is reported: time spent in the standard library or in "
        "installed packages is charged to the line of your code that called into them. The "
        "console-script launchers pip writes (`venv/bin/pytest`) count as their package's code."
    ),
    "--profile-only": "No `--profile-all` is needed to name library files.",
    "--no-children": (
        "By default every Python child process is profiled with the same options and merged "
        "into one report: `os.fork()`, `multiprocessing` (fork, spawn, forkserver), "
        "`subprocess`, `os.exec*` and `posix_spawn` of a Python interpreter (running.md)."
    ),
    "--write-interval": (
        "Each write replaces the file whole, so a reader never sees half a profile; the last "
        "write, at exit, is the full profile. No thread is added: the sampler asks the main "
        "thread to write between two of its instructions, with sampling paused meanwhile, so "
        "the writing is charged to no line. The main thread must be running Python code for a "
        "write to happen (one blocked in a long C call or `join()` writes when it returns). "
        "Not available under `heatline attach`."
    ),
    "--pprof-server": (
        "The paths, what each serves, and what a request costs the program: live-tools.md."
    ),
    "--off": (
        "Profiling starts when the program calls `heatline.resume()`, or when "
        "`heatline ctl on PID` is run from another shell; the report says how much of the "
        "elapsed time was profiled."
    ),
    "check --budget": (
        "A budget file has the limits as keys named like the flags: "
        "`max-peak = \"500MiB\"`, `no-leaks = true`, "
        "`max-line-peak = { \"app.py:42\" = \"100MiB\" }`. TOML needs Python 3.11+ or the "
        "`tomli` package, which heatline requires before 3.11 (integrations.md)."
    ),
    "top --sampling-interval": (
        "Readings are taken from outside the process, so they cost the program nothing but take "
        "heatline top's own CPU: about 4% of one CPU at 0.01 and 12% at 0.001 (live-tools.md)."
    ),
    "dump --no-pause": (
        "By default the threads are stopped with ptrace (`PTRACE_SEIZE` + `PTRACE_INTERRUPT`: no "
        "SIGSTOP the program would see) while their stacks are read, then let go. A process "
        "already traced (gdb, strace) is read without stopping, with a note (live-tools.md)."
    ),
}

# The option tables, for each flag the Option it comes from.
_TABLES = (
    table.RUN_OPTIONS, table.VIEW_OPTIONS, table.DIFF_OPTIONS, table.CHECK_OPTIONS,
    table.DUMP_OPTIONS, table.TOP_OPTIONS, table.ATTACH_OPTIONS, table.MERGE_OPTIONS,
)


class _Captured(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__(parser.prog)
        self.parser = parser


@contextmanager
def _capturing_help() -> Iterator[None]:
    """While active, ``--help`` hands over the parser that got it instead of printing."""

    def capture(parser: argparse.ArgumentParser, file: Any = None) -> None:
        raise _Captured(parser)

    saved = argparse.ArgumentParser.print_help
    argparse.ArgumentParser.print_help = capture  # type: ignore[method-assign]
    try:
        yield
    finally:
        argparse.ArgumentParser.print_help = saved  # type: ignore[method-assign]


def parser_of(command: str) -> argparse.ArgumentParser:
    """The parser `heatline COMMAND` builds, as its own code builds it (given --help)."""
    module = importlib.import_module(f"heatline.cli.{command}")
    with _capturing_help():
        try:
            if command == "run":
                module.parser().parse_args(["--help"])
            else:
                module.run(["--help"])
        except _Captured as captured:
            return captured.parser
    raise RuntimeError(f"heatline {command} --help did not reach its parser")


def option_of(action: argparse.Action) -> table.Option | None:
    """The table's Option an argparse action was added from (cli/common.py, add_option), if
    any: the same flags and the same help."""
    for options in _TABLES:
        for option in options:
            # startswith: argparse before 3.11 appends the default to a --FLAG/--no-FLAG help.
            if set(action.option_strings) <= set(option.all_flags) and (
                action.help or ""
            ).startswith(option.help):
                return option
    return None


def _default(option: table.Option) -> str:
    if option.negatable:
        return {None: "auto", True: "on", False: "off"}[option.default]
    value = option.default
    if value is None or value == []:
        return "none"
    if isinstance(value, int) and option.dest.endswith("_bytes") and value % 1024 == 0:
        return f"{value // 1024}K"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _spelled(flags: list[str] | tuple[str, ...], metavar: str | None) -> str:
    return ", ".join(f"`{flag} {metavar}`" if metavar else f"`{flag}`" for flag in flags)


# A guide's file name in a note or the introduction, made a link (relative to docs/).
_GUIDE = re.compile(
    r"(?<![\[/\w-])(?<!\]\()((?:running|live-tools|integrations|design|profile-format|overhead|accuracy)"
    r"\.md)(?![\]\w])"
)


def _linked(text: str) -> str:
    return _GUIDE.sub(r"[\1](\1)", text)


def _sentence(text: str | None) -> str:
    text = " ".join((text or "").split())
    return text if text.endswith(".") else text + "."


def note_of(command: str, option: table.Option) -> tuple[str, str | None]:
    """The NOTES key for an option of a command, and its note if there is one."""
    key = f"{command} {option.flags[0]}"
    if key not in NOTES and option in table.RUN_OPTIONS:
        key = option.flags[0]
    return key, NOTES.get(key)


def _entry(command: str, action: argparse.Action, used: set[str]) -> list[str]:
    option = option_of(action)
    note = None
    if option is not None:
        flags = option.all_flags if option.negatable else option.flags
        head = f"- {_spelled(flags, option.metavar)}"
        if (option.takes_value or option.negatable) and "default" not in option.help:
            head += f" (default: {_default(option)})"
        if option.repeat:
            head += " (repeatable)"
        lines = [f"{head}: {_sentence(option.help)}"]
        key, note = note_of(command, option)
        if note:
            used.add(key)
    else:
        metavar = action.metavar if action.nargs != 0 else None
        lines = [f"- {_spelled(action.option_strings, metavar)}: {_sentence(action.help)}"]
    if note:
        lines += ["", f"  {_linked(note)}"]
    return lines


def _positional(action: argparse.Action) -> str:
    name = action.metavar or action.dest
    if action.choices:
        name = "|".join(action.choices)
    return name


def _synopsis(command: str, parser: argparse.ArgumentParser) -> str:
    if command == "run":
        return RUN_SYNOPSIS
    if parser.usage:
        return "\n".join(line.strip() for line in parser.usage.splitlines())
    positionals = [_positional(a) for a in parser._actions if not a.option_strings]
    return " ".join([parser.prog, "[options]", *positionals])


def _run_flags(parser: argparse.ArgumentParser) -> set[str]:
    return {flag for action in parser._actions for flag in action.option_strings}


def render(used: set[str] | None = None) -> str:
    """The text of docs/cli.md; adds to ``used`` the NOTES keys it used."""
    used = set() if used is None else used
    run_parser = parser_of("run")
    run_flags = _run_flags(run_parser)
    every_run_option = {flag for option in table.RUN_OPTIONS for flag in option.all_flags}
    out = [
        "<!-- Generated by `make docs` (python -m heatline.cli.reference) from the parsers and "
        "the option tables of src/heatline/options.py; edit those, not this file. -->",
        "",
        "# heatline's command line",
        "",
        _linked(
            "Every command and every option, as `heatline COMMAND --help` gives them. "
            "heatline's options come before the script; everything after the script (or "
            "`-m module`) is the program's own command line. A mistake on the command line is "
            "one `heatline: error: ...` line on stderr and exit status 2. The user guide: "
            "running.md (running a program, the report, formats), live-tools.md (attach, dump, "
            "top, ctl, the pprof server), integrations.md (the API, `@profile`, pytest, Jupyter, "
            "budgets)."
        ),
        "",
        "An option's value has one name from the command line to the profile: the flag is "
        "that name without its unit, which the value's placeholder gives (`--sampling-interval "
        "SECONDS` is `sampling_interval_s` in the API's Session, the engine and the profile, "
        "`--memory-sampling-window BYTES` is `memory_sampling_window_bytes`). A flag of an "
        "earlier release (" + ", ".join(f"`{old}`" for old in table.RENAMED_FLAGS)
        + ") stops with an error that names the flag that replaced it.",
        "",
        "Commands: "
        + ", ".join(f"[`heatline {name}`](#heatline-{name})" for name, _ in COMMANDS) + ".",
        "",
    ]
    for command, _module in COMMANDS:
        parser = run_parser if command == "run" else parser_of(command)
        out += [f"## heatline {command}", "", "```", _synopsis(command, parser), "```", ""]
        description = " ".join((parser.description or "").split())
        if description:
            out += [description, ""]
        positionals = [a for a in parser._actions if not a.option_strings]
        for action in positionals:
            if action.help:
                out.append(f"- `{_positional(action)}`: {_sentence(action.help)}")
        if any(action.help for action in positionals):
            out.append("")
        has_run_options = command != "run" and every_run_option <= _run_flags(parser)
        if has_run_options:
            out += ["Every option of `heatline run` applies too; besides those:", ""]
        for action in parser._actions:
            if not action.option_strings:
                continue
            if has_run_options and set(action.option_strings) <= run_flags:
                continue
            out += _entry(command, action, used)
        out.append("")
        if command == "run" and parser.epilog:
            out += [" ".join(parser.epilog.split()), ""]
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = args[0] if args else "docs/cli.md"
    with open(path, "w", encoding="utf-8") as file:
        file.write(render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
