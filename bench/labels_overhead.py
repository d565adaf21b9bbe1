"""What regions and module hooks cost per call: heatline.region's enter and exit, and the torch
forward hooks on a model of 100 small modules, while a profile runs.

    python bench/labels_overhead.py [--rounds 5]

Regions: the time per `with heatline.region("r"): pass` (an enter and an exit), profiled,
less the time per `with nullcontext: pass` (the loop and the with statement themselves).
Modules: a forward through a Sequential of 100 Linear(4, 4) layers on a 1x4 input (so the
layers' own work is small and the hooks' cost shows), profiled against the same forward with
no profile running; the difference per module call is the pre-hook and the forward hook.
Each figure is the median over the rounds. Prints Markdown.
"""

import argparse
import contextlib
import statistics
import time

import heatline


def per_call(function, calls):
    started = time.perf_counter()
    function(calls)
    return (time.perf_counter() - started) / calls


def regions(calls):
    region = heatline.region("r")
    for _ in range(calls):
        with region:
            pass


def baseline(calls):
    nothing = contextlib.nullcontext()
    for _ in range(calls):
        with nothing:
            pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    calls = 200_000
    region_ns = []
    for _ in range(args.rounds):
        with heatline.profile(cpu_only=True):
            cost = per_call(regions, calls) - per_call(baseline, calls)
        region_ns.append(cost * 1e9)
    print("| what | per call |")
    print("| --- | --- |")
    print(f"| region enter + exit (profiled) | {statistics.median(region_ns):.0f} ns |")
    try:
        import torch
    except ImportError:
        print("| module hooks | torch not installed |")
        return
    torch.set_num_threads(1)
    model = torch.nn.Sequential(*(torch.nn.Linear(4, 4) for _ in range(100)))
    x = torch.randn(1, 4)
    steps = 300

    def forward(n):
        with torch.no_grad():
            for _ in range(n):
                model(x)

    plain, hooked = [], []
    for _ in range(args.rounds):
        plain.append(per_call(forward, steps))
        with heatline.profile(cpu_only=True):
            hooked.append(per_call(forward, steps))
    modules = 101  # the Sequential and its 100 layers
    cost = (statistics.median(hooked) - statistics.median(plain)) / modules
    print(f"| forward, 101 modules, no profile | {statistics.median(plain) * 1e6:.0f} us |")
    print(f"| forward, 101 modules, profiled | {statistics.median(hooked) * 1e6:.0f} us |")
    print(f"| module hooks (pre + forward) per module call | {cost * 1e9:.0f} ns |")


if __name__ == "__main__":
    main()
