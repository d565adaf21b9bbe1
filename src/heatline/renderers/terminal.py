"""The terminal report: one table of lines per profiled file, then the busiest functions, then
a footer about the run. Written with rich, which adapts to the terminal's width and colours."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import Any, TextIO

from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from heatline.renderers import View, gpu_terminal, labels_terminal
from heatline.renderers.visible import visible
from heatline.options import DEFAULT_SAMPLING_INTERVAL_S
from heatline.data import native as native_report

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: the model imports typing
    from heatline.data.model import CombinedPeak, FileRecord, LineRecord, ProcessRecord, Profile

# At most this many rows in the function summary; the rest are counted in one line.
MAX_FUNCTION_ROWS = 30

_KINDS = ("python", "native", "system")
_HOT_STYLE = "bold red"  # at or above the threshold
_WARM_STYLE = "yellow"  # some time, below the threshold
_IDLE_STYLE = "dim"  # source of lines without time
_NUMBER_HEADERS = ("Python %", "native %", "system %")
# Waiting for a CPU (runnable, on a run queue): a column of its own only in the tables of a run
# that had some (an oversubscribed machine), so an ordinary run's report is unchanged.
_WAIT = ("cpu_wait", "wait %")
# Memory columns of the line table, most important first: as many as fit are shown while
# leaving the source room (_line_columns).
_MEMORY_HEADERS = ("Py MiB", "nat MiB", "peak MiB", "copy MiB/s", "growth MiB", "memory  ")
_MIN_SOURCE_WIDTH = 20
# The line table leaves its source this many columns, or the width of its longest line with
# time or memory when that is less; a longer line wraps (_wrap).
_READABLE_SOURCE = 48
_HANG = 4  # the extra indent of a wrapped source line's continuation
_STACKED_INDENT = 6  # a narrow table's source, on rows of its own
_SPARK = "▁▂▃▄▅▆▇█"
MIB = 1 << 20
_SPARK_WIDTH = 8
_GAP = "   "  # between the columns of the line table
# In the reduced view, a line is also kept when it allocates at least this share of all the
# bytes allocated, whatever its time.
_MEMORY_SHARE_PCT = 1.0


def render(profile: Profile, view: View = View()) -> bytes:
    """The report as text (what ``-o report.txt`` holds): no colour, the default width."""
    import io

    out = io.StringIO()
    print_report(profile, out, view)
    return out.getvalue().encode()


def print_report(profile: Profile, file: TextIO | None = None, view: View = View()) -> None:
    """Print ``profile`` to ``file`` (sys.stderr by default), in colour on a terminal.

    ``view.reduced`` shows only lines and functions whose share of the time is at least
    ``view.threshold_pct``; in the full view such lines are highlighted.
    ``view.malloc_threshold``: see heatline.data.memory.below_malloc_threshold.
    """
    reduced, threshold_pct, malloc_threshold = view
    if malloc_threshold > 1:
        from heatline.data.memory import below_malloc_threshold

        profile = below_malloc_threshold(profile, malloc_threshold)
    console = _console(file if file is not None else sys.stderr)
    console.print(Text.assemble(("heatline", "bold"), f" profile of {visible(profile['program'])}"))
    attached = profile.get("attached")
    if attached:
        ended = "until it exited" if attached.get("ended_by") == "exit" else "until detached"
        console.print(f"attached to process {attached['pid']} at {profile['started_at']}, "
                      f"{ended}: memory held before attaching is not counted")
    if not profile["samples"]:
        if profile.get("profiled_periods") == [] and (profile.get("steps") or {}).get("window"):
            reason = "profiling was never on: the program never reached the --steps window"
        elif profile.get("profiled_periods") == []:
            reason = ("profiling was never on (started with --off, and neither "
                      "heatline.resume() nor heatline ctl on turned it on)")
        else:
            reason = "no samples were taken; try a smaller --sampling-interval"
        console.print(
            f"heatline: the program ran for {_duration(profile['elapsed_s'])}; {reason}"
        )
        _print_steps(console, profile)
        _print_warnings(console, profile)
        return
    _print_summary(console, profile)
    _print_steps(console, profile)
    memory = _memory_on(profile)
    allocated = _allocated(profile)
    shown_any = False
    for path, entry in profile["files"].items():
        lines = [
            line
            for line in entry["lines"]
            if not reduced
            or _is_hot(_line_pct(line), threshold_pct)
            or (memory and _is_big(line, allocated))
        ]
        if not lines:
            continue
        shown_any = True
        console.print()
        console.print(_file_header(path, entry))
        table = _line_table(
            lines,
            threshold_pct,
            highlight=console.color_system is not None,
            memory=profile if memory else None,
            width=console.width,
        )
        console.print(table, no_wrap=True, overflow="ellipsis")
    if reduced and profile["files"] and not shown_any:
        console.print(f"\nNo line reached {threshold_pct:g}% of the time.")
    inclusive = _inclusive_pct(profile)
    functions = _functions(profile, reduced, threshold_pct, inclusive)
    if functions:
        console.print()
        console.print(
            _function_table(
                functions, threshold_pct, memory=memory, console=console, inclusive=inclusive
            )
        )
    threads = _thread_table(profile, console.width)
    if threads is not None:
        console.print()
        console.print(threads, no_wrap=True, overflow="ellipsis")
    native_threads = _native_threads(profile)
    if native_threads:
        console.print()
        for text in native_threads:
            console.print(Text(text, style="dim"))
    if memory:
        leaks = _leaks(profile)
        console.print()
        if leaks:
            console.print(_leak_table(leaks, console))
        else:
            console.print(
                "No likely leaks: no line's memory kept growing over the run.", style="dim"
            )
        console.print()
        console.print(_memory_footer(profile), style="dim")
    gpu_terminal.render(console, profile, _short_path)
    labels_terminal.render(console, profile)
    if len(profile.get("processes", ())) > 1:
        console.print()
        console.print(_process_table(profile["processes"], console.width), no_wrap=True,
                      overflow="ellipsis")
    console.print()
    console.print(_footer(profile), style="dim")
    _print_warnings(console, profile)


def _print_summary(console: Console, profile: Profile) -> None:
    """The summary's sentences (data/summary.py), first: what the tables below show in detail.
    Worked out from the profile being shown, so an older profile (or one edited) gets the
    summary of what it holds."""
    from heatline.data.summary import summarise

    items = summarise(profile)
    if not items:
        return
    import textwrap

    console.print()
    console.print(Text("Summary", "bold"))
    # Wrapped here with a hanging indent (rich would pad every row of a grid to the width).
    for item in items:
        text = textwrap.fill(visible(item["text"]), width=max(console.width - 1, 40),
                             initial_indent="• ", subsequent_indent="  ",
                             break_long_words=False, break_on_hyphens=False)
        console.print(Text(text), no_wrap=True, overflow="ignore")


# The steps' sparkline: at most this many characters, each the longest of its run of steps.
_STEP_SPARK_WIDTH = 60


def _print_steps(console: Console, profile: Profile) -> None:
    """The program's training steps (``steps``), when it marked any or asked for a window:
    how many and what marked them, their median, mean, shortest and longest, each step's time
    as a sparkline, and what --steps covered."""
    import textwrap

    from heatline.data.steps import window_words

    steps = profile.get("steps")
    if not steps:
        return
    lines = []
    count = steps["count"]
    if count:
        source = "Optimizer.step()" if steps["source"] == "optimizer" else "heatline.step()"
        lines.append(f"{count} step{'s' if count != 1 else ''} marked by {source}: median "
                     f"{_step_time(steps['median_s'])}, mean {_step_time(steps['mean_s'])}, "
                     f"min {_step_time(steps['min_s'])}, max {_step_time(steps['max_s'])}")
    window = window_words(profile)
    if window:
        lines.append(window[0].upper() + window[1:])
    durations = steps["durations_s"]
    if len(durations) > 1:
        per = -(-len(durations) // _STEP_SPARK_WIDTH)  # steps per character
        heights = [max(durations[i:i + per]) for i in range(0, len(durations), per)]
        top = max(heights) or 1.0
        spark = "".join(_SPARK[min(int(h / top * len(_SPARK)), len(_SPARK) - 1)]
                        for h in heights)
        each = "each step" if per == 1 else f"each {per} steps' longest"
        lines.append(f"{spark}  ({each})")
    if not lines:
        return
    console.print()
    console.print(Text("Steps", "bold"))
    width = max(console.width - 1, 40)
    for line in lines:
        text = textwrap.fill(line, width=width, subsequent_indent="  ",
                             break_long_words=False, break_on_hyphens=False)
        console.print(Text(text), no_wrap=True, overflow="ignore")


def _step_time(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 0.01 else f"{seconds:.3f} s"


def _console(file: TextIO) -> Console:
    # NO_COLOR (https://no-color.org) means plain text: rich alone would still emit bold and
    # dim, so turn styling off entirely. FORCE_COLOR is read here too because older rich
    # versions ignore it. rich itself reads TERM, COLUMNS etc.
    # markup=False: no string is ever read as rich markup, so "[draft]" in a path stays text.
    no_color = bool(os.environ.get("NO_COLOR"))
    return Console(
        file=file,
        highlight=False,
        markup=False,
        color_system=None if no_color else "auto",
        force_terminal=True if os.environ.get("FORCE_COLOR") else None,
        # In a Jupyter kernel rich would otherwise ignore `file` and display HTML itself.
        force_jupyter=False,
    )


def _line_pct(line: LineRecord) -> float:
    return (line["python_pct"] + line["native_pct"] + line["system_pct"]
            + line.get("cpu_wait_pct", 0.0))


def _is_hot(total_pct: float, threshold_pct: float) -> bool:
    return total_pct > 0 and total_pct >= threshold_pct


def _pct(value: float) -> str:
    """Blank for zero, so the lines with time stand out."""
    if not value:
        return ""
    return "<0.1" if value < 0.05 else f"{value:.1f}"


def _file_header(path: str, entry: FileRecord) -> Text:
    shares = ", ".join(
        f"{kind} {_pct(entry[kind + '_pct'])}%" for kind in _KINDS if entry[kind + "_pct"]
    )
    waiting = entry.get("cpu_wait_pct", 0.0)
    if waiting:
        shares += f", waiting for a CPU {_pct(waiting)}%"
    total = sum(entry[kind + "_pct"] for kind in _KINDS) + waiting
    # A file listed for its memory alone has no time to give a share of.
    time = f"  {_pct(total)}% of the time ({shares})" if total else "  no time sampled"
    return Text.assemble((visible(path), "bold cyan"), time)


def _new_table(**options: Any) -> Table:
    return Table(
        box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold", **options
    )


def _add_number_columns(table: Table, *headers: str) -> None:
    # A minimum width keeps the numbers whole when a narrow terminal squeezes the table;
    # the text columns give way instead.
    for header in headers:
        table.add_column(header, justify="right", no_wrap=True, min_width=len(header))


def _line_table(
    lines: list[dict[str, Any]],
    threshold_pct: float,
    *,
    highlight: bool,
    memory: dict[str, Any] | None = None,
    width: int = 200,
) -> Text:
    """The lines of one file as a table: one row per line, the source never cut.

    Built as plain fixed-width Text rather than a rich Table, which is far too slow for files
    of thousands of lines. The number columns come first: the time, then with ``memory`` (the
    profile, when memory was profiled) the memory columns, as many as leave the source the
    width of its longest line with time or memory (up to _READABLE_SOURCE); columns blank in
    every row of the file go before the others (_line_columns). The source is dedented by the
    indentation all its listed lines share, and where its longest line with time or memory
    still does not fit, and its lines' indentation takes more than a quarter of the room,
    every line's indentation is halved, then quartered; a line longer than
    the room left continues on the next rows, in its column; where that column would be
    narrower than _MIN_SOURCE_WIDTH, a line too long for it goes on rows of its own under its
    numbers.
    """
    line_width = max(4, len(str(lines[-1]["line"])))
    plain = _source_lines(lines)
    shown = [text for line, text in zip(lines, plain)
             if _line_pct(line) or (memory is not None and _has_memory(line))]
    needed = max(map(len, shown), default=0)
    kinds, memory_headers = _line_columns(lines, memory, width - line_width - len(_GAP),
                                          min(needed, _READABLE_SOURCE))
    headers = ["Line".rjust(line_width), *(title for _, title in kinds), *memory_headers]
    prefix = sum(len(h) for h in headers) + len(_GAP) * len(headers)
    room = width - prefix
    # Deep code in a narrow column: its indentation halved, then quartered (the same for every
    # line, so the blocks still read as blocks), until its lines with time or memory fit or
    # their indentation takes at most a quarter of the column; then long lines wrap.
    deepest = max((len(text) - len(text.lstrip(" ")) for text in shown), default=0)
    for divisor in (2, 4):
        if needed <= room or deepest <= room // 4:
            break
        deepest = -(-deepest // 2)
        needed = max((len(_indented(text, divisor)) for text in shown), default=0)
        plain = [_indented(text, divisor) for text in _source_lines(lines)]
    sources = _highlighted(plain, highlight)
    # Where the column is too narrow to read, a long line's source goes on rows of its own,
    # under its numbers.
    stacked = room < _MIN_SOURCE_WIDTH
    header = _GAP.join([*headers, "Source"])
    rows = [Text(header, "bold"), Text("─" * max(len(header), min(width, prefix + needed)))]
    previous = None
    for line, source in zip(lines, sources):
        if previous is not None and line["line"] > previous + 1:  # lines not listed
            rows.append(Text("...".rjust(line_width), _IDLE_STYLE))
        previous = line["line"]
        total = _line_pct(line)
        uses_memory = memory is not None and _has_memory(line)
        if _is_hot(total, threshold_pct):
            style = _HOT_STYLE
            source.stylize("bold")
        elif total or uses_memory:
            style = _WARM_STYLE
        else:
            style = ""
            source.stylize(_IDLE_STYLE)
        numbers = [str(line["line"]).rjust(line_width)]
        numbers += [_pct(line.get(kind + "_pct", 0.0)).rjust(len(title)) for kind, title in kinds]
        if memory is not None:
            cells = dict(zip(_MEMORY_HEADERS, _memory_cells(line, memory)))
            numbers += [
                cells[title].rjust(len(title)) if title.strip() != "memory"
                else cells[title].ljust(len(title))
                for title in memory_headers
            ]
        if stacked and len(source.plain) > room:
            rows.append(Text(_GAP.join(numbers), style))
            pieces = _wrap(source, max(width - _STACKED_INDENT, _MIN_SOURCE_WIDTH))
            rows.extend(Text.assemble(" " * _STACKED_INDENT, piece) for piece in pieces)
            rows.extend(_native_row(line, total, threshold_pct, line_width, width))
            continue
        pieces = _wrap(source, room)
        rows.append(Text.assemble((_GAP.join(numbers), style), _GAP, pieces[0]))
        rows.extend(Text.assemble(" " * prefix, piece) for piece in pieces[1:])
        rows.extend(_native_row(line, total, threshold_pct, line_width, width))
    return Text("\n").join(rows)


def _native_row(line: LineRecord, total: float, threshold_pct: float, line_width: int,
                width: int) -> list[Text]:
    """Under a hot line with native time: the native functions it went to (none otherwise),
    wrapped to the table's width as the source is, never cut."""
    if not (line.get("native_functions") and _is_hot(total, threshold_pct)):
        return []
    indent = line_width + len(_GAP)
    pieces = _wrap(Text(_native_functions(line), _IDLE_STYLE),
                   max(width - indent, _MIN_SOURCE_WIDTH))
    return [Text.assemble(" " * indent, piece) for piece in pieces]


def _line_columns(
    lines: list[dict[str, Any]], memory: dict[str, Any] | None, width: int, source_width: int
) -> tuple[list[tuple[str, str]], list[str]]:
    """The line table's number columns: the kinds of time as (kind, title), and the memory
    column titles, in display order, for ``width`` columns that must leave ``source_width`` to
    the source. All three kinds when they fit (and waiting for a CPU where a line has some);
    otherwise a column blank in every line goes first (memory ones, then kinds), then the
    waits for a CPU, then the memory columns, least important first. Python, native and
    system with time on some line are always kept (their numbers are never cut)."""
    kinds = list(zip(_KINDS, _NUMBER_HEADERS))
    if any(line.get("cpu_wait_pct") for line in lines):
        kinds.append(_WAIT)
    memory_titles = list(_MEMORY_HEADERS) if memory is not None else []
    cells = [dict(zip(_MEMORY_HEADERS, _memory_cells(line, memory))) for line in lines] \
        if memory is not None else []
    blank_memory = [t for t in memory_titles if not any(c[t].strip() for c in cells)]
    blank_kinds = [k for k in kinds if not any(line.get(k[0] + "_pct") for line in lines)]

    def used() -> int:
        titles = [title for _, title in kinds] + memory_titles
        return sum(len(title) + len(_GAP) for title in titles)

    for title in blank_memory:
        if used() + source_width <= width:
            break
        memory_titles.remove(title)
    for kind in blank_kinds:
        if used() + source_width <= width:
            break
        kinds.remove(kind)
    # The waits for a CPU give way before the memory columns: the file's header and the footer
    # still say them, while a line's memory is said nowhere else.
    if _WAIT in kinds and used() + source_width > width:
        kinds.remove(_WAIT)
    while memory_titles and used() + source_width > width:
        memory_titles.pop()
    return kinds, memory_titles


def _wrap(source: Text, width: int) -> list[Text]:
    """``source`` in pieces of at most ``width`` characters, broken after a space where one is
    in the second half of a piece; the pieces after the first are indented like the line plus
    a hanging indent, so they read as its continuation."""
    text = source.plain
    if len(text) <= width or width <= 0:
        return [source]
    indent = len(text) - len(text.lstrip(" "))
    hang = min(indent + _HANG, width // 2)
    offsets, start, room = [], 0, width
    while len(text) - start > room:
        end = start + room
        space = text.rfind(" ", max(start + room // 2, indent + 1), end)
        cut = space + 1 if space > start else end
        offsets.append(cut)
        start, room = cut, width - hang
    pieces = list(source.divide(offsets))
    return [pieces[0], *(Text.assemble(" " * hang, piece) for piece in pieces[1:])]


def _native_functions(line: LineRecord, shown: int = 3) -> str:
    """Where a hot line's native time went: its top native functions, with their shares of the
    time the samples named (`dgemm_kernel_HASWELL (libopenblas) 71%`); the functions summed
    past the profile's list ("[other]") come last, as "other functions"."""
    entries = line["native_functions"]
    total = sum(entry["seconds"] for entry in entries)
    named = [entry for entry in entries if entry["symbol"] != native_report.OTHER]
    rest = [entry for entry in entries if entry["symbol"] == native_report.OTHER]
    parts = [
        f"{visible(short_symbol(entry['symbol']))} "
        f"({visible(native_report.library_name(entry['library']))}) "
        f"{entry['seconds'] * 100.0 / total:.0f}%"
        for entry in named[:shown]
        if total > 0 and entry["seconds"] * 100.0 / total >= 0.5
    ]
    parts += [
        f"{native_report.OTHER_LABEL} {entry['seconds'] * 100.0 / total:.0f}%"
        for entry in rest
        if len(named) <= shown and total > 0 and entry["seconds"] * 100.0 / total >= 0.5
    ]
    return "native: " + ", ".join(parts)


# A native function's name in the terminal report is cut to this many characters.
_SYMBOL_WIDTH = 48
_QUALIFIERS = ("const", "volatile", "&", "&&", "noexcept")


def short_symbol(symbol: str, width: int = _SYMBOL_WIDTH) -> str:
    """A demangled C++ name as one short row: its template arguments and parameters elided
    (`partition_unrolled<…>(…)`), its return type and the compiler's clone suffixes
    (`[clone .constprop.0]`) left out, then cut to ``width`` characters. A C name is kept as it
    is, cut alike. The profile and the HTML report keep the full name."""
    while symbol.endswith("]") and " [clone " in symbol:
        symbol = symbol[:symbol.rindex(" [clone ")]
    if "<" in symbol or "(" in symbol:
        symbol = _elided(symbol)
    if len(symbol) > width:
        symbol = symbol[:width - 1] + "…"
    return symbol


def _elided(symbol: str) -> str:
    """``symbol`` with each outermost <...> written <…>, its parameter list (the last
    outermost (...), before any qualifiers) (…), and the return type before its name left
    out. An operator's own characters (`operator<<`, `operator()`) are kept."""
    out: list[str] = []
    depth, i = 0, 0
    while i < len(symbol):
        char = symbol[i]
        if depth == 0 and symbol.startswith("operator", i):
            # the operator's own characters: `operator()`, `operator<<`, `operator[]`
            end = i + len("operator")
            if symbol.startswith("()", end):
                end += 2
            while end < len(symbol) and symbol[end] in "<>=!+-*/%^&|~[],":
                end += 1
            out.append(symbol[i:end])
            i = end
            continue
        if char == "<":
            if depth == 0:
                out.append("<…")
            depth += 1
        elif char == ">" and depth > 0:
            depth -= 1
            if depth == 0:
                out.append(">")
        elif depth == 0:
            out.append(char)
        i += 1
    text = "".join(out)
    # the parameter list: the last outermost (...) before any qualifiers
    tail = text.rstrip()
    suffix = ""
    for word in _QUALIFIERS:
        if tail.endswith(" " + word):
            suffix = tail[len(tail) - len(word) - 1:] + suffix
            tail = tail[:len(tail) - len(word) - 1]
    if tail.endswith(")") and not tail.endswith("operator()"):
        level = 0
        for at in range(len(tail) - 1, -1, -1):
            level += {")": 1, "(": -1}.get(tail[at], 0)
            if level == 0:
                head = tail[:at]
                params = "()" if at == len(tail) - 2 else "(…)"
                # the return type: what precedes the name's last outermost space
                space = _last_outer_space(head)
                if space >= 0:
                    head = head[space + 1:]
                return head + params + suffix
    return text


def _last_outer_space(head: str) -> int:
    """Where the return type ends in ``head`` (a name without its parameters): its last space
    outside parentheses, not within an operator's name (`operator new`, `operator<< <…>`); -1
    for none."""
    level, at = 0, -1
    for index, char in enumerate(head):
        level += {"(": 1, ")": -1}.get(char, 0)
        if char == " " and level == 0:
            at = index
    operator = head.rfind("operator")
    if operator >= 0 and at > operator:
        at = head.rfind(" ", 0, operator)
    return at


def _thread_table(profile: Profile, width: int = 80) -> Table | None:
    """The Python threads, by name (queries.thread_name), busiest first: the time each had
    charged to the program's lines, its time in no line of them and its CPU time. Shown when
    more than one thread charged at least a sampling interval; at most _THREAD_ROWS threads,
    the rest counted in the caption. At most ``width`` columns: a long name is cut (…), the
    numbers stay whole."""
    from heatline.data.queries import thread_name

    least = profile.get("sampling_interval_s", DEFAULT_SAMPLING_INTERVAL_S)
    threads = [(index, thread) for index, thread in enumerate(profile.get("threads", []))
               if thread.get("python") is not False]

    def charged(thread: dict[str, Any]) -> float:
        return (thread["python_s"] + thread["native_s"] + thread["system_s"]
                + thread.get("cpu_wait_s", 0.0))

    busy = sorted((item for item in threads if charged(item[1]) >= least),
                  key=lambda item: (-charged(item[1]), item[0]))
    if len(busy) < 2:
        return None
    waits = any(thread.get("cpu_wait_s", 0.0) for _, thread in busy)
    rest = len(threads) - min(len(busy), _THREAD_ROWS)
    caption = (Text(f"and {_plural(rest, 'other thread')} (heatline view --format json lists "
                    "every thread)", no_wrap=False, overflow="fold") if rest else None)
    headers = ["Py s", "nat s", "sys s", *(["wait s"] if waits else []), "no line s", "CPU s"]
    rows = [(thread_name(profile, index),
             [f"{value:.2f}" for value in (thread["python_s"], thread["native_s"],
                                           thread["system_s"],
                                           *([thread.get("cpu_wait_s", 0.0)] if waits else []),
                                           thread["unattributed_s"], thread["cpu_s"])])
            for index, thread in busy[:_THREAD_ROWS]]

    def build(name_width: int) -> Table:
        table = _new_table(title="Threads", caption=caption, caption_justify="left")
        # Text, not str: a thread's name is the program's text, never parsed as markup.
        table.add_column("thread", no_wrap=True, overflow="ellipsis", width=name_width)
        _add_number_columns(table, *headers)
        for name, cells in rows:
            table.add_row(Text(visible(name)), *cells)
        return table

    longest = max(len("thread"), *(len(visible(name)) for name, _ in rows))
    console = Console(width=1 << 20, file=_Discard())  # measures only
    others = Measurement.get(console, console.options, build(1)).maximum - 1
    return build(max(12, min(longest, width - others)))


# The thread table's most rows.
_THREAD_ROWS = 12


def _native_threads(profile: Profile) -> list[str]:
    """The threads without a Python thread state (a BLAS pool, a C library's thread) that used
    at least a sampling interval of CPU: their time is in no line, so they get a line each."""
    from heatline.data.queries import thread_name

    least = profile.get("sampling_interval_s", DEFAULT_SAMPLING_INTERVAL_S)
    rows = []
    for index, thread in enumerate(profile.get("threads", [])):
        if thread.get("python") is not False or thread.get("cpu_s", 0) < least:
            continue
        row = f"{visible(thread_name(profile, index))}: {_duration(thread['cpu_s'])} CPU in no line"
        if thread.get("native_functions"):
            row += ", " + _native_functions(thread)
        rows.append(row)
    return rows


def _memory_on(profile: Profile) -> bool:
    return bool(profile.get("memory", {}).get("enabled"))


def _allocated(profile: Profile) -> int:
    memory = profile.get("memory", {})
    return memory.get("alloc_python_bytes", 0) + memory.get("alloc_native_bytes", 0)


def _has_memory(entry: dict[str, Any]) -> bool:
    return bool(
        entry.get("alloc_python_bytes")
        or entry.get("alloc_native_bytes")
        or entry.get("copy_bytes")
    )


def _is_big(line: LineRecord, allocated: int) -> bool:
    mine = line.get("alloc_python_bytes", 0) + line.get("alloc_native_bytes", 0)
    return allocated > 0 and mine * 100.0 >= _MEMORY_SHARE_PCT * allocated


def _mb(value: float) -> str:
    """Mebibytes (2^20 bytes: MiB, the unit of `heatline check`, the pytest marker and the
    memory tools people use, so a figure copied from the report means the same there), blank
    for zero."""
    if not value:
        return ""
    mebibytes = value / MIB
    if abs(mebibytes) < 0.05:
        return "<0.1" if mebibytes > 0 else ">-0.1"
    return f"{mebibytes:.1f}" if abs(mebibytes) < 1000 else f"{mebibytes:.0f}"


def _memory_cells(entry: dict[str, Any], profile: Profile) -> list[str]:
    elapsed = profile["elapsed_s"]
    copy_rate = entry.get("copy_bytes", 0) / elapsed if elapsed > 0 else 0.0
    return [  # in the order of _MEMORY_HEADERS
        _mb(entry.get("alloc_python_bytes", 0)),
        _mb(entry.get("alloc_native_bytes", 0)),
        _mb(entry.get("peak_bytes", 0)),
        _mb(copy_rate),
        _mb(entry.get("growth_bytes", 0)),
        sparkline(entry.get("timeline", []), elapsed),
    ]


def sparkline(timeline: list[list[float]], end_s: float, width: int = _SPARK_WIDTH) -> str:
    """The timeline (a step function of [t_s, bytes] points) as `width` block characters, one
    per equal slice of the run, each showing the highest value in its slice."""
    if not timeline or end_s <= 0:
        return ""
    highest = max(value for _, value in timeline)
    if highest <= 0:
        return ""
    slices = [0.0] * width
    current = 0.0
    index = 0
    for i in range(width):
        end = end_s * (i + 1) / width
        top = current
        while index < len(timeline) and timeline[index][0] <= end:
            current = timeline[index][1]
            top = max(top, current)
            index += 1
        slices[i] = top
    return "".join(
        " " if value <= 0 else _SPARK[min(len(_SPARK) - 1, int(value * len(_SPARK) / highest))]
        for value in slices
    )


def _source_lines(lines: list[LineRecord]) -> list[str]:
    """The lines' source, tabs expanded and control characters made visible, dedented by the
    indentation they all share."""
    sources = [visible(line["source"].expandtabs(4)).rstrip() for line in lines]
    shared = min((len(s) - len(s.lstrip(" ")) for s in sources if s.strip()), default=0)
    return [source[shared:] for source in sources]


def _indented(text: str, divisor: int) -> str:
    """``text`` with its indentation divided by ``divisor`` (rounded up)."""
    body = text.lstrip(" ")
    indent = len(text) - len(body)
    return " " * -(-indent // divisor) + body


def _highlighted(sources: list[str], highlight: bool) -> list[Text]:
    """The source lines as Text, syntax highlighted in one pass when colours are on."""
    if not highlight:
        return [Text(source) for source in sources]
    from rich.syntax import Syntax

    code = "\n".join(sources)
    highlighted = Syntax(code, "python", theme="ansi_dark", background_color="default")
    # The lexer ends the code with a newline, hence one more (empty) piece after the split.
    texts = list(highlighted.highlight(code).split("\n", allow_blank=True))[: len(sources)]
    if len(texts) != len(sources):  # never expected; fall back to plain text, not a crash
        return [Text(source) for source in sources]
    return texts


def _functions(
    profile: Profile,
    reduced: bool,
    threshold_pct: float,
    inclusive: dict[tuple[str, str], float] | None = None,
) -> list[tuple]:
    """The function rows: every function of a reported file with time or memory of its own,
    and those that only called others (no line of their own sampled: a dispatcher, main())
    with their inclusive time; such a function is located at the first of its lines seen on a
    stack. Sorted by own time, then inclusive time."""
    inclusive = inclusive or {}
    rows = []
    memory = _memory_on(profile)
    allocated = _allocated(profile)
    for path, entry in profile["files"].items():
        for function in entry["functions"]:
            total = (sum(function[kind + "_pct"] for kind in _KINDS)
                     + function.get("cpu_wait_pct", 0.0))
            big = memory and _is_big(function, allocated)
            if (total or (memory and _has_memory(function))) and (
                not reduced or _is_hot(total, threshold_pct) or big
            ):
                rows.append((total, path, function))
    rows.extend(_calling_only(profile, reduced, threshold_pct, inclusive))
    rows.sort(
        key=lambda row: (
            -row[0],
            -inclusive.get((row[1], row[2]["qualname"]), 0.0),
            -row[2].get("alloc_python_bytes", 0) - row[2].get("alloc_native_bytes", 0),
        )
    )
    return rows


def _calling_only(
    profile: Profile,
    reduced: bool,
    threshold_pct: float,
    inclusive: dict[tuple[str, str], float],
) -> list[tuple]:
    """Rows for functions of reported files that appear on stacks but have no row."""
    from heatline.data import memory as memory_report
    from heatline.data.queries import calling_only

    rows = []
    for (path, qualname), line in calling_only(profile).items():
        share = inclusive.get((path, qualname), 0.0)
        if share <= 0 or (reduced and not _is_hot(share, threshold_pct)):
            continue
        function: dict[str, Any] = {"qualname": qualname, "first_line": line}
        function.update({kind + "_pct": 0.0 for kind in (*_KINDS, _WAIT[0])})
        function.update(dict.fromkeys(memory_report.LINE_KEYS, 0))
        rows.append((0.0, path, function))
    return rows


def _inclusive_pct(profile: Profile) -> dict[tuple[str, str], float]:
    """Each function's inclusive (cumulative) time from the stacks, in % of the attributed
    time like the other columns (data/queries.py, inclusive_times)."""
    from heatline.data.queries import inclusive_times

    total = (profile.get("totals") or {}).get("attributed_s") or 0.0
    if not total:
        return {}
    return {key: 100.0 * seconds / total for key, seconds in inclusive_times(profile).items()}


def _function_table(
    rows: list[tuple],
    threshold_pct: float,
    *,
    memory: bool = False,
    console: Console,
    inclusive: dict[tuple[str, str], float] | None = None,
) -> Table:
    """The busiest functions. Names and locations come first: at a narrow width the number
    columns are dropped (least telling first) until every name fits whole, then each name's
    location moves under it; names are never cut or wrapped while optional numbers remain.
    "total %" and "incl %" (the time the function was anywhere on the stack: itself and what
    it called) are always shown: a name or location too long for the room they leave folds
    onto the next rows."""
    inclusive = inclusive or {}
    shown = rows[:MAX_FUNCTION_ROWS]
    cells = []
    for total, path, function in shown:
        style = _HOT_STYLE if _is_hot(total, threshold_pct) else ""
        numbers = {
            **{title: _pct(function[k + "_pct"]) for k, title in zip(_KINDS, _NUMBER_HEADERS)},
            _WAIT[1]: _pct(function.get("cpu_wait_pct", 0.0)),
            "total %": _pct(total),
            "incl %": _pct(inclusive.get((path, function["qualname"]), 0.0)),
        }
        if memory:
            numbers.update(
                {
                    "alloc MiB": _mb(
                        function["alloc_python_bytes"] + function["alloc_native_bytes"]
                    ),
                    "peak MiB": _mb(function["peak_bytes"]),
                    "growth MiB": _mb(function["growth_bytes"]),
                    "copy MiB": _mb(function["copy_bytes"]),
                }
            )
        location = f"{_short_path(path)}:{function['first_line']}"
        cells.append((visible(function["qualname"]), location, style, numbers))
    memory_headers = ("alloc MiB", "peak MiB", "growth MiB", "copy MiB") if memory else ()
    waits = any(function.get("cpu_wait_pct") for _, _, function in shown)
    headers = [*_NUMBER_HEADERS, *((_WAIT[1],) if waits else ()), "total %", "incl %",
               *memory_headers]
    priority = _column_priority(shown, headers)

    def build(kept: list[str], stacked: bool) -> Table:
        table = _new_table(title="Functions", title_justify="left", title_style="bold")
        table.add_column("Function (file:first line)", no_wrap=not stacked, overflow="fold")
        columns = [title for title in headers if title in kept]
        _add_number_columns(table, *columns)
        for name, location, style, numbers in cells:
            # Text, not str: names and paths must not be parsed as rich markup.
            label = Text.assemble(
                (name, style or "bold"), (("\n" if stacked else " ") + location, "dim")
            )
            table.add_row(label, *(Text(numbers[title], style=style) for title in columns))
        if len(rows) > MAX_FUNCTION_ROWS:
            table.caption = f"... and {len(rows) - MAX_FUNCTION_ROWS} more functions"
            table.caption_justify = "left"
        return table

    # The total and the inclusive time are always kept: where even the stacked table with only
    # them is too wide (a name or location longer than the room left), its first column folds.
    return _fit(console, priority, lambda kept: build(kept, False), lambda kept: build(kept, True),
                keep=2)


def _column_priority(rows: list[tuple], headers: list[str]) -> list[str]:
    """The function table's number columns, the one kept longest at a narrow width first: the
    total and the inclusive time, then what was allocated, the split of the time (Python,
    native, system: the kind with the largest share in these rows first, so an idle function's
    system time outlives a native column of zeros), then the other memory columns. A column
    blank in every row comes last, whatever its kind."""
    def largest(title: str) -> float:
        key = _COLUMN_KEYS[title]
        return max((abs(sum(function.get(k, 0) for k in key)) for _, _, function in rows),
                   default=0)

    split = sorted((*_NUMBER_HEADERS, _WAIT[1]), key=lambda title: -largest(title))
    order = ["alloc MiB", *split, "peak MiB", "growth MiB", "copy MiB"]
    order = [title for title in order if title in headers]
    order.sort(key=lambda title: largest(title) <= 0)  # stable: blank columns last
    return ["total %", "incl %", *order]


# What each optional number column of the function table shows, as the function's keys summed.
_COLUMN_KEYS = {
    **{title: (kind + "_pct",) for kind, title in zip(_KINDS, _NUMBER_HEADERS)},
    _WAIT[1]: (_WAIT[0] + "_pct",),
    "alloc MiB": ("alloc_python_bytes", "alloc_native_bytes"),
    "peak MiB": ("peak_bytes",),
    "growth MiB": ("growth_bytes",),
    "copy MiB": ("copy_bytes",),
}


def _fit(console: Console, priority: list[str], *builders: Any, keep: int = 1) -> Table:
    """The first table, from the first builder that can, with as many of the optional columns
    (most important first, the first ``keep`` always kept) as fit the console's width; the
    last try when none fits."""
    table = None
    unbounded = console.options.update_width(1 << 20)  # measure the width the table wants
    for build in builders:
        for count in range(len(priority), min(keep, len(priority)) - 1, -1):
            table = build(priority[:count])
            if Measurement.get(console, unbounded, table).maximum <= console.width:
                return table
    return table


def _leaks(profile: Profile) -> list[tuple[str, dict[str, Any]]]:
    found = [
        (path, line)
        for path, entry in profile["files"].items()
        for line in entry["lines"]
        if line.get("leak")
    ]
    # Biggest first: what a leak costs is the memory it holds. The likelihood is the filter
    # (data/memory.py flags a line only above LEAK_THRESHOLD), not the order: a 0.5 MiB line
    # that grew very regularly is not worth reading before a 300 MiB one.
    found.sort(key=lambda item: (-item[1]["growth_bytes"], -item[1]["leak"]["likelihood"]))
    return found


def _leak_table(leaks: list[tuple[str, dict[str, Any]]], console: Console) -> Table:
    """Likely leaks: the location whole first, then as many numbers as leave the source at
    least _MIN_SOURCE_WIDTH columns; the source wraps."""
    cells = [
        (
            f"{_short_path(path)}:{line['line']}",
            {
                "likelihood": f"{line['leak']['likelihood'] * 100:.0f}%",
                "held MiB": _mb(line["growth_bytes"]),
                "growth MiB/s": _mb(line["leak"]["growth_bytes_per_s"]),
            },
            visible(line["source"].strip()),
        )
        for path, line in leaks
    ]
    priority = ["likelihood", "held MiB", "growth MiB/s"]

    def build(kept: list[str], source: bool = False) -> Table:
        table = _new_table(title="Likely leaks", title_justify="left", title_style="bold red")
        table.add_column("Line", no_wrap=True)
        columns = [title for title in priority if title in kept]
        _add_number_columns(table, *columns)
        if source:
            table.add_column("Source", overflow="fold")
        for location, numbers, text in cells:
            extra = [Text(text)] if source else []
            table.add_row(Text(location, "bold"), *(numbers[title] for title in columns), *extra)
        if not source:  # a stand-in for the source's minimum width while fitting
            table.add_column("Source", min_width=_MIN_SOURCE_WIDTH, max_width=_MIN_SOURCE_WIDTH)
        return table

    table = _fit(console, priority, build)
    kept = [column.header for column in table.columns if column.header in priority]
    return build(kept, source=True)


# Lines named as holding memory at a combined peak (the rest are counted).
_PEAK_LINES_SHOWN = 3


def _memory_footer(profile: Profile) -> str:
    memory = profile["memory"]
    parts = [f"peak memory {_mb(profile['peak_bytes']) or '0'} MiB"]
    at = profile.get("peak_at")
    combined = profile.get("combined_peak")
    if combined is not None:  # with child processes: the sum over those alive together
        parts = [_combined_peak(profile, combined)]
    elif at:
        parts[0] += f" at {_duration(at['t_s'])}, {_short_path(at['file'])}:{at['line']}"
    parts.append(
        f"allocated {_mb(memory['alloc_python_bytes']) or '0'} MiB Python, "
        f"{_mb(memory['alloc_native_bytes']) or '0'} MiB native"
    )
    parts.append(f"copied {_mb(memory['copy_bytes']) or '0'} MiB")
    parts.append(f"sampled every {memory['sampling_window_bytes'] // 1024} KiB on average")
    return "; ".join(parts)


def _combined_peak(profile: Profile, combined: CombinedPeak) -> str:
    """'peak memory 202.6 MiB at 0.397 s (all processes together), held by a.py:6 157.3 MiB
    (pid 7, Pool worker), ...; main process alone 158.5 MiB at 0.042 s, a.py:12'."""
    roles = {p["pid"]: p["role"] for p in profile.get("processes", [])}
    main_pid = next((pid for pid, role in roles.items() if role == "main"), None)
    text = (f"peak memory {_mb(profile['peak_bytes']) or '0'} MiB at "
            f"{_duration(combined['t_s'])} (all processes together)")
    lines = combined["lines"]
    if lines:
        named = []
        for line in lines[:_PEAK_LINES_SHOWN]:
            who = ("main" if line["pid"] == main_pid
                   else f"pid {line['pid']}, {visible(roles.get(line['pid'], 'child'))}")
            named.append(f"{_short_path(line['file'])}:{line['line']} {_mb(line['bytes'])} MiB "
                         f"({who})")
        rest = lines[_PEAK_LINES_SHOWN:]
        if rest:
            named.append(f"{_plural(len(rest), 'more line')} "
                         f"{_mb(sum(line['bytes'] for line in rest))} MiB")
        text += ", held by " + ", ".join(named)
    own = profile.get("main_peak_at")
    processes = profile.get("processes") or [{}]
    command = processes[0].get("role") == "command"  # heatline -- CMD's root
    if command and not profile.get("main_peak_bytes"):
        return text  # the command ran no Python of its own
    text += (f"; {'the command' if command else 'main process'} alone "
             f"{_mb(profile.get('main_peak_bytes', 0)) or '0'} MiB")
    if own:
        text += f" at {_duration(own['t_s'])}, {_short_path(own['file'])}:{own['line']}"
    return text


def _short_path(path: str) -> str:
    """Relative to the current directory when inside it, which is shorter and still clear;
    control characters made visible."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return visible(path)
    return visible(path if relative.startswith("..") else relative)


# The Processes table's number columns that may be left out at a narrow width, kept longest
# first; PID, exit and the command line are always shown (the command line shortened).
# "idle s" (a fork child's time in its library's loop under its parent's frames: a pool
# worker waiting for work) and "wait s" (time waiting for a CPU) are shown only where a
# process has some.
_PROCESS_OPTIONAL = ("role", "CPU s", "Py s", "nat s", "wait s", "idle s", "ppid", "peak MiB",
                     "sys s")
_PROCESS_HEADERS = ("PID", "ppid", "role", "CPU s", "Py s", "nat s", "sys s", "wait s", "idle s",
                    "peak MiB", "exit", "command line")
# The command line's column is given at least this many columns (or its longest command,
# when shorter) before optional columns are left out to make room for it.
_MIN_COMMAND = 24


def _address(process: dict[str, Any]) -> str:
    return f"{process['address']} " if process.get("address") else ""


def _process_table(processes: list[ProcessRecord], width: int = 80) -> Table:
    """The processes of a run with children (one line each; `view --pid` shows one), at most
    ``width`` columns wide. PID and exit are always whole; the command line takes the room
    left, shortened in the middle (its start names the program, its end often a file), and the
    optional columns (_PROCESS_OPTIONAL) go, least telling first, until it has _MIN_COMMAND. A
    command line too long loses its program's directory first (the role and the pid say which
    process it is; `view --pid` and the profile keep the whole command).
    The caption wraps at spaces."""
    # Py s and nat s are sampled running time, CPU time where the kernel measured the waits for
    # a CPU (wait s, a column where some process had any). Where it did not (the profile
    # warns), a thread ready to run but waiting for a CPU counts as running, and more runnable
    # threads than cores make Py s + nat s larger than CPU s: the caption says so where it is
    # seen (beyond 5%, more than sampling noise on a process of a few hundred samples).
    waits = any(p.get("cpu_wait_s", 0.0) for p in processes)
    busy = not waits and any(p["python_s"] + p["native_s"] > 1.05 * p["cpu_s"]
                             for p in processes)
    idle = any(p.get("idle_s", 0.0) > 0 for p in processes)
    # Processes of several hosts (heatline merge): each PID as HOST:PID, as view --pid takes.
    hosts = len({p.get("host") for p in processes}) > 1
    rows = [
        {
            "PID": (f"{visible(process.get('host') or '?')}:{process['pid']}" if hosts
                    else str(process["pid"])),
            "ppid": str(process["ppid"]),
            "role": visible(process["role"]),
            "CPU s": f"{process['cpu_s']:.2f}",
            "Py s": f"{process['python_s']:.2f}",
            "nat s": f"{process['native_s']:.2f}",
            "sys s": f"{process['system_s']:.2f}",
            "wait s": f"{process.get('cpu_wait_s', 0.0):.2f}",
            "idle s": f"{process.get('idle_s', 0.0):.2f}",
            "peak MiB": _mb(process["peak_bytes"]),
            "exit": visible(process["exit"]),
            # a distributed engine's worker is known by its address first (heatline.dask)
            "command line": visible(_address(process) + " ".join(process["argv"])),
            "short command": visible(_address(process) + (
                " ".join([os.path.basename(process["argv"][0]), *process["argv"][1:]])
                if process["argv"] else "")),
        }
        for process in processes
    ]
    widths = {header: max(len(header), *(len(row[header]) for row in rows))
              for header in _PROCESS_HEADERS}
    # PID and ppid share a width, so that a child's ppid lines up under its parent's PID.
    widths["PID"] = widths["ppid"] = max(widths["PID"], widths["ppid"])
    needed = widths["command line"]

    def build(kept: tuple[str, ...], command_width: int) -> Table:
        shown = [h for h in _PROCESS_HEADERS
                 if (h not in _PROCESS_OPTIONAL or h in kept) and (idle or h != "idle s")
                 and (waits or h != "wait s")]
        caption = None
        if busy and {"CPU s", "Py s", "nat s"} <= set(shown):
            # Text wrapping at spaces, whatever the print's no_wrap (which keeps cells whole).
            caption = Text("Py s + nat s above CPU s: threads ready to run but waiting for a "
                           "CPU (more runnable threads than cores) count as running; CPU s is "
                           "only time on a CPU", no_wrap=False, overflow="fold")
        table = _new_table(title="Processes (heatline view --pid PID shows one)",
                           caption=caption, caption_justify="left")
        for header in shown:
            if header == "command line":
                table.add_column(header, no_wrap=True, width=command_width)
            else:
                right = header not in ("role", "exit")
                table.add_column(header, justify="right" if right else "left", no_wrap=True,
                                 width=widths[header])
        for row in rows:
            cells = [row[h] if h != "command line" else _command(row, command_width)
                     for h in shown]
            table.add_row(*cells)
        return table

    console = Console(width=1 << 20, file=_Discard())  # measures only
    options = console.options
    room = 0
    for count in range(len(_PROCESS_OPTIONAL), -1, -1):
        kept = _PROCESS_OPTIONAL[:count]
        others = Measurement.get(console, options, build(kept, 1)).maximum - 1
        room = width - others
        if room >= min(needed, _MIN_COMMAND):
            return build(kept, min(room, needed))
    return build((), max(room, len("command line")))


class _Discard:
    """A file that drops what is written (a console used only to measure)."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


def _command(row: dict[str, str], width: int) -> str:
    """A process's command line in ``width`` columns: whole when it fits, else with its
    program's directory left out, then cut in the middle (_shorten)."""
    if len(row["command line"]) <= width:
        return row["command line"]
    return _shorten(row["short command"], width)


def _shorten(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters by an ellipsis in the middle: the start and the
    end kept, the start given the larger part."""
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    head = (width - 1) * 2 // 3
    tail = width - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail else "")


def _footer(profile: Profile) -> str:
    from heatline.data.queries import profiled_s

    elapsed = f"elapsed {_duration(profile['elapsed_s'])}"
    on = profiled_s(profile)
    if on is not None:  # paused part of the time: the figures above cover only this much
        elapsed += f", of which {_duration(on)} profiled"
    parts = [
        elapsed,
        f"CPU {_duration(profile['cpu_s'])}",
        f"{_plural(profile['samples'], 'sample')} "
        f"{profile['sampling_interval_s'] * 1000:g} ms apart",
        _plural(len(profile["threads"]), "thread"),
    ]
    totals = profile["totals"]
    waited = totals.get("cpu_wait_s", 0.0)
    if waited:
        wanted = totals["python_s"] + totals["native_s"] + waited
        parts.append(f"{_duration(waited)} waiting for a CPU ({100 * waited / wanted:.0f}% of "
                     "the time the threads were ready to run)")
    unattributed = profile["totals"]["unattributed_s"]
    if unattributed:
        # Time of threads whose stack held no line of the user's code: threads started by
        # libraries (pools, queue feeders), the interpreter starting up and finishing.
        idle = any(p.get("idle_s", 0.0) > 0 for p in profile.get("processes", ()))
        workers = ", workers waiting for work (idle s)" if idle else ""
        parts.append(f"{_duration(unattributed)} of thread time in no line of yours (library "
                     f"threads{workers}, interpreter start-up and exit; --profile-all shows "
                     "where)")
    return "; ".join(parts)


def _duration(seconds: float) -> str:
    # Short runs need the extra digit: "0.004 s" says more than "0.00 s".
    return f"{seconds:.3f} s" if seconds < 1 else f"{seconds:.2f} s"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _print_warnings(console: Console, profile: Profile) -> None:
    warnings: Iterable[str] = profile.get("warnings", [])
    for warning in warnings:
        console.print(Text(f"warning: {visible(warning)}", "yellow"))
