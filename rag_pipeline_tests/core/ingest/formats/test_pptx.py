"""PPTX: a section per slide titled by its title, text frames, tables and notes; ``#slide=N``."""

from __future__ import annotations

import io
import re
import zipfile

import pytest

from rag_pipeline.core.ingest.extracted import Anchor, ExtractionError, Section
from rag_pipeline.core.ingest.formats.pptx import MAX_SLIDES, PptxFormat

PPTX = PptxFormat()


def saved(deck) -> bytes:
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def deck() -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    presentation = Presentation()
    first = presentation.slides.add_slide(presentation.slide_layouts[0])  # title + subtitle
    first.shapes.title.text = "Quarterly review"
    first.placeholders[1].text = "Field team, spring"
    second = presentation.slides.add_slide(presentation.slide_layouts[1])  # title + content
    second.shapes.title.text = "Sites"
    body = second.placeholders[1].text_frame
    body.text = "Three sites visited"
    deeper = body.add_paragraph()
    deeper.text, deeper.level = "Delta flats  took   longest", 1
    table = second.shapes.add_table(3, 3, Inches(1), Inches(4), Inches(6), Inches(1)).table
    for r, row in enumerate([["Site", "Lead", "Hours"], ["Delta flats", "Tomas Ruiz", "6"],
                             ["North ridge", "Ana Li", ""]]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    second.notes_slide.notes_text_frame.text = "Mention the  flood."
    presentation.slides.add_slide(presentation.slide_layouts[6])  # blank: no title, no text
    fourth = presentation.slides.add_slide(presentation.slide_layouts[6])
    box = fourth.shapes.add_textbox(Inches(1), Inches(1), Inches(4), Inches(1))
    box.text_frame.text = "Questions?"
    return saved(presentation)


TEXT = ("Quarterly review\n\n"
        "Field team, spring\n\n"
        "Sites\n\n"
        "Three sites visited\n"
        "  Delta flats took longest\n\n"
        "Site | Lead | Hours\n"
        "Delta flats | Tomas Ruiz | 6\n"
        "North ridge | Ana Li\n\n"
        "Notes: Mention the flood.\n\n"
        "Slide 4\n\n"
        "Questions?\n")


def test_slides_become_sections_with_slide_anchors():
    extracted = PPTX.extract(deck(), "review")
    assert extracted.canonical_text == TEXT
    assert extracted.title == "Quarterly review"
    text = extracted.canonical_text
    assert [(s.title, text[s.start:s.end]) for s in extracted.sections] == [
        ("Quarterly review", "Field team, spring"),
        ("Sites", "Three sites visited\n  Delta flats took longest\n\nSite | Lead | Hours\n"
                  "Delta flats | Tomas Ruiz | 6\nNorth ridge | Ana Li\n\nNotes: Mention the flood."),
        ("Slide 4", "Questions?"),
    ]
    assert extracted.sections[0] == Section("Quarterly review", 18, 36)
    # Slide 3 is blank: no text, no anchor; slide 4 keeps its number.
    assert extracted.anchors == (Anchor(0, 36, "slide=1"), Anchor(38, 189, "slide=2"),
                                 Anchor(191, 210, "slide=4"))
    assert [text[a.start:a.end].split("\n")[0] for a in extracted.anchors] == [
        "Quarterly review", "Sites", "Slide 4"]
    assert extracted.notes == (("slides", "4"),)


def test_a_span_cites_the_slide_it_starts_on():
    anchors = PPTX.extract(deck(), "review").anchors
    assert PPTX.fragment(anchors, 0, 10) == "#slide=1"
    assert PPTX.fragment(anchors, 100, 200) == "#slide=2"
    assert PPTX.fragment(anchors, 195, 210) == "#slide=4"
    assert PPTX.fragment((), 3, 9) == "#char=3,9"


def test_a_deck_over_the_slide_limit_fails_unparsed():
    # Planted: the deck's slide list names 10,000 slides (all the same part): over the limit,
    # counted on presentation.xml before python-pptx parses a slide.
    source = zipfile.ZipFile(io.BytesIO(deck()))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "ppt/presentation.xml":
                match = re.search(rb"<p:sldId [^>]*/>", data)
                data = data.replace(match.group(), match.group() * 10_000, 1)  # 4 + 9,999 more
            target.writestr(info, data)
    with pytest.raises(ExtractionError, match=f"^10003 slides: over the limit of {MAX_SLIDES} per deck$"):
        PPTX.extract(buffer.getvalue(), "huge")


def test_not_a_pptx_fails_with_its_reason():
    with pytest.raises(ExtractionError, match="^unreadable PPTX: BadZipFile: File is not a zip file$"):
        PPTX.extract(b"not a zip", "broken")
