"""Calls that exec, given arguments the real function refuses before it does anything: each
must fail as under python (same exception, same message), without heatline reading more of
an argument than the real call would (an object claiming sys.maxsize items is never walked),
and the run goes on. Then a hot loop, the line a profile must show."""

import os
import sys

import _posixsubprocess


class Huge:
    """A sequence of sys.maxsize items: the real call refuses it (MemoryError) at once."""

    def __len__(self):
        return sys.maxsize

    def __getitem__(self, index):
        return b"x"


class Unindexable:
    def __len__(self):
        return 1


def fork_exec(args, executable_list):
    if sys.version_info >= (3, 14):  # CPython's test_capi.test_misc passes these
        rest = (True, (1, 2), 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, True, True, 17, False, 19, 20,
                21, 22)
    elif sys.version_info >= (3, 11):
        rest = (True, (1, 2), 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, True, True, 17, False, 19, 20,
                21, 22, False)
    else:
        rest = (3, (1, 2), 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21)
    return _posixsubprocess.fork_exec(args, executable_list, *rest)


CALLS = [
    ("fork_exec huge executable_list", lambda: fork_exec(1, Huge())),
    ("fork_exec unindexable executable_list", lambda: fork_exec(1, Unindexable())),
    ("fork_exec unindexable args", lambda: fork_exec(Unindexable(), [b"1"])),
    ("fork_exec huge args", lambda: fork_exec(Huge(), [b"1"])),
    ("execv int argv", lambda: os.execv(sys.executable, 5)),
    ("execv huge argv", lambda: os.execv(sys.executable, Huge())),
    ("execv empty argv", lambda: os.execv(sys.executable, [])),
    ("execv empty first", lambda: os.execv(sys.executable, [""])),
    ("execve int env", lambda: os.execve(sys.executable, [sys.executable, "-c", ""], 5)),
    ("execve huge argv", lambda: os.execve(sys.executable, Huge(), {})),
    ("posix_spawn int argv", lambda: os.posix_spawn(sys.executable, 5, {})),
    ("posix_spawn huge argv", lambda: os.posix_spawn(sys.executable, Huge(), {})),
    ("posix_spawn int env", lambda: os.posix_spawn(sys.executable, [sys.executable], 5)),
]

for name, call in CALLS:
    try:
        call()
    except BaseException as exc:  # noqa: BLE001 -- what each raises is the output
        print(f"{name}: {type(exc).__name__}: {exc}", flush=True)
    else:
        print(f"{name}: returned", flush=True)


def hot_loop():
    total = 0
    for i in range(600_000):
        total += i % 7
    return total


print(hot_loop())
