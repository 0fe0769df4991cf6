"""Tests for ``rag_pipeline.core.ingest.corpus_export``: reST headings to Markdown, and the real export."""

from __future__ import annotations

import os

from rag_pipeline.core.ingest.corpus_export import EXPORTED_MARKER, export_python_reference, topic_to_markdown

RAW_TOPIC = (
    "\n"
    "Widgets\n"
    "*******\n"
    "\n"
    "Intro paragraph.\n"
    "\n"
    "   widget ::= name\n"
    "\n"
    "Basics\n"
    "======\n"
    "\n"
    "Some basics.\n"
    "\n"
    "Details\n"
    "-------\n"
    "\n"
    "Detail text.\n"
    "\n"
    # Underline two characters shorter than the title: still a heading (the tolerance is 2).
    "Fine print\n"
    "~~~~~~~~\n"
    "\n"
    "Small text.\n"
    "\n"
    # Planted: an underline far shorter than its line must not make a heading.
    "Too long a title for this\n"
    "===\n"
    "\n"
    # Planted: an indented line (a code or grammar block) must not become a heading.
    " Indented\n"
    "=========\n"
    "\n"
    # Planted: a mixed-character rule is not an underline.
    "Mixed rule\n"
    "=-=-=-=-=-\n"
    "\n"
)

EXPECTED_MARKDOWN = (
    "# Widgets\n"
    "\n"
    "Intro paragraph.\n"
    "\n"
    "   widget ::= name\n"
    "\n"
    "## Basics\n"
    "\n"
    "Some basics.\n"
    "\n"
    "## Details\n"
    "\n"
    "Detail text.\n"
    "\n"
    "## Fine print\n"
    "\n"
    "Small text.\n"
    "\n"
    "Too long a title for this\n"
    "===\n"
    "\n"
    " Indented\n"
    "=========\n"
    "\n"
    "Mixed rule\n"
    "=-=-=-=-=-\n"
)


def test_topic_to_markdown_turns_the_first_heading_into_the_title_and_the_rest_into_sections():
    assert topic_to_markdown(RAW_TOPIC) == EXPECTED_MARKDOWN


def test_topic_to_markdown_on_a_topic_with_only_a_title():
    assert topic_to_markdown("Pass\n****\n\nDoes nothing.") == "# Pass\n\nDoes nothing.\n"


# Observed with CPython 3.11.7's pydoc_data.topics.
EXPECTED_TOPICS = 79
EXPECTED_SECTION_HEADINGS = 129


def test_export_writes_one_markdown_file_per_topic(tmp_path):
    paths = export_python_reference(tmp_path)
    assert len(paths) == EXPECTED_TOPICS
    # Sorted by topic name, which is not path order: "typesseq" < "typesseq-mutable", but
    # "typesseq.md" > "typesseq-mutable.md" because "." sorts after "-".
    assert [p.stem for p in paths] == sorted(p.stem for p in paths)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [p.name for p in paths] + [EXPORTED_MARKER])
    assert "assert.md" in [p.name for p in paths]
    lines = [line for p in paths for line in p.read_text(encoding="utf-8").splitlines()]
    assert sum(line.startswith("## ") for line in lines) == EXPECTED_SECTION_HEADINGS
    # Exactly one title per file, on its first line.
    assert sum(line.startswith("# ") for line in lines) == EXPECTED_TOPICS
    assert all(p.read_text(encoding="utf-8").startswith("# ") for p in paths)
    assert (tmp_path / "assert.md").read_text(encoding="utf-8").startswith(
        '# The "assert" statement\n\nAssert statements are a convenient way to insert debugging '
        "assertions\ninto a program:\n\n   assert_stmt ::= \"assert\" expression [\",\" expression]\n")


def test_a_second_export_leaves_the_user_s_corpus_alone(tmp_path):
    first = export_python_reference(tmp_path)
    stamp = 1_000_000_000
    for p in first:
        os.utime(p, ns=(stamp, stamp))
    # Planted: the user edits one topic and deletes another: the corpus is theirs now, and a
    # later run (the nightly documents run exports first) must not undo either change.
    (tmp_path / "assert.md").write_text("edited\n", encoding="utf-8")
    os.utime(tmp_path / "assert.md", ns=(stamp, stamp))
    (tmp_path / "break.md").unlink()
    second = export_python_reference(tmp_path)
    assert second == first
    assert [p.name for p in second if p.exists() and p.stat().st_mtime_ns != stamp] == []
    assert (tmp_path / "assert.md").read_text(encoding="utf-8") == "edited\n"
    assert not (tmp_path / "break.md").exists()


def test_refresh_rewrites_what_differs_from_cpython_s_copy(tmp_path):
    first = export_python_reference(tmp_path)
    stamp = 1_000_000_000
    for p in first:
        os.utime(p, ns=(stamp, stamp))
    (tmp_path / "assert.md").write_text("stale\n", encoding="utf-8")
    os.utime(tmp_path / "assert.md", ns=(stamp, stamp))
    second = export_python_reference(tmp_path, refresh=True)
    assert second == first
    rewritten = [p.name for p in second if p.stat().st_mtime_ns != stamp]
    assert rewritten == ["assert.md"]
    assert (tmp_path / "assert.md").read_text(encoding="utf-8").startswith('# The "assert" statement\n')
    assert not list(tmp_path.glob("*.tmp"))
