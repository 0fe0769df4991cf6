"""XLSX: a section per sheet, rows under the header row, ``sheet=..&range=..`` anchors, cached values."""

from __future__ import annotations

import datetime as dt
import io
import zipfile

import pytest

from rag_pipeline.core.ingest.extracted import (
    Anchor,
    ExtractionError,
    Section,
    TableSpan,
    left_out,
    left_out_scopes,
)
from rag_pipeline.core.ingest.formats.xlsx import XlsxFormat

XLSX = XlsxFormat()


def cache_values(data: bytes, sheet: int, values: dict[str, str]) -> bytes:
    """The workbook with cached values written into formula cells, as a spreadsheet
    application does when it saves: openpyxl writes ``<f>..</f><v></v>`` (no value)."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for name in source.namelist():
            content = source.read(name)
            if name == f"xl/worksheets/sheet{sheet}.xml":
                for formula, value in values.items():
                    before = f"<f>{formula}</f><v></v>".encode()
                    assert before in content
                    content = content.replace(before, f"<f>{formula}</f><v>{value}</v>".encode())
            target.writestr(name, content)
    return out.getvalue()


def saved(workbook) -> bytes:
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def budget_workbook(cached: bool = True) -> bytes:
    from openpyxl import Workbook

    workbook = Workbook()
    budget = workbook.active
    budget.title = "Budget Q1"
    budget["B2"], budget["C2"], budget["D2"] = "Item", "Cost", "Paid on"
    budget["B4"], budget["C4"], budget["D4"] = "Tea", 2.5, dt.datetime(2026, 1, 2)  # row 3 blank
    budget["B5"], budget["C5"] = "Cake", "=C4*2"
    budget["B6"], budget["C6"], budget["E6"] = "Rent", 300.0, "late"  # E has no header
    workbook.create_sheet("Empty")
    notes = workbook.create_sheet("Notes")
    notes.append(["Key", "Done"])
    notes.append(["audit", True])
    data = saved(workbook)
    return cache_values(data, 1, {"C4*2": "5"}) if cached else data


BUDGET_TEXT = ("Item | Cost | Paid on\n"
               "Item: Tea | Cost: 2.5 | Paid on: 2026-01-02\n"
               "Item: Cake | Cost: 5\n"
               "Item: Rent | Cost: 300 | column E: late\n"
               "\n"
               "Key | Done\n"
               "Key: audit | Done: TRUE\n")


def test_each_sheet_is_a_section_of_rows_under_its_header():
    extracted = XLSX.extract(budget_workbook(), "book")
    assert extracted.title == "book"
    assert extracted.canonical_text == BUDGET_TEXT
    assert extracted.sections == (Section("Budget Q1", 0, 126), Section("Notes", 128, 162))
    assert extracted.anchors == (
        Anchor(0, 21, "sheet=Budget%20Q1&range=B2:D2"),
        Anchor(22, 65, "sheet=Budget%20Q1&range=B4:D4"),
        Anchor(66, 86, "sheet=Budget%20Q1&range=B5:C5"),
        Anchor(87, 126, "sheet=Budget%20Q1&range=B6:E6"),
        Anchor(128, 138, "sheet=Notes&range=A1:B1"),
        Anchor(139, 162, "sheet=Notes&range=A2:B2"),
    )
    for anchor, line in zip(extracted.anchors, [line for line in BUDGET_TEXT.splitlines() if line],
                            strict=True):
        assert BUDGET_TEXT[anchor.start:anchor.end] == line
    assert extracted.notes == (("sheets", "2"), ("rows", "4"), ("empty_sheets", "1"))
    # Each sheet's rows are a table (from its header row), so the chunker cuts one row a chunk.
    assert extracted.tables == (
        TableSpan(0, 126, BUDGET_TEXT[0:21], 21, (22, 66, 87)),
        TableSpan(128, 162, BUDGET_TEXT[128:138], 138, (139,)))


def test_a_span_over_several_rows_cites_the_sheet_and_the_range_holding_them():
    anchors = XLSX.extract(budget_workbook(), "book").anchors
    assert XLSX.fragment(anchors, 22, 126) == "#sheet=Budget%20Q1&range=B4:E6"
    assert XLSX.fragment(anchors, 30, 70) == "#sheet=Budget%20Q1&range=B4:D5"  # inside rows
    assert XLSX.fragment(anchors, 139, 162) == "#sheet=Notes&range=A2:B2"
    assert XLSX.fragment(anchors, 0, 162) == "#sheet=Budget%20Q1&range=B2:E6"  # first sheet only


def test_a_workbook_never_calculated_keeps_its_values_and_counts_the_formulas():
    # openpyxl writes formulas without values, as many exporters do: one formula of 13 cells
    # is no reason to lose the other 12.
    extracted = XLSX.extract(budget_workbook(cached=False), "book")
    assert extracted.canonical_text == BUDGET_TEXT.replace("Item: Cake | Cost: 5", "Item: Cake")
    assert extracted.notes == (("sheets", "2"), ("rows", "4"), ("empty_sheets", "1"),
                               ("formulas_without_cached_value", "1"),
                               ("formulas_without_cached_value_spans", "[[0, 116]]"))
    # Found by a new team: every citation of the workbook carried the note, those of a sheet
    # without formulas too. It applies where the sheets holding them are.
    assert left_out_scopes(extracted.notes) == [((0, 116),)]
    assert extracted.canonical_text[0:116].endswith("column E: late")  # the Budget Q1 sheet


def test_a_hidden_sheets_uncalculated_formulas_apply_where_that_sheet_is():
    # Found by a review: the hidden sheet's section is titled "Calc (hidden)", so a scope by
    # title never matched it; a scope by place does.
    from openpyxl import Workbook

    workbook = Workbook()
    invoices = workbook.active
    invoices.title = "Invoices"
    invoices.append(["Invoice", "Amount"])
    invoices.append(["INV-1", 10])
    calc = workbook.create_sheet("Calc")
    calc.sheet_state = "hidden"
    calc.append(["Item", "Cost"])
    calc.append(["Tea", 2])
    calc.append(["Total", "=B2*2"])
    extracted = XLSX.extract(saved(workbook), "book")
    (calc_section,) = [s for s in extracted.sections if s.title == "Calc (hidden)"]
    assert left_out_scopes(extracted.notes) == [((calc_section.start, calc_section.end),)]
    assert extracted.canonical_text[calc_section.start:calc_section.end] == (
        "Item | Cost\nItem: Tea | Cost: 2\nItem: Total")


def test_a_workbook_mostly_of_formulas_never_calculated_fails_saying_so():
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    sheet.append(["n", "=A1*2", "=A1*3"])
    with pytest.raises(ExtractionError, match=r"^no cached values: 2 of its 2 formula cell\(s\) "
                                              r"were never calculated, more than the 1 cell\(s\) "
                                              r"with a value"):
        XLSX.extract(saved(workbook), "book")


def test_formulas_partly_without_cached_values_are_counted():
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    sheet.append(["n", "double"])
    sheet.append([1, "=A2*2"])
    sheet.append([2, "=A3*2"])
    extracted = XLSX.extract(cache_values(saved(workbook), 1, {"A2*2": "2"}), "partly")
    assert extracted.canonical_text == "n | double\nn: 1 | double: 2\nn: 2\n"
    assert ("formulas_without_cached_value", "1") in extracted.notes


def test_a_file_that_is_not_a_workbook_fails_with_the_reason():
    with pytest.raises(ExtractionError, match=r"^unreadable XLSX: BadZipFile: File is not a zip file"):
        XLSX.extract(b"PK not really", "bad")


def test_hidden_sheets_are_read_and_counted_and_comments_counted_as_left_out():
    from openpyxl import Workbook
    from openpyxl.comments import Comment

    workbook = Workbook()
    risks = workbook.active
    risks.title = "Risks"
    risks.append(["Risk", "Discount"])
    risks.append(["Supplier insolvency", 0.15])
    risks["B2"].number_format = "0%"
    risks["A2"].comment = Comment("Owner: Ravi Menon", "Ana")
    archive = workbook.create_sheet("Archive")
    archive.append(["Old risk"])
    archive.sheet_state = "hidden"
    extracted = XLSX.extract(saved(workbook), "risks")
    assert extracted.canonical_text == ("Risk | Discount\nRisk: Supplier insolvency | Discount: 15%\n"
                                        "\nOld risk\n")
    assert extracted.notes == (("sheets", "2"), ("rows", "1"), ("hidden_sheets", "1"),
                               ("comments_left_out", "1"))
    # A citation of the hidden sheet says it is hidden (its section); its locator names it.
    assert [s.title for s in extracted.sections] == ["Risks", "Archive (hidden)"]
    assert extracted.anchors[-1].locator == "sheet=Archive&range=A1:A1"


def _with_sheet_rewritten(rows: list[list[object]], rewrite) -> bytes:
    """A one-sheet workbook of ``rows`` whose sheet XML is replaced by ``rewrite(xml)``."""
    from openpyxl import Workbook

    workbook = Workbook()
    for row in rows:
        workbook.active.append(row)
    source = zipfile.ZipFile(io.BytesIO(saved(workbook)))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for name in source.namelist():
            content = source.read(name)
            target.writestr(name, rewrite(content) if name == "xl/worksheets/sheet1.xml" else content)
    return out.getvalue()


def test_a_wrong_declared_dimension_does_not_hide_cells():
    def claim_a1_only(xml: bytes) -> bytes:
        # Planted flaw: the file claims its cells end at A1, as some exporters write;
        # read-only openpyxl trusting it would drop column B and row 2.
        assert b'<dimension ref="A1:B2"/>' in xml
        return xml.replace(b'<dimension ref="A1:B2"/>', b'<dimension ref="A1:A1"/>')

    data = _with_sheet_rewritten([["a", "b"], [1, 2]], claim_a1_only)
    assert XLSX.extract(data, "dim").canonical_text == "a | b\na: 1 | b: 2\n"


def test_a_workbook_with_a_damaged_sheet_fails_with_the_reason_never_a_crash():
    # Planted flaw: the sheet's XML cut in half. openpyxl raised xml.etree's ParseError
    # here, which the corpus does not catch: one file would have stopped the run.
    data = _with_sheet_rewritten([["a", "b"]], lambda xml: xml[:len(xml) // 2])
    with pytest.raises(ExtractionError, match=r"^unreadable XLSX: no sheet can be read: Sheet "
                                              r"\(ParseError: unclosed token: "):
        XLSX.extract(data, "cut")


def test_shared_strings_declaring_entities_fail_on_one_line_naming_them():
    """Found by an attack: a billion-laughs sharedStrings.xml failed with openpyxl's three-line
    message ("... Please see the exception for more details."), which named nothing."""
    main = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
    rels = 'xmlns="http://schemas.openxmlformats.org/package/2006/relationships"'
    kind = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    office = "application/vnd.openxmlformats-officedocument.spreadsheetml"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as package:
        package.writestr("[Content_Types].xml", (
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
            'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
            f'<Override PartName="/xl/workbook.xml" ContentType="{office}.sheet.main+xml"/>'
            f'<Override PartName="/xl/worksheets/sheet1.xml" ContentType="{office}.worksheet+xml"/>'
            f'<Override PartName="/xl/sharedStrings.xml" ContentType="{office}.sharedStrings+xml"/>'
            "</Types>"))
        package.writestr("_rels/.rels", f'<Relationships {rels}><Relationship Id="rId1" '
                                        f'Type="{kind}/officeDocument" Target="xl/workbook.xml"/>'
                                        "</Relationships>")
        package.writestr("xl/workbook.xml", f'<workbook {main} xmlns:r="{kind}"><sheets><sheet '
                                            'name="S" sheetId="1" r:id="rId1"/></sheets></workbook>')
        package.writestr("xl/_rels/workbook.xml.rels", (
            f'<Relationships {rels}><Relationship Id="rId1" Type="{kind}/worksheet" '
            f'Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="{kind}/sharedStrings" '
            'Target="sharedStrings.xml"/></Relationships>'))
        package.writestr("xl/worksheets/sheet1.xml", f'<worksheet {main}><sheetData><row r="1">'
                                                     '<c r="A1" t="s"><v>0</v></c></row>'
                                                     "</sheetData></worksheet>")
        package.writestr("xl/sharedStrings.xml", (
            '<?xml version="1.0"?><!DOCTYPE sst [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;">]>'
            f"<sst {main}><si><t>&lol2;</t></si></sst>"))
    with pytest.raises(ExtractionError) as raised:
        XLSX.extract(buffer.getvalue(), "bomb")
    assert "\n" not in str(raised.value)
    assert str(raised.value).endswith("(EntitiesForbidden: EntitiesForbidden(name='lol', "
                                      "system_id=None, public_id=None))")


def test_a_title_row_above_the_header_is_its_own_line():
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Budget"
    sheet["A1"] = "Budget 2026"  # a title, then a blank row, then the table
    sheet.append([])
    sheet.append(["Item", "Cost", "Owner"])
    sheet.append(["Tea", 2.5, "Ann"])
    extracted = XLSX.extract(saved(workbook), "budget")
    assert extracted.canonical_text == ("Budget 2026\n"
                                        "Item | Cost | Owner\n"
                                        "Item: Tea | Cost: 2.5 | Owner: Ann\n")
    assert [a.locator for a in extracted.anchors] == [
        "sheet=Budget&range=A1:A1", "sheet=Budget&range=A3:C3", "sheet=Budget&range=A4:C4"]
    assert ("rows", "1") in extracted.notes


def test_notes_above_the_table_that_fill_many_cells_are_no_header():
    # As readxl's deaths.xlsx (found by a new user's trial): four rows of notes, one of them
    # filling five of six cells, named every value of the table ("at: David Bowie").
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "arts"
    for row in (["Lots of people"], ["simply cannot resist writing", None, None, None, None, "notes"],
                ["at", "the", "top", None, "of", "their spreadsheets"],
                ["or", "merging", None, None, None, "cells"],
                ["Name", "Profession", "Age", "Has kids", "Date of death"],
                ["David Bowie", "musician", 69, True, dt.datetime(2016, 1, 10)],
                ["Carrie Fisher", "actor", 60, True, dt.datetime(2016, 12, 27)]):
        sheet.append(row)
    # "merging" merged over B4:E4 (as in the file): no heading over the header row. The run of
    # the new user's script after the fix found the rows above stepped back to it.
    sheet.merge_cells("B4:E4")
    extracted = XLSX.extract(saved(workbook), "deaths")
    assert extracted.canonical_text.splitlines()[4:] == [
        "Name | Profession | Age | Has kids | Date of death",
        "Name: David Bowie | Profession: musician | Age: 69 | Has kids: TRUE | "
        "Date of death: 2016-01-10",
        "Name: Carrie Fisher | Profession: actor | Age: 60 | Has kids: TRUE | "
        "Date of death: 2016-12-27"]
    assert ("rows", "2") in extracted.notes
    # A table of labels alone keeps its first wide row as the header: nothing says otherwise.
    plain = Workbook()
    for row in (["Title of the list"], ["Name", "Role"], ["Ann", "chair"], ["Bo", "clerk"]):
        plain.active.append(row)
    assert XLSX.extract(saved(plain), "plain").canonical_text.splitlines()[:2] == [
        "Title of the list", "Name | Role"]


def test_a_damaged_sheet_is_left_out_and_said_the_others_are_read():
    # Found by a new user's trial: one sheet cut short failed the whole workbook, its three
    # good sheets lost, with "an encrypted workbook or an old binary .xls" as the hint.
    from openpyxl import Workbook

    workbook = Workbook()
    workbook.active.title = "Good"
    workbook.active.append(["Site", "Staff"])
    workbook.active.append(["Lyon", 40])
    workbook.create_sheet("Bad").append(["x", "y"])
    source = zipfile.ZipFile(io.BytesIO(saved(workbook)))
    damaged = io.BytesIO()
    with zipfile.ZipFile(damaged, "w") as archive:
        for name in source.namelist():
            part = source.read(name)
            archive.writestr(name, part[:len(part) // 2] if name == "xl/worksheets/sheet2.xml" else part)
    extracted = XLSX.extract(damaged.getvalue(), "sites")
    assert extracted.canonical_text == "Site | Staff\nSite: Lyon | Staff: 40\n"
    ((name, value),) = [note for note in extracted.notes if note[0] == "sheets_unreadable"]
    assert value.startswith("Bad (ParseError: unclosed token: line 1, column ")
    assert left_out(extracted.notes) == [
        f"sheet(s) {value} could not be read (a damaged workbook part) and are left out"]


def test_rows_are_bounded_while_reading():
    from openpyxl import Workbook

    from rag_pipeline.core.ingest.office_zip import OfficeLimits

    workbook = Workbook()
    for row in range(1, 102):
        workbook.active.append([f"r{row}", row])
    data = saved(workbook)
    with pytest.raises(ExtractionError, match="the XLSX holds more than 100 rows"):
        XlsxFormat(OfficeLimits(max_rows=100)).extract(data, "long")
    within = XlsxFormat(OfficeLimits(max_rows=101)).extract(data, "long")
    assert dict(within.notes)["rows"] == "100"


def test_the_empty_cells_a_sparse_row_is_laid_out_with_count_against_the_cell_limit():
    """Found by an attack: a cell at column XFD on each of 2,000 rows was counted as 4,000 cells
    and laid out as 33 million (10 s, 566 MB; 98 M characters as a DOCX's embedded table)."""
    from openpyxl import Workbook

    from rag_pipeline.core.ingest.office_zip import OfficeLimits

    workbook = Workbook()
    for row in range(1, 21):
        workbook.active.cell(row, 1, f"r{row}")
        workbook.active.cell(row, 16_384, "far")
    data = saved(workbook)
    with pytest.raises(ExtractionError, match="the XLSX holds more than 300,000 cells"):
        XlsxFormat(OfficeLimits(max_cells=300_000)).extract(data, "sparse")
    assert dict(XlsxFormat(OfficeLimits(max_cells=400_000)).extract(data, "sparse").notes)[
        "rows"] == "19"  # under its header row


def test_merged_cells_read_as_a_reader_sees_them_and_rows_cited_over_them():
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Plan"
    sheet["A1"] = "Site plan 2026"
    sheet.merge_cells("A1:D1")  # a title over four columns: cited A1:D1, not A1:A1
    sheet.append(["Region", "Site", "Lead", "Hours"])
    sheet.append(["North", "Delta", "Ana", 6])
    sheet.append([None, "Fjord", "Bo", 4])
    sheet.merge_cells("A3:A4")  # one region beside two sites: each row holds it
    sheet["B6"] = "Closed on public holidays"
    sheet.merge_cells("B6:D7")  # a block of text: once, cited over its area
    extracted = XLSX.extract(saved(workbook), "plan")
    assert extracted.canonical_text == ("Site plan 2026\n"
                                        "Region | Site | Lead | Hours\n"
                                        "Region: North | Site: Delta | Lead: Ana | Hours: 6\n"
                                        "Region: North | Site: Fjord | Lead: Bo | Hours: 4\n"
                                        "Closed on public holidays\n")
    assert [a.locator for a in extracted.anchors] == [
        "sheet=Plan&range=A1:D1", "sheet=Plan&range=A2:D2", "sheet=Plan&range=A3:D3",
        "sheet=Plan&range=A4:D4", "sheet=Plan&range=B6:D7"]


def test_merged_headings_over_a_row_of_labels_make_one_header_of_two_rows():
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Spend"
    sheet.append(["Department", "Q1", None, "Q2", None])
    sheet.append([None, "Plan", "Actual", "Plan", "Actual"])
    sheet.append(["Marketing", 120000, 118250, 130000, 141775])
    sheet.append(["Sales", 90000, 87000, 95000, 99500])
    for area in ("A1:A2", "B1:C1", "D1:E1"):
        sheet.merge_cells(area)
    for row in sheet.iter_rows(min_row=3, min_col=2):
        for cell in row:
            cell.number_format = "#,##0"
    extracted = XLSX.extract(saved(workbook), "spend")
    assert extracted.canonical_text == (
        "Department | Q1 Plan | Q1 Actual | Q2 Plan | Q2 Actual\n"
        "Department: Marketing | Q1 Plan: 120,000 | Q1 Actual: 118,250 | Q2 Plan: 130,000 | "
        "Q2 Actual: 141,775\n"
        "Department: Sales | Q1 Plan: 90,000 | Q1 Actual: 87,000 | Q2 Plan: 95,000 | "
        "Q2 Actual: 99,500\n")
    assert [a.locator for a in extracted.anchors] == [
        "sheet=Spend&range=A1:E2", "sheet=Spend&range=A3:E3", "sheet=Spend&range=A4:E4"]
    assert extracted.notes[:2] == (("sheets", "1"), ("rows", "2"))


def test_a_merged_heading_without_labels_under_it_names_each_column_it_spans():
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    sheet.append(["Name", "Contact", None])
    sheet.merge_cells("B1:C1")
    sheet.append(["Ana", "ana@example.org", "555-0101"])
    sheet.append(["Bo", "bo@example.org", "555-0102"])
    sheet.append(["Cy", "Main St 5", "Oslo"])  # Planted: text only under the heading, but a
    # name outside it: a data row, not labels (were it the first, it stays a data row too)
    assert XLSX.extract(saved(workbook), "c").canonical_text == (
        "Name | Contact | Contact\n"
        "Name: Ana | Contact: ana@example.org | Contact: 555-0101\n"
        "Name: Bo | Contact: bo@example.org | Contact: 555-0102\n"
        "Name: Cy | Contact: Main St 5 | Contact: Oslo\n")
    sheet.delete_rows(2, 2)
    assert XLSX.extract(saved(workbook), "c").canonical_text == (
        "Name | Contact | Contact\nName: Cy | Contact: Main St 5 | Contact: Oslo\n")


def test_merges_are_found_when_the_workbook_part_has_another_name():
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Alpha"
    sheet["A1"] = "Quarterly plan for the northern sites"
    sheet.merge_cells("A1:C1")
    # Planted: the package names its workbook part xl/wb.xml (as _rels/.rels allows).
    source, renamed = zipfile.ZipFile(io.BytesIO(saved(workbook))), io.BytesIO()
    with zipfile.ZipFile(renamed, "w") as out:
        for item in source.infolist():
            body = source.read(item.filename)
            name = {"xl/workbook.xml": "xl/wb.xml",
                    "xl/_rels/workbook.xml.rels": "xl/_rels/wb.xml.rels"}.get(item.filename,
                                                                            item.filename)
            if item.filename in ("_rels/.rels", "[Content_Types].xml"):
                body = body.replace(b"xl/workbook.xml", b"xl/wb.xml")
            out.writestr(name, body)
    extracted = XLSX.extract(renamed.getvalue(), "alpha")
    assert extracted.canonical_text == "Quarterly plan for the northern sites\n"
    assert [a.locator for a in extracted.anchors] == ["sheet=Alpha&range=A1:C1"]


def test_a_cell_of_many_digits_and_a_letter_is_read_at_once():
    # Found by an attack: a workbook of 1.5 KB (one cell of digits and a letter) took 16.3 s.
    # 30,000 digits: a cell holds at most 32,767 characters.
    from openpyxl import Workbook

    from rag_pipeline.core.ingest.reading_limits import document_reading_limits

    workbook = Workbook()
    workbook.active.append(["Code", "Note"])
    workbook.active.append(["1" * 30_000 + "x", "ok"])
    buffer = io.BytesIO()
    workbook.save(buffer)
    with document_reading_limits(10):
        text = XLSX.read(buffer.getvalue(), "codes").canonical_text
    assert text.endswith(f"Code: {'1' * 30_000}x | Note: ok\n")
