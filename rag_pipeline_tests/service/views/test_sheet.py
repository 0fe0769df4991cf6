"""Tests for ``rag_pipeline.service.views.sheet``: a long sheet is shown around its cited range."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from rag_pipeline.core.index.store import DocumentInfo
from rag_pipeline.core.ingest import Extracted, format_named
from rag_pipeline.service.views.base import ViewRequest
from rag_pipeline.service.views.sheet import MAX_ROWS, ROWS_ABOVE, Window, read_xlsx, sheet_view


def _indexed(path: Path, data: bytes) -> tuple[Extracted, DocumentInfo]:
    """``data`` written to ``path`` and read by its format (named by its suffix), as indexed."""
    path.write_bytes(data)
    extracted = format_named(path.suffix[1:]).extract(data, path.stem)
    return extracted, DocumentInfo(path.name, path.stem, str(path), path.suffix[1:],
                                   extracted.anchors, extracted.tables,
                                   hashlib.sha256(data).hexdigest())


def _long_workbook(path: Path, rows: int) -> Path:
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Log"
    sheet.append(["day", "reading"])
    for n in range(1, rows):
        sheet.append([f"day {n}", n * 2])
    workbook.save(path)
    return path


def test_a_long_sheet_is_read_no_further_than_the_window(tmp_path: Path):
    path = _long_workbook(tmp_path / "log.xlsx", 1000)
    shown = read_xlsx(path.read_bytes(), "Log", Window(245, MAX_ROWS, 4, header_row=1))
    grid = shown.grid
    assert (shown.names, grid.first_row, len(grid.rows), grid.more) == (("Log",), 245, 200, True)
    assert grid.rows[0] == ("day 244", "488", "", "")
    assert (shown.header.first_row, shown.header.rows) == (1, (("day", "reading", "", ""),))
    last = read_xlsx(path.read_bytes(), None, Window(900, MAX_ROWS, 2)).grid
    assert (last.sheet, len(last.rows), last.more, last.rows[-1]) == ("Log", 101, False, ("day 999", "1998"))


def test_the_view_starts_a_few_rows_above_the_cited_row(tmp_path: Path):
    path = _long_workbook(tmp_path / "log.xlsx", 1000)
    extracted = format_named("xlsx").extract(path.read_bytes(), "log")
    anchor = next(a for a in extracted.anchors if a.locator.endswith("range=A250:B250"))
    info = DocumentInfo("log.xlsx", "log", str(path), "xlsx", extracted.anchors,
                        content_sha256=hashlib.sha256(path.read_bytes()).hexdigest())
    view = sheet_view(ViewRequest(info, extracted.canonical_text, anchor.start, anchor.end))
    assert view.label == "Log!A250:B250"
    assert f'<tr><th scope="row">{250 - ROWS_ABOVE}</th>' in view.body
    assert ('<tr><th scope="row">250</th><td class="cited" id="quote"><mark>day 249</mark></td>'
            '<td class="num cited"><mark>498</mark></td></tr>') in view.body
    assert view.body.endswith('<p class="meta">Rows 245 to 444 shown; the sheet has more below.</p>')


def test_a_view_shown_again_reads_the_workbook_once(tmp_path: Path, monkeypatch):
    # Found by an attacker: every view of a 100,000-row workbook read it whole again (1.3 to
    # 1.7 s each; six at once took 9.4 s each).
    import openpyxl

    from rag_pipeline.service.views import sheet

    path = _long_workbook(tmp_path / "log.xlsx", 300)
    extracted = format_named("xlsx").extract(path.read_bytes(), "log")
    anchor = next(a for a in extracted.anchors if a.locator.endswith("range=A250:B250"))
    info = DocumentInfo("log.xlsx", "log", str(path), "xlsx", extracted.anchors, extracted.tables,
                        hashlib.sha256(path.read_bytes()).hexdigest())
    opened = []
    real = openpyxl.load_workbook
    monkeypatch.setattr(openpyxl, "load_workbook", lambda *a, **k: opened.append(1) or real(*a, **k))
    monkeypatch.setattr(sheet, "_SHOWN", sheet.Recent(sheet.GRIDS_KEPT))
    views = [sheet_view(ViewRequest(info, extracted.canonical_text, anchor.start, anchor.end))
             for _ in range(3)]
    # Opened once for the sheet names, the cited rows and the header row far above them.
    assert len(opened) == 1 and '<tr class="header-row"><th scope="row">1</th><td>day</td>' in views[0].body
    assert len({view.body for view in views}) == 1 and views[0].label == "Log!A250:B250"
    # Another sheet asked for is read once too, and a missing one is answered from the cache.
    for _ in range(2):
        with pytest.raises(sheet.ViewError, match="^no sheet 'Gone' in log; its sheets: 'Log'$"):
            sheet_view(ViewRequest(info, extracted.canonical_text, 0, 5, sheet="Gone"))
    assert len(opened) == 2


def test_a_cited_row_far_down_shows_its_header_row_and_cells_far_right(tmp_path: Path):
    # Found by a user's trial: a row cited 40 rows down showed rows 39 to 44 without the header
    # (columns "A B C" alone), and a row 46 columns wide was drawn blank past column AN.
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Vendors"
    sheet.append(["Name", *(f"field {n}" for n in range(2, 46)), "Carrier"])
    for n in range(1, 60):
        sheet.append([f"vendor {n}", *([""] * 44), f"carrier {n}"])
    path = tmp_path / "vendors.xlsx"
    workbook.save(path)
    data = path.read_bytes()
    extracted = format_named("xlsx").extract(data, "vendors")
    anchor = next(a for a in extracted.anchors if a.locator.endswith("range=A45:AT45"))
    info = DocumentInfo("vendors.xlsx", "vendors", str(path), "xlsx", extracted.anchors,
                        extracted.tables, hashlib.sha256(data).hexdigest())
    view = sheet_view(ViewRequest(info, extracted.canonical_text, anchor.start, anchor.end))
    assert view.label == "Vendors!A45:AT45"
    body = view.body
    assert body.index('<tr class="header-row"><th scope="row">1</th><td>Name</td>') < body.index(
        '<tr class="gap"><th scope="row">&#8942;</th><td colspan="46">rows 2 to 39</td></tr>') < (
        body.index('<tr><th scope="row">40</th>'))
    assert '<td>Carrier</td></tr>' in body and '<td class="cited"><mark>carrier 44</mark></td></tr>' in body


def test_a_cell_in_the_last_column_widens_the_grid_no_further_than_its_cap(tmp_path: Path):
    # Found by an attack: one cell in column XFD of a 7.8 KB workbook made every view a grid
    # of 16,384 columns (the window read 1000; the header row and each row were drawn to XFD).
    from openpyxl import Workbook

    from rag_pipeline.service.views.sheet import MAX_CITED_COLUMNS

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Wide"
    for n in range(1, 4):
        sheet.cell(row=n, column=1, value=f"row {n}")
        sheet.cell(row=n, column=16384, value=f"far {n}")
    path = tmp_path / "wide.xlsx"
    workbook.save(path)
    data = path.read_bytes()
    extracted = format_named("xlsx").extract(data, "wide")
    anchor = next(a for a in extracted.anchors if a.locator.endswith("range=A2:XFD2"))
    info = DocumentInfo("wide.xlsx", "wide", str(path), "xlsx", extracted.anchors, extracted.tables,
                        hashlib.sha256(data).hexdigest())
    view = sheet_view(ViewRequest(info, extracted.canonical_text, anchor.start, anchor.end))
    assert view.label == "Wide!A2:XFD2"
    assert view.body.count('<th scope="col">') == MAX_CITED_COLUMNS
    assert view.body.count("<td") == 3 * MAX_CITED_COLUMNS


def test_an_ods_citation_is_a_grid_of_its_sheet_too(tmp_path: Path):
    # Found by a user's trial: an ODS citation (#sheet=Fleet&range=A3:B3) opened the plain-text
    # view labelled "lines 1-2".
    import io

    from odf.opendocument import OpenDocumentSpreadsheet

    from rag_pipeline.benchmarks.made_here import odf_grid
    from rag_pipeline.service.views import VIEWS

    document = OpenDocumentSpreadsheet()
    document.spreadsheet.addElement(odf_grid([["Ship", "Port"], ["Aurora", "Oslo"],
                                              ["Borealis", "Bergen"]], name="Fleet"))
    buffer = io.BytesIO()
    document.write(buffer)
    path = tmp_path / "fleet.ods"
    path.write_bytes(buffer.getvalue())
    extracted = format_named("ods").extract(path.read_bytes(), "fleet")
    info = DocumentInfo("fleet.ods", "fleet", str(path), "ods", extracted.anchors, extracted.tables,
                        hashlib.sha256(path.read_bytes()).hexdigest())
    start = extracted.canonical_text.index("Ship: Borealis")
    view = VIEWS["ods"](ViewRequest(info, extracted.canonical_text, start, start + 10))
    assert (view.label, view.kind) == ("Fleet!A3:B3", "sheet")
    assert ('<tr><th scope="row">3</th><td class="cited" id="quote"><mark>Borealis</mark></td>'
            '<td class="cited"><mark>Bergen</mark></td></tr>') in view.body


def test_an_ods_row_far_down_is_shown_under_its_header_from_one_parse(tmp_path: Path, monkeypatch):
    # Found in a re-read: the first view of a cited row parsed the package three times (the
    # sheets' names, the cited rows, the header row).
    import io

    from odf.opendocument import OpenDocumentSpreadsheet

    from rag_pipeline.benchmarks.made_here import odf_grid
    from rag_pipeline.core.ingest.formats import odf
    from rag_pipeline.service.views import sheet

    document = OpenDocumentSpreadsheet()
    ships = [["Ship", "Port"], *([f"ship {n}", f"port {n}"] for n in range(1, 60))]
    document.spreadsheet.addElement(odf_grid(ships, name="Fleet"))
    document.spreadsheet.addElement(odf_grid([["Crew"]], name="Crew"))
    buffer = io.BytesIO()
    document.write(buffer)
    data = buffer.getvalue()
    extracted = format_named("ods").extract(data, "fleet")
    info = DocumentInfo("fleet.ods", "fleet", str(tmp_path / "fleet.ods"), "ods", extracted.anchors,
                        extracted.tables, hashlib.sha256(data).hexdigest())
    (tmp_path / "fleet.ods").write_bytes(data)
    parsed = []
    real = odf.ods_sheets
    monkeypatch.setattr(odf, "ods_sheets", lambda data: parsed.append(1) or real(data))
    monkeypatch.setattr(sheet, "_SHOWN", sheet.Recent(sheet.GRIDS_KEPT))
    start = extracted.canonical_text.index("Ship: ship 49")
    view = sheet.sheet_view(ViewRequest(info, extracted.canonical_text, start, start + 10))
    assert (view.label, len(parsed)) == ("Fleet!A50:B50", 1)
    body = view.body
    assert body.index('<tr class="header-row"><th scope="row">1</th><td>Ship</td><td>Port</td></tr>') < (
        body.index('<td colspan="2">rows 2 to 44</td>')) < body.index(
        '<tr><th scope="row">50</th><td class="cited" id="quote"><mark>ship 49</mark></td>'
        '<td class="cited"><mark>port 49</mark></td></tr>')
    assert '<a class="tab" href="/documents/fleet.ods?from=' in body and '&amp;sheet=Crew">Crew</a>' in body


def test_a_workbook_without_a_sheet_is_one_clear_error(tmp_path: Path):
    # Found by an attack: read_ods took the first of no sheets (IndexError).
    import io

    from odf.opendocument import OpenDocumentSpreadsheet

    from rag_pipeline.service.views.sheet import Window, read_ods

    buffer = io.BytesIO()
    OpenDocumentSpreadsheet().write(buffer)
    assert read_ods(buffer.getvalue(), None, Window(1, 10, 5)) == (
        read_ods(buffer.getvalue(), "Any", Window(1, 10, 5)))
    assert read_ods(buffer.getvalue(), None, Window(1, 10, 5)).names == ()


def _sheet_tabs(body: str) -> str:
    return body[body.index('<div class="tabs">'):body.index("</div>")]


def test_a_hidden_sheets_tab_says_it_is_hidden_in_xlsx_and_ods(tmp_path: Path):
    """Found by a user of the page: the tab of a sheet the workbook hides looked like any
    other, while the citation of its rows said ``(hidden)``."""
    import io

    from odf import style
    from odf.opendocument import OpenDocumentSpreadsheet
    from openpyxl import Workbook

    from rag_pipeline.benchmarks.made_here import odf_grid
    from rag_pipeline.service.views import VIEWS

    workbook = Workbook()
    workbook.active.title = "Open"
    workbook.active.append(["Open rates"])
    secret = workbook.create_sheet("Secret")
    secret.append(["Secret rates"])
    secret.sheet_state = "hidden"
    buffer = io.BytesIO()
    workbook.save(buffer)
    spreadsheet = OpenDocumentSpreadsheet()
    hiding = style.Style(name="ta2", family="table")
    hiding.addElement(style.TableProperties(display="false"))
    spreadsheet.automaticstyles.addElement(hiding)
    spreadsheet.spreadsheet.addElement(odf_grid([["Open rates"]], name="Open"))
    hidden = odf_grid([["Secret rates"]], name="Secret")
    hidden.setAttribute("stylename", hiding)
    spreadsheet.spreadsheet.addElement(hidden)
    ods = io.BytesIO()
    spreadsheet.write(ods)
    for kind, data in [("xlsx", buffer.getvalue()), ("ods", ods.getvalue())]:
        path = tmp_path / f"rates.{kind}"
        path.write_bytes(data)
        extracted = format_named(kind).extract(data, "rates")
        info = DocumentInfo(path.name, "rates", str(path), kind, extracted.anchors, extracted.tables,
                            hashlib.sha256(data).hexdigest())
        start = extracted.canonical_text.index("Secret rates")
        on_hidden = VIEWS[kind](ViewRequest(info, extracted.canonical_text, start, start + 12))
        assert _sheet_tabs(on_hidden.body) == (
            f'<div class="tabs"><a class="tab" href="/documents/rates.{kind}?from={start}&amp;to='
            f'{start + 12}&amp;sheet=Open">Open</a> <span class="tab current hidden" '
            'aria-current="page">Secret (hidden)</span>'), kind
        on_open = VIEWS[kind](ViewRequest(info, extracted.canonical_text, 0, 10))
        assert _sheet_tabs(on_open.body) == (
            '<div class="tabs"><span class="tab current" aria-current="page">Open</span> '
            f'<a class="tab hidden" href="/documents/rates.{kind}?from=0&amp;to=10&amp;sheet=Secret">'
            'Secret (hidden)</a>'), kind


def test_a_sheets_tab_writes_out_its_bidirectional_controls(tmp_path: Path):
    """Found by an attack on the page: a sheet named ``bidi\\u202eslx.exe`` showed as
    "bidiexe.xls" in its tab, though the view's title wrote the control out."""
    import io

    from openpyxl import Workbook

    from rag_pipeline.service.views import VIEWS

    workbook = Workbook()
    workbook.active.title = "bidi\u202eslx.exe"
    workbook.active.append(["Rates"])
    workbook.create_sheet("Open").append(["Open rates"])
    buffer = io.BytesIO()
    workbook.save(buffer)
    extracted, info = _indexed(tmp_path / "rates.xlsx", buffer.getvalue())
    start = extracted.canonical_text.index("Open rates")
    view = VIEWS["xlsx"](ViewRequest(info, extracted.canonical_text, start, start + 10))
    assert _sheet_tabs(view.body) == (
        f'<div class="tabs"><a class="tab" href="/documents/rates.xlsx?from={start}&amp;to='
        f'{start + 10}&amp;sheet=bidi%E2%80%AEslx.exe">bidi\\u202eslx.exe</a> '
        '<span class="tab current" aria-current="page">Open</span>')


def test_a_two_row_header_is_shown_whole_and_a_merged_cell_shows_its_value(tmp_path: Path):
    """Found by an analyst: the view showed only the first of a header's two rows (``Q1``
    over blanks, "Plan" and "Actual" folded into the gap), and the cited row's region, merged
    down from the row above, blank."""
    from openpyxl import Workbook

    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Quarterly"
    sheet.append(["Region", "Q1", None, "Q2", None])
    sheet.append([None, "Plan", "Actual", "Plan", "Actual"])
    for n in range(3, 11):
        sheet.append([f"Area {n}", n, n + 1, n + 2, n + 3])
    sheet.append(["East", 54, 268, 60, 270])
    sheet.append([None, 55, 159, 61, 271])
    for name in ("B1:C1", "D1:E1", "A11:A12"):
        sheet.merge_cells(name)
    path = tmp_path / "kpi.xlsx"
    workbook.save(path)
    data = path.read_bytes()
    extracted = format_named("xlsx").extract(data, "kpi")
    anchor = next(a for a in extracted.anchors if a.locator.endswith("range=A12:E12"))
    assert "Region: East | Q1 Plan: 55 | Q1 Actual: 159" in extracted.canonical_text[anchor.start:anchor.end]
    info = DocumentInfo("kpi.xlsx", "kpi", str(path), "xlsx", extracted.anchors, extracted.tables,
                        hashlib.sha256(data).hexdigest())
    body = sheet_view(ViewRequest(info, extracted.canonical_text, anchor.start, anchor.end)).body
    assert ('<tr class="header-row"><th scope="row">1</th><td>Region</td><td>Q1</td>'
            '<td class="merged">Q1</td><td>Q2</td><td class="merged">Q2</td></tr>'
            '<tr class="header-row"><th scope="row">2</th><td></td><td>Plan</td>'
            '<td>Actual</td><td>Plan</td><td>Actual</td></tr>'
            '<tr class="gap"><th scope="row">&#8942;</th><td colspan="5">rows 3 to 6</td></tr>') in body
    assert ('<tr><th scope="row">12</th><td class="merged cited" id="quote"><mark>East</mark></td>'
            '<td class="num cited"><mark>55</mark></td>') in body


def test_an_ods_merged_cell_shows_its_value_in_each_of_its_cells(tmp_path: Path):
    """As in XLSX: found by an analyst, an ODS merged area showed its value in its first cell
    only (the heading over two columns, the region merged down to the cited row)."""
    import io

    from odf import table, text
    from odf.opendocument import OpenDocumentSpreadsheet

    def cell(value: str, **spans: int) -> object:
        made = table.TableCell(**spans)
        made.addElement(text.P(text=value))
        return made

    grid = table.Table(name="Quarterly")
    rows = [[cell("Region", numberrowsspanned=2), cell("Q1", numbercolumnsspanned=2),
             table.CoveredTableCell()],
            [table.CoveredTableCell(), cell("Plan"), cell("Actual")],
            *[[cell(f"Area {n}"), cell(str(n)), cell(str(n + 1))] for n in range(3, 11)],
            [cell("East", numberrowsspanned=2), cell("54"), cell("268")],
            [table.CoveredTableCell(), cell("55"), cell("159")]]
    for cells in rows:
        row = table.TableRow()
        for made in cells:
            row.addElement(made)
        grid.addElement(row)
    document = OpenDocumentSpreadsheet()
    document.spreadsheet.addElement(grid)
    buffer = io.BytesIO()
    document.write(buffer)
    extracted, info = _indexed(tmp_path / "kpi.ods", buffer.getvalue())
    anchor = next(a for a in extracted.anchors if a.locator.endswith("range=A12:C12"))
    body = sheet_view(ViewRequest(info, extracted.canonical_text, anchor.start, anchor.end)).body
    assert ('<tr class="header-row"><th scope="row">1</th><td>Region</td><td>Q1</td>'
            '<td class="merged">Q1</td></tr>'
            '<tr class="header-row"><th scope="row">2</th><td class="merged">Region</td>'
            '<td>Plan</td><td>Actual</td></tr>') in body
    assert ('<tr><th scope="row">12</th><td class="merged cited" id="quote"><mark>East</mark></td>'
            '<td class="num cited"><mark>55</mark></td>') in body


def test_a_long_cell_wraps_in_the_grid_and_a_short_one_stays_on_its_line(tmp_path: Path):
    # Found by a phone user: a cell of a long note was cut at 22rem with an ellipsis, the rest
    # unreadable in the view.
    from openpyxl import Workbook

    from rag_pipeline.service.views.sheet import LONG_CELL

    workbook = Workbook()
    workbook.active.title = "Notes"
    note = "The inspection of the cooling loop moved to the second week of March."
    workbook.active.append(["day", "note"])
    workbook.active.append(["Monday", note])
    path = tmp_path / "notes.xlsx"
    workbook.save(path)
    extracted, info = _indexed(path, path.read_bytes())
    start = extracted.canonical_text.index("Monday")
    view = sheet_view(ViewRequest(info, extracted.canonical_text, start, start + 6))
    assert len(note) > LONG_CELL
    assert (f'<td class="cited" id="quote"><mark>Monday</mark></td>'
            f'<td class="long cited"><mark>{note}</mark></td>') in view.body
