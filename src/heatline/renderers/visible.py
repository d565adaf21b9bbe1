"""Profile strings made safe to print on a terminal: control characters in a path or source
line are shown as escapes, never sent to the terminal."""

from __future__ import annotations

import re

# Characters a terminal would act on rather than show: C0 and C1 controls (ESC starts colour,
# screen-clearing, title and hyperlink sequences), DEL, and the bidirectional overrides that
# reorder what is displayed; also lone surrogates (undecodable bytes of argv or paths, PEP 383),
# which no terminal encoding can write. Every string of a profile passes through visible()
# before printing.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def visible(text: str) -> str:
    """``text`` with every control character written out as a Python escape (ESC as \\x1b), so
    a profile can never move the cursor, clear the screen or retitle the terminal."""
    return _CONTROL.sub(_escape, text)


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
