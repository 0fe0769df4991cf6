"""Text made safe to print: control characters shown as escapes, never sent to a terminal.

Documents, file names and a generation endpoint's reply can carry escape sequences (colour,
cursor moves, a window title, OSC 8 links) and bidirectional overrides that make a line read
differently from what it holds. Stored text stays exact; only what is printed is escaped.
"""

from __future__ import annotations

import re

__all__ = ["escape_controls", "exception_line", "one_line"]

# C0 controls but tab and newline, DEL, C1 controls, and the Unicode bidirectional controls
# (ALM, LRM, RLM, LRE..RLO, LRI..PDI) that reorder what a terminal shows.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def escape_controls(text: str) -> str:
    """``text`` with each unsafe character written as ``\\uXXXX``.

    The escape is the JSON one, so a JSON document stays valid JSON (and decodes to the exact
    original text) after passing through here. Tab and newline are kept.

    Args:
        text: Anything about to be printed.

    Returns:
        The text with C0 controls (but ``\\t`` and ``\\n``), DEL, C1 controls and bidirectional
        controls escaped.
    """
    return _UNSAFE.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


def one_line(text: str) -> str:
    """``text`` escaped as :func:`escape_controls` escapes it, its line breaks too: a name or a
    reason printed within a line of a listing (a file name may hold a newline)."""
    return escape_controls(text).replace("\n", "\\u000a")


def exception_line(exc: BaseException) -> str:
    """What a one-line message shows of ``exc``: its message's first line, or its type's name
    when it has no message."""
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
