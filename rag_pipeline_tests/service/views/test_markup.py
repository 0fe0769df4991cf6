"""Tests for ``rag_pipeline.service.views.markup``: sanitising and marking a quote across elements."""

from __future__ import annotations

from rag_pipeline.service.views.markup import mark_quote, sanitised


def test_scripts_handlers_and_script_urls_are_removed():
    clean = sanitised('<h2 onclick="x()">T</h2><p>a <a href="javascript:steal()">link</a>'
                      '<img src="/x.png"><script>bad()</script></p>')
    assert clean == '<h2>T</h2><p>a <a rel="noopener noreferrer">link</a></p>'


def test_a_document_cannot_take_the_ids_of_the_page_shell():
    """A planted ``id="quote"`` early in a file would be where the page scrolls as the quoted
    place (the first element of an id wins); the shell's ids are dropped, others kept."""
    clean = sanitised('<p id="quote">Planted.</p><p id=" Page-Image ">x</p><h2 id="rules">Rules</h2>')
    assert clean == '<p>Planted.</p><p>x</p><h2 id="rules">Rules</h2>'
    marked, _ = mark_quote(clean, "Rules")
    assert marked.count('id="quote"') == 1 and '<mark id="quote">Rules</mark>' in marked


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
