"""What one run changed in the corpus: the reconciliation report.

Every document of the new listing is ``added``, ``changed``, ``renamed`` (the same content under
another id: its record, and so its vectors, are kept), ``unchanged`` or ``failed``; every
document of the previous state that the listing no longer holds, and that no rename took, is
``deleted``. An entry that is no document (no format reads it, a symlink) is ``skipped``,
with why. A hidden name the listing left out (a segment starting with ``.``; a hidden folder
once, not its files) is ``hidden``: not part of the corpus, but named. The report is one
table (``reconciliation``, one row per document and hidden name), the run's metadata and
``status``'s last lines; the shrink guard (:func:`check_shrink`) reads the same counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from rag_pipeline.core.ingest.records import DocumentRecord
from rag_pipeline.core.text.arguments import listed as listed_names  # `listed` is a count here

DEFAULT_MAX_SHRINK = 0.5
"""A run that would drop more than half the documents of the last one is refused unless
``--allow-shrink`` is given: a corpus that vanished looks like that."""


class Change(StrEnum):
    ADDED = "added"
    CHANGED = "changed"
    RENAMED = "renamed"
    DELETED = "deleted"
    UNCHANGED = "unchanged"
    FAILED = "failed"
    SKIPPED = "skipped"
    HIDDEN = "hidden"


HIDDEN_DETAIL = "a name starting with '.': not part of the corpus"
LEFT_THE_INDEX = "it was indexed before and leaves the index"
"""Ends the detail of a document that was indexed and is now failed or skipped."""


@dataclass(frozen=True)
class Reconciled:
    """One row of the report: a document and what this run did with it.

    Attributes:
        change: What happened to it.
        document_id: Its id now (for ``deleted``, the id it had).
        previous_id: For ``renamed``, the id it had; else ``""``.
        detail: For ``failed`` and ``skipped``, the reason (and whether a failure was
            retried); for ``hidden``, :data:`HIDDEN_DETAIL`; else ``""``.
    """

    change: str
    document_id: str
    previous_id: str = ""
    detail: str = ""


@dataclass(frozen=True)
class Reconciliation:
    """The report of one run over one source (``revision``: the git commit it read)."""

    source: str
    revision: str | None
    rows: tuple[Reconciled, ...]

    def ids(self, change: Change) -> list[str]:
        return [r.document_id for r in self.rows if r.change == change.value]

    def counts(self) -> dict[str, int]:
        """Documents per change, every change named (``0`` when none)."""
        return {c.value: sum(1 for r in self.rows if r.change == c.value) for c in Change}

    def summary(self) -> str:
        """``added 1, changed 0, renamed 1, deleted 2, unchanged 14, failed 0, skipped 1,
        hidden 1``."""
        return counts_summary(self.counts())


def counts_summary(counts: Mapping[str, int]) -> str:
    """Documents per change as :meth:`Reconciliation.summary` writes them, in the order of
    :class:`Change` (a change ``counts`` lacks is 0)."""
    return ", ".join(f"{change.value} {counts.get(change.value, 0)}" for change in Change)


def deleted_rows(previous: Iterable[DocumentRecord], listed: set[str],
                 renamed_from: set[str]) -> list[Reconciled]:
    """``deleted`` rows: previous documents neither listed now nor renamed. A file skipped
    before is one too, its detail saying so: it leaves the list of what was not indexed, and
    the report says why."""
    return [Reconciled(Change.DELETED.value, r.document_id,
                       detail=f"skipped before ({r.error})" if r.skipped else "")
            for r in previous if r.document_id not in listed and r.document_id not in renamed_from]


SERVED_CHANGES = (Change.ADDED, Change.CHANGED, Change.RENAMED, Change.DELETED)


def served_changes(before: Mapping[str, str], after: Mapping[str, str]) -> dict[str, int]:
    """What one served documents table changed against another, each as ``document id ->
    content sha256`` of its documents read whole: a new id ``added`` (``renamed`` when it has
    the content of an id gone), an id with other content ``changed``, an id gone ``deleted``.
    Unlike a run's report it compares what two generations served, so it counts what a
    stopped index read and the next one published."""
    gone = {digest: document for document, digest in before.items() if document not in after}
    new = [document for document in after if document not in before]
    renamed = {document for document in new if after[document] in gone}
    taken = {after[document] for document in renamed}
    return {Change.ADDED.value: len(new) - len(renamed),
            Change.CHANGED.value: sum(1 for document, digest in after.items()
                                      if document in before and before[document] != digest),
            Change.RENAMED.value: len(renamed),
            Change.DELETED.value: sum(1 for document in before
                                      if document not in after and before[document] not in taken)}


class CorpusShrankError(Exception):
    """A run would publish far fewer documents than the last one: refused, nothing written."""


SHRINK_ACCEPTED = ("index with --allow-shrink (in the UI: `allow_shrink: true` in the corpus "
                   "resource's config)")
"""How a refused shrink is accepted, on the command line and in the UI."""


def check_shrink(source: str, before: int, after: int, max_shrink: float = DEFAULT_MAX_SHRINK,
                 allow_shrink: bool = False) -> None:
    """Refuses a run whose readable documents fell from ``before`` to ``after`` by more than
    the share ``max_shrink`` of ``before`` (or to none), unless ``allow_shrink``.

    Raises:
        ValueError: If ``max_shrink`` is not in [0, 1].
        CorpusShrankError: With the counts and how to accept them.
    """
    if not 0.0 <= max_shrink <= 1.0:
        raise ValueError(f"max_shrink must be a share in [0, 1], got {max_shrink}")
    if allow_shrink or before == 0:
        return
    if after == 0:
        raise CorpusShrankError(f"the corpus {source} holds no readable document now (the last "
                                f"index had {before}): refused, the served index is as it was; "
                                f"if it is meant to be empty, {SHRINK_ACCEPTED}")
    if before - after > max_shrink * before:
        raise CorpusShrankError(
            f"the corpus {source} shrank from {before} to {after} readable documents, more than "
            f"{max_shrink:.0%} fewer: refused, the served index is as it was; if the documents "
            f"were removed on purpose, {SHRINK_ACCEPTED}")


def check_corpus_kept(report: Reconciliation, before_ok: int, after_ok: int, listed: int,
                      max_shrink: float = DEFAULT_MAX_SHRINK, allow_shrink: bool = False) -> None:
    """The guard a documents run passes before it writes anything: a source that lists no
    entry at all, or far fewer readable documents than the last run had.

    Raises:
        CorpusShrankError: With the counts and how to accept them.
    """
    if listed == 0 and not allow_shrink:
        hidden = report.ids(Change.HIDDEN)
        holds = (f"holds only hidden names ({listed_names(hidden, 5)}: names starting with '.' are "
                 "not part of a corpus)" if hidden else "is empty")
        raise CorpusShrankError(f"the corpus {report.source} {holds}: nothing is indexed, the "
                                f"served index is as it was; if it is meant to be empty, "
                                f"{SHRINK_ACCEPTED}")
    check_shrink(report.source, before_ok, after_ok, max_shrink, allow_shrink)


def reconciliation_table(report: Reconciliation, run_at: str):
    """The report as the ``reconciliation`` table: one row per document and hidden name with its
    change, its previous id (renames), the detail (a failure, a skip, a hidden name), the source
    and the revision it read."""
    import pyarrow as pa

    rows = report.rows
    return pa.table({
        "change": pa.array([r.change for r in rows], pa.string()),
        "document_id": pa.array([r.document_id for r in rows], pa.string()),
        "previous_id": pa.array([r.previous_id or None for r in rows], pa.string()),
        "detail": pa.array([r.detail or None for r in rows], pa.string()),
        "source": pa.array([report.source] * len(rows), pa.string()),
        "revision": pa.array([report.revision] * len(rows), pa.string()),
        "run_at": pa.array([run_at] * len(rows), pa.string()),
    })


def reconciliation_markdown(report: Reconciliation, ids_per_change: int = 20) -> str:
    """The report as a Markdown table: each change, its count and (up to ``ids_per_change``)
    its ids, a rename as ``old -> new``."""
    lines = ["| change | documents | ids |", "| --- | ---: | --- |"]
    for change in Change:
        rows = [r for r in report.rows if r.change == change.value]
        shown = [f"{r.previous_id} -> {r.document_id}" if r.previous_id else r.document_id
                 for r in rows[:ids_per_change]]
        more = f" and {len(rows) - ids_per_change} more" if len(rows) > ids_per_change else ""
        cell = (", ".join(shown) + more).replace("|", "\\|")
        lines.append(f"| {change.value} | {len(rows)} | {cell} |")
    return "\n".join(lines)


def report_from_table(table) -> tuple[Reconciliation, str] | None:
    """The report a ``reconciliation`` table holds and when its run wrote it (``None`` for an
    empty table)."""
    rows = table.to_pylist()
    if not rows:
        return None
    report = Reconciliation(rows[0]["source"], rows[0]["revision"], tuple(
        Reconciled(r["change"], r["document_id"], r["previous_id"] or "", r["detail"] or "")
        for r in rows))
    return report, rows[0]["run_at"]


def report_lines(report: Reconciliation, run_at: str, ids_per_change: int = 10) -> list[str]:
    """What ``status`` prints: the counts on one line, then the ids of every change but
    ``unchanged`` and ``skipped`` (``status`` lists the skipped documents with the failed ones):
    a rename as ``old -> new``, a failure with its reason."""
    at = f" at {report.revision}" if report.revision else ""
    lines = [f"last reconciliation ({report.source}{at}, {run_at}): {report.summary()}"]
    for change in Change:
        if change in (Change.UNCHANGED, Change.SKIPPED):
            continue
        rows = [r for r in report.rows if r.change == change.value]
        for r in rows[:ids_per_change]:
            shown = f"{r.previous_id} -> {r.document_id}" if r.previous_id else r.document_id
            lines.append(f"  {change.value:9s} {shown}" + (f": {r.detail}" if r.detail else ""))
        if len(rows) > ids_per_change:
            lines.append(f"  {change.value:9s} ... and {len(rows) - ids_per_change} more "
                         "(select * from reconciliation)")
    return lines
