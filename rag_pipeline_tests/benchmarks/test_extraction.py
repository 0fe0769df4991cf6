"""Tests for the extraction benchmark's pure parts: needles, running heads, eligibility, scoring."""

from __future__ import annotations

from pathlib import Path

from rag_pipeline.benchmarks.extraction import (
    ChunkedText,
    HtmlRow,
    eligible,
    html_chunked,
    html_score,
    html_text_and_needles,
    running_heads,
    score,
)


def test_needles_are_sentences_that_occur_once(tmp_path: Path):
    html = tmp_path / "manual.html"
    html.write_text(
        "<html><body><p>The shell reads <code>input</code> from a file. Short one.</p>"
        "<p>The shell reads input from a file.</p>"
        "<p>Every command has an exit status of its own.</p></body></html>", encoding="utf-8")
    text, needles = html_text_and_needles([html])
    # The first sentence occurs twice; "Short one." has under 6 words.
    assert needles == ["Every command has an exit status of its own."]
    assert "reads input from" in text


def test_running_heads_carry_their_pages_number():
    pages = [f"Chapter 1: Start {n + 1}\nBody {n}.\nSee the table, page 99." for n in range(4)]
    # "See the table, page 99." ends every page but its number is no page's own.
    assert running_heads(pages) == {f"Chapter 1: Start {n + 1}" for n in range(4)}


def test_needles_count_where_the_pdf_says_the_same_words():
    needles = ["A non-numeric value is refused.", "Only the HTML says this sentence."]
    assert eligible(needles, ["a nonnumeric\nvalue is re-\nfused."]) == ["A non-numeric value is refused."]


def test_a_needle_the_pdf_goes_on_differently_is_excluded():
    needles = ["Plot the bars of the series (see bar).", "The result is shown by ‘-|’.",
               "The vector t_out is shorter than t.", "The quote ends “here”.", "It was nonumeric."]
    pdf = ["Plot the bars of the series (see [bar], page 321).\nThe result is shown by ‘ a ’.\n"
           "The vector t out is shorter than t. The quote ends \"here\". It was a nonumeric."]
    # Kept: an underscore the text layer lacks (the same words) and curly against straight
    # quotes. Excluded: the cross-reference the PDF prints with its page (")" against "]"), the
    # symbol it reads as a letter, and a match inside a word ("anonumeric").
    assert eligible(needles, pdf) == ["The vector t_out is shorter than t.", "The quote ends “here”."]


def test_a_needle_counts_only_when_one_chunk_holds_it_whole():
    chunked = ChunkedText("r", "Doc", "A b c d.\n\nE f g h.\n", (("Doc", "A b c d."), ("Intro", "E f\ng h.")))
    row = score(chunked, ["A b c d.", "E f g h.", "d. E f"], {"Chapter 9"})
    # "d. E f" is in the whole text but spans two chunks.
    assert (row.chunks, row.quoted, row.in_text, row.with_heads, row.labelled) == (2, 2, 3, 0, 1)


def test_html_chunks_are_scored_for_needles_and_navigation(tmp_path: Path):
    page = tmp_path / "Overview.html"
    page.write_text(
        '<html><body><div class="nav-panel"><p>Next: <a href="u.html">Usage</a>, '
        'Up: <a href="t.html">Top</a> [<a href="c.html">Contents</a>]</p></div>'
        "<h2>Overview</h2><p>The <var>statement</var>s of a script run in order, one by one.</p>"
        "</body></html>", encoding="utf-8")
    _, needles = html_text_and_needles([page])
    assert needles == ["The statements of a script run in order, one by one."]
    ours, naive = html_chunked([page])
    # The pipeline drops the panel and joins "statement" + "s"; the naive reading keeps the
    # panel (a navigation chunk) and writes "statement s".
    assert ours == ["The statements of a script run in order, one by one."]
    assert html_score("ours", ours, needles) == HtmlRow("ours", 1, 1, 1, 0)
    naive_row = html_score("naive", naive, needles)
    assert (naive_row.quoted, naive_row.navigation) == (0, 1)
