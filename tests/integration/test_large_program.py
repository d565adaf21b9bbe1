"""A large program: 60 modules of 4,000 executed lines each. The profile and
the report grow with what was measured (lines with time or memory, a little context), not with
the program's source: before, this run took ~25 s to report, wrote 95 MB and 240k report lines.
Work is asserted (sizes, counts), never wall time."""

import json
import os
import subprocess
import sys

FILES = 60
LINES_PER_FILE = 4000
CONTEXT = 2  # heatline.data.build.CONTEXT_LINES


def write_program(directory):
    # x beyond one digit of an int (2**30): each addition allocates a new int, about 640 kB a
    # module, ten memory samples; a smaller x would come from 3.14+'s free list of small ints
    # and allocate nothing the engine sees, leaving most modules without a sample.
    for m in range(FILES):
        body = "".join(f"        x += {i}\n" for i in range(LINES_PER_FILE))
        (directory / f"mod{m:02d}.py").write_text(
            f"def work(n):\n    x = 1 << 40\n    for _ in range(n):\n{body}    return x\n"
        )
    main = directory / "main.py"
    main.write_text(
        "import os, sys\n"
        "sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))\n"
        f"mods = [__import__(f'mod{{m:02d}}') for m in range({FILES})]\n"
        "for m in mods:\n"
        "    m.work(5)\n"
    )
    return main


def _costly(line):
    return any(line[k] for k in ("python_s", "native_s", "system_s", "cpu_wait_s",
                                 "alloc_python_bytes", "alloc_native_bytes", "freed_bytes",
                                 "copy_bytes"))


def test_a_large_program_gets_a_bounded_profile_and_report(tmp_path):
    main = write_program(tmp_path)
    out = tmp_path / "profile.json"
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR")}
    result = subprocess.run(
        [sys.executable, "-m", "heatline", "-o", str(out), str(main)],
        check=False, capture_output=True, timeout=300, env={**env, "NO_COLOR": "1"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    size = out.stat().st_size
    assert size < 5_000_000, size
    from heatline.data import build

    assert build.CONTEXT_LINES == CONTEXT
    with open(out, encoding="utf-8") as f:
        data = json.load(f)
    modules = [path for path in data["files"] if os.path.basename(path).startswith("mod")]
    assert len(modules) >= FILES // 2  # the run is long enough to sample most modules
    listed = costly = functions = 0
    for path in modules:
        entry = data["files"][path]
        numbers = [line["line"] for line in entry["lines"]]
        cost = {line["line"] for line in entry["lines"] if _costly(line)}
        firsts = {f["first_line"] for f in entry["functions"]}
        last = LINES_PER_FILE + 4
        expected = {n for c in cost for n in range(c - CONTEXT, c + CONTEXT + 1) if 1 <= n <= last}
        assert numbers == sorted(expected | firsts), path
        listed += len(numbers)
        costly += len(cost)
        functions += len(firsts)
    # Every line with cost got it from a time sample (one line per thread) or a memory sample.
    assert costly <= data["samples"] * len(data["threads"]) + data["memory"].get("samples", 0)
    assert listed <= (2 * CONTEXT + 1) * costly + functions
    report = result.stderr.decode().splitlines()
    # One row per listed line, at most one "..." per gap, a header per file, the rest fixed.
    assert (
        len(report)
        <= 2 * sum(len(e["lines"]) for e in data["files"].values()) + 8 * len(data["files"]) + 120
    )
    assert sum(1 for line in report if line.strip() == "...") >= len(modules) // 2
