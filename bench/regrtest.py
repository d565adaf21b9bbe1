"""CPython's own regression tests, plain and under heatline: the same outcomes, test by test?

    python bench/regrtest.py --python 3.11=.venv/bin/python --python 3.13=.venv-3.13/bin/python
    python bench/regrtest.py --python 3.12=.venv-3.12/bin/python --modules test_os,test_sys
    python bench/regrtest.py ... --resume          # keep the runs already in --out, do the rest
    python bench/regrtest.py ... --together        # all modules in one regrtest run per mode
    python bench/regrtest.py --report bench/results/regrtest.json   # print the tables again
    python bench/regrtest.py --merge r-3.11.json r-3.13.json --out bench/results/regrtest.json

Normally run by `make bench-regrtest PYTHONS="3.11 3.12 3.13"`, which makes (or refreshes) each
version's virtualenv with heatline installed (.venv for the main CPython, .venv-3.X for the
others, as `make versions` does) and passes them here.

Each module runs on its own, once as `python -m test -j1 -v --junit-xml X MODULE` and once as
`python -m heatline -q -o P.json -m test -j1 -v --junit-xml X MODULE` (heatline profiles
regrtest's main process and follows its worker, a child process, as it does any program's), with
the same interpreter (the virtualenv's, where heatline is installed), the same environment and a
fresh working directory; the two runs of a module follow each other so that they meet the same
load. What is compared, per module:

- regrtest's own verdict (the "Result:" line) and figures ("Total tests: run=N failures=F
  skipped=S");
- the outcome of every test id: passed, failed or skipped, read from the JUnit XML regrtest
  writes, plus the "FAIL:"/"ERROR:" headers of unittest's verbose report (-v), which name what the
  XML leaves out: a test whose subTests failed (the XML keeps a nameless entry for it) and errors
  in setUpClass/setUpModule.

Every test whose outcome differs is listed with both outcomes. A module is given --timeout
seconds per run (its whole process tree is killed after that; the run is recorded as timed out).

The multiprocessing tests: from 3.13 the install has the driver packages test_multiprocessing_fork,
_spawn and _forkserver (each split into test_processes, test_threads, test_manager, test_misc
by regrtest). Installs that lack them (3.11 and 3.12 here) get the same four modules per start
method written into the working directory and run with --testdir; they call
test._test_multiprocessing's install_tests_in_module_dict exactly as 3.13's do, so the same
tests run (their ids start with the driver's name instead of test.).

Results go to --out (JSON: per version and module, both runs' verdicts, figures and timings,
and the differing ids); the runs' logs, JUnit files and profiles stay in --workdir when one is
given. The figures and what they show are in docs/accuracy.md ("CPython's own regression
tests").
"""

import argparse
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from run import git_info, loadavg, machine_info  # noqa: E402

SCHEMA = "heatline-regrtest/1"

# The modules whose tests touch what heatline changes in a process (threads, signals, children,
# allocators, tracing, imports, shutdown); the multiprocessing drivers last (the longest, with
# test_asyncio).
MODULES = [
    "test_threading", "test_signal", "test_subprocess", "test_os", "test_mmap", "test_ctypes",
    "test_faulthandler", "test_tracemalloc", "test_sys_settrace", "test_gc", "test_weakref",
    "test_atexit", "test_traceback", "test_warnings", "test_runpy", "test_cmd_line_script",
    "test_select", "test_selectors", "test_zlib", "test_hashlib", "test_pickle", "test_json",
    "test_sys", "test_io", "test_tempfile", "test_logging", "test_asyncio",
    "test_multiprocessing_fork", "test_multiprocessing_spawn", "test_multiprocessing_forkserver",
    "test_cmd_line", "test_capi", "test_posix",
]
MP_DRIVERS = ("test_multiprocessing_fork", "test_multiprocessing_spawn",
              "test_multiprocessing_forkserver")
# 3.13's split of each driver: the tests of one kind each, and the rest (exclude_types).
MP_PARTS = {"test_processes": "only_type='processes'", "test_threads": "only_type='threads'",
            "test_manager": "only_type='manager'", "test_misc": "exclude_types=True"}
MODES = ("plain", "heatline")


def log(message):
    print(message, file=sys.stderr, flush=True)


def interpreter_info(python):
    """(X.Y version, full version, heatline version or None, the install has the mp drivers)."""
    code = ("import sys, os, importlib.util as u\n"
            "import test\n"
            "try:\n import heatline; h = heatline.__version__\n"
            "except Exception: h = None\n"
            "d = os.path.isdir(os.path.join(os.path.dirname(test.__file__), 'test_multiprocessing_fork'))\n"
            "print('%d.%d' % sys.version_info[:2], sys.version.split()[0], h, int(d))\n")
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120)
    if out.returncode:
        raise SystemExit(f"regrtest.py: {python} cannot run the test package: {out.stderr.strip()}")
    short, full, heatline, drivers = out.stdout.split()
    return short, full, None if heatline == "None" else heatline, drivers == "1"


def write_mp_drivers(where):
    """The multiprocessing driver packages as 3.13 lays them out, for installs without them."""
    for driver in MP_DRIVERS:
        method = driver.rsplit("_", 1)[1]
        package = os.path.join(where, driver)
        os.makedirs(package, exist_ok=True)
        with open(os.path.join(package, "__init__.py"), "w") as f:
            f.write("# Written by heatline's bench/regrtest.py: regrtest is given the four modules\n"
                    "# below by name, so this package needs no load_tests.\n")
        for part, selection in MP_PARTS.items():
            with open(os.path.join(package, part + ".py"), "w") as f:
                f.write("import unittest\n"
                        "from test._test_multiprocessing import install_tests_in_module_dict\n\n"
                        f"install_tests_in_module_dict(globals(), {method!r}, {selection})\n\n"
                        "if __name__ == '__main__':\n    unittest.main()\n")


def regrtest_names(module, has_drivers):
    """The names regrtest is given for a module, and the --testdir it needs (or None)."""
    if module in MP_DRIVERS and not has_drivers:
        return [f"{module}.{part}" for part in MP_PARTS], True
    return [module], False


# -- reading one run ------------------------------------------------------------------------

_HEADER = re.compile(r"^(FAIL|ERROR|UNEXPECTED SUCCESS): (\S+) \(([\w.]+)\)(.*)$", re.M)
_TOTALS = re.compile(r"^Total tests: (.*)$", re.M)
_RESULT = re.compile(r"^Result: (.*)$", re.M)
# regrtest's progress line for a test file: "0:00:12 load avg: 3.1 [1/1] test_os passed (...)"
_PROGRESS = re.compile(r"\[\s*\d+/\d+(?:/\d+)?\] (test\S*) (.*)$", re.M)
_DURATION = re.compile(r"\s*\(?\s*\d+(?:\.\d+)? (?:min|sec|ms)(?: \d+ sec)?\)?|\s*in \d+.*$")


def read_junit(path):
    """{test id: 'passed'|'failed'|'skipped'} and the number of nameless entries."""
    outcomes, nameless = {}, 0
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None, 0
    for case in root.iter("testcase"):
        name = case.get("name")
        if not name:  # a test whose subTests failed: regrtest's XML leaves its entry bare
            nameless += 1
            continue
        tags = {child.tag for child in case}
        if tags & {"failure", "error", "outcome"}:  # outcome: an unexpected success
            outcome = "failed"
        elif "skipped" in tags:
            outcome = "skipped"
        else:
            outcome = "passed"  # an expected failure ('output') counts as passing, as unittest says
        # A test id seen twice (a module run twice) keeps its worse outcome.
        if outcomes.get(name) != "failed":
            outcomes[name] = outcome
    return outcomes, nameless


def failed_from_log(text):
    """Ids unittest's verbose report names as failed: tests, their subTests, class/module fixtures."""
    failed = set()
    for match in _HEADER.finditer(text):
        method, inner = match.group(2), match.group(3)
        # "test_x (pkg.mod.Class.test_x)": a test; "setUpClass (pkg.mod.Class)": a fixture.
        failed.add(inner if inner.rsplit(".", 1)[-1] == method else f"{inner}.{method}")
    return failed


def read_run(log_path, junit_path):
    with open(log_path, errors="replace") as f:
        text = f.read()
    outcomes, nameless = read_junit(junit_path)
    run = {"junit": outcomes is not None, "nameless_entries": nameless}
    outcomes = dict(outcomes or {})
    for test_id in failed_from_log(text):
        outcomes[test_id] = "failed"
    run["outcomes"] = outcomes
    result = _RESULT.findall(text)
    run["result"] = result[-1].strip() if result else None
    totals = _TOTALS.findall(text)
    figures = {}
    if totals:
        for item in totals[-1].split():
            key, _, value = item.partition("=")
            if value:
                figures[key] = int(value.replace(",", ""))
    run["totals"] = figures
    # The last verdict of each test file, durations left out (they differ from run to run).
    run["files"] = {name: _DURATION.sub("", state).strip() for name, state in _PROGRESS.findall(text)}
    run["heatline_messages"] = sorted({line.strip() for line in text.splitlines()
                                       if line.startswith("heatline:")})
    return run


# -- running ----------------------------------------------------------------------------------

def _descendants(pid):
    """Every process below pid, read from /proc (regrtest puts its workers in sessions of
    their own, so a process group does not hold them all)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _kill_tree(pid):
    # Stopped first so that none of them starts another process while they are listed.
    tree = [pid]
    for _ in range(3):
        for p in tree:
            try:
                os.kill(p, signal.SIGSTOP)
            except ProcessLookupError:
                pass
        tree = [pid, *_descendants(pid)]
    for p in tree:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def together_names(modules, has_drivers):
    """All modules' names for one regrtest run. With --testdir (the drivers written here)
    regrtest imports a bare name from that directory, so the others are given as test.NAME."""
    needs_drivers = any(m in MP_DRIVERS for m in modules) and not has_drivers
    names = []
    for module in modules:
        own, _ = regrtest_names(module, has_drivers)
        names += [f"test.{n}" if needs_drivers and module not in MP_DRIVERS else n for n in own]
    return names, needs_drivers


def module_of(test_id):
    """The module of the list a test id belongs to: test.test_os.C.t and the drivers'
    test_multiprocessing_fork.test_processes.C.t alike."""
    return test_id[5:].split(".", 1)[0] if test_id.startswith("test.") else test_id.split(".", 1)[0]


def run_one(python, mode, module, has_drivers, workdir, timeout, env, names=None):
    if names is None:
        names, needs_drivers = regrtest_names(module, has_drivers)
    else:
        names, needs_drivers = names
    cwd = tempfile.mkdtemp(prefix=f"{module}-{mode}-", dir=workdir)
    junit = os.path.join(cwd, "junit.xml")
    log_path = os.path.join(cwd, "output.log")
    regrtest = ["-m", "test", "-j1", "-v", "--junit-xml", junit]
    if needs_drivers:
        drivers = os.path.join(cwd, "drivers")
        write_mp_drivers(drivers)
        regrtest += ["--testdir", drivers]
    regrtest += names
    if mode == "heatline":
        command = [python, "-m", "heatline", "-q", "-o", os.path.join(cwd, "profile.json"), *regrtest]
    else:
        command = [python, *regrtest]
    started = time.monotonic()
    load = loadavg()
    timed_out = False
    with open(log_path, "wb") as out:
        proc = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_tree(proc.pid)
            proc.wait()
        except BaseException:  # Ctrl-C: the run's processes are in sessions of their own
            _kill_tree(proc.pid)
            raise
    run = read_run(log_path, junit)
    run.update({
        "command": " ".join(os.path.relpath(c, cwd) if os.path.isabs(c) and c.startswith(cwd)
                            else c for c in command),
        "exit_status": proc.returncode, "timed_out": timed_out,
        "duration_s": round(time.monotonic() - started, 1), "loadavg_start": load, "dir": cwd,
    })
    profile = os.path.join(cwd, "profile.json")
    if mode == "heatline":
        run["profile_written"] = os.path.exists(profile)
        run["profile_bytes"] = os.path.getsize(profile) if run["profile_written"] else 0
    return run


def compare(plain, heatline):
    """The differences between a module's two runs (an empty list: identical)."""
    differences = []
    for key in ("result", "totals", "files", "timed_out"):
        if plain.get(key) != heatline.get(key):
            differences.append({"what": key, "plain": plain.get(key), "heatline": heatline.get(key)})
    a, b = plain.get("outcomes", {}), heatline.get("outcomes", {})
    for test_id in sorted(set(a) | set(b)):
        if a.get(test_id) != b.get(test_id):
            differences.append({"what": "test", "id": test_id,
                                "plain": a.get(test_id, "absent"), "heatline": b.get(test_id, "absent")})
    return differences


def counts(run):
    outcomes = list(run.get("outcomes", {}).values())
    return {o: outcomes.count(o) for o in ("passed", "failed", "skipped")}


def summarise(entry):
    """What the JSON keeps of a module: both runs without their per-test lists, and the differences."""
    kept = {}
    for mode in MODES:
        run = dict(entry[mode])
        run["counts"] = counts(run)
        run.pop("outcomes", None)
        kept[mode] = run
    kept["differences"] = entry["differences"]
    return kept


# -- report -------------------------------------------------------------------------------------

def _cell(run):
    """regrtest's figures for a run: tests run / failed / skipped, and its verdict unless SUCCESS."""
    if run.get("timed_out"):
        return "timed out"
    t = run.get("totals", {})
    cell = f"{t.get('run', 0)} / {t.get('failures', 0)} / {t.get('skipped', 0)}"
    verdict = run.get("result") or "no result"
    return cell if verdict == "SUCCESS" else f"{cell} {verdict}"


def _table(versions, modules, stream):
    header = ["module"]
    for data in versions.values():
        header += [f"{data['python']} python", f"{data['python']} heatline"]
    print("| " + " | ".join(header) + " |", file=stream)
    print("|" + "---|" * len(header), file=stream)
    durations = {v: [0.0, 0.0] for v in versions}
    for module in modules:
        row = [module]
        for version, data in versions.items():
            entry = data["modules"].get(module)
            if not entry or not all(m in entry for m in MODES):
                row += ["", ""]
                continue
            mark = "**" if entry["differences"] else ""
            row += [f"{mark}{_cell(entry[m])}{mark}" for m in MODES]
            for i, m in enumerate(MODES):
                durations[version][i] += entry[m].get("duration_s", 0)
        print("| " + " | ".join(row) + " |", file=stream)
    row = ["wall time, all modules"]
    for version in versions:
        row += [f"{d / 60:.0f} min" for d in durations[version]]
    print("| " + " | ".join(row) + " |", file=stream)
    print("\n(tests run / failures / skipped, as regrtest counts them; a module whose runs differ "
          "in bold)", file=stream)


def report(results, stream=sys.stdout):
    """One markdown table, a row per module and two columns per version; the runs of all
    modules together; then the differences."""
    versions = results["versions"]
    modules = []
    for data in versions.values():
        modules += [m for m in data["modules"] if m not in modules]
    if modules:
        _table({v: d for v, d in versions.items() if d["modules"]}, modules, stream)
    for version, data in versions.items():
        together = data.get("together")
        if not together:
            continue
        print(f"\nAll modules in one run, {data['python']}: {_cell(together['plain'])} plain in "
              f"{together['plain']['duration_s'] / 60:.0f} min, {_cell(together['heatline'])} "
              f"under heatline in {together['heatline']['duration_s'] / 60:.0f} min "
              f"({'identical' if not together['differences'] else 'DIFFERENT'}, "
              f"{len([m for m in together['modules'] if not m.startswith('(')])} modules)",
              file=stream)
    lines = []
    for version, data in versions.items():
        entries = dict(data["modules"])
        if data.get("together"):
            entries["(all in one run)"] = data["together"]
        for module, entry in entries.items():
            for diff in entry.get("differences", []):
                if diff["what"] == "test":
                    lines.append(f"  {version} {module}: {diff['id']}: "
                                 f"{diff['plain']} plain, {diff['heatline']} under heatline")
                else:
                    lines.append(f"  {version} {module}: {diff['what']}: "
                                 f"{diff['plain']!r} plain, {diff['heatline']!r} under heatline")
            messages = entry.get("heatline", {}).get("heatline_messages")
            if messages:
                lines += [f"  {version} {module}: heatline said: {m}" for m in messages]
    print("\nDifferences:" if lines else "\nNo differences.", file=stream)
    for line in lines:
        print(line, file=stream)


def run_together(data, python, version, modules, has_drivers, workdir, args, env):
    """The issue's own form: every module in one regrtest run (-j1 still gives each test file
    a fresh worker), plain and under heatline; compared per module from the test ids."""
    entry = {}
    names = together_names(modules, has_drivers)
    for mode in MODES:
        log(f"{version} all modules together, {mode} ...")
        entry[mode] = run_one(python, mode, "together", has_drivers, workdir, args.timeout, env,
                              names=names)
        log(f"{version} together {mode}: {_cell(entry[mode])} in {entry[mode]['duration_s']:.0f} s")
    per_module = {}
    for mode in MODES:
        for test_id, outcome in entry[mode]["outcomes"].items():
            module = module_of(test_id)
            if module not in modules:  # a doctest's id names the module it tests (json.decoder...)
                module = "(doctests)"
            counted = per_module.setdefault(module, {m: {o: 0 for o in
                                                                     ("passed", "failed",
                                                                      "skipped")}
                                                                 for m in MODES})
            counted[mode][outcome] += 1
    entry["differences"] = compare(entry["plain"], entry["heatline"])
    for diff in entry["differences"]:
        log(f"  differs: {diff}")
    kept = summarise(entry)
    kept["modules"] = per_module
    data["together"] = kept


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", action="append", default=[], metavar="X.Y=PYTHON",
                        help="an interpreter whose environment has heatline installed (a "
                             "virtualenv's bin/python); repeat for several versions")
    parser.add_argument("--modules", help="comma-separated test modules (default: MODULES)")
    parser.add_argument("--timeout", type=float, default=3600,
                        help="seconds per module and run before its processes are killed "
                             "(default 3600)")
    parser.add_argument("--out", default=os.path.join(HERE, "results", "regrtest.json"),
                        help="results JSON (default bench/results/regrtest.json)")
    parser.add_argument("--workdir", help="keep the runs' logs, JUnit files and profiles here "
                                          "(default: a temporary directory, removed)")
    parser.add_argument("--together", action="store_true",
                        help="all the modules in one regrtest run per mode (one "
                             "`python -m test` command) instead of one run per module; its --timeout is the "
                             "whole run's")
    parser.add_argument("--resume", action="store_true",
                        help="keep the modules --out already has for a version, run the others")
    parser.add_argument("--report", metavar="JSON", help="only print the tables of a results file")
    parser.add_argument("--merge", nargs="+", metavar="JSON",
                        help="only merge results files (say, one per version, run side by side) "
                             "into --out, a later file's version replacing an earlier one's")
    args = parser.parse_args(argv)

    if args.report:
        with open(args.report) as f:
            report(json.load(f))
        return 0
    if args.merge:
        merged = None
        for path in args.merge:
            with open(path) as f:
                part = json.load(f)
            if merged is None:
                merged = part
                continue
            for version, data in part["versions"].items():  # modules and runs kept, newer win
                into = merged["versions"].setdefault(version, {"modules": {}})
                into["modules"].update(data.pop("modules", {}))
                into.update(data)
        merged["versions"] = dict(sorted(merged["versions"].items(),
                                         key=lambda kv: tuple(map(int, kv[0].split(".")))))
        with open(args.out, "w") as f:
            json.dump(merged, f, indent=1)
            f.write("\n")
        report(merged)
        return 0
    if not args.python:
        parser.error("give at least one --python X.Y=PYTHON")
    modules = args.modules.split(",") if args.modules else MODULES
    results = {"schema": SCHEMA, "versions": {}}
    if args.resume and os.path.exists(args.out):
        with open(args.out) as f:
            results = json.load(f)
    results.update({
        "updated_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_info(), "git": git_info(),
    })
    # The runs get SIGINT's default action whatever this script inherited: started in the
    # background by a shell (cmd &), it is ignored, and an interpreter that starts with SIGINT
    # ignored has no KeyboardInterrupt, so test_threading's interrupt_main tests fail under
    # python too. A handler (not SIG_DFL) here, so that this script still stops on Ctrl-C; exec
    # resets a handled signal to its default.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    workdir = args.workdir or tempfile.mkdtemp(prefix="heatline-regrtest-")
    os.makedirs(workdir, exist_ok=True)
    workdir = os.path.abspath(workdir)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "HEATLINE")) and k not in ("VIRTUAL_ENV", "COLUMNS")}

    def save():
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out + ".tmp", "w") as f:
            json.dump(results, f, indent=1)
            f.write("\n")
        os.replace(args.out + ".tmp", args.out)

    for spec in args.python:
        wanted, _, python = spec.partition("=")
        python = os.path.abspath(python)
        version, full, heatline_version, has_drivers = interpreter_info(python)
        if version != wanted:
            parser.error(f"{python} is CPython {version}, not {wanted}")
        if heatline_version is None:
            parser.error(f"{python} cannot import heatline: install it there (make bench-regrtest)")
        data = results["versions"].setdefault(version, {"modules": {}})
        data.update({"python": full, "interpreter": os.path.relpath(python, ROOT)
                     if python.startswith(ROOT + os.sep) else python,
                     "heatline": heatline_version, "mp_drivers": "installed" if has_drivers
                     else "written by regrtest.py (--testdir)"})
        for module in ([] if args.together else modules):
            if args.resume and module in data["modules"]:
                continue
            entry = {}
            for mode in MODES:
                log(f"{version} {module} {mode} ...")
                entry[mode] = run_one(python, mode, module, has_drivers, workdir, args.timeout, env)
                run = entry[mode]
                log(f"{version} {module} {mode}: {_cell(run)} (run / failures / skipped) "
                    f"in {run['duration_s']:.0f} s")
            entry["differences"] = compare(entry["plain"], entry["heatline"])
            for diff in entry["differences"]:
                log(f"  differs: {diff}")
            data["modules"][module] = summarise(entry)
            save()
            if not args.workdir:
                for mode in MODES:
                    shutil.rmtree(entry[mode]["dir"], ignore_errors=True)
        if args.together:
            run_together(data, python, version, modules, has_drivers, workdir, args, env)
            save()
    save()
    report(results)
    if not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
