"""Regions and modules with torch: record_function phases, and a Net holding two instances of
one module class (a stack of Linear layers) of different widths, each timed by the program's
own forward hooks; a module whose forward raises. The truth, written (JSON) to argv[1]: each
region's wall time, each instance's forward time, the run's."""

import json
import sys
import time

import torch
from torch import nn

clock = time.perf_counter
CALLS = 60


class Stack(nn.Module):
    def __init__(self, width, depth=3):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.small = Stack(96)
        self.big = Stack(384)

    def forward(self, x, y):
        return self.small(x).sum() + self.big(y).sum()


class Failing(nn.Module):
    def forward(self, x):
        raise ValueError("no")


def spin(seconds):
    end = clock() + seconds
    while clock() < end:
        pass


def timed(module, path, into):
    """The program's own hooks on one instance: its forward's wall time."""
    started = []

    def pre(module, args):
        started.append(clock())

    def post(module, args, output):
        into[path] = into.get(path, 0.0) + clock() - started.pop()

    module.register_forward_pre_hook(pre)
    module.register_forward_hook(post)


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    net = Net()
    modules = {}
    for path, module in (("", net), ("small", net.small), ("big", net.big)):
        timed(module, path, modules)
    regions = {"load": 0.0, "compute": 0.0}
    failing, failing_calls = Failing(), 0
    started = clock()
    with torch.no_grad():
        for _ in range(CALLS):
            t0 = clock()
            with torch.profiler.record_function("load"):
                spin(0.01)
                x, y = torch.randn(256, 96), torch.randn(256, 384)
            t1 = clock()
            with torch.autograd.profiler.record_function("compute"):
                net(x, y)
            regions["load"] += t1 - t0
            regions["compute"] += clock() - t1
            try:
                failing(x)
            except ValueError:
                failing_calls += 1
    run_s = clock() - started
    # NVTX: a range where torch has NVTX; where it has not (a CPU-only build) range_push
    # raises, as it does without a profiler, and marks nothing
    try:
        torch.cuda.nvtx.range_push("nvtx-range")
        nvtx_error = None
    except RuntimeError as exc:
        nvtx_error = str(exc)
    else:
        spin(0.01)
        torch.cuda.nvtx.range_pop()
    with open(sys.argv[1], "w") as f:
        json.dump({"regions": regions, "modules": modules, "run_s": run_s, "calls": CALLS,
                   "failing_calls": failing_calls, "nvtx_error": nvtx_error}, f)


main()
