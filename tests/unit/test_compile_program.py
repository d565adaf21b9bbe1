"""engine/session.py's compile_program: the code compile(source, path, "exec",
dont_inherit=True) gives, and its errors, without compile()'s making of the ast module's
classes (tests/integration/test_behaviour.py checks a profiled program sees none)."""

import pytest

from heatline.engine.session import compile_program

SOURCES = {
    "plain": b"x = 1\nprint(x + 2)\n",
    "utf-8 without a declaration": "s = 'été'\n".encode(),
    "latin-1 declared": b"# -*- coding: latin-1 -*-\ns = '\xe9t\xe9'\n",
    "a __future__ import": b"from __future__ import annotations\ndef f(a: int) -> X: pass\n",
    "a byte order mark": b"\xef\xbb\xbfx = 'bom'\n",
    "no newline at the end": b"def f():\n    return 1",
}


@pytest.mark.parametrize("name", SOURCES)
def test_the_code_is_what_compile_gives(name):
    source = SOURCES[name]
    expected = compile(source, "/some/where.py", "exec", dont_inherit=True)
    code = compile_program(source, "/some/where.py")
    assert code == expected
    assert code.co_filename == "/some/where.py"
    assert code.co_consts == expected.co_consts and code.co_flags == expected.co_flags


ERRONEOUS = {
    "a syntax error": b"x = (1,\nprint(x)\n",
    "bad indentation": b"if x:\nprint(1)\n",
    "an undecodable byte": b"s = '\xff'\n",
    "an unknown encoding": b"# coding: nonesuch\nx = 1\n",
    "a NUL byte": b"x = 1\x00\n",
    "a misplaced __future__ import": b"x = 1\nfrom __future__ import annotations\n",
}


@pytest.mark.parametrize("name", ERRONEOUS)
def test_the_errors_are_what_compile_raises(name):
    source = ERRONEOUS[name]
    with pytest.raises((SyntaxError, ValueError)) as expected:
        compile(source, "/some/where.py", "exec", dont_inherit=True)
    with pytest.raises(expected.type) as raised:
        compile_program(source, "/some/where.py")
    assert str(raised.value) == str(expected.value)
    assert raised.value.args == expected.value.args
