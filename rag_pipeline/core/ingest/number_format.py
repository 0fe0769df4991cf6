"""A number or a date as a spreadsheet cell shows it under its number format (ECMA-376
Part 1, 18.8.31).

Covers what teams' workbooks use: thousands separators (``#,##0``), fixed and optional
decimals (``0.00``, ``0.0#``), percentages (``0.0%``), currencies as symbols or quoted text
(``"$"#,##0.00``, ``[$€-407] #,##0``, ``#,##0 "EUR"``), scaling by trailing commas
(``#,##0,"k"``), and a format's sections for negative numbers and zero (``#,##0;(#,##0);"-"``).
Decimal and thousands separators are the format's own (``.`` and ``,``): a file's formats are
stored in that notation whatever the locale of the application that shows them.

Dates and times (:func:`shown_date`): ``yyyy yy``, months ``m mm mmm mmmm mmmmm`` (minutes
after an hour or before seconds), days ``d dd ddd dddd``, ``h hh s ss`` and ``AM/PM``, month
and day names in English. Builtin format 14 (``mm-dd-yy``), which Excel shows in the reader's
own short date, and elapsed times (``[h]:mm``) are not rendered; a date-time at midnight under a
format showing a date and then a time is shown as its date.

Every other format (General, fractions, scientific notation, conditions, text, digits spread
over literals such as ``000-00-0000``) is not rendered here: :func:`shown_number` returns None
and the caller writes the number plainly. Rounding is half away from zero on the
decimal the cell holds, as Excel shows it (``0.125`` under ``0.00`` is ``0.13``, where binary
rounding gives ``0.12``).
"""

from __future__ import annotations

import calendar
import datetime as dt
import math
import re
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal, localcontext

__all__ = ["shown_date", "shown_number"]

_PLACEHOLDERS = "0#?"
_DATE_OR_TIME = re.compile(r"[yYmMdDhHsS]|AM/PM|A/P", re.IGNORECASE)
_BRACKET = re.compile(r"\[([^\]]*)\]")
_ELAPSED = re.compile(r"h+|m+|s+", re.IGNORECASE)
"""An elapsed-time bracket (``[h]``, ``[mm]``), unlike a colour (``[Magenta]``)."""


def shown_number(value: int | float, number_format: str) -> str | None:
    """``value`` as a cell formatted ``number_format`` shows it (``1,250.50`` for 1250.5 under
    ``#,##0.00``, ``$(1,250)`` for -1250 under ``"$"#,##0;"$"(#,##0)``, ``15%`` for 0.15 under
    ``0%``); None for a format not rendered here (the module's docstring lists them)."""
    if not isinstance(value, (int, float)) or not math.isfinite(value) or not number_format.strip():
        return None
    sections = _sections(_OPENPYXL_BUILTIN_44.get(number_format, number_format))
    sign = ""
    if value < 0 and len(sections) >= 2:
        section, value = sections[1], -value
    elif value == 0 and len(sections) >= 3:
        section = sections[2]
    else:
        section = sections[0]
        if value < 0:
            sign, value = "-", -value
    tokens = _tokens(section)
    if tokens is None:
        return None
    # Excel shows 15 significant digits of a double; the digits the cell holds are kept exactly
    # (precision enough for any double's whole digits and decimals).
    shown = Decimal(f"{value:.15g}") if isinstance(value, float) else Decimal(value)
    with localcontext() as context:
        context.prec = 800
        return _render(tokens, shown, sign)


_OPENPYXL_BUILTIN_44 = {
    '_("$"* #,##0.00_)_("$"* \\(#,##0.00\\)_("$"* "-"??_)_(@_)':
        '_("$"* #,##0.00_);_("$"* \\(#,##0.00\\);_("$"* "-"??_);_(@_)'}
"""Builtin format 44 (Accounting) as openpyxl names it, its sections' ``;`` missing (Excel
stores the id alone, so openpyxl's name is all a reader gets), and as Excel defines it."""


def _sections(number_format: str) -> list[str]:
    """The format's ``;``-separated sections (a ``;`` inside quotes or brackets is text)."""
    sections, current, quoted, bracket = [], [], False, False
    index = 0
    while index < len(number_format):
        char = number_format[index]
        if char == "\\" and not quoted and index + 1 < len(number_format):
            current.append(number_format[index:index + 2])
            index += 2
            continue
        if char == '"' and not bracket:
            quoted = not quoted
        elif char == "[" and not quoted:
            bracket = True
        elif char == "]" and not quoted:
            bracket = False
        if char == ";" and not quoted and not bracket:
            sections.append("".join(current))
            current = []
        else:
            current.append(char)
        index += 1
    sections.append("".join(current))
    return sections


class _NotRendered(Exception):
    """A format (or a part of it) this module does not render."""


def _literal(section: str, index: int) -> tuple[str, int] | None:
    """The literal starting at ``index`` as (the text it shows, the index after it): quoted
    text, an escaped character, padding (``_x``, ``*x``: nothing), a bracket (``[$€-407]``: its
    symbol; a colour or a locale: nothing); None when none starts there.

    Raises:
        _NotRendered: An unterminated quote, a condition (``[<100]``) or an elapsed time
            (``[h]``).
    """
    char = section[index]
    if char == '"':
        end = section.find('"', index + 1)
        if end < 0:
            raise _NotRendered
        return section[index + 1:end], end + 1
    if char == "\\" and index + 1 < len(section):
        return section[index + 1], index + 2
    if char in "_*" and index + 1 < len(section):
        return "", index + 2
    if char == "[":
        match = _BRACKET.match(section, index)
        if match is None:
            raise _NotRendered
        inner = match.group(1)
        if inner.startswith("$"):
            return inner[1:].split("-")[0], match.end()
        if re.fullmatch(r"[A-Za-z]+\d*", inner) is None or _ELAPSED.fullmatch(inner):
            raise _NotRendered
        return "", match.end()
    return None


def _tokenized(section: str, token_at: Callable[[str, int], tuple[str, str, int]],
               ) -> list[tuple[str, str]] | None:
    """The section as ``(kind, text)`` tokens: its literals (``("text", ...)``), the rest as
    ``token_at(section, index)`` reads it (a kind, its text, the index after it); None for a
    section this module does not render."""
    tokens: list[tuple[str, str]] = []
    index = 0
    try:
        while index < len(section):
            if (literal := _literal(section, index)) is not None:
                text, index = literal
                if text:
                    tokens.append(("text", text))
            else:
                kind, text, index = token_at(section, index)
                tokens.append((kind, text))
    except _NotRendered:
        return None
    return tokens


def _number_token(section: str, index: int) -> tuple[str, str, int]:
    """A placeholder (``0 # ? . , %``: ``digit``) or a character shown as it is."""
    char = section[index]
    if section.startswith(("General", "general"), index) or char in "@/eE" or \
            _DATE_OR_TIME.match(section, index):
        raise _NotRendered  # text, fractions, scientific notation, dates and times
    return ("digit" if char in _PLACEHOLDERS + ".,%" else "text"), char, index + 1


def _tokens(section: str) -> list[tuple[str, str]] | None:
    """The section as ``("text", literal)`` and ``("digit", placeholder)`` tokens; None for a
    section this module does not render."""
    return _tokenized(section, _number_token)


def _grouped(digits: str) -> str:
    """``digits`` with a comma between each group of three from the right (``000,123``)."""
    head = len(digits) % 3 or 3
    return ",".join([digits[:head], *(digits[i:i + 3] for i in range(head, len(digits), 3))])


def _render(tokens: list[tuple[str, str]], value: Decimal, sign: str) -> str | None:
    """The text of ``tokens`` with ``value`` (not negative) put in their placeholders; a section
    without placeholders (``"-"`` for zero) is its text alone."""
    digits = [i for i, (kind, text) in enumerate(tokens) if kind == "digit" and text in _PLACEHOLDERS]
    if not digits:
        return "".join(text for kind, text in tokens if kind == "text").strip()
    first, last = digits[0], digits[-1]
    if tokens[last + 1:last + 2] == [("digit", ".")]:
        last += 1  # a decimal point after the last digit (``0.``) is shown
    if any(kind == "text" for kind, _ in tokens[first:last + 1]):
        return None  # digits spread over literals (000-00-0000): not a plain number
    pattern = "".join(text for _, text in tokens[first:last + 1])
    trailing = tokens[last + 1:]
    scale_commas = 0
    for kind, text in trailing:
        if kind == "digit" and text == ",":
            scale_commas += 1
        else:
            break
    percents = sum(1 for kind, text in tokens if kind == "digit" and text == "%")
    whole, _, fraction = pattern.partition(".")
    grouped = "," in whole
    whole_min = whole.replace(",", "").count("0")
    fraction_max = sum(1 for char in fraction if char in _PLACEHOLDERS)
    fraction_min = len(fraction) - len(fraction.lstrip("0"))
    scaled = value * (Decimal(100) ** percents) / (Decimal(1000) ** scale_commas)
    rounded = scaled.quantize(Decimal(1).scaleb(-fraction_max), ROUND_HALF_UP)
    whole_digits, _, fraction_digits = f"{rounded:f}".partition(".")
    fraction_digits = fraction_digits.rstrip("0").ljust(fraction_min, "0")
    whole_digits = whole_digits.lstrip("0").rjust(whole_min, "0")
    if grouped:
        whole_digits = _grouped(whole_digits) if whole_digits else ""
    number = whole_digits + ("." + fraction_digits if "." in pattern else "")
    before = "".join(text for kind, text in tokens[:first] if kind == "text" or text == "%")
    after = "".join(text for kind, text in trailing if kind == "text" or text == "%")
    return f"{sign}{before}{number}{after}".strip()


_DATE_TOKEN = re.compile(r"yyyy|yy|mmmmm|mmmm|mmm|mm|m|dddd|ddd|dd|d|hh|h|ss|s|am/pm|a/p",
                         re.IGNORECASE)
_LOCALE_SHORT_DATE = "mm-dd-yy"
"""Builtin format 14 as openpyxl names it: Excel shows it in the reader's own short date."""


def shown_date(value: dt.datetime | dt.date | dt.time, number_format: str) -> str | None:
    """``value`` as a cell formatted ``number_format`` shows it (``01/04/2026`` under
    ``dd/mm/yyyy``, ``2:30 PM`` under ``h:mm AM/PM``); None for a format not rendered here."""
    section = _sections(number_format)[0]
    if section.lower() == _LOCALE_SHORT_DATE:
        return None
    tokens = _date_tokens(section)
    if tokens is None:
        return None
    kinds = [_date_kind(tokens, i) for i in range(len(tokens))]
    dates = [i for i, kind in enumerate(kinds) if kind == "date"]
    times = [i for i, kind in enumerate(kinds) if kind == "time"]
    if isinstance(value, dt.time):
        if dates:
            return None
        value = dt.datetime.combine(dt.date(1900, 1, 1), value)
    elif not isinstance(value, dt.datetime):
        value = dt.datetime.combine(value, dt.time())
    if dates and times and dates[-1] < times[0] and value.time() == dt.time():
        tokens, kinds = tokens[:dates[-1] + 1], kinds[:dates[-1] + 1]
    twelve = any(text.lower() in ("am/pm", "a/p") for kind, text in tokens if kind == "date")
    return "".join(text if kind == "text" else _date_part(text, role, value, twelve)
                   for (kind, text), role in zip(tokens, kinds, strict=True)).strip() or None


def _date_token(section: str, index: int) -> tuple[str, str, int]:
    """A date or time code (``yyyy``, ``mmm``, ``h``, ``AM/PM``: ``date``) or a character shown
    as it is."""
    if (token := _DATE_TOKEN.match(section, index)) is not None:
        return "date", token.group(0), token.end()
    if section[index] in "0#?@eE%" or section.startswith("General", index):
        raise _NotRendered  # digits (fractions of a second, numbers), text or scientific
    return "text", section[index], index + 1


def _date_tokens(section: str) -> list[tuple[str, str]] | None:
    """The section as ``("text", literal)`` and ``("date", code)`` tokens; None for a section
    that is no date or time format, or one this module does not render."""
    tokens = _tokenized(section, _date_token)
    return tokens if tokens and any(kind == "date" for kind, _ in tokens) else None


def _date_kind(tokens: list[tuple[str, str]], index: int) -> str:
    """``date``, ``time`` (hours, minutes, seconds, AM/PM) or ``text`` for token ``index``:
    ``m``/``mm`` is minutes right after an hour or right before seconds, else a month."""
    kind, text = tokens[index]
    if kind == "text":
        return "text"
    token = text.lower()
    if token[0] in "hs" or token in ("am/pm", "a/p"):
        return "time"
    if token in ("m", "mm"):
        parts = [(i, t.lower()) for i, (k, t) in enumerate(tokens) if k == "date"]
        place = [i for i, _ in parts].index(index)
        before = parts[place - 1][1] if place > 0 else ""
        after = parts[place + 1][1] if place + 1 < len(parts) else ""
        if before[:1] == "h" or after[:1] == "s":
            return "time"
    return "date"


def _date_part(token: str, role: str, value: dt.datetime, twelve: bool) -> str:
    """One token of a date or time format filled from ``value``."""
    lower = token.lower()
    if lower.startswith("y"):
        return f"{value.year:04d}" if len(lower) > 2 else f"{value.year % 100:02d}"
    if lower.startswith("d"):
        return {1: str(value.day), 2: f"{value.day:02d}", 3: calendar.day_abbr[value.weekday()]}.get(
            len(lower), calendar.day_name[value.weekday()])
    if lower.startswith("m") and role == "date":
        return {1: str(value.month), 2: f"{value.month:02d}", 3: calendar.month_abbr[value.month],
                4: calendar.month_name[value.month]}.get(len(lower), calendar.month_name[value.month][:1])
    if lower.startswith("m"):
        return str(value.minute) if len(lower) == 1 else f"{value.minute:02d}"
    if lower.startswith("s"):
        return str(value.second) if len(lower) == 1 else f"{value.second:02d}"
    if lower.startswith("h"):
        hour = (value.hour % 12 or 12) if twelve else value.hour
        return str(hour) if len(lower) == 1 else f"{hour:02d}"
    after_noon = value.hour >= 12
    if lower == "am/pm":
        shown = "PM" if after_noon else "AM"
        return shown.lower() if token == "am/pm" else shown
    shown = "P" if after_noon else "A"
    return shown.lower() if token == "a/p" else shown
