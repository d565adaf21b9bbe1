"""``@profile`` under the heatline command, as line_profiler's kernprof and Scalene provide it.

While ``heatline script.py`` runs, ``profile`` is a builtin (the only name heatline adds to
the program's builtins, and only under the command). It marks the function it decorates and
returns that very function (no wrapper: no extra frame, nothing changes for the program). When
the program marked any function, the profile is limited to the marked functions (with the code
defined inside them: comprehensions, generator expressions, lambdas, inner functions): only
their lines, with the time and memory the engine charges to those lines (library code they call
included, as always; the program's own functions they call keep their own lines, shown only
when decorated too). Without the command the program runs unchanged with the usual
``profile = getattr(builtins, "profile", lambda f: f)``, or with ``from heatline import
profile`` (heatline/api.py).
"""

from __future__ import annotations

# typing only for type checkers: a run's path imports none (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# (co_filename, co_firstlineno, co_name) of each marked function's code.
_marked: set[tuple[str, int, str]] = set()


def profile(function: Any) -> Any:
    """The builtin ``profile``: mark ``function`` (also through staticmethod/classmethod and
    functools.wraps wrappers) and return it unchanged."""
    target = getattr(function, "__func__", function)
    while getattr(target, "__wrapped__", None) is not None:
        target = target.__wrapped__
    code = getattr(target, "__code__", None)
    pending = [code] if code is not None else []
    while pending:  # with the code nested in it: comprehensions, lambdas, inner functions
        code = pending.pop()
        _marked.add((code.co_filename, code.co_firstlineno, code.co_name))
        pending.extend(const for const in code.co_consts if isinstance(const, type(code)))
    return function


def install(builtins_module: Any) -> None:
    """Make ``profile`` a builtin unless the program's builtins already have one."""
    if "profile" not in builtins_module.__dict__:
        builtins_module.profile = profile


def keep_marked(snapshot: dict[str, Any]) -> dict[str, Any]:
    """The engine's snapshot (docs/engine-api.md) limited to the marked functions' lines, their
    memory and GPU records and the stacks charged to them; unchanged when nothing was marked.
    Program-wide figures (threads, memory totals and peak) stay those of the whole run."""
    if not _marked:
        return snapshot
    # Here, at the end: heatline.data is never imported while the program runs (its package
    # imports json, which a program may shadow).
    from heatline.data.snapshot import is_elided

    files = snapshot["files"]
    kept = {
        index
        for index, function in enumerate(snapshot["functions"])
        if (files[function["file"]]["path"], function["first_line"], function["name"]) in _marked
    }
    result = dict(snapshot)
    kept_lines = [i for i, line in enumerate(snapshot["lines"]) if line[2] in kept]
    result["lines"] = [snapshot["lines"][i] for i in kept_lines]
    functions = snapshot["functions"]

    def charged(frames: Any) -> bool:  # the innermost user frame is the one charged
        for function_id, _line in reversed(frames):
            if is_elided(function_id):  # a deep stack's elided middle: no function
                continue
            if files[functions[function_id]["file"]]["user"]:
                return function_id in kept
        return False

    kept_stacks = [i for i, stack in enumerate(snapshot["stacks"]) if charged(stack[0])]
    result["stacks"] = [snapshot["stacks"][i] for i in kept_stacks]
    native = snapshot.get("native")
    if native and native.get("enabled"):  # lines by (file, line), stacks by index
        places = {(line[0], line[1]) for line in result["lines"]}
        stacks_now = {old: new for new, old in enumerate(kept_stacks)}
        result["native"] = dict(
            native,
            lines=[entry for entry in native["lines"] if (entry[0], entry[1]) in places],
            stacks=[(stacks_now[i], a, ns) for i, a, ns in native.get("stacks", ())
                    if i in stacks_now],
        )
    memory = snapshot.get("memory")
    if memory and memory.get("lines"):
        result["memory"] = dict(memory, lines=[
            line for line in memory["lines"] if line["function"] in kept
        ])
    gpu = snapshot.get("gpu")
    if gpu and gpu.get("lines"):
        result["gpu"] = dict(gpu, lines=[line for line in gpu["lines"] if line["line"][2] in kept])
    return result
