"""What the main thread waits on: with "waits" (argv[1]) it waits for a child process
(subprocess.run of a Python that sleeps 0.6 s) and then for a lock a thread holds for 0.6 s;
with "busy" it computes all the time while a thread sleeps."""

import subprocess
import sys
import threading
import time


def hold(lock, ready, seconds):
    with lock:
        ready.set()
        time.sleep(seconds)


def work(n):
    total = 0
    for i in range(n):
        total += i % 3
    return total


if __name__ == "__main__":
    if sys.argv[1] == "waits":
        subprocess.run([sys.executable, "-c", "import time; time.sleep(0.6)"], check=True)
        lock, ready = threading.Lock(), threading.Event()
        holder = threading.Thread(target=hold, args=(lock, ready, 0.6))
        holder.start()
        ready.wait()
        with lock:  # held by the thread for 0.6 s
            pass
        holder.join()
    else:
        sleeper = threading.Thread(target=time.sleep, args=(0.01,))
        sleeper.start()
        work(4_000_000)
        sleeper.join()
    print("done")
