"""The opcode flag table handed to the engine (heatline.engine.opcodes)."""

import dis
import glob
import opcode
import os
import shutil
import subprocess
import sys

import pytest

from heatline.engine import opcodes as _opcodes
from heatline.engine.opcodes import CALL, SWITCH, opcode_flags_table

CALL_PREFIXES = ("CALL", "PRECALL", "INSTRUMENTED_CALL")


def names_with(flag):
    table = opcode_flags_table()
    return {
        name
        for name, number in _opcodes._all_opcodes().items()
        if number < 256 and table[number] & flag
    }


def test_table_has_one_byte_per_opcode():
    table = opcode_flags_table()
    assert isinstance(table, bytes)
    assert len(table) == 256


def test_call_is_marked_and_load_fast_is_not():
    table = opcode_flags_table()
    call = "CALL" if "CALL" in dis.opmap else "CALL_FUNCTION"
    assert table[dis.opmap[call]] & CALL
    assert table[dis.opmap["CALL_FUNCTION_EX"]] & CALL
    for name in ("LOAD_FAST", "RETURN_VALUE", "POP_TOP"):
        assert not table[dis.opmap[name]], name
    assert not table[dis.opmap["STORE_NAME"]] & CALL
    assert table[dis.opmap["EXTENDED_ARG"]] == _opcodes.PREFIX


def test_intrinsic_calls_are_not_marked_as_calls():
    table = opcode_flags_table()
    for name in ("CALL_INTRINSIC_1", "CALL_INTRINSIC_2"):
        if name in dis.opmap:
            assert not table[dis.opmap[name]] & CALL


def test_every_call_opcode_is_marked_including_specialized_variants():
    expected = {
        name
        for name, number in _opcodes._all_opcodes().items()
        if number < 256
        and name.startswith(CALL_PREFIXES)
        and name not in ("CALL_INTRINSIC_1", "CALL_INTRINSIC_2")
    }
    marked = names_with(CALL)
    assert expected == marked
    if sys.version_info >= (3, 11):
        # 3.11+ rewrites CALL into specialized forms while running; those must be covered too.
        assert marked - set(dis.opmap)


def test_backward_jumps_are_marked_as_gil_switch_points():
    loop_jump = "JUMP_BACKWARD" if "JUMP_BACKWARD" in dis.opmap else "JUMP_ABSOLUTE"
    assert opcode_flags_table()[dis.opmap[loop_jump]] & SWITCH
    assert not names_with(SWITCH) & names_with(CALL)


@pytest.mark.skipif(not hasattr(opcode, "_specialized_instructions"), reason="3.11/3.12 only")
def test_specialized_instructions_take_the_free_slots_in_order_like_dis():
    free = [number for number, name in enumerate(opcode.opname) if name.startswith("<")]
    for name, number in zip(opcode._specialized_instructions, free):
        assert dis._all_opmap[name] == number, name
        assert _opcodes._all_opcodes()[name] == number, name


def _find_python(minor):
    """A working python3.<minor> on this machine (PATH or pyenv), or None."""
    pyenv = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates = [
        shutil.which(f"python3.{minor}"),
        *sorted(glob.glob(os.path.join(pyenv, "versions", f"3.{minor}.*", "bin", "python3"))),
    ]
    for candidate in filter(None, candidates):
        probe = subprocess.run(
            [candidate, "-c", "import sys; print(sys.version_info[1])"],
            check=False,
            capture_output=True,
            text=True,
            timeout=30,
        )
        if probe.returncode == 0 and probe.stdout.strip() == str(minor):
            return candidate
    return None


CHECK_IN_CHILD = r"""
import dis, runpy, sys
module = runpy.run_path(sys.argv[1])
table, CALL = module["opcode_flags_table"](), module["CALL"]
assert len(table) == 256
call = "CALL" if "CALL" in dis.opmap else "CALL_FUNCTION"
assert table[dis.opmap[call]] & CALL, "CALL not marked"
assert not table[dis.opmap["LOAD_FAST"]], "LOAD_FAST marked"
for name in ("CALL_INTRINSIC_1", "CALL_INTRINSIC_2"):
    assert name not in dis.opmap or not table[dis.opmap[name]] & CALL, name
print("ok")
"""


@pytest.mark.parametrize("minor", [m for m in range(9, 15) if m != sys.version_info[1]])
def test_table_on_other_installed_python_versions(minor):
    # _opcodes needs only the standard library, so another interpreter can run it as a file.
    python = _find_python(minor)
    if python is None:
        pytest.skip(f"no python3.{minor} here")
    assert _run_with_table(python, CHECK_IN_CHILD).strip() == "ok"


def _run_with_table(python, script):
    """What ``script`` prints, run by ``python`` with engine/opcodes.py's path as its argument."""
    result = subprocess.run(
        [python, "-c", script, os.path.abspath(_opcodes.__file__)],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


# Where the interpreter really checks for a GIL drop request: a signal handler runs at that
# check (the eval breaker), and its frame argument shows the instruction after which it ran.
# A timer signal every 100 us while a loop of many kinds of instruction runs; every
# instruction seen there must be flagged (SWITCH, SWITCH_CONTENDED, or CALL). Formatting an
# int is left out: it runs signal handlers from inside (PyErr_CheckSignals), not at the check.
SWITCH_PROBE = r"""
import dis, runpy, signal, sys
module = runpy.run_path(sys.argv[1])
table = module["opcode_flags_table"]()
seen = {}


class Box:
    a = 1


G = 5


def work(n):
    total, box, items = 0, Box(), [1, 2, 3]
    for i in range(n):
        x = i + 1
        y = x * 2 - 3
        x, y = y, x
        a = b = -y
        total += a % 7
        box.a = x
        total += box.a
        items[0] += items[1]
        p, q = (x, y)
        s = x if i & 1 else y
        if 0 < x < y:
            total += 1
        if x is None or 2 in items:
            total -= 1
        total += G + (not b) + p - q + s
        k = [x and y, x or y]
        del k
        j = 3
        while j:
            j -= 1
    return total


# An EXTENDED_ARG prefix stands for the instruction it prefixes (3.9/3.10 leave f_lasti on
# it), as the engine reads it.
names, prefixes = {}, []
for instruction in dis.get_instructions(work):
    prefixes.append(instruction.offset)
    if instruction.opname != "EXTENDED_ARG":
        names.update(dict.fromkeys(prefixes, instruction.opname))
        prefixes = []


def handler(signum, frame):
    if frame.f_code is work.__code__:
        name = names[frame.f_lasti]
        seen[name] = seen.get(name, 0) + 1


signal.signal(signal.SIGALRM, handler)
signal.setitimer(signal.ITIMER_REAL, 0.0001, 0.0001)
while sum(seen.values()) < 300:
    work(20000)
signal.setitimer(signal.ITIMER_REAL, 0)
# A timer signal already generated may still arrive; at exit the interpreter puts SIGALRM's
# default action (terminate) back, so it is ignored from here on.
signal.signal(signal.SIGALRM, signal.SIG_IGN)
unflagged = sorted(name for name in seen if not table[dis.opmap[name]])
print(sorted(seen), "unflagged:", unflagged)
"""


@pytest.mark.parametrize("minor", list(range(9, 15)))
def test_every_instruction_where_the_interpreter_checks_for_a_gil_drop_is_flagged(minor):
    python = sys.executable if minor == sys.version_info[1] else _find_python(minor)
    if python is None:
        pytest.skip(f"no python3.{minor} here")
    out = _run_with_table(python, SWITCH_PROBE)
    assert out.rstrip().endswith("unflagged: []"), out


def test_instructions_that_never_check_are_not_switch_points():
    # 3.9: FAST_DISPATCH instructions; 3.11+: the backward jump of `yield from` / `await`.
    flagged = names_with(SWITCH) | names_with(_opcodes.SWITCH_CONTENDED)
    for name in ("LOAD_FAST", "LOAD_CONST", "STORE_FAST", "POP_TOP", "JUMP_FORWARD",
                 "RETURN_VALUE", "JUMP_BACKWARD_NO_INTERRUPT"):
        assert name not in flagged, name
    assert not names_with(_opcodes.SWITCH_CONTENDED) & (names_with(SWITCH) | names_with(CALL))
    if sys.version_info >= (3, 10):
        assert not names_with(_opcodes.SWITCH_CONTENDED)
    else:
        assert {"BINARY_ADD", "INPLACE_ADD", "FOR_ITER"} <= names_with(_opcodes.SWITCH_CONTENDED)
