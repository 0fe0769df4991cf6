"""Tests for ``rag_pipeline.service.views.markup``: sanitising and marking a quote across elements."""

from __future__ import annotations

from rag_pipeline.service.views.markup import mark_quote, sanitised


def test_scripts_handlers_and_script_urls_are_removed():
    clean = sanitised('<h2 onclick="x()">T</h2><p>a <a href="javascript:steal()">link</a>'
                      '<img src="/x.png"><script>bad()</script></p>')
    assert clean == '<h2>T</h2><p>a <a rel="noopener noreferrer">link</a></p>'


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
