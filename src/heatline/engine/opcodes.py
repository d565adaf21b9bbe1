"""The opcode flags the engine uses to tell Python time from native time.

CALL (1): when a thread's innermost frame is executing one of these instructions, the thread
is inside the code that frame called (a C function: Python callees get frames of their own),
so a running thread there is charged native time.
SWITCH (2): instructions at which the interpreter checks for a request to hand the GIL over.
A thread running without the GIL at one of them is doing that handover (interpreter work,
charged as Python), not running C code that released the GIL.
SWITCH_CONTENDED (4), CPython < 3.10 only: instructions after which the interpreter checks for
that request but which may themselves run C code that releases the GIL (an operator on numpy
arrays). A thread running without the GIL at one of them is taken as handing over only while
another thread holds the GIL; with the GIL free it is running that C code (native).

Where the interpreter checks (the rule, per version):
- 3.10+: only at the instructions named by _SWITCH_PREFIXES (backward jumps, RESUME; 3.11's
  conditional backward jumps; 3.10's conditional jumps, which check when they jump) and after
  calls. A handover right after a call looks like the call (CALL wins: charged native).
- 3.9 (Python/ceval.c): at the top of the eval loop, so after every instruction that ends with
  DISPATCH(); not after those that end with FAST_DISPATCH() (_FAST_39 below: stack shuffles,
  fast locals, constants, forward jumps, `is`/`in` tests), nor after those that leave the frame
  (return, yield, raise). The conditional jumps take the fast path on a bool and check
  otherwise, so they are marked. The check is also skipped when the next instruction is
  SETUP_FINALLY, SETUP_WITH, BEFORE_ASYNC_WITH or YIELD_FROM; the table cannot express that and
  keeps the previous instruction marked. tests/unit/test_opcodes.py checks the table against
  the running interpreter: a signal handler's frame shows the instruction after which the
  check ran.
"""

from __future__ import annotations

import sys

import opcode  # not dis: it costs an import and ~75 objects the program's GC would walk

CALL = 1
SWITCH = 2
SWITCH_CONTENDED = 4
PREFIX = 8  # EXTENDED_ARG: the engine takes the flags of the instruction it prefixes

_CALL_PREFIXES = ("CALL", "PRECALL", "INSTRUMENTED_CALL")
_SWITCH_PREFIXES = ("JUMP_BACKWARD", "RESUME", "JUMP_ABSOLUTE", "INSTRUMENTED_JUMP_BACKWARD",
                    "INSTRUMENTED_RESUME", "POP_JUMP_BACKWARD")
# A backward jump that does not check (3.11+: the loops of `yield from` and `await`).
_NOT_SWITCHES = frozenset({"JUMP_BACKWARD_NO_INTERRUPT"})
# 3.10: conditional jumps check when they jump (a `while` loop's test jumps backward).
_SWITCHES_310 = frozenset({"POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE"})
# These run a small interpreter helper inline rather than calling user-visible code.
_NOT_CALLS = frozenset({"CALL_INTRINSIC_1", "CALL_INTRINSIC_2"})
# 3.9: instructions that never reach the eval loop's check (FAST_DISPATCH, or leave the frame).
_FAST_39 = frozenset({
    "NOP", "LOAD_FAST", "LOAD_CONST", "STORE_FAST", "POP_TOP", "ROT_TWO", "ROT_THREE",
    "ROT_FOUR", "DUP_TOP", "DUP_TOP_TWO", "IS_OP", "CONTAINS_OP", "JUMP_FORWARD",
    "RETURN_VALUE", "YIELD_VALUE", "RAISE_VARARGS", "RERAISE",
})
_CHECKS_AFTER_EVERY_INSTRUCTION = sys.version_info < (3, 10)


def _all_opcodes() -> dict[str, int]:
    """Every opcode name -> number this interpreter can execute, specialized variants included."""
    names: dict[str, int] = dict(opcode.opmap)
    names.update(getattr(opcode, "_specialized_opmap", {}))  # 3.13+
    specialized = getattr(opcode, "_specialized_instructions", None)  # 3.11, 3.12
    if specialized:
        # 3.11/3.12 give specialized instructions no numbers of their own: they take the unused
        # slots of opcode.opname in order, which is how dis numbers them too.
        free = [num for num, name in enumerate(opcode.opname) if name.startswith("<")]
        for num, name in zip(free, specialized):
            names.setdefault(name, num)
    return names


def opcode_flags_table() -> bytes:
    """256 bytes: the CALL and SWITCH flags of every opcode number."""
    table = bytearray(256)
    for name, num in _all_opcodes().items():
        if not 0 <= num < 256:
            continue
        if name == "EXTENDED_ARG":
            table[num] |= PREFIX
            continue
        if name.startswith(_CALL_PREFIXES) and name not in _NOT_CALLS:
            table[num] |= CALL
        if (name.startswith(_SWITCH_PREFIXES) and name not in _NOT_SWITCHES) or (
            sys.version_info[:2] == (3, 10) and name in _SWITCHES_310
        ):
            table[num] |= SWITCH
        elif (_CHECKS_AFTER_EVERY_INSTRUCTION and name not in _FAST_39
              and not table[num] & CALL):
            table[num] |= SWITCH_CONTENDED
    return bytes(table)
