"""One rank of a two-process job launched by torchrun (`python -m torch.distributed.run
--standalone --nproc_per_node 2 children_torchrun.py`) on the CPU: the gloo backend, an
all_reduce of each rank's number, and some Python work for the profile to show. Prints one JSON
line per rank: its rank, the world size and the reduced sum (the ranks' lines come in whatever
order they finish)."""

import json
import os

import torch
import torch.distributed as dist


def work(n):
    total = 0
    for i in range(n):
        total += i % 7
    return total


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    tensor = torch.tensor([rank + 1.0])
    dist.all_reduce(tensor)
    work(300_000)
    line = json.dumps({"rank": rank, "world": dist.get_world_size(), "sum": tensor.item()})
    # One write per line: the ranks share stdout, and torchrun runs them unbuffered (-u), where
    # print() writes the line and its newline apart, so two ranks' lines could interleave.
    os.write(1, (line + "\n").encode())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
