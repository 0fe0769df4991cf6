"""Tests for ``rag_pipeline.core.evaluation.feedback``: rows appended whole, bounded, drafted."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_pipeline.core.evaluation.feedback import (
    Feedback,
    FeedbackFullError,
    append_feedback,
    feedback_gold_lines,
    read_feedback,
)
from rag_pipeline.core.storage.table_names import FEEDBACK
from rag_pipeline.core.storage.warehouse import Warehouse

HELPFUL = Feedback("2026-12-01T22:00:00+00:00", "how long is the timeout", True, None,
                   "20261201T220000Z-0a1b2c3d", ("guide/config.md#char=113,203",))
UNHELPFUL = Feedback("2026-12-01T22:01:00+00:00", "How do I  upgrade?", False, "wrong page",
                     "20261201T220000Z-0a1b2c3d", ("guide/faq.md#char=0,48", "guide/install.md#char=1,9"))


def test_rows_are_appended_and_a_replaced_file_is_deleted_after_the_grace(tmp_path: Path):
    """Found by a new operator: the replaced file was deleted at once, so a backup that copied
    the pointers first (as the docs say) named a file it did not hold."""
    import os

    from rag_pipeline.core.index.generations import GARBAGE_GRACE_SECONDS

    warehouse = Warehouse(tmp_path)
    assert read_feedback(warehouse) == []
    assert append_feedback(warehouse, HELPFUL) == 1
    first = warehouse.version(FEEDBACK).file
    assert append_feedback(warehouse, UNHELPFUL) == 2
    assert read_feedback(warehouse) == [HELPFUL, UNHELPFUL]
    second = warehouse.version(FEEDBACK).file

    def files() -> list[str]:
        return sorted(warehouse.relative(i.path) for i in warehouse.list_files(FEEDBACK))

    assert files() == sorted([first, second, f"{FEEDBACK}/_latest.json"])
    # Older than the grace, a replaced file goes with the next row.
    old = os.stat(tmp_path / "warehouse" / first).st_mtime - GARBAGE_GRACE_SECONDS - 1
    os.utime(tmp_path / "warehouse" / first, (old, old))
    assert append_feedback(warehouse, HELPFUL) == 3
    assert files() == sorted([second, warehouse.version(FEEDBACK).file,
                              f"{FEEDBACK}/_latest.json"])


def test_a_full_table_refuses_the_row_and_keeps_what_it_had(tmp_path: Path):
    warehouse = Warehouse(tmp_path)
    append_feedback(warehouse, HELPFUL, max_rows=1)
    with pytest.raises(FeedbackFullError, match=r"the feedback table is full \(1 rows, at most 1\)"):
        append_feedback(warehouse, UNHELPFUL, max_rows=1)
    assert read_feedback(warehouse) == [HELPFUL]


def test_a_comment_too_long_is_refused_before_anything_is_written(tmp_path: Path):
    warehouse = Warehouse(tmp_path)
    long = Feedback(HELPFUL.at, "q", False, "x" * 2001, "g", ())
    with pytest.raises(ValueError, match="comment has 2001 characters; at most 2000"):
        append_feedback(warehouse, long)
    assert warehouse.version(FEEDBACK) is None


def test_unhelpful_answers_become_one_gold_line_per_question():
    again = Feedback("2026-12-01T22:05:00+00:00", "how do i upgrade?", False, "still wrong", "g2",
                     ("guide/upgrade.md#char=0,30",))
    silent = Feedback("2026-12-01T22:06:00+00:00", "what is a frobnicator", False, None, "g2", ())
    # What the newest answer showed (found by an operator: the oldest verdict's sources were
    # drafted, naming a document an upgrade had renamed since).
    assert feedback_gold_lines([HELPFUL, UNHELPFUL, again, silent]) == [
        {"id": "f001", "needle": "", "question": "How do I upgrade?", "ticket": "",
         "shown_sources": ["guide/upgrade.md#char=0,30"],
         "comments": ["wrong page", "still wrong"]},
        {"id": "f002", "needle": "", "question": "what is a frobnicator", "ticket": "",
         "shown_sources": [], "comments": []}]


def test_a_question_whose_newest_verdict_is_helpful_is_no_gold_line():
    """Found by an evaluation user: Not helpful, then Helpful on the same question was drafted
    all the same, and a comment sent twice was listed twice."""
    changed = Feedback("2026-12-01T22:09:00+00:00", "how do I upgrade?", True, None, "g2", ())
    twice = Feedback("2026-12-01T22:07:00+00:00", "what is a frobnicator", False, "no idea", "g2", ())
    again = Feedback("2026-12-01T22:08:00+00:00", "what is a frobnicator", False, "no idea", "g2", ())
    assert feedback_gold_lines([changed, UNHELPFUL, twice, again]) == [
        {"id": "f001", "needle": "", "question": "what is a frobnicator", "ticket": "",
         "shown_sources": [], "comments": ["no idea"]}]
