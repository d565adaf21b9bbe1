"""For `heatline ctl`: three phases of known work, the test turning profiling on and off between
them from another process. Handshake through files in directory argv[1]: the program writes
"ready" after before_work(), waits for "go_on", runs during_work(), writes "during_done",
waits for "go_off", runs after_work(). Each work function measures its own busy time; the
truth goes to argv[1]/truth.json."""

import json
import os
import sys
import time

DIRECTORY = sys.argv[1]
truth = {}


def busy(name, seconds):
    wall, cpu = time.perf_counter(), time.thread_time()
    total = 0
    while time.thread_time() - cpu < seconds:
        total += sum(range(200))
    truth[name] = {"cpu_s": time.thread_time() - cpu, "wall_s": time.perf_counter() - wall}
    return total


def before_work():
    return busy("before_work", 0.3)


def during_work():
    return busy("during_work", 0.6)


def after_work():
    return busy("after_work", 0.3)


def signal_and_wait(done, wanted):
    with open(os.path.join(DIRECTORY, done), "w"):
        pass
    while not os.path.exists(os.path.join(DIRECTORY, wanted)):
        time.sleep(0.005)


before_work()
signal_and_wait("ready", "go_on")
during_work()
signal_and_wait("during_done", "go_off")
after_work()
with open(os.path.join(DIRECTORY, "truth.json"), "w") as f:
    json.dump(truth, f)
print("phases done")
