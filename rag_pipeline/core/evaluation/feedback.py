"""``feedback``: what people said of the answers they got, a Parquet table beside the others.

One row per click of "helpful" or "not helpful" on the page (``POST /feedback``): the question,
the verdict, an optional comment, and what the service adds (the generation that answered, the
sources' ids, the time). Rows are appended by rewriting the table's one file whole (written to
a temporary name and renamed, then the pointer, as every table is: :meth:`Warehouse.write`)
under a lock, so a crash never leaves half a table and two writers never lose a row; the table
holds at most :data:`MAX_FEEDBACK_ROWS` rows (a full table refuses more, saying so). Unhelpful
answers become gold lines to complete (:func:`feedback_gold_lines`): the question is there, the
needle is what the person expected to be quoted.
"""

from __future__ import annotations

import fcntl
import json
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pyarrow as pa

from rag_pipeline.core.evaluation.gold import collapse
from rag_pipeline.core.index.generations import past_grace
from rag_pipeline.core.storage.table_names import FEEDBACK
from rag_pipeline.core.storage.warehouse import Warehouse

__all__ = ["MAX_COMMENT_CHARS", "MAX_FEEDBACK_ROWS", "Feedback", "FeedbackFullError", "feedback_jsonl",
           "append_feedback", "feedback_gold_lines", "read_feedback"]

MAX_FEEDBACK_ROWS = 100_000
"""Rows the table holds at most (about 30 MB of Parquet at full comments)."""
MAX_COMMENT_CHARS = 2000

SCHEMA = pa.schema([
    ("at", pa.string()), ("question", pa.string()), ("helpful", pa.bool_()),
    ("comment", pa.string()), ("generation", pa.string()), ("sources", pa.list_(pa.string())),
])


class FeedbackFullError(Exception):
    """The table holds :data:`MAX_FEEDBACK_ROWS` rows already."""


@dataclass(frozen=True)
class Feedback:
    """One verdict on one answer.

    Attributes:
        at: When it was given (UTC, ISO 8601).
        question: The question as asked.
        helpful: The person's verdict.
        comment: What they added, or None.
        generation: The index generation that answered.
        sources: The answer's sources, ``document_id`` plus the citation's fragment, in order.
    """

    at: str
    question: str
    helpful: bool
    comment: str | None
    generation: str
    sources: tuple[str, ...]


_THREAD_LOCK = threading.Lock()


@contextmanager
def _locked(warehouse: Warehouse) -> Iterator[None]:
    """One writer at a time: threads of this process, then processes (a lock file)."""
    warehouse.data_dir.mkdir(parents=True, exist_ok=True)
    with _THREAD_LOCK, open(warehouse.data_dir / f".{FEEDBACK}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _table(rows: Iterable[Feedback]) -> pa.Table:
    rows = list(rows)
    return pa.table({"at": [r.at for r in rows], "question": [r.question for r in rows],
                     "helpful": [r.helpful for r in rows], "comment": [r.comment for r in rows],
                     "generation": [r.generation for r in rows],
                     "sources": [list(r.sources) for r in rows]}, schema=SCHEMA)


def append_feedback(warehouse: Warehouse, row: Feedback, max_rows: int = MAX_FEEDBACK_ROWS) -> int:
    """Appends one row; returns how many the table holds now. The files it replaced are
    deleted once older than :data:`~rag_pipeline.core.index.generations.GARBAGE_GRACE_SECONDS`
    (a backup or a publication that read the pointer before it moved still finds its file).

    Raises:
        FeedbackFullError: The table already holds ``max_rows`` rows (nothing is written).
        ValueError: The comment is longer than :data:`MAX_COMMENT_CHARS`.
    """
    if row.comment is not None and len(row.comment) > MAX_COMMENT_CHARS:
        raise ValueError(f"comment has {len(row.comment)} characters; at most {MAX_COMMENT_CHARS}")
    with _locked(warehouse):
        before = warehouse.version(FEEDBACK)
        current = warehouse.read_file(before.file) if before is not None else SCHEMA.empty_table()
        if current.num_rows >= max_rows:
            raise FeedbackFullError(f"the feedback table is full ({current.num_rows} rows, at most "
                                    f"{max_rows}): read it with `rag-pipeline gold draft "
                                    "--from-feedback`, then clear it")
        table = pa.concat_tables([current.select(SCHEMA.names).cast(SCHEMA), _table([row])])
        written = warehouse.write(FEEDBACK, table)
        _delete_replaced(warehouse, written.file)
        return table.num_rows


def _delete_replaced(warehouse: Warehouse, current: str) -> None:
    """Deletes the feedback files other than ``current`` written over the grace ago."""
    now = time.time()
    for info in warehouse.list_files(FEEDBACK):
        file = warehouse.relative(info.path)
        if file != current and info.base_name.startswith("part-") and past_grace(info, now):
            warehouse.delete(file)


def read_feedback(warehouse: Warehouse) -> list[Feedback]:
    """Every row, oldest first (none when nobody gave feedback yet)."""
    table = warehouse.read_or_none(FEEDBACK)
    if table is None:
        return []
    return [Feedback(r["at"], r["question"], r["helpful"], r["comment"], r["generation"],
                     tuple(r["sources"] or ())) for r in table.to_pylist()]


def feedback_gold_lines(rows: Iterable[Feedback]) -> list[dict[str, object]]:
    """One draft gold line per question whose newest verdict is unhelpful (the same question
    asked twice, white space and case aside, is one question; a reader who changed their mind
    to Helpful has the last word): ``question`` filled, ``needle`` and ``ticket`` left for the
    person to write, with what the newest answer showed (``shown_sources``: an older answer's
    sources may be gone since) and its comments to go by, each once, oldest first."""
    ordered = sorted(rows, key=lambda row: row.at)
    last = {collapse(row.question).casefold(): row for row in ordered}
    lines: dict[str, dict[str, object]] = {}
    for row in ordered:
        key = collapse(row.question).casefold()
        if last[key].helpful:
            continue
        line = lines.setdefault(key, {"id": f"f{len(lines) + 1:03d}", "needle": "",
                                      "question": collapse(row.question), "ticket": "",
                                      "shown_sources": list(last[key].sources), "comments": []})
        comments = line["comments"]
        if row.comment and row.comment not in comments:  # type: ignore[operator]
            comments.append(row.comment)  # type: ignore[union-attr]
    return list(lines.values())


def feedback_jsonl(rows: Iterable[Feedback]) -> str:
    """The draft lines of :func:`feedback_gold_lines` as JSONL (empty when none)."""
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in feedback_gold_lines(rows))
