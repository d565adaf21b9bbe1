"""What regions and module hooks cost per call: heatline.region's enter and exit, and the torch
forward hooks on a model of 100 small modules, while a profile runs.

    python bench/labels_overhead.py [--rounds 5]

Regions: the time per `with heatline.region("r"): pass` (an enter and an exit), profiled,
less the time per `with nullcontext: pass` (the loop and the with statement themselves).
Modules: a forward through a Sequential of 100 Linear(4, 4) layers on a 1x4 input (so the
layers' own work is small and the hooks' cost shows), profiled against the same forward with
no profile running; the difference per module call is the pre-hook and the forward hook.
Step: a training step (forward, backward, SGD) of a model of 100 modules (50 Linear(W, W),
each followed by a ReLU) on a batch of 64, W chosen so that a step takes about 50 ms (20 steps
a second), its phases marked by record_function and its steps by optimizer.step(): the CPU
time of a step, profiled with heatline's torch hooks (regions, steps, modules) against profiled
with them removed, the rounds interleaved. Each figure is the median over the rounds. Prints
Markdown.
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
    step_model(torch, args.rounds)


def step_model(torch, rounds):
    """The issue's model: 100 modules at about 20 steps a second; the hooks' share of a step."""
    from torch.profiler import record_function

    from heatline.engine import session, torch_labels

    def build(width):
        layers = []
        for _ in range(50):
            layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
        return torch.nn.Sequential(*layers)

    def steps(model, optimizer, n):
        x = torch.randn(64, model[0].in_features)
        started = time.thread_time()
        for _ in range(n):
            with record_function("forward"):
                loss = model(x).square().mean()
            with record_function("backward"):
                optimizer.zero_grad()
                loss.backward()
            with record_function("optimizer"):
                optimizer.step()
        return (time.thread_time() - started) / n

    width = 64
    while True:  # the width whose plain step takes 50 ms or more
        model = build(width)
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
        if steps(model, optimizer, 3) >= 0.05 or width >= 4096:
            break
        width *= 2
    n = 10
    hooked, bare = [], []
    for _ in range(rounds):
        heatline.start(cpu_only=True)
        try:
            hooked.append(steps(model, optimizer, n))
            torch_labels.uninstall()  # as a run without the torch hooks
            while session._optimizer_hooks:
                session._optimizer_hooks.pop().remove()
            bare.append(steps(model, optimizer, n))
        finally:
            heatline.stop()
    with_hooks, without = statistics.median(hooked), statistics.median(bare)
    # each round's pair, measured back to back: its ratio, and their spread over the rounds
    ratios = sorted(h / b for h, b in zip(hooked, bare))
    low, high = ratios[len(ratios) // 4], ratios[(3 * len(ratios)) // 4]
    calls = 101 + 3  # module forwards and regions per step (and one optimizer step)
    print(f"| step, 100 modules (Linear({width}, {width}) and ReLU), batch 64, profiled, "
          f"hooks off | {without * 1e3:.1f} ms |")
    print(f"| the same step, hooks on (101 module calls, 3 regions, 1 step) | "
          f"{with_hooks * 1e3:.1f} ms |")
    print(f"| the hooks' share of a step (medians) | {(with_hooks / without - 1) * 100:+.2f}% "
          f"({(with_hooks - without) / calls * 1e9:.0f} ns per hooked call) |")
    print(f"| each round's hooks-on / hooks-off ratio: median, quartiles | "
          f"{statistics.median(ratios):.3f}, {low:.3f} to {high:.3f} ({len(ratios)} rounds) |")


if __name__ == "__main__":
    main()
