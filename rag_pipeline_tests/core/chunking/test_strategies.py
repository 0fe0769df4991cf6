"""Tests for ``rag_pipeline.core.chunking.strategies``: exact spans on hand-written documents, and the
offset/coverage invariants on a hand-written document and on the real default corpus."""

from __future__ import annotations

import dataclasses
import random
import re

import pytest

from rag_pipeline.core.chunking.strategies import (
    _SENTENCE_END,
    ChunkingSettings,
    ChunkingStrategy,
    body_sections,
    chunk_document,
    offset_errors,
    uncovered_characters,
)
from rag_pipeline.core.ingest import Section, TableSpan, extract_corpus
from rag_pipeline.core.ingest.corpus_export import export_python_reference
from rag_pipeline.core.ingest.formats.markdown import heading_spans, markdown_sections

SMALL = ChunkingSettings(target_chars=40, overlap_chars=8)


def chunk_markdown(document_id, title, canonical, strategy, settings=None):
    """Chunks of a hand-written Markdown document, cut at the sections its format finds."""
    return chunk_document(document_id, title, canonical, strategy, settings,
                          markdown_sections(canonical, title))


def spans(chunks):
    return [(c.start, c.end) for c in chunks]


def contents(chunks):
    return [c.content for c in chunks]


# "# Guide" [0,7) | "Intro words." [9,21) | "## Setup" [23,31) | "Install it." [33,44)
# | "## Use" [46,52) | "Run it." [54,61) | final "\n" at 61; 62 characters in all.
GUIDE = "# Guide\n\nIntro words.\n\n## Setup\n\nInstall it.\n\n## Use\n\nRun it.\n"

# A grammar block (indented, no sentence punctuation, lines and whole block over 40 characters)
# and a reST grid table: neither has a sentence end, so boundaries must fall back to line and
# word ends and still cover every character.
GRAMMAR_DOC = (
    "# Assignment\n"
    "\n"
    "Assignment binds names to values. It can also rebind names that are already bound.\n"
    "\n"
    '   assignment_stmt ::= (target_list "=")+ (starred_expression | yield_expression)\n'
    '   target_list     ::= target ("," target)* [","]\n'
    "   target          ::= identifier\n"
    '                       | "(" [target_list] ")"\n'
    "\n"
    "## Operators\n"
    "\n"
    "+------------+------------------+\n"
    "| Operator   | Meaning          |\n"
    "+============+==================+\n"
    "| ``+=``     | add in place     |\n"
    "| ``-=``     | subtract in place|\n"
    "+------------+------------------+\n"
    "\n"
    "Short closing line.\n"
)


# --- settings -------------------------------------------------------------------------------


def test_settings_reject_non_positive_target_and_overlap_not_below_target():
    with pytest.raises(ValueError, match="target_chars must be positive"):
        ChunkingSettings(target_chars=0)
    with pytest.raises(ValueError, match=r"overlap_chars must be in \[0, target_chars\)"):
        ChunkingSettings(target_chars=40, overlap_chars=40)
    with pytest.raises(ValueError, match=r"overlap_chars must be in \[0, target_chars\)"):
        ChunkingSettings(target_chars=40, overlap_chars=-1)


def test_strategy_flags():
    assert [s.value for s in ChunkingStrategy if s.blind] == ["blind", "blind_overlap"]
    assert [s.value for s in ChunkingStrategy if s.overlap] == [
        "blind_overlap", "boundaries_overlap", "header_overlap"]
    assert [s.value for s in ChunkingStrategy if s.header] == ["header", "header_overlap"]


# --- paragraph packing and fall-backs -------------------------------------------------------


def test_paragraphs_are_packed_greedily_up_to_the_target():
    # "Cats sleep a lot." [0,17) | "Cats eat fish." [19,33) | "Dogs bark loudly at night." [35,61)
    canonical = "Cats sleep a lot.\n\nCats eat fish.\n\nDogs bark loudly at night.\n"
    chunks = chunk_markdown("d", "cats", canonical, ChunkingStrategy.BOUNDARIES, SMALL)
    # 0..33 = 33 <= 40 joins the first two paragraphs; 0..61 = 61 > 40 starts a new chunk.
    assert spans(chunks) == [(0, 33), (35, 61)]
    assert contents(chunks) == ["Cats sleep a lot.\n\nCats eat fish.", "Dogs bark loudly at night."]
    assert [c.ordinal for c in chunks] == [0, 1]
    assert [c.chunk_id for c in chunks] == ["d:0-33", "d:35-61"]
    assert [c.section for c in chunks] == ["cats", "cats"]


def test_a_long_paragraph_is_cut_at_sentence_ends():
    # "One two three." [0,14) | "Four five six seven." [15,35) | "Eight nine ten eleven twelve." [36,65)
    canonical = "One two three. Four five six seven. Eight nine ten eleven twelve.\n"
    chunks = chunk_markdown("d", "t", canonical, ChunkingStrategy.BOUNDARIES, SMALL)
    # The paragraph (65 chars) is over 40: sentences, then packed: 0..35 fits, 0..65 does not.
    assert spans(chunks) == [(0, 35), (36, 65)]
    assert contents(chunks) == ["One two three. Four five six seven.", "Eight nine ten eleven twelve."]


def test_a_long_paragraph_without_sentence_ends_is_cut_at_line_ends():
    # "alpha beta gamma delta" [0,22) | "epsilon zeta eta theta" [23,45) | "iota kappa lambda mu" [46,66)
    canonical = "alpha beta gamma delta\nepsilon zeta eta theta\niota kappa lambda mu\n"
    chunks = chunk_markdown("d", "t", canonical, ChunkingStrategy.BOUNDARIES, SMALL)
    # 0..45 = 45 > 40 and 23..66 = 43 > 40, so no two lines pack together.
    assert spans(chunks) == [(0, 22), (23, 45), (46, 66)]
    assert contents(chunks) == ["alpha beta gamma delta", "epsilon zeta eta theta", "iota kappa lambda mu"]


def test_a_long_line_without_sentence_or_line_ends_is_cut_at_word_ends():
    # Eleven 4-letter words; word k sits at [5k, 5k + 4); the line is 54 characters.
    canonical = "aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk\n"
    chunks = chunk_markdown("d", "t", canonical, ChunkingStrategy.BOUNDARIES, SMALL)
    # Words 0..7 end at 39 <= 40; word 8 would end at 44.
    assert spans(chunks) == [(0, 39), (40, 54)]
    assert contents(chunks) == ["aaaa bbbb cccc dddd eeee ffff gggg hhhh", "iiii jjjj kkkk"]


def test_a_paragraphs_tiny_last_chunk_takes_words_from_the_chunk_before():
    # Nine 4-letter words (44 characters): packed, words 0..7 end at 39 and word 8 "iiii" would
    # be a chunk of 4 characters, under 40 / 8. The two are cut again where the shorter is
    # longest, the first such cut: after word 3 (0..19 and 20..44, 19 and 24 characters).
    canonical = "aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii\n"
    chunks = chunk_markdown("d", "t", canonical, ChunkingStrategy.BOUNDARIES, SMALL)
    assert spans(chunks) == [(0, 19), (20, 44)]
    assert contents(chunks) == ["aaaa bbbb cccc dddd", "eeee ffff gggg hhhh iiii"]
    assert offset_errors(canonical, chunks) == []


def test_a_tiny_last_chunk_stays_when_no_cut_keeps_both_within_the_target():
    # One 38-character sentence, then "day." (4 characters) in the same paragraph: the sentence
    # is one piece, so no cut but the one there is keeps both within 40.
    canonical = "Owls are awake all the night, each one. Day.\n"
    chunks = chunk_markdown("d", "t", canonical, ChunkingStrategy.BOUNDARIES, SMALL)
    assert contents(chunks) == ["Owls are awake all the night, each one.", "Day."]


def test_the_fall_backs_cascade_inside_one_paragraph():
    # Sentence 1 "Short one." [0,10); sentence 2 is 2 lines, its second line (44 chars) has no
    # line end inside it and is cut at word ends.
    canonical = ("Short one. Then a line\n"          # "Then a line" [11,22)
                 "word word word word word word word word word\n"  # [23,67)
                 )
    chunks = chunk_markdown("d", "t", canonical, ChunkingStrategy.BOUNDARIES, SMALL)
    # Sentence pieces: (0,10) and (11,67) (over 40) -> lines (11,22) and (23,67) (over 40)
    # -> words: "word" k at [23+5k, 27+5k), k = 0..8. Packed: 0..22 = 22 fits; 0..27 = 27 fits;
    # ... 0..37 fits, 0..42 = 42 does not: (0,37); then words k = 3..8 run 38..67 = 29, one chunk.
    assert spans(chunks) == [(0, 37), (38, 67)]
    assert contents(chunks) == ["Short one. Then a line\nword word word",
                                "word word word word word word"]


def test_a_word_longer_than_the_target_stays_whole():
    word = "x" * 50
    canonical = f"Hi.\n\n{word}\n\nBye.\n"  # "Hi." [0,3) | word [5,55) | "Bye." [57,61)
    chunks = chunk_markdown("d", "t", canonical, ChunkingStrategy.BOUNDARIES, SMALL)
    assert spans(chunks) == [(0, 3), (5, 55), (57, 61)]
    assert contents(chunks) == ["Hi.", word, "Bye."]
    assert len(chunks[1].content) == 50


def test_a_word_longer_than_the_hard_maximum_is_cut_every_max_chars():
    # SMALL: target 40, hard maximum 2 x 40 = 80. The 200-character word sits at [5, 205).
    word = "y" * 200
    canonical = f"Hi.\n\n{word}\n\nBye.\n"  # "Bye." [207, 211)
    for strategy in (ChunkingStrategy.BOUNDARIES, ChunkingStrategy.HEADER_OVERLAP):
        chunks = chunk_markdown("d", "t", canonical, strategy, SMALL)
        assert spans(chunks) == [(0, 3), (5, 85), (85, 165), (165, 205), (207, 211)]
        assert offset_errors(canonical, chunks) == []


def test_max_chars_sets_the_hard_maximum():
    settings = ChunkingSettings(target_chars=40, overlap_chars=8, max_chars=60)
    chunks = chunk_markdown("d", "t", "z" * 130, ChunkingStrategy.BOUNDARIES, settings)
    assert spans(chunks) == [(0, 60), (60, 120), (120, 130)]
    with pytest.raises(ValueError, match=r"max_chars must be >= target_chars \(40\), got 39"):
        ChunkingSettings(target_chars=40, overlap_chars=8, max_chars=39)


@pytest.mark.parametrize("strategy", list(ChunkingStrategy))
def test_a_one_megabyte_line_without_any_break_becomes_many_exact_chunks(strategy):
    # 1,000,000 characters, no white space, no sentence end: the default hard maximum is
    # 2 x 512 = 1024 for the boundary strategies; blind windows are 512.
    canonical = "ab" * 500_000
    chunks = chunk_document("big.txt", "big", canonical, strategy)
    size = 512 if strategy.blind else 1024
    assert len(chunks) == -(-1_000_000 // size)
    assert max(len(c.content) for c in chunks) == size
    assert offset_errors(canonical, chunks) == []
    assert uncovered_characters(canonical, spans(chunks)) == []


# --- sections and headings ------------------------------------------------------------------


def test_text_before_the_first_section_heading_is_a_section_titled_by_the_document():
    assert heading_spans(GUIDE) == [(0, 7, 1, "Guide"), (23, 31, 2, "Setup"), (46, 52, 2, "Use")]
    assert markdown_sections(GUIDE, "Guide") == (
        Section("Guide", 0, 0, 1), Section("Guide", 7, 23, 1), Section("Setup", 31, 46, 2),
        Section("Use", 52, 62, 2))
    # With no "# " heading at all, the leading text still belongs to the document's title.
    loose = "Loose text.\n\n## Part\n\nMore.\n"  # "## Part" at [13,20)
    assert markdown_sections(loose, "notes") == (Section("notes", 0, 13, 1), Section("Part", 20, 28, 2))


def test_empty_sections_are_dropped():
    canonical = "# Title\n\n## Empty\n\n## Full\n\nBody.\n"  # "## Full" [19,26)
    assert body_sections(canonical, "Title", markdown_sections(canonical, "Title")) == [
        Section("Full", 26, 34, 2)]


def test_a_heading_with_nothing_under_it_titles_the_deeper_heading_below_it():
    """Found by a check of files LibreOffice wrote: "Restarting a gateway" directly over
    "Before the restart" was in no chunk, neither its content nor its header."""
    canonical = ("# Guide\n\n## Install\n\n### Linux\n\nRun it.\n\n## Use\n\n## Tune\n\n"
                 "### Cache\n\n#### Size\n\nSmall.\n")
    assert [(s.title, canonical[s.start:s.end].strip())
            for s in body_sections(canonical, "Guide", markdown_sections(canonical, "Guide"))] == [
        ("Install > Linux", "Run it."), ("Tune > Cache > Size", "Small.")]
    chunks = chunk_markdown("guide.md", "Guide", canonical, ChunkingStrategy.HEADER, SMALL)
    assert [c.text for c in chunks] == ["[Guide > Install > Linux]\nRun it.",
                                        "[Guide > Tune > Cache > Size]\nSmall."]


def test_without_sections_the_whole_text_is_one_section_titled_by_the_document():
    # Plain text: a "# " line is no heading, so it stays in the chunk.
    canonical = "# not a heading\nbody\n"
    assert body_sections(canonical, "notes") == [Section("notes", 0, 21)]
    chunks = chunk_document("n.txt", "notes", canonical, ChunkingStrategy.HEADER)
    assert (spans(chunks), [c.section for c in chunks]) == ([(0, 20)], ["notes"])


@pytest.mark.parametrize("strategy", [s for s in ChunkingStrategy if not s.blind])
def test_heading_lines_never_appear_in_boundary_or_header_content(strategy):
    chunks = chunk_markdown("guide.md", "Guide", GUIDE, strategy, SMALL)
    assert spans(chunks) == [(9, 21), (33, 44), (54, 61)]
    assert contents(chunks) == ["Intro words.", "Install it.", "Run it."]
    assert [c.section for c in chunks] == ["Guide", "Setup", "Use"]
    for c in chunks:
        assert "#" not in c.content
        for h_start, h_end, _, _ in heading_spans(GUIDE):
            assert c.end <= h_start or c.start >= h_end


def test_header_text_is_the_bracketed_path_then_the_content():
    chunks = chunk_markdown("guide.md", "Guide", GUIDE, ChunkingStrategy.HEADER, SMALL)
    assert [c.header for c in chunks] == ["[Guide]", "[Guide > Setup]", "[Guide > Use]"]
    assert [c.text for c in chunks] == [
        "[Guide]\nIntro words.",
        "[Guide > Setup]\nInstall it.",
        "[Guide > Use]\nRun it.",
    ]
    for c in chunks:
        assert c.text == c.header + "\n" + c.content
        assert "[" not in c.content


def test_strategies_without_header_leave_header_empty():
    for strategy in (ChunkingStrategy.BOUNDARIES, ChunkingStrategy.BLIND):
        assert {c.header for c in chunk_markdown("g", "Guide", GUIDE, strategy, SMALL)} == {""}


# --- overlap --------------------------------------------------------------------------------


def test_header_overlap_puts_the_previous_contents_tail_between_header_and_content():
    chunks = chunk_markdown("guide.md", "Guide", GUIDE, ChunkingStrategy.HEADER_OVERLAP, SMALL)
    # "Intro words."[-8:] == "o words.", "Install it."[-8:] == "tall it."
    assert [c.text for c in chunks] == [
        "[Guide]\nIntro words.",
        "[Guide > Setup]\no words. Install it.",
        "[Guide > Use]\ntall it. Run it.",
    ]
    assert contents(chunks) == ["Intro words.", "Install it.", "Run it."]
    for previous, c in zip(chunks, chunks[1:], strict=False):
        assert c.text == c.header + "\n" + previous.content[-8:] + " " + c.content


def test_boundaries_overlap_text_is_tail_space_content():
    chunks = chunk_markdown("guide.md", "Guide", GUIDE, ChunkingStrategy.BOUNDARIES_OVERLAP, SMALL)
    assert [c.text for c in chunks] == ["Intro words.", "o words. Install it.", "tall it. Run it."]
    plain = chunk_markdown("guide.md", "Guide", GUIDE, ChunkingStrategy.BOUNDARIES, SMALL)
    assert spans(chunks) == spans(plain)
    assert contents(chunks) == contents(plain)


def test_an_overlap_longer_than_the_previous_content_takes_all_of_it():
    chunks = chunk_markdown("guide.md", "Guide", GUIDE, ChunkingStrategy.BOUNDARIES_OVERLAP,
                            ChunkingSettings(target_chars=40, overlap_chars=30))
    assert [c.text for c in chunks] == ["Intro words.", "Intro words. Install it.", "Install it. Run it."]


def test_zero_overlap_adds_no_tail():
    chunks = chunk_markdown("guide.md", "Guide", GUIDE, ChunkingStrategy.BOUNDARIES_OVERLAP,
                            ChunkingSettings(target_chars=40, overlap_chars=0))
    assert [c.text for c in chunks] == ["Intro words.", "Install it.", "Run it."]


# --- blind ----------------------------------------------------------------------------------


def test_blind_cuts_every_target_characters_wherever_that_falls():
    canonical = "abcdefghij" * 10  # 100 characters, no white space
    chunks = chunk_markdown("d", "t", canonical, ChunkingStrategy.BLIND, SMALL)
    assert spans(chunks) == [(0, 40), (40, 80), (80, 100)]
    assert contents(chunks) == ["abcdefghij" * 4, "abcdefghij" * 4, "abcdefghij" * 2]


def test_blind_windows_are_trimmed_and_keep_headings_and_owner_section():
    chunks = chunk_markdown("guide.md", "Guide", GUIDE, ChunkingStrategy.BLIND, SMALL)
    # Window [0,40) ends inside "Install" (index 39 is its last "l"); window [40,62) starts on
    # the space before "it." (trimmed to 41) and ends on the final newline (trimmed to 61).
    assert spans(chunks) == [(0, 40), (41, 61)]
    assert contents(chunks) == ["# Guide\n\nIntro words.\n\n## Setup\n\nInstall",
                                "it.\n\n## Use\n\nRun it."]
    # The owner is the last section starting at or before the chunk start: none before 7 -> the
    # document; 41 is inside "Setup" (31..46).
    assert [c.section for c in chunks] == ["Guide", "Setup"]


def test_blind_overlap_prepends_the_raw_tail():
    chunks = chunk_markdown("guide.md", "Guide", GUIDE, ChunkingStrategy.BLIND_OVERLAP, SMALL)
    # GUIDE[32:40] == "\nInstall"
    assert [c.text for c in chunks] == ["# Guide\n\nIntro words.\n\n## Setup\n\nInstall",
                                        "\nInstall it.\n\n## Use\n\nRun it."]
    assert contents(chunks) == ["# Guide\n\nIntro words.\n\n## Setup\n\nInstall",
                                "it.\n\n## Use\n\nRun it."]


# --- invariants on a document with a grammar block and a table ------------------------------


@pytest.mark.parametrize("strategy", list(ChunkingStrategy))
def test_every_strategy_quotes_exact_spans_and_covers_every_character(strategy):
    chunks = chunk_markdown("assign.md", "Assignment", GRAMMAR_DOC, strategy, SMALL)
    for c in chunks:
        assert GRAMMAR_DOC[c.start:c.end] == c.content
        assert c.chunk_id == f"assign.md:{c.start}-{c.end}"
        assert len(c.content) <= 40 or len(c.content.split()) == 1
    assert offset_errors(GRAMMAR_DOC, chunks) == []
    assert uncovered_characters(GRAMMAR_DOC, spans(chunks),
                                markdown_sections(GRAMMAR_DOC, "Assignment")) == []
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    assert spans(chunks) == sorted(spans(chunks))


def test_the_grammar_block_and_the_table_fall_back_to_line_and_word_ends():
    chunks = chunk_markdown("assign.md", "Assignment", GRAMMAR_DOC, ChunkingStrategy.BOUNDARIES, SMALL)
    assert contents(chunks) == [
        # The 82-character prose paragraph: sentence 1 (33 chars), then sentence 2 (48 chars,
        # over 40) cut at word ends; packing adds "It can" to sentence 1 to reach exactly 40.
        "Assignment binds names to values. It can",
        "also rebind names that are already",
        "bound.",
        # The grammar block has no sentence end: line ends. Lines 1 and 2 are over 40 -> words;
        # line 2's last word '[","]' packs with line 3 (39 characters, indent kept inside).
        'assignment_stmt ::= (target_list "=")+',
        "(starred_expression | yield_expression)",
        'target_list     ::= target ("," target)*',
        '[","]\n   target          ::= identifier',
        '| "(" [target_list] ")"',
        # Each table row is 33 characters, a line piece; two rows (67) never fit in 40.
        "+------------+------------------+",
        "| Operator   | Meaning          |",
        "+============+==================+",
        "| ``+=``     | add in place     |",
        "| ``-=``     | subtract in place|",
        "+------------+------------------+",
        "Short closing line.",
    ]
    assert [c.section for c in chunks] == ["Assignment"] * 8 + ["Operators"] * 7


def test_offset_errors_flags_a_chunk_whose_span_does_not_quote_its_content():
    chunks = chunk_markdown("guide.md", "Guide", GUIDE, ChunkingStrategy.HEADER, SMALL)
    assert offset_errors(GUIDE, chunks) == []
    # Planted flaw: the middle chunk's span shifted by one; content "Install it." no longer
    # equals GUIDE[34:45] == "nstall it.\n" -> offset_errors must list its id.
    shifted = dataclasses.replace(chunks[1], start=34, end=45)
    assert offset_errors(GUIDE, [chunks[0], shifted, chunks[2]]) == ["guide.md:33-44"]


def test_uncovered_characters_reports_positions_outside_every_span():
    # Planted flaw: the span of "Install it." is missing -> its 10 non-blank characters
    # (33..43 minus the space at 40) must be reported; heading lines are never reported.
    assert uncovered_characters(GUIDE, [(9, 21), (54, 61)], markdown_sections(GUIDE, "Guide")) == [
        33, 34, 35, 36, 37, 38, 39, 41, 42, 43]
    # Without sections every character counts: the heading lines too.
    assert uncovered_characters("# A\nb\n", [(4, 5)]) == [0, 2]


# --- the real default corpus ----------------------------------------------------------------

# Observed with CPython 3.11.7's pydoc_data.topics (79 topics), default settings (512 / 64).
EXPECTED_CHUNK_COUNTS = {
    ChunkingStrategy.BLIND: 941,
    ChunkingStrategy.BLIND_OVERLAP: 941,
    ChunkingStrategy.BOUNDARIES: 1275,
    ChunkingStrategy.BOUNDARIES_OVERLAP: 1275,
    ChunkingStrategy.HEADER: 1275,
    ChunkingStrategy.HEADER_OVERLAP: 1275,
}


def test_every_strategy_on_the_python_reference_corpus(tmp_path):
    export_python_reference(tmp_path)
    result = extract_corpus(tmp_path)
    assert (len(result.records), result.failed) == (79, [])
    counts = {}
    for strategy in ChunkingStrategy:
        total, errors, uncovered, oversized = 0, 0, 0, []
        for record in result.records:
            chunks = chunk_document(record.document_id, record.title, record.canonical_text,
                                    strategy, sections=record.sections)
            total += len(chunks)
            errors += len(offset_errors(record.canonical_text, chunks))
            uncovered += len(uncovered_characters(record.canonical_text, spans(chunks),
                                                  record.sections))
            oversized += [c.chunk_id for c in chunks
                          if len(c.content) > 512 and len(c.content.split()) > 1]
        assert (errors, uncovered, oversized) == (0, 0, []), strategy
        counts[strategy] = total
    assert counts == EXPECTED_CHUNK_COUNTS


# --- regressions: bugs these tests found, fixed -------------------------------------------


def test_a_comment_inside_a_fenced_code_block_is_not_a_heading():
    canonical = "# Setup\n\nRun this:\n\n```sh\n# install the package\npip install x\n```\n\nDone.\n"
    chunks = chunk_markdown("setup.md", "Setup", canonical, ChunkingStrategy.HEADER)
    assert heading_spans(canonical) == [(0, 7, 1, "Setup")]
    assert any("# install the package" in c.content for c in chunks)


def test_boundary_chunks_never_straddle_a_pdf_page():
    # Two short pages joined as the PDF extractor joins them; page 2 starts at 46.
    canonical = "Page one says the sprocket has twelve teeth.\n\nPage two says it weighs forty grams.\n"
    for strategy in (ChunkingStrategy.BOUNDARIES, ChunkingStrategy.HEADER):
        chunks = chunk_document("c.pdf", "Sprockets", canonical, strategy, cuts=(0, 46))
        assert [(c.start, c.end) for c in chunks] == [(0, 44), (46, 82)]
    # Without cuts the two paragraphs pack into one chunk.
    packed = chunk_document("c.pdf", "Sprockets", canonical, ChunkingStrategy.BOUNDARIES)
    assert [(c.start, c.end) for c in packed] == [(0, 82)]


# The former sentence-end pattern, kept as the oracle: it restarted inside every run of
# [.!?], so a line of dots took quadratic time (22 s for 20,000 dots).
_FORMER_SENTENCE_END = re.compile(r"[.!?]+[\"')\]’”]*(?=\s)")


def test_sentence_ends_match_the_former_pattern_on_random_text():
    rng = random.Random(3)
    pieces = [".", "!", "?", ")", '"', "’", " ", "\n", "a", "bc"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 16)))
        assert ([m.span() for m in _SENTENCE_END.finditer(text)]
                == [m.span() for m in _FORMER_SENTENCE_END.finditer(text)]), repr(text)


def test_a_long_numbered_list_is_cut_before_an_items_number_never_after_it():
    """Found by a team lead: a 12-step list (one paragraph) was cut after each step's
    number, so a chunk ended "... with a timestamp. 7." and the next began "Step 7"."""
    steps = "\n".join(f"{n}. Step {n} of the failover drill: check the replica lag, write it "
                      f"down with a timestamp." for n in range(1, 13))
    canonical = f"# Drill\n\n{steps}\n"
    chunks = chunk_markdown("drill.md", "Drill", canonical, ChunkingStrategy.HEADER)
    assert offset_errors(canonical, chunks) == []
    assert [c.content.split(" ", 1)[0] for c in chunks] == ["1.", "6.", "11."]
    assert all(c.content.endswith("timestamp.") for c in chunks)


def test_a_million_dots_are_cut_in_linear_time():
    canonical = "." * 1_000_000
    chunks = chunk_markdown("dots.txt", "dots", canonical, ChunkingStrategy.BOUNDARIES)
    assert (len(chunks), offset_errors(canonical, chunks)) == (977, [])


def test_a_table_is_one_row_a_chunk_and_its_header_repeated_in_text_only():
    from rag_pipeline.core.ingest.tables import layout_table

    intro = "Intro.\n\n"
    table_text, table = layout_table(
        [["Site", "Lead"]] + [[f"Row {r:02d} site", "Tomas Ruiz"] for r in range(1, 11)],
        len(intro))
    canonical = f"{intro}{table_text}\n\nAfter.\n"
    settings = ChunkingSettings(target_chars=62, overlap_chars=8)
    chunks = chunk_document("d", "Doc", canonical, ChunkingStrategy.HEADER, settings,
                            tables=[table])
    assert [c.content for c in chunks] == [
        "Intro.", "Site | Lead\nRow 01 site | Tomas Ruiz",
        *(f"Row {r:02d} site | Tomas Ruiz" for r in range(2, 11)), "After."]
    assert chunks[1].text == "[Doc]\n" + chunks[1].content  # holds the header row itself
    assert chunks[2].text == "[Doc]\nSite | Lead\n" + chunks[2].content
    assert chunks[2].header == "[Doc]"
    assert offset_errors(canonical, chunks) == []
    plain = chunk_document("d", "Doc", canonical, ChunkingStrategy.BOUNDARIES, settings,
                           tables=[table])
    assert [c.content for c in plain] == [c.content for c in chunks]
    assert plain[2].text == plain[2].content


def test_a_wide_row_is_one_chunk_up_to_the_hard_maximum_and_cut_beyond_it():
    # As scikit-learn's breast_cancer.csv: 31 columns, each row ~600 characters. Cut at the
    # target, each row left its last columns as a chunk of their own ("column 31: 0").
    from rag_pipeline.core.ingest.tables import layout_table

    header = [f"feature {c:02d}" for c in range(1, 32)]
    wide = [f"1.{c:04d}" for c in range(1, 32)]
    widest = ["x" * 30] * 31  # 31 x 30 characters and separators: over 2 x 512
    table_text, table = layout_table([header, wide, widest], 0)
    canonical = f"{table_text}\n"
    chunks = chunk_document("d", "Doc", canonical, ChunkingStrategy.HEADER, tables=[table])
    rows = table_text.split("\n")
    assert [len(r) for r in rows] == [400, 276, 1020]
    # The header with the first row (677 characters) and the widest row (1,020): one chunk
    # each, where the cut at 512 made five (400, 276, 494, 494 and 30).
    assert [c.content for c in chunks] == [f"{rows[0]}\n{rows[1]}", rows[2]]
    assert offset_errors(canonical, chunks) == []
    # A row over 2 x 512 is cut between its cells, each cut after a separator: every
    # character is in a chunk (the blocking check of every build).
    longer = layout_table([header, ["y" * 40] * 31], 0)
    cut = chunk_document("d", "Doc", f"{longer[0]}\n", ChunkingStrategy.HEADER, tables=[longer[1]])
    assert [len(c.content) for c in cut] == [486, 472, 472, 298]
    assert all(c.content.endswith("y |") for c in cut[:-1]) and cut[-1].content.endswith("y")
    assert uncovered_characters(f"{longer[0]}\n", [(c.start, c.end) for c in cut]) == []


def test_a_wide_row_of_named_cells_is_cut_between_cells_never_between_a_name_and_its_value():
    """Found by a new user: a sheet of 297 columns (openxlsx's readTest.xlsx) was cut at word
    ends, 1,206 of its 2,720 chunks ending in ``column JT:`` and the next starting with its
    value; a question naming the column could not find the value."""
    names = [f"column {c:03d}" for c in range(1, 121)]
    row = " | ".join(f"{name}: {100 + c}" for c, name in enumerate(names))
    canonical = f"{row}\n"
    table = TableSpan(0, len(row), "", 0, (0,))
    chunks = chunk_document("d", "Doc", canonical, ChunkingStrategy.HEADER, tables=[table])
    assert [len(c.content) for c in chunks] == [503, 503, 503, 503, 141]
    assert offset_errors(canonical, chunks) == []
    assert uncovered_characters(canonical, [(c.start, c.end) for c in chunks]) == []
    cells = [cell for chunk in chunks for cell in chunk.content.removesuffix(" |").split(" | ")]
    assert cells == [f"{name}: {100 + c}" for c, name in enumerate(names)]


def test_a_table_never_runs_on_into_the_next_one():
    """Found by a new user: python-pptx's ``tbl-cell.pptx`` has two one-cell tables, "merged
    cell" each; the first took the second's line for a wrapped cell of its own, and "merged
    cell" was in two chunks (130-154 and 143-154) of the chunker that never overlaps."""
    from rag_pipeline.core.ingest.tables import layout_table

    first_text, first = layout_table([["merged cell"]], 0)
    second_text, second = layout_table([["merged cell"]], len(first_text) + 2)
    canonical = f"{first_text}\n\n{second_text}\n"
    chunks = chunk_document("d", "Doc", canonical, ChunkingStrategy.HEADER, tables=[first, second])
    assert [(c.start, c.end) for c in chunks] == [(0, 11), (13, 24)]
    # After the last table, a short lower-case line is still the rest of its last row's cell.
    tail = f"{first_text}\n\nswallows\n"
    assert [c.content for c in chunk_document("d", "Doc", tail, ChunkingStrategy.HEADER,
                                               tables=[first])] == ["merged cell\n\nswallows"]


def test_a_short_table_is_one_row_a_chunk_too():
    from rag_pipeline.core.ingest.tables import layout_table

    table_text, table = layout_table([["K", "V"], ["a", "1"], ["b", "2"]], 8)
    canonical = f"Intro.\n\n{table_text}\n"
    chunks = chunk_document("d", "Doc", canonical, ChunkingStrategy.HEADER, tables=[table])
    assert [(c.content, c.text) for c in chunks] == [
        ("Intro.", "[Doc]\nIntro."), ("K | V\na | 1", "[Doc]\nK | V\na | 1"),
        ("b | 2", "[Doc]\nK | V\nb | 2")]
    # Without declared tables, the same text is a paragraph like any other.
    assert [c.content for c in chunk_document("d", "Doc", canonical, ChunkingStrategy.HEADER)] == [
        "Intro.\n\nK | V\na | 1\nb | 2"]




def test_text_going_on_from_a_tables_last_row_stays_in_its_chunk():
    from rag_pipeline.core.ingest.tables import layout_table

    # A PDF's definition list read as a table whose last cell wraps past the table (found on
    # the Bash manual: "... the most recently executed foreground" then "pipeline.").
    table_text, table = layout_table([["#", "Expands to the count."],
                                      ["?", "Expands to the status of the last foreground"]], 0,
                                     header_rows=0)
    for gap in ("\n", "\n\n"):
        canonical = f"{table_text}{gap}pipeline.\n\nNext paragraph.\n"
        chunks = chunk_document("d", "Doc", canonical, ChunkingStrategy.HEADER, tables=[table])
        assert [c.content for c in chunks] == [
            "# | Expands to the count.",
            f"? | Expands to the status of the last foreground{gap}pipeline.",
            "Next paragraph."]
    # A new sentence after a blank line is a paragraph of its own, and so is one that opens
    # with a lower-case name (scikit-learn's covtype.rst, after its table).
    canonical = f"{table_text}\n\nPipelines are described below.\n"
    chunks = chunk_document("d", "Doc", canonical, ChunkingStrategy.HEADER, tables=[table])
    assert [c.content for c in chunks][-1] == "Pipelines are described below."
    opening = ("sklearn.datasets.fetch_covtype will load the covertype dataset; it returns a "
               "dictionary-like 'Bunch' object.")
    canonical = f"{table_text}\n\n{opening}\n"
    chunks = chunk_document("d", "Doc", canonical, ChunkingStrategy.HEADER, tables=[table])
    assert [c.content for c in chunks][-2:] == [
        "? | Expands to the status of the last foreground", opening]


def test_a_wide_row_of_long_blank_runs_is_cut_at_its_pipes_in_one_pass():
    """Found by an attack: the separator pattern backtracked over each blank of a run without
    a pipe (80,000 blanks took 7.7 s, four times as long per doubling)."""
    row = "a: 1 |" + " " * 80_000 + "b: 2 | c: 3"
    canonical = f"{row}\n"
    chunks = chunk_document("d", "Doc", canonical, ChunkingStrategy.HEADER,
                            tables=[TableSpan(0, len(row), "", 0, (0,))])
    assert [c.content for c in chunks] == ["a: 1 |", "b: 2 | c: 3"]
    assert offset_errors(canonical, chunks) == []
    assert uncovered_characters(canonical, [(c.start, c.end) for c in chunks]) == []
