"""The overhead benchmarks: the ten pyperformance benchmarks of Scalene's OSDI'23 paper, each
run as a standalone script.

pyperformance ships the benchmark sources as package data (data-files/benchmarks/bm_*/
run_benchmark.py). At run time the harness copies each one into its work directory as a plain
module (bm_NAME.py) and writes beside it a small driver (run_NAME.py) that imports it and
does a fixed amount of work, sized to take about 1-2 s under plain Python on a 2-core VM. The
profilers run the driver as an ordinary script, so the benchmark's code is the program's own
code for every one of them (not installed-package code, which some hide by default), and no
pyperf runner process sits between the profiler and the work.
"""

import importlib.util
import os
import shutil

# name: (pyperformance directory, driver body, description of the work)
# In the body, `bm` is the benchmark's module.
PYPERFORMANCE = {
    "async_tree": ("bm_async_tree",
                   "import asyncio\nasyncio.run(bm.BENCHMARKS['none']().run())\n",
                   "one async tree (6 levels x 6 branches), no I/O"),
    "async_tree_io": ("bm_async_tree",
                      "import asyncio\nasyncio.run(bm.BENCHMARKS['io']().run())\n",
                      "one async tree, every leaf sleeps 50 ms"),
    "async_tree_memoization": ("bm_async_tree",
                               "import asyncio\nasyncio.run(bm.BENCHMARKS['memoization']().run())\n",
                               "one async tree, leaves sleep unless memoised (90%)"),
    "async_tree_cpu_io_mixed": ("bm_async_tree",
                                "import asyncio\nasyncio.run(bm.BENCHMARKS['cpu_io_mixed']().run())\n",
                                "one async tree, half the leaves compute factorial(500)"),
    "docutils": ("bm_docutils",
                 "bm.bench_docutils(1, bm.DOC_ROOT)\n",
                 "render 29 of docutils' own documents (api/, dev/, howto/, peps/, index) to HTML"),
    "fannkuch": ("bm_fannkuch",
                 "for _ in range(3):\n    bm.fannkuch(bm.DEFAULT_ARG)\n",
                 "fannkuch(10), 3 times"),
    "mdp": ("bm_mdp",
            "bm.Battle().evaluate(0.25)\n",
            "one MDP evaluation at tolerance 0.25 (pyperformance: 0.192)"),
    "pprint": ("bm_pprint",
               "bm.p.pformat(bm.printable[:40_000])\n",
               "pformat of a 40,000-element list (pyperformance: 100,000)"),
    "raytrace": ("bm_raytrace",
                 "for _ in range(3):\n"
                 "    bm.bench_raytrace(1, bm.DEFAULT_WIDTH, bm.DEFAULT_HEIGHT, None)\n",
                 "3 renders of the 100x100 scene"),
    "sympy": ("bm_sympy",
              "from sympy.core.cache import clear_cache\n"
              "for _ in range(2):\n    clear_cache()\n    bm.bench_expand()\n",
              "expand((1 + x + y + z) ** 20), twice, cache cleared"),
}

QUICK = ["fannkuch", "raytrace", "async_tree_cpu_io_mixed"]

# heatline's own workloads (bench/workloads.py), on which the memory-profiling issue sets its
# limits; run on demand (--benchmarks), reported in their own table (render.py: workloads).
WORKLOADS = {
    "pure_python": "calls, arithmetic and dict updates",
    "alloc_python": "builds and drops 1.5 million small dicts, strs and lists",
    "numpy_heavy": "matrix products and sorts",
}
WORKLOADS_SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "workloads.py")

# docutils: the subset of its documents rendered (the whole set takes ~3.5 s here).
DOCUTILS_SUBSET = ["api", "dev", "howto", "peps", "index.txt"]

# A pure-Python loop of n iterations (about 50 ns each here): the smoke script's work, and the
# task of the multi-process pools (children.py).
WORK_FUNCTION = '''\
def work(n):
    total = 0
    for i in range(n):
        total += i * i % 7
    return total
'''

SMOKE_BODY = WORK_FUNCTION + '''

def main():
    return sum(work(100_000) for _ in range(3))


main()
'''


def pyperformance_dir():
    spec = importlib.util.find_spec("pyperformance")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "data-files", "benchmarks")
    return path if os.path.isdir(path) else None


class Benchmark:
    def __init__(self, name, script, targets, work):
        self.name, self.script, self.targets, self.work = name, script, targets, work


def prepare(names, workdir):
    """Write the drivers for the named benchmarks under workdir; returns (benchmarks,
    problems) where problems maps a name to why it cannot run."""
    found, problems = [], {}
    source_root = pyperformance_dir()
    for name in names:
        if name == "smoke":
            directory = os.path.join(workdir, "smoke")
            os.makedirs(directory, exist_ok=True)
            script = os.path.join(directory, "run_smoke.py")
            with open(script, "w") as f:
                f.write(SMOKE_BODY)
            found.append(Benchmark(name, script, [], "a 300,000-iteration Python loop"))
            continue
        if name in WORKLOADS:
            directory = os.path.join(workdir, name)
            os.makedirs(directory, exist_ok=True)
            shutil.copyfile(WORKLOADS_SOURCE, os.path.join(directory, "workloads.py"))
            script = os.path.join(directory, f"run_{name}.py")
            with open(script, "w") as f:
                f.write(f"# Driver written by bench/heatbench/suite.py.\nimport workloads\n\n"
                        f"workloads.{name}()\n")
            found.append(Benchmark(name, script, ["workloads"], WORKLOADS[name]))
            continue
        if name not in PYPERFORMANCE:
            problems[name] = "unknown benchmark"
            continue
        if source_root is None:
            problems[name] = "pyperformance is not installed"
            continue
        source, body, work = PYPERFORMANCE[name]
        directory = os.path.join(workdir, name)
        os.makedirs(directory, exist_ok=True)
        module = "bm_" + source[len("bm_"):]
        shutil.copyfile(os.path.join(source_root, source, "run_benchmark.py"),
                        os.path.join(directory, module + ".py"))
        if name == "docutils":
            docs = os.path.join(directory, "data", "docs")
            shutil.rmtree(docs, ignore_errors=True)
            os.makedirs(docs)
            for entry in DOCUTILS_SUBSET:
                src = os.path.join(source_root, source, "data", "docs", entry)
                if os.path.isdir(src):
                    shutil.copytree(src, os.path.join(docs, entry))
                else:
                    shutil.copyfile(src, os.path.join(docs, entry))
        script = os.path.join(directory, f"run_{name}.py")
        with open(script, "w") as f:
            f.write(f"# Driver written by bench/heatbench/suite.py: {work}.\n")
            f.write(f"import {module} as bm\n\n{body}")
        found.append(Benchmark(name, script, [module], work))
    return found, problems
