"""Writes tests/c/cases.h, the known answers the C tier checks the decoders against.

    python3.X tests/c/make_cases.py dump [--no-debug-ranges] > 3.X.json   (once per CPython)
    python3 tests/c/make_cases.py render 3.9.json 3.10.json ... > tests/c/cases.h
    clang-format -i tests/c/cases.h

`dump`, run by the CPython whose formats it records, compiles SAMPLE and writes the line table
of its function (co_lnotab on 3.9, co_linetable from 3.10) with the line of every instruction
offset as that CPython answers it: the last of dis.findlinestarts at or before the offset
(3.9), co_lines() (3.10), co_positions() (3.11+, one entry per code unit). From 3.13 it adds
the first bytes of the interpreter's _PyRuntime, its _Py_DebugOffsets. `render` turns the dumps
into C arrays. Run with PYTHONNODEBUGRANGES=1 (the --no-debug-ranges label) a 3.11+ CPython
writes its location table without columns, entries of code 13.
"""

import dis
import json
import sys

SAMPLE = '''\
def sample(items, scale):
    total = 0
    for item in items:
        if item % 3:
            total += item * scale
        else:
            total -= (
                item
                + scale
            )
    try:
        value = total // scale
    except ZeroDivisionError:
        value = None
    longer = [total, total, total, total, total, total, total, total, total, total, total, value]
    big = [total + 1, total + 2, total + 3, total + 4, total + 5, total + 6, total + 7, \
total + 8, total + 9, total + 10, total + 11, total + 12, total + 13, total + 14, total + 15, \
total + 16, total + 17, total + 18, total + 19, total + 20, total + 21, total + 22, total + 23]
''' + "\n" * 150 + '''\
    while total > 0:
        total -= 1
    return longer, big, value
'''
# 150 blank lines: a line step that needs two byte pairs (3.9, 3.10) or a two-group varint.

# sizeof(_Py_DebugOffsets) / 8 per minor version (compat.c's debug_shapes): the words kept.
DEBUG_WORDS = {13: 73, 14: 95, 15: 111}


def lines_310(code):
    lines = [None] * (len(code.co_code) // 2)
    for start, end, line in code.co_lines():
        for offset in range(start, end, 2):
            lines[offset // 2] = line
    return lines


def case(label, code, table, lines):
    return {"label": label, "firstlineno": code.co_firstlineno, "table": list(table),
            "lines": [-1 if line is None else line for line in lines]}


def dump(label):
    namespace = {}
    exec(compile(SAMPLE, "sample.py", "exec"), namespace)
    code = namespace["sample"].__code__
    minor = sys.version_info[1]
    cases = []
    if minor == 9:
        starts = list(dis.findlinestarts(code))
        lines = [max((a, line) for a, line in starts if a <= offset)[1]
                 for offset in range(0, len(code.co_code), 2)]
        cases.append(case(label, code, code.co_lnotab, lines))
    elif minor == 10:
        cases.append(case(label, code, code.co_linetable, lines_310(code)))
        # No instruction of SAMPLE is without a line on 3.10: a table written by hand with a
        # range of delta -128 (no line) between two others, answered by 3.10's co_lines.
        short = code.replace(co_code=code.co_code[:14], co_linetable=bytes([4, 1, 6, 128, 4, 2]))
        cases.append(case("a range without a line", short, short.co_linetable, lines_310(short)))
    else:
        lines = [position[0] for position in code.co_positions()]
        cases.append(case(label, code, code.co_linetable, lines))
    out = {"version": "%d.%d.%d" % sys.version_info[:3], "cases": cases}
    if minor in DEBUG_WORDS:
        import ctypes

        runtime = ctypes.c_char.in_dll(ctypes.pythonapi, "_PyRuntime")
        out["debug_offsets"] = list(ctypes.string_at(ctypes.addressof(runtime),
                                                     DEBUG_WORDS[minor] * 8))
    json.dump(out, sys.stdout)


def c_bytes(values, per_line=16):
    rows = [", ".join(str(v) for v in values[i:i + per_line])
            for i in range(0, len(values), per_line)]
    return "{\n    " + ",\n    ".join(rows) + "}"


def render(paths):
    print("/* cases.h: written by tests/c/make_cases.py (see there), then clang-format;"
          " not edited. */")
    print("#include <stddef.h>\n#include <stdint.h>\n")
    cases, offsets = [], []
    for path in paths:
        with open(path) as file:
            d = json.load(file)
        minor = int(d["version"].split(".")[1])
        fmt = {9: "HL_LNOTAB_39", 10: "HL_LINETABLE_310"}.get(minor, "HL_LOCATIONS_311")
        for c in d["cases"]:
            n = len(cases)
            name = d["version"] + (": " + c["label"] if c["label"] else "")
            print(f"/* CPython {name} */")
            print(f"static const uint8_t table_{n}[] = {c_bytes(c['table'])};")
            print(f"static const int lines_{n}[] = {c_bytes(c['lines'])};")
            cases.append(f'    {{"{name}", {fmt}, {c["firstlineno"]}, table_{n}, '
                         f"sizeof(table_{n}), lines_{n}, sizeof(lines_{n}) / sizeof(int)}},")
        if "debug_offsets" in d:
            n = len(offsets)
            print(f"static const uint8_t debug_{n}[] = {c_bytes(d['debug_offsets'])};")
            offsets.append(f'    {{"{d["version"]}", {minor}, debug_{n}, sizeof(debug_{n})}},')
    print("\n/* Each instruction's line: lines[k] is the line of the code unit at byte 2k. */")
    print("static const struct line_case {\n    const char *version;\n    int format;\n"
          "    int firstlineno;\n    const uint8_t *table;\n    size_t size;\n"
          "    const int *lines;\n    size_t count;\n} line_cases[] = {")
    print("\n".join(cases) + "\n};\n")
    print("/* The _Py_DebugOffsets at the start of each version's _PyRuntime. */")
    print("static const struct debug_case {\n    const char *version;\n    int minor;\n"
          "    const uint8_t *bytes;\n    size_t size;\n} debug_cases[] = {")
    print("\n".join(offsets) + "\n};")


if __name__ == "__main__":
    if sys.argv[1] == "dump":
        dump("without columns" if "--no-debug-ranges" in sys.argv else "")
    else:
        render(sys.argv[2:])
