from __future__ import annotations

import datetime as dt

import pytest
from openpyxl.styles.numbers import BUILTIN_FORMATS

from rag_pipeline.core.ingest.number_format import shown_date, shown_number

ACCOUNTING = '_($* #,##0.00_);_($* (#,##0.00);_($* "-"??_);_(@_)'
"""Excel's built-in Accounting format (number format 44)."""


@pytest.mark.parametrize(("value", "number_format", "shown"), [
    (1250.5, "#,##0.00", "1,250.50"), (1250, "#,##0", "1,250"), (1234567.891, "#,##0.0", "1,234,567.9"),
    (3, "0.00", "3.00"), (7, "00000", "00007"), (1.0, "0.0#", "1.0"), (1.234, "0.0#", "1.23"),
    (0.5, "#.##", ".5"),
    # Rounded half away from zero on the decimal the cell holds (binary rounding gives 0.12).
    (0.125, "0.00", "0.13"), (2.5, "0", "3"), (-2.5, "0", "-3"),
    (0.15, "0%", "15%"), (0.125, "0.00%", "12.50%"), (0.1234, "0.0%_)", "12.3%"),
    (1234567, '#,##0,"k"', "1,235k"), (1234567, '0.0,,"M"', "1.2M"),
    (-1250, '"$"#,##0;"$"(#,##0)', "$(1,250)"), (-5, "#,##0.00", "-5.00"), (-5, "$#,##0", "-$5"),
    (0, '#,##0;(#,##0);"-"', "-"), (-0.001, "0.00", "-0.00"), (-0.3, "0", "-0"),
    # An empty section shows nothing (the usual way to hide zeros or negatives).
    (0, "0;-0;;@", ""), (-5, "#,##0.00;;", ""), (5, ";;;", ""),
    (1, "0.#", "1."), (1, "0.", "1."), (0, "#.##", "."), (123, "000,000", "000,123"),
    (1e26, "#,##0.00", "100,000,000,000,000,000,000,000,000.00"),
    (2.0 ** 53 + 2, "#,##0", "9,007,199,254,740,990"),  # 15 significant digits, as Excel shows
    (3, BUILTIN_FORMATS[44], "$3.00"), (-3, BUILTIN_FORMATS[44], "$(3.00)"),
    (1250.5, ACCOUNTING, "$1,250.50"), (-1250.5, ACCOUNTING, "$(1,250.50)"), (0, ACCOUNTING, "$-"),
    (1250, "[$€-407] #,##0", "€ 1,250"), (1234.5, "[$$-409]#,##0.00", "$1,234.50"),
    (1250, '#,##0 "EUR"', "1,250 EUR"), (5, "[Red]0;[Blue]-0", "5"), (-5, "[Red]0;[Blue]-0", "-5"),
    (12, "0\\h", "12h"), (1000, "#,##0;[Red]-#,##0", "1,000"), (-2, "[Magenta]0;[Red]-0", "-2"),
])
def test_a_number_is_shown_as_its_format_says(value: float, number_format: str, shown: str):
    assert shown_number(value, number_format) == shown


@pytest.mark.parametrize("number_format", [
    "General", '"$"General', "yyyy-mm-dd", "m/d/yy", "h:mm AM/PM", "[h]:mm", "0.00E+00", "# ?/?",
    "@", "[>=1000]0,\"k\";0", "000-00-0000", "(###) ###-####", '"unterminated', "",
])
def test_a_format_not_rendered_here_gives_none(number_format: str):
    # The caller writes the number plainly: a format this module cannot show exactly is never guessed.
    assert shown_number(1234.5, number_format) is None


def test_a_number_no_format_can_show_gives_none():
    assert [shown_number(v, "0.00") for v in (float("inf"), float("-inf"), float("nan"))] == [
        None, None, None]


def test_a_semicolon_inside_quotes_or_brackets_does_not_end_a_section():
    assert shown_number(-3, '0" ; ";[$;-409]0') == ";3"
    assert shown_number(3, '0" ; ";[$;-409]0') == "3 ;"


AFTERNOON = dt.datetime(2026, 4, 1, 14, 30, 5)
MIDNIGHT = dt.datetime(2026, 4, 1)


@pytest.mark.parametrize(("value", "number_format", "shown"), [
    (MIDNIGHT, "dd/mm/yyyy", "01/04/2026"), (MIDNIGHT, "mm/dd/yyyy", "04/01/2026"),
    (MIDNIGHT, "d mmm yyyy", "1 Apr 2026"), (MIDNIGHT, "mmmm d, yyyy", "April 1, 2026"),
    (MIDNIGHT, "dddd, mmmm dd, yyyy", "Wednesday, April 01, 2026"), (MIDNIGHT, "mmm-yy", "Apr-26"),
    (MIDNIGHT, "[$-409]mmmm d, yyyy;@", "April 1, 2026"), (MIDNIGHT, 'yyyy"年"m"月"d"日"', "2026年4月1日"),
    (AFTERNOON, "h:mm AM/PM", "2:30 PM"), (AFTERNOON, "hh:mm:ss am/pm", "02:30:05 pm"),
    (AFTERNOON, "hh:mm", "14:30"), (AFTERNOON, "m/d/yy h:mm", "4/1/26 14:30"),
    # m is minutes after an hour or before seconds, a month elsewhere.
    (AFTERNOON, "mm:ss", "30:05"), (AFTERNOON, "yyyy-mm-dd h:mm:ss", "2026-04-01 14:30:05"),
    # A date-time at midnight under a date-then-time format is its date (openpyxl's default).
    (MIDNIGHT, "yyyy-mm-dd h:mm:ss", "2026-04-01"),
    (dt.time(9, 5), "h:mm AM/PM", "9:05 AM"), (dt.date(2026, 4, 1), "d/m/yy", "1/4/26"),
])
def test_a_date_is_shown_as_its_format_says(value, number_format: str, shown: str):
    assert shown_date(value, number_format) == shown


@pytest.mark.parametrize(("value", "number_format"), [
    (MIDNIGHT, "mm-dd-yy"),  # builtin 14: the reader's own short date, unknown here
    (MIDNIGHT, "[h]:mm"), (AFTERNOON, "h:mm:ss.0"), (MIDNIGHT, "General"), (MIDNIGHT, "0.00"),
    (dt.time(9, 5), "dd/mm/yyyy"),  # a time has no date to show
])
def test_a_date_format_not_rendered_here_gives_none(value, number_format: str):
    assert shown_date(value, number_format) is None
