"""``heatline dump``'s views of a dump (engine/dump.py's Dump): the text for a reader, and the
JSON document for tools (docs/profile-format.md, "heatline dump's JSON"). Made from the Dump
alone; cli/dump.py parses the arguments, reads the process and writes what these return."""

from __future__ import annotations

# typing only for type checkers: `heatline dump`'s whole run is its start-up (cli/dump.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from heatline.engine.dump import Dump, Frame, Thread

FORMAT_VERSION = 1


def as_json(dump: Dump) -> dict[str, Any]:
    """The JSON document (docs/profile-format.md, "heatline dump's JSON")."""
    return {
        "format": "heatline-dump",
        "format_version": FORMAT_VERSION,
        "pid": dump.pid,
        "command": dump.command,
        "python": {"version": dump.version, "binary": dump.binary},
        "paused": dump.paused,
        "pause_ms": round(dump.pause_s * 1e3, 3),
        "pause_note": dump.pause_note or None,
        "read_ms": round(dump.read_s * 1e3, 3),
        "threads_complete": dump.threads_complete,
        "deadlock": _deadlock_json(dump),
        "threads": [_thread_json(thread) for thread in dump.threads],
    }


def _deadlock_json(dump: Dump) -> dict[str, Any] | None:
    from heatline.engine import deadlock

    found = dump.deadlock
    if found is None:
        return None

    def wait(w: deadlock.Wait) -> dict[str, Any]:
        return {
            "native_id": w.thread.native_id or None,
            "thread": deadlock.thread_name(w.thread, _process_name(dump)),
            "waits_for": w.waits_for,
            "file": w.at.file,
            "line": w.at.line,
            "lock": w.lock,
            "lock_type": w.lock_type,
            "holder_native_id": (w.holder.native_id or None) if w.holder else None,
            "holder": deadlock.thread_name(w.holder, _process_name(dump)) if w.holder else None,
            "held_by": w.held_by,
            "held_at": ({"file": w.held_at.file, "line": w.held_at.line}
                        if w.held_at is not None else None),
        }

    return {
        "cycle": found.cycle,
        "text": deadlock.text(found, _process_name(dump)),
        "waits": [wait(w) for w in found.waits],
        "behind": [wait(w) for w in found.behind],
    }


def _process_name(dump: Dump) -> str:
    main = next((t for t in dump.threads if t.native_id == dump.pid), None)
    return main.name if main else ""


def _thread_json(thread: Thread) -> dict[str, Any]:
    return {
        "native_id": thread.native_id or None,
        "name": thread.name or None,
        "python": thread.python,
        "thread_id": thread.thread_id,
        "interpreter": thread.interpreter,
        "main": thread.main,
        "holds_gil": thread.holds_gil,
        "state": thread.state,
        "kernel_state": thread.kernel_state or None,
        "syscall": thread.syscall,
        "wchan": thread.wchan,
        "stopped": thread.stopped,
        "stack_complete": thread.complete,
        "stack_truncated": thread.truncated,
        "python_name": thread.python_name,
        "frames": [_frame_json(frame) for frame in thread.frames],
    }


def _frame_json(frame: Frame) -> dict[str, Any]:
    entry: dict[str, Any] = {"function": frame.qualname, "name": frame.name, "file": frame.file,
                             "line": frame.line}
    if frame.locals is not None:
        entry["locals"] = [{"name": name, "value": value} for name, value in frame.locals]
    return entry


def _what(thread: Thread, process_name: str) -> str:
    parts = []
    if thread.python_name:  # threading's name; else the kernel's, unless the process's own
        parts.append(f'"{thread.python_name}"')
    elif thread.name and thread.name != process_name:
        parts.append(f'"{thread.name}"')
    if thread.main:
        parts.append("main thread")
    if thread.interpreter:
        parts.append(f"interpreter {thread.interpreter}")
    if not thread.python:
        parts.append("no Python")
    head = f"Thread {thread.native_id or '?'}" + (f" ({', '.join(parts)})" if parts else "")
    doing = []
    if thread.holds_gil:
        doing.append("holds the GIL")
    if thread.state == "idle":
        doing.append(f"idle in {thread.syscall}" if thread.syscall else "idle")
    elif thread.kernel_state:
        doing.append(thread.state)
    return head + (": " + ", ".join(doing) if doing else "")


def as_text(dump: Dump) -> str:
    from heatline.renderers.visible import visible

    from heatline.engine.deadlock import text as deadlock_text

    process_name = _process_name(dump)
    command = " ".join(dump.command) or "?"
    lines = [visible(deadlock_text(dump.deadlock, process_name))] if dump.deadlock else []
    lines += [visible(f"Process {dump.pid}: {command}"),
             visible(f"Python {dump.version} ({dump.binary})")]
    if dump.paused:
        lines.append(f"Threads stopped for {dump.pause_s * 1e3:.2f} ms while read "
                     f"({dump.read_s * 1e3:.2f} ms reading); stacks innermost first.")
    else:
        lines.append("Read without stopping the threads; stacks innermost first.")
    if dump.pause_note:
        lines.append(visible(f"Not stopped: {dump.pause_note}."))
    if not dump.threads_complete:
        lines.append("Some threads may be missing: the thread list changed while read.")
    for thread in dump.threads:
        lines.append("")
        lines.append(visible(_what(thread, process_name)))
        for frame in thread.frames:
            lines.append(visible(f"    {frame.qualname} ({frame.file}:{frame.line})"))
            for name, value in frame.locals or ():
                lines.append(visible(f"        {name} = {value}"))
        if thread.python and not thread.frames and thread.complete:
            lines.append("    (no Python code running)")
        if thread.truncated:
            lines.append("    (deeper frames left out)")
        if not thread.complete:
            lines.append("    (torn: the thread moved while its stack was read; "
                         "the frames above were read before)")
    return "\n".join(lines) + "\n"
