"""A workbook's cached values as text (what XLSX, ODS and PPTX charts share)."""

from __future__ import annotations

import datetime as dt

import pytest

from rag_pipeline.core.ingest.extracted import Anchor
from rag_pipeline.core.ingest.sheets import cell_value_text, sheet_fragment


@pytest.mark.parametrize(("value", "text"), [
    (None, ""), (True, "TRUE"), (False, "FALSE"), (3, "3"), (3.0, "3"), (2.5, "2.5"),
    (0.1 + 0.2, "0.3"), (26.890000000000004, "26.89"), (1 / 3, "0.333333333333333"),
    (1e20, "1e+20"), (1e-05, "1e-05"), (dt.datetime(2026, 1, 2), "2026-01-02"),
    (dt.datetime(2026, 1, 2, 9, 30), "2026-01-02 09:30:00"), (dt.date(2026, 1, 2), "2026-01-02"),
    (dt.time(9, 30), "09:30:00"), ("#DIV/0!", "#DIV/0!"),
])
def test_cached_values_as_text(value: object, text: str):
    assert cell_value_text(value) == text


@pytest.mark.parametrize(("value", "number_format", "text"), [
    (0.15, "0%", "15%"), (0.125, "0.00%", "12.50%"), (1, "0%", "100%"),
    (0.125, "0%", "13%"), (0.145, "0%", "15%"), (-0.125, "0%", "-13%"),  # half away from zero
    (0.153, "0.0%_);(0.0%)", "15.3%"), (0.153, "[Blue]0%", "15%"),
    (0.5, '0.0%;[Red]-0.0%', "50.0%"), (0.15, '"rate" 0.00', "rate 0.15"),
    (0.15, '0.00 "%"', "0.15 %"), (0.15, "0.00\\%", "0.15%"), (0.15, "General", "0.15"),
    ("15%", "0%", "15%"), (1250.5, "#,##0.00", "1,250.50"), (-1250, '"$"#,##0;"$"(#,##0)', "$(1,250)"),
    (45000, "yyyy-mm-dd", "45000"), (1e6, "0.00E+00", "1000000"),
    (dt.datetime(2026, 4, 1), "dd/mm/yyyy", "01/04/2026"),
    (dt.datetime(2026, 4, 1), "mm-dd-yy", "2026-04-01"),
])
def test_a_number_is_written_as_the_cell_shows_it(value: object, number_format: str, text: str):
    assert cell_value_text(value, number_format) == text


def test_a_span_is_cited_over_every_row_and_column_its_rows_reach():
    # Planted: the first row holds a merged block reaching row 3; the second row is narrower.
    anchors = [Anchor(0, 10, "sheet=S&range=B2:F3"), Anchor(11, 20, "sheet=S&range=A3:B3"),
               Anchor(21, 30, "sheet=S&range=A4:C4")]
    assert sheet_fragment(anchors, 0, 20) == "#sheet=S&range=A2:F3"
    assert sheet_fragment(anchors, 11, 30) == "#sheet=S&range=A3:C4"
    assert sheet_fragment(anchors, 31, 40) is None


def test_a_table_beside_another_is_its_own_table_with_its_own_header():
    # Found by a new user: openxlsx's loadExample.xlsx has a pivot table (G2:K6) beside the iris
    # data (A1:E51); its header and values were read as "column H: 95.5" of iris rows.
    from rag_pipeline.core.ingest.sheets import Sheet, lay_out_sheets

    rows = [(1, ["Length", "Species", "", "", ""]),
            (2, ["5.1", "setosa", "", "Labels", "Sum of Length"]),
            (3, ["7.0", "versicolor", "", "setosa", "5.1"]),
            (4, ["6.3", "virginica", "", "versicolor", "7.0"])]
    layout = lay_out_sheets([Sheet("Iris", rows)])
    assert layout.text == ("Length | Species\n"
                           "Length: 5.1 | Species: setosa\n"
                           "Length: 7.0 | Species: versicolor\n"
                           "Length: 6.3 | Species: virginica\n"
                           "\n"
                           "Labels | Sum of Length\n"
                           "Labels: setosa | Sum of Length: 5.1\n"
                           "Labels: versicolor | Sum of Length: 7.0\n")
    assert [a.locator for a in layout.anchors][3:] == [
        "sheet=Iris&range=A4:B4", "sheet=Iris&range=D2:E2", "sheet=Iris&range=D3:E3",
        "sheet=Iris&range=D4:E4"]
    assert [(t.header, len(t.rows)) for t in layout.tables] == [
        ("Length | Species", 3), ("Labels | Sum of Length", 2)]
    assert ([(s.title, s.start, s.end) for s in layout.sections], dict(layout.notes)["rows"]) == (
        [("Iris", 0, len(layout.text) - 1)], "5")
    # Each table gets its own rows alone, cut at its last column (the sheet's rows once per
    # table, full width, took 15 s for 400 small tables side by side: found by an attack).
    from rag_pipeline.core.ingest.sheets import side_by_side

    assert side_by_side([(1, ["a", "b", "", "", ""]), (2, ["c", "d", "", "x", "y"]),
                         (3, ["", "", "", "z", "w"])]) == [
        [(1, ["a", "b"]), (2, ["c", "d"])], [(2, ["", "", "", "x", "y"]), (3, ["", "", "", "z", "w"])]]


def test_an_empty_column_inside_one_table_splits_nothing():
    # A spacer column under one header row, a title above the table, a column of notes.
    from rag_pipeline.core.ingest.sheets import Sheet, lay_out_sheets

    rows = [(1, ["Staff list"]),
            (3, ["Name", "Age", "", "Office", "", "", ""]),
            (4, ["Ada", "36", "", "Leeds", "", "", "left in May"]),
            (5, ["Alan", "41", "", "York"])]
    layout = lay_out_sheets([Sheet("Staff", rows)])
    assert layout.text == ("Staff list\n"
                           "Name | Age | column C | Office\n"
                           "Name: Ada | Age: 36 | Office: Leeds | column G: left in May\n"
                           "Name: Alan | Age: 41 | Office: York\n")
    assert len(layout.tables) == 1


def test_notes_under_a_sheets_table_are_lines_outside_it_and_no_rows():
    # Found by a new user: readxl's deaths.xlsx counted 28 rows for its 20 (four rows of notes
    # under each table, read as "Name: This" and "Age: off | Date of birth: now!").
    from rag_pipeline.core.ingest.sheets import Sheet, lay_out_sheets

    rows = [(1, ["Name", "Profession", "Age", "Born", "Died"]),
            (2, ["Vera Rubin", "scientist", "88", "1928-07-23", "2016-12-25"]),
            (3, ["Jo Cox", "politician", "41", "1974-06-22", "2016-06-16"]),
            (4, ["Some"]), (5, ["", "also like to write stuff"]), (6, ["", "", "at the", "bottom,"])]
    layout = lay_out_sheets([Sheet("other", rows)])
    assert layout.text.endswith("Name: Jo Cox | Profession: politician | Age: 41 | Born: 1974-06-22 | "
                                "Died: 2016-06-16\n"
                                "Some\nalso like to write stuff\nat the | bottom,\n")
    assert dict(layout.notes)["rows"] == "2"
    table = layout.tables[0]
    assert (len(table.rows), layout.text[table.end:table.end + 6]) == (2, "\nSome\n")
