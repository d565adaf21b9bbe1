"""The engine's contract checks (src/heatline/_native/debug.h, lock.h), compiled directly.

In a debug build (HEATLINE_DEBUG, as the ASan build has it) the engine lock records its holder,
so a lock taken twice by one thread or released by a thread that does not hold it stops the
process with a message instead of hanging or corrupting a table, and the holder survives the
sampler's condition wait. A release build keeps none of it: the lock is its mutex alone. Both
are built with -DNDEBUG, as CPython builds every extension."""

import shutil
import signal
import subprocess
from pathlib import Path

import pytest

NATIVE = Path(__file__).resolve().parents[2] / "src" / "heatline" / "_native"

PROGRAM = r"""
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "lock.h"

static hl_lock lock = HL_LOCK_INITIALIZER;

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "";
    if (strcmp(what, "size") == 0) {
        printf("%d\n", (int)(sizeof(hl_lock) == sizeof(pthread_mutex_t)));
    } else if (strcmp(what, "twice") == 0) {
        hl_lock_acquire(&lock);
        hl_lock_acquire(&lock);
    } else if (strcmp(what, "release_unheld") == 0) {
        hl_lock_release(&lock);
    } else if (strcmp(what, "wait") == 0) {
        pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
        struct timespec past = {0, 0};
        hl_lock_acquire(&lock);
        (void)hl_lock_wait(&lock, &wake, &past);
        HL_ASSERT(hl_lock_held(&lock));
        hl_lock_release(&lock);
        HL_ASSERT(!hl_lock_held(&lock));
        puts("held across the wait");
    }
    return 0;
}
"""


def _build(tmp_path, debug):
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        pytest.skip("needs a C compiler")
    source = tmp_path / "lockcheck.c"
    source.write_text(PROGRAM)
    binary = tmp_path / ("lockcheck_debug" if debug else "lockcheck")
    flags = ["-DHEATLINE_DEBUG=1"] if debug else []
    subprocess.run(
        [compiler, "-std=c11", "-Wall", "-Wextra", "-Werror", "-DNDEBUG", *flags, "-I", str(NATIVE),
         "-pthread", "-o", str(binary), str(source)],
        check=True,
    )
    return binary


def _run(binary, what):
    return subprocess.run([str(binary), what], capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("misuse", ["twice", "release_unheld"])
def test_a_debug_build_stops_at_a_misused_engine_lock_instead_of_hanging(tmp_path, misuse):
    done = _run(_build(tmp_path, debug=True), misuse)
    assert done.returncode == -signal.SIGABRT, done
    assert "heatline: internal check failed: " in done.stderr
    assert "lock.h:" in done.stderr


def test_the_lock_records_its_holder_across_a_condition_wait(tmp_path):
    done = _run(_build(tmp_path, debug=True), "wait")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "held across the wait\n"


def test_a_release_build_keeps_no_holder_record(tmp_path):
    assert _run(_build(tmp_path, debug=False), "size").stdout == "1\n"
    assert _run(_build(tmp_path, debug=True), "size").stdout == "0\n"
