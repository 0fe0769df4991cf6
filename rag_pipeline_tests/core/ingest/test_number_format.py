from __future__ import annotations

import pytest

from rag_pipeline.core.ingest.number_format import shown_number

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
    (0, '#,##0;(#,##0);"-"', "-"), (-0.001, "0.00", "0.00"),
    (1250.5, ACCOUNTING, "$1,250.50"), (-1250.5, ACCOUNTING, "$(1,250.50)"), (0, ACCOUNTING, "$-"),
    (1250, "[$€-407] #,##0", "€ 1,250"), (1234.5, "[$$-409]#,##0.00", "$1,234.50"),
    (1250, '#,##0 "EUR"', "1,250 EUR"), (5, "[Red]0;[Blue]-0", "5"), (-5, "[Red]0;[Blue]-0", "-5"),
    (12, "0\\h", "12h"), (1000, "#,##0;[Red]-#,##0", "1,000"),
])
def test_a_number_is_shown_as_its_format_says(value: float, number_format: str, shown: str):
    assert shown_number(value, number_format) == shown


@pytest.mark.parametrize("number_format", [
    "General", '"$"General', "yyyy-mm-dd", "m/d/yy", "h:mm AM/PM", "[h]:mm", "0.00E+00", "# ?/?",
    "@", "[>=1000]0,\"k\";0", "000-00-0000", "(###) ###-####", '"unterminated',
])
def test_a_format_not_rendered_here_gives_none(number_format: str):
    # The caller writes the number plainly: a format this module cannot show exactly is never guessed.
    assert shown_number(1234.5, number_format) is None


def test_a_semicolon_inside_quotes_or_brackets_does_not_end_a_section():
    assert shown_number(-3, '0" ; ";[$;-409]0') == ";3"
    assert shown_number(3, '0" ; ";[$;-409]0') == "3 ;"
