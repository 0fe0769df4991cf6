"""The PDF view: a quote running over a page break is boxed on each page, and the page it
starts on says where it goes on."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from rag_pipeline.benchmarks.made_here import HEADERS, LONG_TABLE_WRITERS, table_rows
from rag_pipeline.core.index.store import DocumentInfo
from rag_pipeline.core.ingest.formats import format_for
from rag_pipeline.core.ingest.pdf_ocr import tesseract_version
from rag_pipeline.service.views.base import ViewRequest
from rag_pipeline.service.views.pages import page_view, quote_boxes


def _held(folder: Path, name: str, data: bytes, title: str, kind: str):
    """`data` written as `name` in `folder`, read by its format, and the index's record of it:
    (record, what the format extracted)."""
    (folder / name).write_bytes(data)
    extracted = format_for(Path(name)).extract(data, Path(name).stem)
    info = DocumentInfo(name, title, str(folder / name), kind, extracted.anchors, extracted.tables,
                        hashlib.sha256(data).hexdigest())
    return info, extracted


def test_a_table_chunk_over_a_page_break_is_boxed_on_both_pages_and_says_so(tmp_path: Path):
    name, data = LONG_TABLE_WRITERS["pdf"](HEADERS, table_rows(60))
    info, extracted = _held(tmp_path, name, data, "Shifts", "pdf")
    text = extracted.canonical_text
    page_two = extracted.anchors[1].start
    # The last three rows of page 1 and the first three of page 2.
    last_on_one = max(n for n in range(1, 61) if text.index(f"Delta flats {n} |") < page_two)
    start = text.index(f"Delta flats {last_on_one - 2} |")
    end = text.index("\n", text.index(f"Delta flats {last_on_one + 3} |"))
    assert last_on_one == 31
    first = page_view(ViewRequest(info, text, start, end))
    assert first.label == "page 1 of 2"
    assert first.note == "The quote goes on to page 2: the next page boxes the rest."
    second = page_view(ViewRequest(info, text, start, end, page=2))
    # Found by an admin's trial: it said "the quote is on page 1" over the rest of the quote.
    assert second.label == "page 2 of 2 (the quote begins on page 1)"
    assert second.note == ""
    assert first.body.count('class="box"') > 0 and second.body.count('class="box"') > 0


def test_a_line_the_page_repeats_is_boxed_where_it_was_cited(tmp_path: Path):
    # Found by a user's trial: the second of two equal lines was boxed at the first.
    from rag_pipeline_tests.core.ingest.pdf_fixtures import plain_pdf

    data = plain_pdf([["Check the valves.", "Berlin office", "Check the valves.", "Madrid office"]])
    info, extracted = _held(tmp_path, "checks.pdf", data, "Checks", "pdf")
    text = extracted.canonical_text
    tops = []
    for start in (text.index("Check the valves."), text.rindex("Check the valves.")):
        view = page_view(ViewRequest(info, text, start, start + len("Check the valves.")))
        tops.append(float(view.body.split('style="left:')[1].split("top:")[1].split("%")[0]))
    assert tops[0] < tops[1]


def test_the_quote_on_a_page_image_is_there_as_text_for_a_screen_reader(tmp_path: Path):
    # Found by a user's trial: the focus moved to an empty box over the image, which said
    # nothing of what was quoted.
    from rag_pipeline_tests.core.ingest.pdf_fixtures import plain_pdf

    data = plain_pdf([["Check the valves & pumps.", "Madrid office"]])
    info, extracted = _held(tmp_path, "checks.pdf", data, "Checks", "pdf")
    text = extracted.canonical_text
    start = text.index("Check")
    body = page_view(ViewRequest(info, text, start, start + len("Check the valves & pumps."))).body
    assert body.count("visually-hidden") == 1
    assert ('<span class="visually-hidden">Quoted on this page: Check the valves &amp; pumps.'
            '</span></div>') in body


def _boxes(body: str) -> list[tuple[float, float, float, float]]:
    return [tuple(float(part.split(":")[1].rstrip("%")) for part in style.split(";"))
            for style in (piece.split('"')[0] for piece in body.split('style="')[1:])]


@pytest.mark.skipif(tesseract_version() is None, reason="tesseract is not installed")
def test_a_quote_on_a_scanned_page_is_boxed_where_its_words_are(tmp_path: Path):
    # Found by a new user: a scanned page showed its image with no box on the quote.
    from rag_pipeline_tests.core.ingest.pdf_fixtures import plain_pdf, scanned_pdf

    lines = ["Site survey notes", "Check the valves and pumps weekly.", "Berlin office",
             "Check the valves and pumps weekly.", "Madrid office"]
    typed = plain_pdf([lines])
    scan = scanned_pdf(typed, dpi=300)
    info, extracted = _held(tmp_path, "scan.pdf", scan, "Scan", "pdf")
    text = extracted.canonical_text
    assert dict(extracted.notes)["ocr_pages"] == "1"
    quote = "Check the valves and pumps weekly."
    found = []
    for start in (text.index(quote), text.rindex(quote)):
        view = page_view(ViewRequest(info, text, start, start + len(quote)))
        assert view.note == ""
        found.append(_boxes(view.body))
    # Where the typed page's text layer puts the same lines, within 1 % of the page.
    typed_boxes = [quote_boxes(typed, 1, quote, before) for before in (0, 1)]
    assert [len(boxes) for boxes in found] == [1, 1] == [len(boxes) for boxes in typed_boxes]
    for (ocr,), (box,) in zip(found, typed_boxes, strict=True):
        assert all(abs(a - b) < 1.0 for a, b in zip(ocr, (box.left * 100, box.top * 100,
                                                          box.width * 100, box.height * 100),
                                                     strict=True)), (ocr, box)
    assert found[0][0][1] < found[1][0][1]


@pytest.mark.skipif(tesseract_version() is None, reason="tesseract is not installed")
def test_an_image_is_shown_as_its_page_with_the_quote_boxed(tmp_path: Path):
    # Found by a new user: a photographed whiteboard was shown as its extracted text alone.
    import io

    from PIL import Image, ImageDraw, ImageFont

    from rag_pipeline.service.views.base import Original
    from rag_pipeline.service.views.pages import page_png
    from rag_pipeline_tests.core.ingest.formats.test_image import encoded, whiteboard

    board = encoded(whiteboard(["Whiteboard: ship the gauges", "by Friday, then review costs."]),
                    "PNG", dpi=(300, 300))
    info, extracted = _held(tmp_path, "board.png", board, "board", "image")
    text = extracted.canonical_text
    start = text.index("then review")
    view = page_view(ViewRequest(info, text, start, start + len("then review costs.")))
    assert (view.label, view.kind, view.note) == ("page 1 of 1", "pdf", "")
    assert '<img id="page-image" src="/page-images/board.png?page=1"' in view.body
    # Where the drawing put "then review costs." (x 280-663, y 171-217 of 1400 x 400 pixels,
    # the font's descent included, which these words do not reach), within 2 % of the image.
    draw = ImageDraw.Draw(Image.new("L", (1, 1)))
    font = ImageFont.load_default(size=48)
    x0 = draw.textbbox((60, 160), "by Friday, ", font=font)[2]
    _, y0, x1, y1 = draw.textbbox((60, 160), "by Friday, then review costs.", font=font)
    ((left, top, width, height),) = _boxes(view.body)
    expected = (x0 / 14, y0 / 4, (x1 - x0) / 14, (y1 - y0) / 4)
    assert all(abs(a - b) < 2.0 for a, b in zip((left, top, width, height), expected,
                                                strict=True)), ((left, top, width, height), expected)
    png = page_png(Original("board.png", board, info.content_sha256), 1, "image")
    assert Image.open(io.BytesIO(png)).size == (1400, 400)


@pytest.mark.skipif(tesseract_version() is None, reason="tesseract is not installed")
def test_a_view_finding_ocr_busy_says_so_at_once_and_busy_drawing_is_a_503(tmp_path: Path,
                                                                             monkeypatch):
    """Found by an attack: views of 100 frames waited for the one OCR at a time, each holding a
    thread of the service, so a question took 32 s; 39 of them then said the quote "could not be
    located", which was false. A page drawn while two others are is refused as busy."""
    import rag_pipeline.service.views.pages as pages
    from rag_pipeline.service.views.base import Original, ViewError
    from rag_pipeline_tests.core.ingest.formats.test_image import encoded, whiteboard

    board = encoded(whiteboard(["Wall board: order the valves", "by Monday, then test them."]),
                    "PNG", dpi=(300, 300))  # words of its own: none kept from another test
    info, extracted = _held(tmp_path, "wall.png", board, "wall", "image")
    request = ViewRequest(info, extracted.canonical_text, 0, len("Wall board: order the valves"))
    assert pages._OCR_AT_ONCE.acquire(blocking=False)
    try:
        view = page_view(request)
    finally:
        pages._OCR_AT_ONCE.release()
    assert (view.note, view.body.count('class="box"')) == (pages.OCR_BUSY, 0)
    assert page_view(request).body.count('class="box"') == 1
    monkeypatch.setattr(pages, "DRAW_WAIT_SECONDS", 0.1)
    held = [pages._DRAWING.acquire(blocking=False) for _ in range(pages.DRAWS_AT_ONCE)]
    try:
        with pytest.raises(ViewError) as busy:
            pages.page_png(Original("wall.png", board, "not drawn yet"), 1, "image")
    finally:
        for _ in held:
            pages._DRAWING.release()
    assert (busy.value.status, busy.value.message) == (
        503, "the service is drawing 2 other pages: retry in a moment")
