"""Profile strings made safe to print on a terminal: control characters in a path or source
line are shown as escapes, never sent to the terminal."""

from __future__ import annotations


def _controlling(code: int) -> bool:
    """Whether a terminal would act on the character rather than show it: C0 and C1 controls
    (ESC starts colour, screen-clearing, title and hyperlink sequences), DEL, and the
    bidirectional marks and overrides that reorder what is displayed; also lone surrogates
    (undecodable bytes of argv or paths, PEP 383), which no terminal encoding can write."""
    return (code < 0x20 or 0x7F <= code <= 0x9F or code in (0x200E, 0x200F)
            or 0x202A <= code <= 0x202E or 0x2066 <= code <= 0x2069
            or 0xD800 <= code <= 0xDFFF)


class _Escapes(dict):
    """str.translate's table, filled as characters are met: a controlling character maps to
    its Python escape (ESC to \\x1b), any other to itself."""

    def __missing__(self, code: int) -> str | int:
        if not _controlling(code):
            self[code] = code
        else:
            self[code] = f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
        return self[code]


_ESCAPES = _Escapes()


def visible(text: str) -> str:
    """``text`` with every control character written out as a Python escape (ESC as \\x1b), so
    a profile can never move the cursor, clear the screen or retitle the terminal. Every string
    of a profile passes through it before printing. No regular expression: importing re and
    compiling one cost `heatline dump`, whose whole run is its start-up, about a millisecond."""
    # Every controlling character is unprintable to str.isprintable (categories Cc, Cf, Cs),
    # so a printable string (nearly all) is returned as it is.
    return text if text.isprintable() else text.translate(_ESCAPES)
