"""The opcode flags the engine uses to tell Python time from native time.

CALL (1): when a thread's innermost frame is executing one of these instructions, the thread
is inside the code that frame called (a C function: Python callees get frames of their own),
so a running thread there is charged native time.
SWITCH (2): instructions at which the interpreter checks for a request to hand the GIL over.
A thread running without the GIL at one of them is doing that handover (interpreter work,
charged as Python), not running C code that released the GIL.
"""

from __future__ import annotations

import opcode  # not dis: it costs an import and ~75 objects the program's GC would walk

CALL = 1
SWITCH = 2

_CALL_PREFIXES = ("CALL", "PRECALL", "INSTRUMENTED_CALL")
_SWITCH_PREFIXES = ("JUMP_BACKWARD", "RESUME", "JUMP_ABSOLUTE", "INSTRUMENTED_JUMP_BACKWARD",
                    "INSTRUMENTED_RESUME")
# These run a small interpreter helper inline rather than calling user-visible code.
_NOT_CALLS = frozenset({"CALL_INTRINSIC_1", "CALL_INTRINSIC_2"})


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
        if name.startswith(_CALL_PREFIXES) and name not in _NOT_CALLS:
            table[num] |= CALL
        if name.startswith(_SWITCH_PREFIXES):
            table[num] |= SWITCH
    return bytes(table)
