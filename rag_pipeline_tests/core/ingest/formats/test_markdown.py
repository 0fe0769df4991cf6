"""Tests for ``rag_pipeline.core.ingest.formats.markdown``: heading lines, titles and heading-free text, with
fenced code that looks like headings."""

from __future__ import annotations

import random
import re

from rag_pipeline.core.ingest import Section, TableSpan
from rag_pipeline.core.ingest.formats.markdown import (
    MarkdownFormat,
    first_title,
    heading_spans,
    markdown_sections,
    pipe_tables,
    without_headings,
)
from rag_pipeline_tests.core.ingest.long_tables import chunked_under_header, shift_rows

# "# Guide" [0,7) | "## Setup" [9,17) | fence [19,48) holding "# not a heading" | "## End" [50,56)
FENCED = "# Guide\n\n## Setup\n\n```sh\n# not a heading\nrun\n```\n\n## End\n\nBye.\n"


def test_heading_spans_skip_every_line_inside_a_fence():
    assert heading_spans(FENCED) == [(0, 7, 1, "Guide"), (9, 17, 2, "Setup"), (50, 56, 2, "End")]


def test_an_unclosed_fence_runs_to_the_end_of_the_text():
    assert heading_spans("# A\n\n~~~\n# b\n## c\n") == [(0, 3, 1, "A")]


def test_a_heading_right_after_a_closed_fence_counts():
    # Planted: two fences, the heading sits between them -> only fence membership may hide it.
    text = "```\n# x\n```\n# Between\n```\n# y\n```\n"
    assert heading_spans(text) == [(12, 21, 1, "Between")]


def test_a_trailing_hash_that_is_part_of_the_title_is_kept():
    assert heading_spans("## C#\n") == [(0, 5, 2, "C#")]


def test_first_title_is_the_first_level_one_heading_outside_code():
    assert first_title("```\n# Code\n```\n## Sub\n# Real\n") == "Real"
    assert first_title("## Only a section\n") is None


def test_without_headings_replaces_each_heading_line_by_one_space():
    assert without_headings(FENCED) == " \n\n \n\n```sh\n# not a heading\nrun\n```\n\n \n\nBye.\n"


def test_many_headings_and_fences_stay_linear():
    # 20,000 headings and 20,000 fences: a check of every heading against every fence would be
    # 4e8 steps; the bisect makes it 20,000 look-ups.
    text = "".join(f"# H{i}\n```\n# c{i}\n```\n" for i in range(20_000))
    spans = heading_spans(text)
    assert len(spans) == 20_000
    assert spans[1][3] == "H1"


# The former heading pattern, kept as the oracle for titles and spans: it trimmed the closing
# hashes in the regex itself and backtracked quadratically on long runs of spaces and tabs.
_FORMER_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$", re.MULTILINE)


def test_headings_match_the_former_pattern_on_random_lines():
    rng = random.Random(5)
    pieces = ["#", "##", " ", "\t", "a", "C#", "x y", "\n"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 14)))
        former = [(m.start(), m.end(), len(m.group(1)), m.group(2).strip())
                  for m in _FORMER_HEADING.finditer(text)]
        assert heading_spans(text) == former, repr(text)


def test_a_heading_line_with_a_long_run_of_spaces_and_tabs_stays_linear():
    # 200,000 alternating spaces and tabs inside a heading: the former pattern took 73 s for
    # 20,000 of them; string trimming takes a single pass.
    text = "# a" + " \t" * 100_000 + "x ##\n"
    assert heading_spans(text) == [(0, len(text) - 1, 1, "a" + " \t" * 100_000 + "x")]


def test_a_fence_indented_up_to_three_spaces_hides_its_comment_lines():
    # Planted: a fence inside a list item, indented by two spaces; "# pip comment" at column 0
    # inside it is code (the former pattern only saw fences at column 0 and took it as a heading).
    text = "# Setup\n\n- step:\n  ```sh\n# pip comment\n  ```\n\n## After\n"
    assert [title for _, _, _, title in heading_spans(text)] == ["Setup", "After"]


def test_a_fence_closes_only_at_as_many_of_the_same_character():
    # "~~~" cannot close a backtick fence, "``" is too short; "````" (longer) closes it.
    text = "```\n~~~\n# a\n``\n# b\n````\n# c\n"
    assert [title for _, _, _, title in heading_spans(text)] == ["c"]


def test_four_spaces_make_an_indented_line_code_not_a_fence():
    # Four spaces: indented code, so the "```" opens nothing and "# Real" is a heading.
    text = "Intro.\n\n    ```\n# Real\n"
    assert heading_spans(text) == [(16, 22, 1, "Real")]


def test_a_backtick_fence_with_a_backtick_in_its_info_string_is_no_fence():
    # CommonMark 4.5: "``` a`b" is inline code, so "# Heading" after it is a heading.
    assert [t for _, _, _, t in heading_spans("``` a`b\n# Heading\n")] == ["Heading"]


def test_a_paragraph_underlined_by_equals_or_dashes_is_a_setext_heading():
    # Debian's and many projects' READMEs underline their headings (found by a new user: the
    # underlined title was quoted as an answer's sentence, and every chunk had the file's name
    # for its section).
    text = "Bug reports\n===========\n\nMail them.\n\nThe short version\n---\nRun it.\n"
    # "Bug reports" + underline [0,23) | body [23,37) | "The short version" + "---" [37,58) | body
    assert heading_spans(text) == [(0, 23, 1, "Bug reports"), (37, 58, 2, "The short version")]
    extracted = MarkdownFormat().extract(text.encode(), "bugs")
    assert extracted.title == "Bug reports"
    assert extracted.sections == (Section("Bug reports", 0, 0, 1), Section("Bug reports", 23, 37, 1),
                                  Section("The short version", 58, 67, 2))
    assert without_headings(text) == " \n\nMail them.\n\n \nRun it.\n"


def test_a_rule_under_text_a_list_a_quote_code_a_table_or_a_blank_line_is_no_underline():
    # Stricter than CommonMark, found by an attack: a note's paragraph over a rule, a table
    # without leading pipes over a rule, lost every word from the chunks as a "heading".
    for text in ("- item\n---\n", "Para\n- item\n---\n", "- item\nlazy line\n===\n",
                 "> quoted\n---\n", "    code\n---\n", "Text\n\n---\n", "<div>\nx\n---\n",
                 "a | b\n--- | ---\n", "Para\n-\n", "x\n```\ny\n```\n---\n",
                 "Para\n- - -\n", "---\ntitle: Front\n---\n",
                 "Rotate the payment API keys every 90 days; the vault job does it.\n---\n",
                 "Two lines\nof a note\n---\n", "On call | Phone\n--- | ---\nAna | 123\n---\n",
                 "<!--\nHidden\n\nFake\n===\n-->\n", "<pre>\nx\n\nFake\n---\n</pre>\n"):
        assert heading_spans(text) == [], repr(text)
    # After a fence, a heading, a comment or with front matter above, a paragraph opens again.
    assert heading_spans("```\ncode\n```\nAfter\n---\n") == [(13, 22, 2, "After")]
    assert heading_spans("# A\nB\n==\n") == [(0, 3, 1, "A"), (4, 8, 1, "B")]
    assert heading_spans("---\ntitle: x\n---\nBody\n---\n") == [(17, 25, 2, "Body")]
    assert heading_spans("<!-- note -->\nTitle\n===\n") == [(14, 23, 1, "Title")]
    assert heading_spans("Why?\n---\n") == [(0, 8, 2, "Why?")]
    # A short title may end with a period (an attack's real README: "... Contributions, Etc.").
    assert heading_spans("Bugs, Requests, Etc.\n---\n") == [(0, 24, 2, "Bugs, Requests, Etc.")]
    # Preformatted text or a comment right under a paragraph line holds no heading (found by an
    # attack: "# apt-get install tool" in a <pre> was a heading, in no chunk).
    assert heading_spans("Install it as root:\n<pre>\n# apt-get install tool\n</pre>\n") == []
    assert heading_spans("Para line\n<!--\n# Old section\n-->\n") == []


def test_a_later_level_one_heading_titles_its_own_section():
    """Found by an attack: a changelog's releases, each an underlined (or ``#``) level-1
    heading, were all titled by the first release; every later release's name was in no chunk."""
    text = "Version 2\n=========\n\nFixed a.\n\nVersion 1\n=========\n\nFixed b.\n"
    assert markdown_sections(text, "Version 2") == (
        Section("Version 2", 0, 0, 1), Section("Version 2", 19, 31, 1),
        Section("Version 1", 50, 61, 1))


def test_sections_run_between_headings_and_leave_the_heading_lines_out():
    text = "Preface.\n# Title\n\nBody.\n### Deep\nMore.\n"
    # "Preface." [0,9) | "# Title" [9,16) | body [16,24) | "### Deep" [24,32) | body [32,39)
    assert markdown_sections(text, "Doc") == (
        Section("Doc", 0, 9, 1), Section("Doc", 16, 24, 1), Section("Deep", 32, 39, 3))


def test_the_format_extracts_its_sections_with_the_title_it_chose():
    data = b"---\ntitle: Front\n---\nText.\n## Part\nMore.\n"
    extracted = MarkdownFormat().extract(data, "s")
    assert (extracted.title, extracted.canonical_text) == ("Front", data.decode())
    # After the front matter's 21 characters, which are in no section.
    assert extracted.sections == (Section("Front", 21, 27, 1), Section("Part", 34, 41, 2))


def test_a_file_that_opens_with_a_thematic_break_has_no_front_matter():
    from rag_pipeline.core.ingest.formats.markdown import front_matter_end

    # A paragraph between two rules is prose: it had been taken for front matter and left out
    # of every chunk (found by an attack).
    ruled = "---\n\nIntro paragraph before a rule.\n\n---\n\nAfter the rule.\n"
    assert front_matter_end(ruled) == 0
    assert MarkdownFormat().extract(ruled.encode(), "r").sections == (Section("r", 0, 58, 1),)
    assert front_matter_end("---\ntitle: A\ntags:\n  - x\n---\nBody\n") == 29
    # A value that is not valid YAML is still front matter: people write it by hand.
    hand = "---\ntitle: Kubernetes: the guide\ndate: 2024-01-01\n---\n\nBody text.\n"
    assert front_matter_end(hand) == 54
    assert MarkdownFormat().extract(hand.encode(), "k").title == "Kubernetes: the guide"


def test_a_windows_file_drops_its_byte_order_mark_and_counts_each_crlf_once():
    # What formats.md says #char= counts: the canonical text, a line end one character.
    extracted = MarkdownFormat().extract(
        b"\xef\xbb\xbf# Windows notes\r\n\r\nThe espresso machine is descaled.\r\n", "w")
    assert extracted.canonical_text == "# Windows notes\n\nThe espresso machine is descaled.\n"
    assert extracted.canonical_text.index("The espresso") == 17  # 20 bytes into the file


def test_pipe_tables_are_declared_outside_code():
    text = ("Intro\n| A | B |\n|---|:-:|\n| 1 | 2 |\n| 3 | 4 |\n\nafter\n\n"
            "```\n| x | y |\n|---|---|\n| 1 | 2 |\n```\n"
            "A|B\n-|-\n1|2\n\n"
            "| one | two |\n|---|\n| 1 | 2 |\n")  # a delimiter row of another width: no table
    assert pipe_tables(text) == (TableSpan(6, 45, "| A | B |", 25, (26, 36)),
                                 TableSpan(92, 103, "A|B", 99, (100,)))
    assert text[6:45] == "| A | B |\n|---|:-:|\n| 1 | 2 |\n| 3 | 4 |"


def test_a_reST_grid_table_is_no_pipe_table():
    assert pipe_tables("+-----+-----+\n| a   | b   |\n+=====+=====+\n| 1   | 2   |\n"
                       "+-----+-----+\n") == ()


def test_a_long_pipe_table_keeps_its_header_in_every_chunk():
    rows = "".join(f"| {' | '.join(row)} |\n" for row in shift_rows())
    data = f"# Shifts\n\nWho works where.\n\n| Site | Lead | Duration |\n|---|---|---|\n{rows}"
    extracted = MarkdownFormat().extract(data.encode(), "shifts")
    (table,) = extracted.tables
    assert len(table.rows) == 60
    chunks = chunked_under_header("s.md", extracted)
    assert all("| Site | Lead | Duration |" in c.text for c in chunks if "Delta flats" in c.content)


def test_a_quote_is_shown_as_its_rendering_reads_line_by_line():
    from rag_pipeline.core.ingest import format_named

    markdown = format_named("markdown")
    quote = ("## Steps &amp; checks\n"
             "1. Run `make` to **build** the [docs](https://example.org/docs) ![a chart](c.png).\n"
             "- a *b* c \\* d <b>raw</b> &lt;tag&gt;\r\n"
             "    indented **code**\n")
    assert markdown.shown_quote(quote) == (
        "Steps & checks\n"
        "1. Run make to build the docs a chart.\n"
        "- a b c * d <b>raw</b> <tag>\r\n"
        "    indented **code**\n")
    # A quote holding a fence may start inside it (a long block cut into chunks; found by an
    # attack: its code was rendered and the prose after its closing fence left raw): as written.
    inside = "def __init__(self, *args):\n```\n\nThe **constructor** takes options.\n"
    assert markdown.shown_quote(inside) == inside
    assert format_named("text").shown_quote("**as is** &amp;") == "**as is** &amp;"


def test_a_line_like_a_delimiter_row_of_many_blanks_is_read_at_once():
    """Found by an attack: ``|-<blanks>x`` under a line holding ``|`` took time growing with the
    square of its blanks (100 KB, 38 to 84 s)."""
    from rag_pipeline.core.ingest.reading_limits import document_reading_limits

    text = "| a | b |\n|-" + " " * 100_000 + "x\n"
    with document_reading_limits(10):
        assert pipe_tables(text) == ()
    rows = "| a | b |\n| --- |:-: \n| 1 | 2 |\n"
    assert [(t.header, t.rows) for t in pipe_tables(rows)] == [("| a | b |", (22,))]
