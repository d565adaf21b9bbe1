"""Render bench/run.py's results on several CPythons (one results file a version, `make
bench-versions`) into docs/overhead.md and docs/accuracy.md, between `<!-- versions:begin -->`
and `<!-- versions:end -->`: per tool and version, the median slowdown and CPU ratio over the
benchmarks, and the function-share and Python/native/system split errors on the ground-truth
targets.

    python bench/render_versions.py bench/results/versions-3.13.json ... [--docs-dir DIR]
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from render import _label, _num, _table, splice  # noqa: E402


def _version(results):
    return results["python"]["version"]


def _tools(runs, section):
    """The tools measured in `section` of any of the runs, heatline's first, in run order."""
    found = []
    for results in runs:
        for name in (results.get(section) or {}).get("per_tool", {}):
            if name != "python" and name not in found:
                found.append(name)
    return sorted(found, key=lambda n: (not n.startswith("heatline"), found.index(n)))


def _unavailable(runs):
    lines = []
    for results in runs:
        for name, tool in results["tools"].items():
            if name != "python" and not tool.get("available", True):
                lines.append(f"- {_label(results, name)} on CPython {_version(results)}: "
                             f"{tool.get('reason', '')}")
    return lines


def _header(runs, sources):
    first = runs[0]
    machine = first.get("machine", {})
    lines = [f"One `bench/run.py` run a version ({', '.join(sources)}), one after the other on "
             f"{machine.get('cpus', '?')} CPUs ({machine.get('cpu_model', '?')}):"]
    for results in runs:
        commit = results.get("heatline", {}).get("commit", "") or results.get("git", {}).get(
            "commit", "")
        lines.append(f"CPython {_version(results)} at {results.get('started_at', '?')}"
                     + (f", heatline {commit[:7]}" if commit else "") + ";")
    lines[-1] = lines[-1].rstrip(";") + "."
    return " ".join(lines)


def _matrix(runs, section, cell):
    """The table of a section: a row per tool, a column per version, cell(per_tool entry)
    in each (an empty entry: not measured there). None when no run measured the section."""
    tools = _tools(runs, section)
    if not tools:
        return None
    rows = []
    for name in tools:
        row = [_label(runs[0], name) if name in runs[0]["tools"] else name]
        for results in runs:
            entry = (results.get(section) or {}).get("per_tool", {}).get(name, {})
            row.append(cell(entry))
        rows.append(row)
    return _table(["tool"] + [f"CPython {_version(r)}" for r in runs], rows)


def _overhead_cell(p):
    wall, cpu = p.get("median_wall_ratio"), p.get("median_cpu_ratio")
    return f"{_num(wall)}× / {_num(cpu)}×" if wall is not None else "–"


def _accuracy_cell(p):
    if p.get("mean_share_error") is None:
        return "–"
    split = p.get("mean_split_error")
    return (f"{_num(p['mean_share_error'], 1)} / {_num(p.get('max_share_error'), 1)}; split "
            + (f"{_num(split, 1)} / {_num(p.get('max_split_error'), 1)}"
               if split is not None else "n/a"))


def render_overhead(runs, sources):
    table = _matrix(runs, "overhead", _overhead_cell)
    if table is None:
        return None
    benches = sorted({b for r in runs for b in (r.get("overhead") or {}).get("benchmarks", {})})
    out = [_header(runs, sources), "",
           f"Each cell: median over the benchmarks ({', '.join(benches)}) of the wall-time ratio "
           "/ CPU-time ratio to plain Python on that version, each benchmark's ratio the median "
           "of its interleaved rounds. `–`: not measured there (below).", "", table, ""]
    missing = _unavailable(runs)
    if missing:
        out += ["Not measured:", ""] + missing + [""]
    return "\n".join(out)


def render_accuracy(runs, sources):
    table = _matrix(runs, "accuracy", _accuracy_cell)
    if table is None:
        return None
    targets = sorted({t for r in runs for t in (r.get("accuracy") or {}).get("targets", {})})
    out = [_header(runs, sources), "",
           f"Each cell, in percentage points against the targets' own clocks ({', '.join(targets)}): "
           "function-share error mean / max; then the Python / native / system split error mean / "
           "max (`n/a`: the tool does not split time).", "", table, ""]
    return "\n".join(out)


DOCUMENTS = {"overhead.md": render_overhead, "accuracy.md": render_accuracy}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+")
    parser.add_argument("--docs-dir", default=os.path.join(ROOT, "docs"))
    args = parser.parse_args(argv)
    runs, sources = [], []
    for path in args.results:
        with open(path) as f:
            runs.append(json.load(f))
        source = os.path.abspath(path)
        sources.append(os.path.relpath(source, ROOT) if source.startswith(ROOT + os.sep)
                       else source)
    runs.sort(key=lambda r: tuple(int(p) for p in _version(r).split(".")[:2]))
    for name, render in DOCUMENTS.items():
        path = os.path.join(args.docs_dir, name)
        with open(path) as f:
            text = f.read()
        generated = render(runs, sources)
        if generated is not None:
            text = splice(text, generated, ", ".join(sources), "versions")
        with open(path, "w") as f:
            f.write(text)
        print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
