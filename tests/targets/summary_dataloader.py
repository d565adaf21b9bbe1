"""A small CNN trained on the CPU from a DataLoader(num_workers=2), the case of the summary's
DataLoader starvation finding: with "starved" (argv[1]) each image is augmented in pure Python
in the workers (jitter, then a box blur, then torch.tensor), so the training loop mostly waits
for batches; with "fed" the Dataset hands out ready tensors and the step is the larger model's,
so the workers keep ahead of the loop and the loop never waits long.

Prints the loss of the last step (the same under python and under heatline). With a second
argument, writes there how long the loop truly waited for its workers ({"waited_s", "loop_s",
"train_s"}; the loop's time leaves out torch's lazy imports, as the summary does):
on a machine whose CPUs are taken by other work the workers fall behind and "fed" waits too."""

import json
import random
import sys
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

SIZE = 24  # pixels per side
ITEMS = 32
BATCH = 4


def jitter(pixels, rng):
    return [[min(1.0, max(0.0, value + rng.uniform(-0.1, 0.1))) for value in row]
            for row in pixels]


def blur(pixels, passes):
    for _ in range(passes):
        pixels = [
            [
                sum(pixels[min(max(y + dy, 0), SIZE - 1)][min(max(x + dx, 0), SIZE - 1)]
                    for dy in (-1, 0, 1) for dx in (-1, 0, 1)) / 9.0
                for x in range(SIZE)
            ]
            for y in range(SIZE)
        ]
    return pixels


def augment(pixels, rng):
    return torch.tensor(blur(jitter(pixels, rng), passes=4)).unsqueeze(0)


class Images(Dataset):
    def __init__(self, starved):
        self.starved = starved
        rng = random.Random(0)
        self.images = [[[rng.random() for _ in range(SIZE)] for _ in range(SIZE)]
                       for _ in range(ITEMS)]
        self.ready = [torch.tensor(image).unsqueeze(0) for image in self.images]

    def __len__(self):
        return ITEMS if self.starved else 24 * ITEMS

    def __getitem__(self, index):
        if self.starved:
            return augment(self.images[index], random.Random(index)), index % 10
        return self.ready[index % ITEMS], index % 10


def model(width):
    return nn.Sequential(
        nn.Conv2d(1, width, 3, padding=1), nn.ReLU(), nn.Conv2d(width, width, 3, padding=1),
        nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(16 * width, 10),
    )


def train(starved, truth_path=None):
    began = time.perf_counter()
    torch.manual_seed(0)
    net = model(4 if starved else 64)
    optimiser = torch.optim.SGD(net.parameters(), lr=0.01)
    # One step on a dummy batch first: torch imports much of itself lazily at the first step
    # (a second and more, which the summary leaves out of the main thread's time as imports),
    # and this keeps that out of the loop whose waiting the rules and the truth measure.
    nn.functional.cross_entropy(net(torch.zeros(BATCH, 1, SIZE, SIZE)),
                                torch.zeros(BATCH, dtype=torch.long)).backward()
    optimiser.step()
    optimiser.zero_grad()
    torch.manual_seed(0)
    net = model(4 if starved else 64)
    optimiser = torch.optim.SGD(net.parameters(), lr=0.01)
    loader = DataLoader(Images(starved), batch_size=BATCH, num_workers=2)
    loss = None
    waited, mark = 0.0, time.perf_counter()
    loop_began = mark
    for images, labels in loader:  # the loop waits here for the workers' batches
        waited += time.perf_counter() - mark
        optimiser.zero_grad()
        loss = nn.functional.cross_entropy(net(images), labels)
        loss.backward()
        optimiser.step()
        mark = time.perf_counter()
    # The last wait: the loop's end, where the DataLoader stops its workers and waits for them.
    waited += time.perf_counter() - mark
    if truth_path:  # how long the loop truly waited for its workers, of the whole loop
        with open(truth_path, "w") as f:
            json.dump({"waited_s": waited, "loop_s": time.perf_counter() - loop_began,
                       "train_s": time.perf_counter() - began}, f)
    return loss


if __name__ == "__main__":
    torch.set_num_threads(1)
    print(f"{float(train(sys.argv[1] == 'starved', *sys.argv[2:])):.4f}")
