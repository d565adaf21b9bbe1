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
from typing import Any

from heatline.options import RUN_OPTIONS, Options, only_implies_all

# Options that make no sense around a statement: --off would profile nothing.
_LEFT_OUT = {"off"}
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
    return parser


def parse(line: str) -> tuple[Options, str]:
    """The options at the start of ``line`` and the rest of it (the statement, as typed)."""
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
    return Options(**values), rest


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
    filename = shell.compile.cache(transformed, shell.execution_count)
    code = compile(transformed, filename, "exec", dont_inherit=True)
    namespace = shell.user_ns if local_ns is None or cell is not None else local_ns
    # The options as the user gave them; quiet only decides whether the report is shown.
    api._start(options)
    try:
        exec(code, shell.user_global_ns, namespace)  # noqa: S102 -- running the cell is the point
    finally:
        result = api.stop()
    shell.user_ns["_heatline_profile"] = result
    if not options.quiet:
        show(shell, result)
    return None


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
