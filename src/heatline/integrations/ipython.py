"""IPython and Jupyter magics: ``%load_ext heatline``, then ``%heatline [options] statement``
and ``%%heatline [options]`` on a cell, with the command line's options (``heatline --help``).

The code runs in the notebook's namespace between heatline.start() and heatline.stop() (api.py),
compiled under the name IPython gives cells (``/tmp/ipykernel_PID/HASH.py`` in a kernel,
``<ipython-input-N-HASH>`` in a terminal), whose source IPython keeps in linecache: the
profile's lines are the cell's lines, and functions defined in earlier cells are reported
under their own cells. The report is shown as HTML in a notebook (the self-contained page of
``--html`` in an iframe, with the terminal report as the plain-text alternative) and as text
in a terminal IPython. ``-o FILE`` also writes the profile, as on the command line, and
``-q`` shows nothing; either way the :class:`heatline.Profile` is left in the notebook's
variable ``_heatline_profile`` for code (``_heatline_profile.lines()``).

Imported by ``%load_ext heatline`` only (heatline.load_ipython_extension).
"""

from __future__ import annotations

import argparse
import html
import io
import os
import re
import sys
import threading
from typing import Any

from heatline.data.reshape import renamed_files, without_threads
from heatline.options import RUN_OPTIONS, Options, only_implies_all

# Options that make no sense around a statement: --off would profile nothing.
_LEFT_OUT = {"off"}
# A thread without a Python thread state (native frames) already running before the cell is the
# kernel's (ZeroMQ's I/O threads) when it used less CPU than this share of the cell's time: a
# BLAS pool an earlier cell started and this one kept busy uses more and stays.
_IDLE_NATIVE_SHARE = 0.05
_IFRAME_HEIGHT_PX = 640


def load(ipython: Any) -> None:
    """Register the magics on an InteractiveShell."""
    from IPython.core.magic import Magics, line_cell_magic, magics_class, needs_local_scope

    @magics_class
    class HeatlineMagics(Magics):
        @needs_local_scope
        @line_cell_magic
        def heatline(self, line: str, cell: str | None = None, local_ns: Any = None) -> Any:
            """Profile a statement (%heatline [options] statement) or a cell
            (%%heatline [options]) with heatline; options as on the command line."""
            return run_magic(self.shell, line, cell, local_ns)

    ipython.register_magics(HeatlineMagics)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        from IPython.core.error import UsageError

        raise UsageError(f"heatline: error: {message}")


def _parser() -> _Parser:
    from heatline.cli.common import add_format_shortcuts, add_option

    parser = _Parser(prog="%heatline", add_help=False, allow_abbrev=False)
    for option in RUN_OPTIONS:
        if option.dest not in _LEFT_OUT:
            add_option(parser, option)
    add_format_shortcuts(parser)
    parser.add_argument("--kernel-threads", action="store_true",
                        help="also show the threads that were running before the cell (the "
                        "kernel's own: heartbeat, I/O, history) that ran no code of yours")
    return parser


def parse(line: str) -> tuple[Options, str]:
    """The options at the start of ``line`` and the rest of it (the statement, as typed);
    the magic's own ``--kernel-threads`` is ``options.kernel_threads``."""
    from heatline.cli.common import split_argv

    words = line.split()
    option_words, _ = split_argv(words)
    rest = re.sub(r"^\s*" + r"\S+\s+" * len(option_words), "", line + " ", count=1).strip()
    values = vars(_parser().parse_args(option_words))
    if values["outfile"] is None and values["format"] in ("html", "json"):
        values["outfile"] = f"profile.{values['format']}"
    if values["outfile"] is not None:
        values["outfile"] = os.path.abspath(values["outfile"])
    only_implies_all(values)
    kernel_threads = values.pop("kernel_threads")
    options = Options(**values)
    options.kernel_threads = kernel_threads  # type: ignore[attr-defined]
    return options, rest


def run_magic(shell: Any, line: str, cell: str | None, local_ns: Any) -> Any:
    from heatline import api

    options, statement = parse(line)
    source = cell if cell is not None else statement
    if not source.strip():
        from IPython.core.error import UsageError

        raise UsageError("heatline: error: nothing to profile: give a statement "
                         "(%heatline f()) or use %%heatline on a cell")
    transformed = shell.transform_cell(source)
    # A cell file name of IPython's own (linecache holds its source), counted like a cell.
    filename = shell.compile.cache(transformed, _running_cell(shell))
    code = compile(transformed, filename, "exec", dont_inherit=True)
    namespace = shell.user_ns if local_ns is None or cell is not None else local_ns
    # The threads already running, but for this one: the kernel's (heartbeat, I/O, history...).
    # Those that ran no line of the notebook's are left out of the profile: they are not the
    # cell's, and their idle time filled the threads table and the flame graph.
    before = {thread.native_id for thread in threading.enumerate()} - {threading.get_native_id()}
    tasks_before = _task_ids() - {threading.get_native_id()}
    # The options as the user gave them, but -o: written below, once the profile is the cell's.
    # quiet only decides whether the report is shown.
    recorded = Options(**{**{option.dest: getattr(options, option.dest)
                             for option in RUN_OPTIONS}, "outfile": None})
    api.start_with_options(recorded, program=cell_name(shell, filename) or filename)
    try:
        exec(code, shell.user_global_ns, namespace)  # noqa: S102 -- running the cell is the point
    finally:
        data = api.stop().data
    if not getattr(options, "kernel_threads", False):
        idle = {thread["native_id"] for thread in data.get("threads", [])
                if thread.get("python") is False and thread["native_id"] in tasks_before
                and thread.get("cpu_s", 0) < _IDLE_NATIVE_SHARE * data.get("elapsed_s", 0)}
        without_threads(data, before | idle)
    renamed_files(data, cell_names(shell, data))
    result = api.Profile(data, reduced=options.reduced_profile,
                         threshold_pct=options.threshold_pct)
    if options.outfile:
        result.save(options.outfile, format=options.format)
    shell.user_ns["_heatline_profile"] = result
    if not options.quiet:
        show(shell, result)
    return None


def _task_ids() -> set[int]:
    """The kernel ids of the process's threads, Python's or not (none where /proc is not)."""
    try:
        return {int(task) for task in os.listdir("/proc/self/task")}
    except OSError:
        return set()


def _running_cell(shell: Any) -> int:
    """The number of the cell that runs the magic: IPython's execution count has already moved
    on to the next cell's while a cell runs (not while a script's cells run), so the cell is
    found on the stack, by the file name IPython compiled it under."""
    numbers = getattr(shell.compile, "_filename_map", {})
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename in numbers:
            return int(numbers[frame.f_code.co_filename])
        frame = frame.f_back
    return int(shell.execution_count)


_TERMINAL_CELL = re.compile(r"<ipython-input-(\d+)-[0-9a-f]+>")


def cell_name(shell: Any, path: str) -> str | None:
    """What IPython calls the cell compiled under ``path`` in its tracebacks ("Cell In[3]"),
    or None when ``path`` is no cell of this shell."""
    compiler = getattr(shell, "compile", None)
    format_code_name = getattr(compiler, "format_code_name", None)
    if format_code_name is not None:  # IPython 8 and later
        label = format_code_name(path)
        if label:
            return " ".join(label)
    match = _TERMINAL_CELL.fullmatch(path)
    return f"In [{match.group(1)}]" if match else None


def cell_names(shell: Any, data: dict[str, Any]) -> dict[str, str]:
    """Every cell file the profile names -> its cell's name. Where two files are the same cell
    (the cell holding the ``%%heatline`` line and the body it runs are both In[n]), the busier
    keeps the name and the other gets it with " (2)" after it (never the temporary file's
    path, which names nothing a user wrote: 3.9 lists the magic's own file for its memory)."""
    paths = list(data.get("files", {}))
    paths += [frame.get("file", "") for frame in data.get("stacks", {}).get("frames", [])]
    names: dict[str, str] = {}
    taken = {path for path in paths}
    for path in dict.fromkeys(paths):  # in the profile's order: the busiest file first
        name = cell_name(shell, path)
        if name is None:
            continue
        unique, count = name, 1
        while unique in taken:
            count += 1
            unique = f"{name} ({count})"
        names[path] = unique
        taken.add(unique)
    return names


def show(shell: Any, result: Any) -> None:
    """The report: HTML with a plain-text alternative in a notebook, text in a terminal."""
    text = io.StringIO()
    result.print(file=text)
    if getattr(shell, "kernel", None) is None:  # terminal IPython
        print(text.getvalue(), end="")
        return
    from IPython.display import display

    from heatline.renderers import render_bytes

    page = render_bytes(result.data, "html").decode("utf-8")
    frame = (f'<iframe srcdoc="{html.escape(page, quote=True)}" '
             f'style="width:100%;height:{_IFRAME_HEIGHT_PX}px;border:1px solid #ccc" '
             'title="heatline profile"></iframe>')
    # The plain alternative (jupyter console, a notebook converted to text) without colours.
    plain = re.sub(r"\x1b\[[0-9;]*m", "", text.getvalue())
    display({"text/plain": plain, "text/html": frame}, raw=True)
