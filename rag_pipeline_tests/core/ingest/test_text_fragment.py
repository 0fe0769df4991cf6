"""Text fragments: exact directives from canonical text, and headless Chromium scrolling to them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag_pipeline.core.answer.ask import QUOTE_ONLY_MIN_WORDS
from rag_pipeline.core.ingest import REGISTRY
from rag_pipeline.core.ingest.formats.html import HtmlFormat
from rag_pipeline.core.ingest.text_fragment import encode_directive_text, text_fragment
from rag_pipeline_tests.service.browser import CHROMIUM, chromium_page, serve_in_thread

LOOPS = ("# Loops\n\n"
         "The loop variable keeps its value. Nothing else happens.\n\n"
         "The loop variable keeps its last value after break, and the else-clause is skipped, "
         "see `for` loops.\n\n"
         "- items one, two & three\n")


def test_terms_grow_until_their_first_occurrence_is_the_quote():
    start = LOOPS.index("The loop variable keeps its last")
    end = LOOPS.index("`for`") + len("`for`")
    # "The loop variable" (3 words) and ".. keeps its" occur earlier: textStart grows to "last";
    # "`for`" carries markup and is left out of textEnd.
    assert text_fragment(LOOPS, start, end) == (
        "#:~:text=The%20loop%20variable%20keeps%20its%20last,is%20skipped%2C%20see")
    # a word after the markup ends the run: textEnd is that one word, unique after textStart
    assert text_fragment(LOOPS, start, end + len(" loops.")) == (
        "#:~:text=The%20loop%20variable%20keeps%20its%20last,loops.")


def test_block_markers_and_lone_punctuation_are_skipped_and_reserved_characters_encoded():
    start = LOOPS.index("- items")  # "-" is the list marker, "&" a token with no word in it
    assert text_fragment(LOOPS, start, len(LOOPS)) == "#:~:text=items%20one%2C%20two,three"
    assert encode_directive_text("else-clause, a&b") == "else%2Dclause%2C%20a%26b"


def test_a_quote_over_several_blocks_takes_its_first_and_last_lines():
    assert text_fragment(LOOPS, 0, len(LOOPS)) == "#:~:text=Loops,three"


def test_a_quote_cut_inside_words_starts_and_ends_at_whole_words():
    start = LOOPS.index("oop variable keeps its last")
    assert text_fragment(LOOPS, start, LOOPS.index("else-clause") + 2) == (
        "#:~:text=variable%20keeps%20its%20last,break%2C%20and%20the")


def test_punctuation_spaced_out_by_an_extractor_ends_a_term():
    # An extractor that puts a space before a comma ("break ,") makes text the page does not
    # have: a term holding the lone "," would match nothing, so the run stops before it.
    text = "It keeps its last value after break , and the else-clause is skipped.\n"
    assert text_fragment(text, 0, len(text) - 1, min_words=6) == (
        "#:~:text=It%20keeps%20its%20last%20value%20after,and%20the%20else%2Dclause%20is%20skipped.")


def test_a_short_quote_is_one_term_and_a_quote_without_words_none():
    start = LOOPS.index("Nothing")
    assert text_fragment(LOOPS, start, start + len("Nothing else")) == "#:~:text=Nothing%20else"
    assert text_fragment("`x` **y**\n", 0, 9) == ""


FILLER = "\n".join(f"<p>Filler paragraph {i} about other matters entirely.</p>" for i in range(70))
PAGE = (f"<!doctype html><html><head><title>Loops</title></head><body><h1>Loops</h1>"
        "<p>The loop variable keeps its value. Nothing else happens.</p>"
        f"{FILLER}"
        '<p id="quoted">The loop variable keeps its <em>last</em> value after <code>break</code>, '
        "and the else-clause is skipped.</p>"
        f"{FILLER}</body></html>")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from starlette.staticfiles import StaticFiles

    root = tmp_path_factory.mktemp("site")
    (root / "loops.html").write_text(PAGE, encoding="utf-8")
    with serve_in_thread(StaticFiles(directory=root)) as url:
        yield url


def _scrolled_to_quote(page, url: str) -> tuple[float, float, float]:
    """Opens ``url`` in a fresh navigation; ``(scrollY, the quoted paragraph's top, viewport
    height)`` once the page has scrolled (or after 10 s)."""
    page.goto("about:blank")
    page.goto(url)
    deadline = time.monotonic() + 10
    while page.evaluate("window.scrollY") == 0 and time.monotonic() < deadline:
        time.sleep(0.1)
    return (page.evaluate("window.scrollY"),
            page.evaluate("document.getElementById('quoted').getBoundingClientRect().top"),
            page.evaluate("window.innerHeight"))


@pytest.mark.skipif(not CHROMIUM.is_file(), reason=f"no Chromium at {CHROMIUM}: install the Debian "
                    "package (`bash .ci/setup` runs `apt-get install -y chromium`)")
def test_chromium_scrolls_to_the_quote_not_to_its_earlier_look_alike(site: str, tmp_path: Path):
    canonical = HtmlFormat().extract(PAGE.encode(), "loops").canonical_text  # as the index has it
    start = canonical.index("The loop variable keeps its last")
    end = canonical.index("skipped.") + len("skipped.")
    fragment = text_fragment(canonical, start, end)
    assert fragment == "#:~:text=The%20loop%20variable%20keeps%20its%20last,else%2Dclause%20is%20skipped."
    quote_only = text_fragment(canonical[start:end], 0, end - start, min_words=QUOTE_ONLY_MIN_WORDS)
    assert quote_only == ("#:~:text=The%20loop%20variable%20keeps%20its%20last,"
                          "break%2C%20and%20the%20else%2Dclause%20is%20skipped.")
    with chromium_page(tmp_path / "profile") as page:
        page.goto(site + "/loops.html")
        assert page.evaluate("window.scrollY") == 0
        for link in (fragment, quote_only):
            scroll_y, top, height = _scrolled_to_quote(page, site + "/loops.html" + link)
            assert scroll_y > 1000  # the look-alike sentence is at the top of the page
            assert 0 <= top < height
        # Planted miss: a fragment whose words are not on the page leaves the page at the top.
        assert _scrolled_to_quote(page, site + "/loops.html#:~:text=words%20that%20are%20nowhere")[0] == 0


def test_only_pages_shown_as_text_link_by_text():
    assert [fmt.name for fmt in REGISTRY if fmt.links_by_text] == ["markdown", "text", "html"]
