"""Tests for ``rag_pipeline.core.ingest.formats.html``: blocks chosen in one pass, checked
against a quadratic search oracle; loose text kept."""

from __future__ import annotations

import random

from rag_pipeline.core.ingest.formats.html import extract_html, html_block_text

# --- HTML: blocks chosen in one pass ---------------------------------------------------------

_BLOCKS = ("h1", "h2", "h3", "h4", "h5", "h6", "p", "li", "pre", "blockquote", "dt", "dd", "td",
           "th", "figcaption")


def _canonical_html_by_search(data: bytes) -> str:
    """The oracle: the same rules by direct searches, quadratic on deep nesting (the former
    extractor's block choice, plus loose text found by searching each string's ancestors);
    a chosen block reads as :func:`html_block_text` says, tested on its own below."""
    from bs4 import BeautifulSoup, NavigableString

    soup = BeautifulSoup(data, "lxml")
    for tag in soup(["script", "style", "noscript", "template", "nav"]):
        tag.decompose()
    kept = [e for e in soup.find_all((*_BLOCKS, "div"))
            if not e.find_parent(_BLOCKS)
            and not (e.name == "div" and e.find((*_BLOCKS, "div")) is not None)]
    kept_ids = {id(e) for e in kept}
    blocks, loose = [], []

    def flush():
        text = " ".join(" ".join(loose).split())
        if text:
            blocks.append(text)
        loose.clear()

    for node in soup.descendants:
        if id(node) in kept_ids:
            flush()
            text = html_block_text(node)  # how a block reads is shared; which blocks is not
            if text:
                blocks.append(text)
        elif (type(node) is NavigableString
              and not any(id(p) in kept_ids or p.name == "head" for p in node.parents)):
            loose.append(str(node))
    flush()
    return "\n\n".join(blocks) + ("\n" if blocks else "")


def test_a_block_reads_as_its_paragraph():
    from bs4 import BeautifulSoup

    soup = BeautifulSoup("<h1> A  title </h1><h3>Sub\n head</h3><pre>\n  x = 1\n  y\n</pre>"
                         "<p>one\n two <b>three</b></p><p> </p>", "lxml")
    assert [html_block_text(e) for e in soup.find_all(["h1", "h3", "pre", "p"])] == [
        "# A title", "## Sub head", "  x = 1\n  y", "one two three", ""]


def _random_html(rng: random.Random, depth: int) -> str:
    tags = ["div", "p", "span", "li", "blockquote", "section", "td", "pre", "h2", "em"]
    if depth == 0:
        return rng.choice(["alpha", "beta gamma", "", "delta."])
    children = "".join(_random_html(rng, depth - 1) for _ in range(rng.randint(0, 3)))
    tag = rng.choice(tags)
    return f"<{tag}>{rng.choice(['', 'word '])}{children}</{tag}>"


def test_html_text_matches_the_search_oracle_on_random_trees():
    rng = random.Random(11)
    for _ in range(120):
        data = f"<html><body>{_random_html(rng, 6)}</body></html>".encode()
        assert extract_html(data, "page").canonical_text == _canonical_html_by_search(data)


def test_loose_html_text_is_kept_as_paragraphs_of_its_own():
    # Planted: text straight in <body>, and text beside a <p> inside a <div>; version 1 of the
    # extractor dropped both (the first file failed with "no text").
    body_only = extract_html(b"<html><head><title>T</title></head><body>Just text</body></html>", "s")
    assert (body_only.title, body_only.canonical_text) == ("T", "Just text\n")
    mixed = extract_html(b"<div>Intro <b>bold</b><p>Para</p>tail</div>", "s")
    assert mixed.canonical_text == "Intro bold\n\nPara\n\ntail\n"
