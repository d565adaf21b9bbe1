"""Memory per line, heatline against tracemalloc, on programs that churn small objects.

    .venv/bin/python bench/memory_vs_tracemalloc.py [--window BYTES] [--write-docs]

Each program runs under heatline (`-o JSON`) and, separately, under tracemalloc three times:
once to learn the traced peak, once with a line tracer that snapshots the traced memory at each
new high above 90% of that peak, 1% apart (the last one is the program at its peak), and once for a snapshot at
exit. Both snapshots are grouped by line. Printed: a markdown table, per line that holds at
least a window somewhere, of heatline's held bytes at exit (growth) against tracemalloc's at
exit, and heatline's peak of the line against tracemalloc's bytes of the line at the program's
peak. --write-docs puts the table into docs/accuracy.md between
`<!-- memory_vs_tracemalloc:begin -->` and `<!-- memory_vs_tracemalloc:end -->`.
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROGRAMS = {
    "visitor": open(os.path.join(ROOT, "tests", "targets", "memory_visitor.py")).read(),
    "tuples": '''
def round_(n):
    rows = [(i, str(i), i * 0.5) for i in range(n)]
    index = {row[1]: row for row in rows}
    return len(index)


total = 0
for _ in range(40):
    total += round_(50_000)
print(total)
''',
    "strings": '''
def round_(n):
    text = ",".join(f"key{i}={i * 7}" for i in range(n))
    fields = [part.split("=") for part in text.split(",")]
    parsed = {k: int(v) for k, v in fields}
    return sum(parsed.values())


total = 0
for _ in range(40):
    total += round_(40_000)
print(total)
''',
}

TRACER = r'''
import json, runpy, sys, tracemalloc
mode, path, out, peak = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
taken = {}

def by_line(snapshot):
    stats = snapshot.filter_traces([tracemalloc.Filter(True, path)]).statistics("lineno")
    return {str(s.traceback[0].lineno): s.size for s in stats}

best = [peak * 0.9]

def tracer(frame, event, arg):
    current = tracemalloc.get_traced_memory()[0]
    if current > best[0]:
        best[0] = current * 1.01
        taken["peak"] = by_line(tracemalloc.take_snapshot())
    return tracer

sys.argv = [path]
tracemalloc.start()
if mode == "peak":
    sys.settrace(tracer)
runpy.run_path(path, run_name="__main__")
sys.settrace(None)
taken["traced_peak"] = tracemalloc.get_traced_memory()[1]  # before the snapshot's own objects
if mode == "exit":
    taken["exit"] = by_line(tracemalloc.take_snapshot())
with open(out, "w") as f:
    json.dump(taken, f)
'''


def under_tracemalloc(path, work):
    tracer = os.path.join(work, "tracer.py")
    with open(tracer, "w") as f:
        f.write(TRACER)
    out = os.path.join(work, "tm.json")
    result = {}
    for mode, peak in (("exit", 0), ("peak", None)):
        if peak is None:
            peak = result["traced_peak"]
        subprocess.run([sys.executable, tracer, mode, path, out, str(peak)], check=True,
                       capture_output=True)
        with open(out) as f:
            result.update(json.load(f))
    return result


def under_heatline(path, work, window):
    out = os.path.join(work, "p.json")
    subprocess.run([sys.executable, "-m", "heatline", "-q", "--memory-sampling-window",
                    str(window), "-o", out, path], check=True, capture_output=True)
    with open(out) as f:
        data = json.load(f)
    return {str(line["line"]): line for line in data["files"][path]["lines"]}


def kib(n):
    return f"{n / 1024:.1f}"


def rows(window):
    table = []
    with tempfile.TemporaryDirectory() as work:
        for name, source in PROGRAMS.items():
            path = os.path.join(work, f"{name}.py")
            with open(path, "w") as f:
                f.write(source)
            truth = under_tracemalloc(path, work)
            lines = under_heatline(path, work, window)
            numbers = set(truth["exit"]) | set(truth.get("peak", {}))
            numbers |= {n for n, line in lines.items() if line["peak_bytes"]}
            for number in sorted(numbers, key=int):
                line = lines.get(number, {"growth_bytes": 0, "peak_bytes": 0, "source": ""})
                exit_truth = truth["exit"].get(number, 0)
                peak_truth = truth.get("peak", {}).get(number, 0)
                if max(line["peak_bytes"], peak_truth, exit_truth) < window:
                    continue
                table.append([name, f"{number}: `{line['source'].strip()[:50]}`",
                              kib(line["growth_bytes"]), kib(exit_truth),
                              kib(line["peak_bytes"]), kib(peak_truth)])
    return table


def render(table, window, command):
    head = ["program", "line", "heatline held at exit (KiB)", "tracemalloc at exit (KiB)",
            "heatline peak of the line (KiB)", "tracemalloc at the program's peak (KiB)"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(row) + " |" for row in table]
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M UTC")
    commit = subprocess.run(["git", "rev-parse", "--short=10", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    note = ("<!-- Generated by bench/memory_vs_tracemalloc.py: do not edit by hand; run "
            f"`{command}` to regenerate. -->")
    run = (f"Run of {stamp}: {platform.machine()}, {os.cpu_count()} CPUs; CPython "
           f"{platform.python_version()}; heatline at commit `{commit}`; sampling window "
           f"{window // 1024} KiB.")
    return "\n".join([note, "", run, "", *out])


def write_docs(block):
    path = os.path.join(ROOT, "docs", "accuracy.md")
    begin, end = "<!-- memory_vs_tracemalloc:begin -->", "<!-- memory_vs_tracemalloc:end -->"
    with open(path) as f:
        text = f.read()
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(path, "w") as f:
        f.write(f"{head}{begin}\n{block}\n{end}{tail}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=int, default=64 * 1024)
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    block = render(rows(args.window), args.window,
                   "python bench/memory_vs_tracemalloc.py --write-docs")
    print(block)
    if args.write_docs:
        write_docs(block)


if __name__ == "__main__":
    main()
