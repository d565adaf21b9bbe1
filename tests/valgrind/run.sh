#!/usr/bin/env bash
# Runs the memory ground-truth targets under valgrind's memcheck, profiled by heatline with
# memory profiling on, and fails (exit status 99) on any memory error that
# tests/valgrind/python.supp does not suppress (that file explains each suppression).
#
#   tests/valgrind/run.sh                          all memory targets
#   tests/valgrind/run.sh tests/targets/memory.py  some of them
#   PYTHON=.venv/bin/python tests/valgrind/run.sh  heatline as installed in a virtualenv
#   PYTHONPATH=src tests/valgrind/run.sh           the in-tree build
#   HEATLINE=0 tests/valgrind/run.sh               the targets alone, without heatline
#
# - CPython must use plain malloc (PYTHONMALLOC=malloc): pymalloc carves objects out of its
#   own arenas, which hides heap errors from memcheck, and its address checks read
#   uninitialised memory on purpose.
# - The targets run scaled down (HEATLINE_TARGET_SCALE, default 0.02; memcheck is ~50x
#   slower), with a small sampling window (HEATLINE_VALGRIND_WINDOW, default 4096 bytes) so
#   that the hooks' slow path (recording, stack walks, the live table) runs often.
# - Leak checking is off: CPython does not free everything at exit. Add options through
#   valgrind's own $VALGRIND_OPTS, e.g. VALGRIND_OPTS="--leak-check=full --track-origins=yes".
set -euo pipefail
cd "$(dirname "$0")/../.."

python=${PYTHON:-python3}
# The interpreter itself, not a wrapper script (pyenv shims are shell scripts).
interpreter=$("$python" -c 'import sys; print(sys.executable)')
export PYTHONMALLOC=malloc
export HEATLINE_TARGET_SCALE=${HEATLINE_TARGET_SCALE:-0.02}
window=${HEATLINE_VALGRIND_WINDOW:-4096}

if [ "$#" -eq 0 ]; then
    set -- tests/targets/memory.py tests/targets/memory_threads.py tests/targets/memory_raw.py
fi
if [ "${HEATLINE:-1}" = 0 ]; then
    profiler=()
else
    profiler=(-m heatline -q --memory-sampling-window "$window")
fi

status=0
for target in "$@"; do
    echo "== valgrind: $target" >&2
    valgrind --error-exitcode=99 --suppressions=tests/valgrind/python.supp --num-callers=40 \
        "$interpreter" "${profiler[@]}" "$target" || status=$?
done
exit "$status"
