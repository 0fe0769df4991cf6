"""Tests for ``rag_pipeline.service.views.markup``: sanitising and marking a quote across elements."""

from __future__ import annotations

from rag_pipeline.service.views.markup import mark_quote, sanitised


def test_scripts_handlers_and_script_urls_are_removed():
    clean = sanitised('<h2 onclick="x()">T</h2><p>a <a href="javascript:steal()">link</a>'
                      '<img src="/x.png"><script>bad()</script></p>')
    assert clean == '<h3>T</h3><p>a <a rel="noopener noreferrer">link</a></p>'


def test_a_documents_headings_go_a_level_down_under_the_pages_own_h1():
    # Found by a keyboard and screen-reader user: a view had two h1, the page's title and the
    # document's own, so the list of headings had two tops.
    clean = sanitised('<h1>A <a href="https://x.org" title="<h1>">l</a></h1><h2>B</h2><h5>C</h5>'
                      '<h6>D</h6><hr><p>h1 &lt;h1&gt;</p>')
    assert clean == ('<h2>A <a href="https://x.org" title="&lt;h1&gt;" rel="noopener noreferrer">'
                     'l</a></h2><h3>B</h3><h6>C</h6><h6>D</h6><hr><p>h1 &lt;h1&gt;</p>')


def test_a_document_cannot_take_the_ids_of_the_page_shell():
    """A planted ``id="quote"`` early in a file would be where the page scrolls as the quoted
    place (the first element of an id wins); the shell's ids are dropped, others kept."""
    clean = sanitised('<p id="quote">Planted.</p><p id=" Page-Image ">x</p><h2 id="rules">Rules</h2>')
    assert clean == '<p>Planted.</p><p>x</p><h3 id="rules">Rules</h3>'
    marked, _ = mark_quote(clean, "Rules")
    assert marked.count('id="quote"') == 1 and '<mark id="quote">Rules</mark>' in marked


def test_a_writing_direction_and_language_are_kept_and_nothing_else_in_dir():
    clean = sanitised('<p dir="RTL" lang="he">א</p><p dir="evil">b</p><div dir="auto">c</div>')
    assert clean == '<p dir="rtl" lang="he">א</p><p>b</p><div dir="auto">c</div>'


def test_a_quote_across_elements_is_marked_piece_by_piece_with_its_heading():
    markup = "<h2>Rules</h2><p>Wear a <em>yellow</em> helmet.</p><p>Other text.</p>"
    marked, heading = mark_quote(markup, "Wear a yellow helmet.")
    assert marked == ('<h2>Rules</h2><p><mark id="quote">Wear a </mark><em><mark>yellow</mark></em>'
                      "<mark> helmet.</mark></p><p>Other text.</p>")
    assert heading == "Rules"


def test_white_space_and_hyphenation_do_not_hide_a_quote():
    marked, heading = mark_quote("<p>the fac-\ntor is   one</p>", "the factor is one")
    assert marked == '<p><mark id="quote">the fac-\ntor is   one</mark></p>'
    assert heading == ""


def test_a_quote_that_is_not_there_is_reported():
    assert mark_quote("<p>something else</p>", "nowhere to be found") == ("<p>something else</p>", None)


def test_an_html_file_in_a_declared_charset_or_utf16_is_shown_as_it_was_indexed(tmp_path):
    import hashlib
    from pathlib import Path

    from rag_pipeline.core.index.store import DocumentInfo
    from rag_pipeline.core.ingest.formats.html import extract_html
    from rag_pipeline.service.views.base import ViewRequest
    from rag_pipeline.service.views.markup import html_view

    pages = {
        "cp1252.html": b'<html><head><meta charset="windows-1252"></head><body><h1>R\xe9sum\xe9'
                       b'</h1><p>The caf\xe9 opens at \x93nine\x94.</p></body></html>',
        "latin1.html": b'<html><head><meta http-equiv="Content-Type" content="text/html; '
                       b'charset=iso-8859-1"></head><body><h1>R\xe9sum\xe9</h1><p>The caf\xe9 '
                       b'opens at nine.</p></body></html>',
        "utf16.html": "<html><body><h1>Résumé</h1><p>The café opens at nine.</p></body></html>"
                      .encode("utf-16"),
    }
    for name, data in pages.items():
        path = Path(tmp_path, name)
        path.write_bytes(data)
        text = extract_html(data, path.stem).canonical_text
        start = text.index("The caf")
        end = text.index(".", start) + 1
        info = DocumentInfo(name, "Résumé", str(path), "html", (),
                            content_sha256=hashlib.sha256(data).hexdigest())
        view = html_view(ViewRequest(info, text, start, end))
        assert (view.label, view.note) == ("Résumé", ""), name
        assert "caf\u00e9 opens at" in view.body, name


def test_nesting_depth_counts_open_elements_not_void_or_self_closed_ones():
    from rag_pipeline.service.views.markup import nesting_depth

    assert nesting_depth("<p>a<br/>b<img src=x>c</p><div><ul><li>x</li><li>y</li></ul></div>") == 3
    assert nesting_depth('<a title="1 &gt; 0">x</a>' + "<div>" * 7 + "</div>" * 7) == 7
    assert nesting_depth("plain text, no tags") == 0


def test_a_page_nested_thousands_deep_is_shown_as_its_text(tmp_path):
    """100,000 nested elements held the sanitiser 34 s a view (found by an attack)."""
    import hashlib
    from pathlib import Path

    from rag_pipeline.core.index.store import DocumentInfo
    from rag_pipeline.core.ingest.formats.html import extract_html
    from rag_pipeline.service.views.base import ViewRequest
    from rag_pipeline.service.views.markup import MAX_NESTING, html_view

    for depth, kind in ((MAX_NESTING - 1, "markup"), (20_000, "text")):
        data = (b"<html><body>" + b"<div>" * depth + b"<p>The cafeteria opens at noon.</p>"
                + b"</div>" * depth + b"</body></html>")
        path = Path(tmp_path, f"deep{depth}.html")
        path.write_bytes(data)
        text = extract_html(data, path.stem).canonical_text
        start = text.index("The caf")
        info = DocumentInfo(path.name, "Deep", str(path), "html", (),
                            content_sha256=hashlib.sha256(data).hexdigest())
        view = html_view(ViewRequest(info, text, start, start + 10))
        assert view.kind == kind
        if kind == "text":
            assert view.note == (f"This document nests its elements {depth + 1:,} deep (more than "
                                 f"{MAX_NESTING}): it is shown as its extracted text.")
            assert '<mark id="quote">The cafete</mark>' in view.body


def test_tags_in_comments_scripts_and_style_sheets_close_nothing():
    """``<div><!--</a>-->`` repeated 100,000 times measured 1 deep and held the sanitiser 48 s
    (found by a review)."""
    from rag_pipeline.service.views.markup import nesting_depth

    assert nesting_depth("<div><!--</a>-->" * 600) == 600
    assert nesting_depth("<div><script>'</a>'</script>" * 600) == 600
    assert nesting_depth("<div><style>a::after{content:'</div>'}</style>" * 3) == 3
    assert nesting_depth("<p>" + "<spacer/>" * 600 + "</p>") == 1


def test_a_document_is_rendered_once_for_many_views_and_a_huge_one_not_at_all(monkeypatch):
    """300 KB of Markdown link openers took 4.6 s a view, every view (found by an attack)."""
    import hashlib

    from rag_pipeline.core.index.store import DocumentInfo
    from rag_pipeline.service.views import markup
    from rag_pipeline.service.views.base import ViewRequest

    text = "# Notes\n\nThe cafeteria opens at noon.\n"
    info = DocumentInfo("notes.md", "Notes", "/nowhere/notes.md", "markdown", (),
                        content_sha256=hashlib.sha256(text.encode()).hexdigest())
    made: list[str] = []
    real = markup.sanitised
    monkeypatch.setattr(markup, "sanitised", lambda m: made.append(m) or real(m))
    start = text.index("The")
    views = [markup.markdown_view(ViewRequest(info, text, start, start + n)) for n in (3, 13, 20)]
    assert (len(made), [v.kind for v in views]) == (1, ["markup"] * 3)
    assert '<mark id="quote">The cafeteria</mark>' in views[1].body
    # A huge document is neither rendered nor its quote (found by an attack: 2.1 MB of "["
    # asked for whole rendered the quote before the size was checked, 6 s a view).
    monkeypatch.setattr(markup, "MAX_RENDERED_SIZE", 20)
    shown: list[str] = []
    real_shown = markup._shown_markdown
    monkeypatch.setattr(markup, "_shown_markdown", lambda q: shown.append(q) or real_shown(q))
    big = DocumentInfo("big.md", "Big", "/nowhere/big.md", "markdown", (), content_sha256="b" * 64)
    view = markup.markdown_view(ViewRequest(big, text, 0, len(text)))
    assert (view.kind, view.note, len(made), shown) == (
        "text", "This document is 38 characters long (more than 20): it is shown as its extracted "
                "text.", 1, [])
    # A quote longer than MAX_SHOWN_QUOTE (a whole document) is searched for as it is.
    assert real_shown("[x](y) " * 3000) == "[x](y) " * 3000


def test_a_quote_is_marked_in_the_markup_as_written_entities_and_attributes_whole():
    markup = ('<h2>Fish &amp; chips</h2><p><a href="/x" title="a > b">Cod &amp; haddock</a> '
              "cost &lt;5&nbsp;€ &#8212; fried&amp;salted.</p>")
    marked, heading = mark_quote(markup, "haddock cost <5 € — fried&salted")
    assert marked == ('<h2>Fish &amp; chips</h2><p><a href="/x" title="a > b">Cod &amp; '
                      '<mark id="quote">haddock</mark></a><mark> cost &lt;5&nbsp;€ &#8212; '
                      "fried&amp;salted.</mark></p>")
    assert heading == "Fish & chips"
    # A quote inside a heading is under that heading; a quote under none has no heading.
    assert mark_quote(markup, "chips") == (markup.replace("&amp; chips", '&amp; <mark id="quote">'
                                                          "chips</mark>"), "Fish & chips")
    assert mark_quote("<p>one ﬁne day</p><h3>Later</h3>", "one fine")[1] == ""


def _markdown_view(name: str, text: str, start: int, end: int):
    """The view of a Markdown document ``text`` quoting ``text[start:end]``."""
    import hashlib

    from rag_pipeline.core.index.store import DocumentInfo
    from rag_pipeline.service.views import markup
    from rag_pipeline.service.views.base import ViewRequest

    info = DocumentInfo(name, name.removesuffix(".md").title(), f"/nowhere/{name}", "markdown", (),
                        content_sha256=hashlib.sha256(text.encode()).hexdigest())
    return markup.markdown_view(ViewRequest(info, text, start, end))


def test_a_sentence_the_document_repeats_is_marked_where_it_was_cited():
    # Found by a user's trial: the citation of the Madrid section was marked in Berlin's.
    from rag_pipeline.service.views.base import occurrences_before

    text = ("# Offices\n\n## Berlin\n\nAsk the front desk for a badge.\n\n## Madrid\n\nAsk the front "
            "desk for a badge.\n")
    start = text.rindex("Ask the front")
    end = start + len("Ask the front desk for a badge.")
    assert (occurrences_before(text, start, end), occurrences_before(text, text.index("Ask"), end)) == (1, 0)
    view = _markdown_view("offices.md", text, start, end)
    assert view.label == "Madrid"
    assert view.body.index('<mark id="quote">') > view.body.index("<h3>Madrid</h3>")


def test_a_markdown_quote_holding_a_link_or_an_entity_is_marked_as_it_reads():
    # Found by a user's trial: the quote's text held the link's URL and "&amp;", the page
    # shows neither: "The quoted passage could not be located in this rendering."
    text = ("# Onboarding\n\nNew staff get a laptop &amp; a badge on day one, as described in "
            "[the onboarding checklist](https://intranet.example/onboarding/checklist-2026).\n")
    view = _markdown_view("onboarding.md", text, text.index("New staff"), len(text) - 1)
    assert (view.label, view.note) == ("Onboarding", "")
    assert view.body.count("<mark") == 2 and "the onboarding checklist</mark>" in view.body


def test_a_docx_is_read_once_for_many_views_and_a_huge_one_not_at_all(tmp_path, monkeypatch):
    # Found by an attack: every view of a DOCX parsed it whole again, and one too large to
    # render was parsed only to be shown as its text (60,000 paragraphs, 1.4 s a view).
    import hashlib

    import docx

    from rag_pipeline.core.index.store import DocumentInfo
    from rag_pipeline.core.ingest import format_named
    from rag_pipeline.core.ingest.formats import docx as docx_format
    from rag_pipeline.service.views import markup
    from rag_pipeline.service.views.base import ViewRequest

    document = docx.Document()
    document.add_heading("Runbook", 1)
    document.add_paragraph("Restart the queue before the cache.")
    path = tmp_path / "runbook.docx"
    document.save(path)
    data = path.read_bytes()
    extracted = format_named("docx").extract(data, "runbook")
    info = DocumentInfo("runbook.docx", "Runbook", str(path), "docx", extracted.anchors,
                        content_sha256=hashlib.sha256(data).hexdigest())
    read: list[bytes] = []
    real = docx_format.read_docx
    monkeypatch.setattr(docx_format, "read_docx", lambda *a: read.append(a[0]) or real(*a))
    start = extracted.canonical_text.index("Restart")
    views = [markup.docx_view(ViewRequest(info, extracted.canonical_text, start, start + n)) for n in (7, 17)]
    assert (len(read), [v.kind for v in views]) == (1, ["markup", "markup"])
    assert '<mark id="quote">Restart the queue</mark>' in views[1].body
    monkeypatch.setattr(markup, "MAX_RENDERED_SIZE", 20)
    view = markup.docx_view(ViewRequest(info, extracted.canonical_text + "\n", start, start + 7))
    assert (view.kind, view.note, len(read)) == (
        "text", "This document is 46 characters long (more than 20): it is shown as its extracted text.", 1)


def test_a_quotes_own_emoji_and_symbols_at_its_ends_are_marked_with_it():
    # Found by an international team: a quote starting with a family emoji marked only
    # "family", and one ending with two flags only "Flags:".
    markup = ("<p>Family: \U0001F468\u200d\U0001F469\u200d\U0001F467 family reunion. "
              "Flags: \U0001F1E9\U0001F1EA \U0001F1EF\U0001F1F5.</p><p>Other.</p>")
    family, _ = mark_quote(markup, "\U0001F468\u200d\U0001F469\u200d\U0001F467 family reunion.")
    flags, _ = mark_quote(markup, "Flags: \U0001F1E9\U0001F1EA \U0001F1EF\U0001F1F5.")
    alone, _ = mark_quote(markup, "Family:")
    assert (family, flags, alone) == (
        "<p>Family: <mark id=\"quote\">\U0001F468\u200d\U0001F469\u200d\U0001F467 family "
        "reunion.</mark> Flags: \U0001F1E9\U0001F1EA \U0001F1EF\U0001F1F5.</p><p>Other.</p>",
        "<p>Family: \U0001F468\u200d\U0001F469\u200d\U0001F467 family reunion. <mark "
        "id=\"quote\">Flags: \U0001F1E9\U0001F1EA \U0001F1EF\U0001F1F5.</mark></p><p>Other.</p>",
        "<p><mark id=\"quote\">Family:</mark> \U0001F468\u200d\U0001F469\u200d\U0001F467 family "
        "reunion. Flags: \U0001F1E9\U0001F1EA \U0001F1EF\U0001F1F5.</p><p>Other.</p>")
