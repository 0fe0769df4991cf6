"""A list item's number as a document shows it: ``3``, ``c``, ``C``, ``iii``, ``III``.

Formats are named as Word names them (``w:numFmt``); an OpenDocument list style's
``style:num-format`` maps to them (:data:`ODF_FORMATS`).
"""

from __future__ import annotations

_ROMAN = ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"), (50, "l"),
          (40, "xl"), (10, "x"), (9, "ix"), (5, "v"), (4, "iv"), (1, "i"))

ODF_FORMATS = {"1": "decimal", "a": "lowerLetter", "A": "upperLetter", "i": "lowerRoman",
               "I": "upperRoman"}
"""``style:num-format`` -> the format of the same numbers."""


def _roman(number: int) -> str:
    out = ""
    for value, letters in _ROMAN:
        count, number = divmod(number, value)
        out += letters * count
    return out


def _letters(number: int, letter_sync: bool) -> str:
    """Letter numbering: a..z, then with ``letter_sync`` (Word's) aa, bb..zz, aaa...; without
    (an OpenDocument list's default) aa, ab..az, ba..zz, aaa..."""
    if letter_sync:
        return chr(ord("a") + (number - 1) % 26) * ((number - 1) // 26 + 1)
    letters = ""
    while number > 0:
        number, left = divmod(number - 1, 26)
        letters = chr(ord("a") + left) + letters
    return letters


def list_number(number_format: str, number: int, letter_sync: bool = True) -> str:
    """Item ``number`` (1-based) in ``number_format``: ``lowerLetter``, ``upperLetter``
    (``letter_sync``: :func:`_letters`), ``lowerRoman``, ``upperRoman``; any other format in
    digits."""
    if number_format == "lowerLetter":
        return _letters(number, letter_sync)
    if number_format == "upperLetter":
        return _letters(number, letter_sync).upper()
    if number_format == "lowerRoman":
        return _roman(number)
    if number_format == "upperRoman":
        return _roman(number).upper()
    return str(number)
