"""The summary's low-utilisation rule against the fake NVML: a device busy 10% of the time while
the main thread prepares batches in Python is named with that line; one busy 90% is not
(tests/targets/summary_gpu.py)."""

import json
import os
import re
import subprocess
import sys

from gpu_support import HERE, gpu_env

TARGET = os.path.join(os.path.dirname(HERE), "targets", "summary_gpu.py")


def _summary(fakes, tmp_path, utilisation):
    out = tmp_path / f"gpu{utilisation}.json"
    done = subprocess.run(
        [sys.executable, "-m", "heatline", "-q", "-o", str(out), TARGET, str(utilisation)],
        env=gpu_env(fakes), capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    with open(out, encoding="utf-8") as f:
        return {item["rule"]: item for item in json.load(f)["summary"]}


def _line(text):
    with open(TARGET, encoding="utf-8") as f:
        return next(number for number, line in enumerate(f, 1) if text in line)


def test_a_starved_gpu_is_named_with_the_main_threads_work(fakes, tmp_path):
    item = _summary(fakes, tmp_path, 10)["gpu_utilisation"]
    # About 10%: NVML's first sample may come before the program sets the fake's figure.
    busy = re.match(r"GPU 0 is busy only (\d+)% of the time", item["text"])
    assert busy and 5 <= int(busy.group(1)) <= 10, item
    assert "the CPU side does not keep it fed; the main thread spends " in item["text"]
    assert (item["file"], item["line"]) == (TARGET, _line("return sum(i * i % 11"))


def test_a_busy_gpu_is_not_named(fakes, tmp_path):
    assert "gpu_utilisation" not in _summary(fakes, tmp_path, 90)
