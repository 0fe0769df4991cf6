"""Tests for ``rag_pipeline.service.views.base``: which original a view may open."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from rag_pipeline.core.index.store import DocumentInfo
from rag_pipeline.service.views import base, render_document
from rag_pipeline.service.views.base import Original, ViewRequest
from rag_pipeline.service.views.pages import page_png
from rag_pipeline_tests.core.ingest.pdf_fixtures import plain_pdf


def test_a_member_of_a_container_never_opens_the_container_as_itself(tmp_path: Path):
    (tmp_path / "mail.eml").write_bytes(b"From: a\n\nbody")
    (tmp_path / "report.pdf").write_bytes(b"%PDF-1.7")
    member = DocumentInfo("mail.eml/report.pdf", "report", str(tmp_path / "mail.eml"), "pdf", ())
    alone = DocumentInfo("report.pdf", "report", str(tmp_path / "report.pdf"), "pdf", (),
                         content_sha256=hashlib.sha256(b"%PDF-1.7").hexdigest())
    gone = DocumentInfo("old.pdf", "old", str(tmp_path / "old.pdf"), "pdf", ())
    assert ViewRequest(member, "text", 0, 4).original is None
    assert ViewRequest(alone, "text", 0, 4).original == Original(
        "report.pdf", b"%PDF-1.7", hashlib.sha256(b"%PDF-1.7").hexdigest())
    assert ViewRequest(gone, "text", 0, 4).original is None


def _swapped_after_the_check(monkeypatch: pytest.MonkeyPatch, path: Path, target: Path) -> None:
    """Every check of an original passes on the indexed file, then ``path`` becomes a link to
    ``target`` (as a writer of the folder racing the service would make it)."""
    checked = base.open_indexed

    def check_then_swap(*args):
        handle = checked(*args)
        path.unlink()
        path.symlink_to(target)
        return handle

    monkeypatch.setattr(base, "open_indexed", check_then_swap)


def test_a_view_shows_the_bytes_checked_never_a_file_swapped_in_after(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The view read the path again after the check: a public page swapped for a link to an
    HR page in between showed the HR page (found by an attack, 867 of 5,427 requests)."""
    public, secret = tmp_path / "public.html", tmp_path / "hr.html"
    page = b"<html><body><p>The cafeteria opens at noon.</p></body></html>"
    public.write_bytes(page)
    secret.write_bytes(b"<html><body><p>MANGO-LEAVE-4402</p></body></html>")
    info = DocumentInfo("public.html", "Public", str(public), "html", (),
                        content_sha256=hashlib.sha256(page).hexdigest())
    _swapped_after_the_check(monkeypatch, public, secret)
    shown = render_document(ViewRequest(info, "The cafeteria opens at noon.\n", 0, 10), None)
    assert ('<article class="markup"><p><mark id="quote">The cafete</mark>ria opens at noon.</p>'
            "</article>") in shown
    assert "MANGO" not in shown


def test_a_page_image_is_drawn_from_the_bytes_checked(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch):
    public, secret = tmp_path / "public.pdf", tmp_path / "hr.pdf"
    public.write_bytes(plain_pdf([["The cafeteria opens at noon."]]))
    secret.write_bytes(plain_pdf([["MANGO-LEAVE-4402"], ["a second page"]]))
    info = DocumentInfo("public.pdf", "Public", str(public), "pdf", (),
                        content_sha256=hashlib.sha256(public.read_bytes()).hexdigest())
    expected = page_png(Original("public.pdf", public.read_bytes(), "not cached"), 1)
    _swapped_after_the_check(monkeypatch, public, secret)
    original = ViewRequest(info, "", 0, 0).original
    assert page_png(original, 1) == expected
    assert original.data != secret.read_bytes()


@pytest.mark.parametrize(("label", "tab"), [
    ("Remote work", "Remote work"), ("Remote work > Equipment", "Remote work · Remote work &gt; Equipment"),
])
def test_the_tab_names_a_heading_that_repeats_the_title_once(label: str, tab: str):
    """Found by a user's trial: "Remote work guideline · Remote work guideline"."""
    from rag_pipeline.service.views.base import View, page_html

    page = page_html("Remote work", "remote.md", View(label, "<p>x</p>", "text"), None)
    assert f"<title>{tab}</title>" in page


def test_every_place_of_a_quote_is_found_overlapping_ones_included(monkeypatch: pytest.MonkeyPatch):
    from rag_pipeline.service.views.base import occurrence_starts

    assert list(occurrence_starts("aaaa", "aa")) == [0, 1, 2]
    assert list(occurrence_starts("abcabcab", "cab")) == [2, 5]
    assert list(occurrence_starts("abc", "d")) == []
    # Past the budget the rest is found in one pass: the same places.
    monkeypatch.setattr(base, "FIND_BUDGET", 0)
    assert list(occurrence_starts("aaaa", "aa")) == [0, 1, 2]
    assert list(occurrence_starts("abaababaab", "aba")) == [0, 3, 5]
    assert list(occurrence_starts("abcabcab", "cab")) == [2, 5]


def test_a_long_quote_of_a_periodic_text_is_counted_in_one_pass():
    """Found by an attack: a view of ``a a a ...`` (600,000 characters) cited from 300,000 to
    600,030 took 119 s of CPU, one ``str.find`` of the quote's length per earlier place."""
    text = "a " * 300_000
    assert base.occurrences_before(text, 300_000, 600_000) == 150_000
    assert base.locate("a" * 1000, "a" * 500, before=400) == (400, 899)
    assert base.locate("a" * 1000, "a" * 500, before=900) == (500, 999)  # fewer: the last place
    # Found whole but for its middle: from its first letters to its last, within twice its
    # length; farther is no quote (found by a researcher's trial: the ends of a two-line quote
    # in two columns read across each other boxed twenty lines).
    quote = "b" * 40 + "x" * 40 + "c" * 40
    assert base.locate("q" * 10 + "b" * 40 + "y" * 40 + "c" * 40, quote) == (10, 129)
    assert base.locate("b" * 40 + "y" * 300 + "c" * 40, quote) is None


def test_a_name_with_a_bidirectional_override_is_shown_escaped_in_a_view():
    """Found by an attack: ``bidi\\u202egnp.md`` read as "...md.png" in the view's heading."""
    from rag_pipeline.service.views.base import View, page_html

    page = page_html("Notes \u202egnp.md", "bidi\u202egnp.md", View("Part \u2066x", "<p>x</p>", "text"),
                     None)
    assert "<h1>Notes \\u202egnp.md</h1>" in page
    assert '<span class="where" id="where">Part \\u2066x</span>' in page
    assert "<code>bidi\\u202egnp.md</code>" in page
    assert "\u202e" not in page and "\u2066" not in page
