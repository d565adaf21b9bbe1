"""A tiny PyTorch model trained on the CPU, whose Optimizer.step() calls mark its steps (no
heatline.step()), with its own step clock as the truth: prints a JSON object on stdout,
``durations_s``, each step's wall time between the ends of two consecutive optimizer steps
(read right after each step() returns). Each iteration sleeps a little (data loading) so that a
step lasts long enough for its clock to be read to well under 10% on a loaded machine."""

import json
import time

import torch

torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
inputs = torch.randn(256, 64)
labels = torch.randint(0, 10, (256,))

ends = []
for _ in range(8):
    time.sleep(0.06)
    loss = torch.nn.functional.cross_entropy(model(inputs), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    ends.append(time.perf_counter())

durations = [end - start for start, end in zip(ends, ends[1:])]
print(json.dumps({"durations_s": durations}))
