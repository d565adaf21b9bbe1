"""The opcode flag table handed to the engine (heatline._opcodes)."""

import dis
import glob
import opcode
import os
import shutil
import subprocess
import sys

import pytest

from heatline import _opcodes
from heatline._opcodes import CALL, SWITCH, opcode_flags_table

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
    for name in ("LOAD_FAST", "RETURN_VALUE", "STORE_NAME", "POP_TOP"):
        assert not table[dis.opmap[name]], name


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
    result = subprocess.run(
        [python, "-c", CHECK_IN_CHILD, os.path.abspath(_opcodes.__file__)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
