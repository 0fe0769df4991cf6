"""Tests for ``rag_pipeline.core.ingest.reconcile``: the shrink guard's arithmetic at its edges,
and the report as a table, as Markdown and as ``status`` prints it, written out by hand."""

from __future__ import annotations

import pytest

from rag_pipeline.core.ingest.reconcile import (
    CorpusShrankError,
    Reconciled,
    Reconciliation,
    check_corpus_kept,
    check_shrink,
    reconciliation_markdown,
    reconciliation_table,
    report_from_table,
    report_lines,
    served_changes,
)

REPORT = Reconciliation("s3://docs/p", None, (
    Reconciled("added", "new.md"), Reconciled("changed", "edit.md"),
    Reconciled("deleted", "gone.md"), Reconciled("failed", "bad.pdf", detail="no text"),
    Reconciled("renamed", "b.md", "a.md"), Reconciled("unchanged", "keep.md"),
    Reconciled("skipped", "tool.exe", detail="no reader for .exe files"),
    Reconciled("hidden", ".git", detail="a name starting with '.': not part of the corpus")))


def test_the_shrink_guard_refuses_more_than_the_share_and_allows_it_when_asked():
    check_shrink("c", 10, 5)  # exactly half fewer: 5 <= 0.5 * 10, accepted
    with pytest.raises(CorpusShrankError, match="shrank from 10 to 4 readable documents, more "
                                                "than 50% fewer"):
        check_shrink("c", 10, 4)
    check_shrink("c", 10, 4, allow_shrink=True)
    check_shrink("c", 10, 8, max_shrink=0.2)
    with pytest.raises(CorpusShrankError, match="more than 10% fewer"):
        check_shrink("c", 10, 8, max_shrink=0.1)
    with pytest.raises(CorpusShrankError, match="holds no readable document now \\(the last "
                                                "index had 3\\)"):
        check_shrink("c", 3, 0, max_shrink=1.0)
    check_shrink("c", 0, 0)  # a first index has nothing to shrink from
    with pytest.raises(ValueError, match="max_shrink must be a share in \\[0, 1\\], got 1.5"):
        check_shrink("c", 10, 10, max_shrink=1.5)


def test_an_empty_listing_is_refused_unless_allowed():
    empty = Reconciliation("/srv/docs", None, ())
    with pytest.raises(CorpusShrankError, match="the corpus /srv/docs is empty"):
        check_corpus_kept(empty, 0, 0, 0)
    check_corpus_kept(empty, 0, 0, 0, allow_shrink=True)


def test_a_listing_of_only_hidden_names_is_refused_naming_them():
    # A folder renamed to .docs: "is empty" hid why.
    only_hidden = Reconciliation("/srv/docs", None, tuple(
        Reconciled("hidden", name, detail="a name starting with '.': not part of the corpus")
        for name in (".docs", ".git", ".a", ".b", ".c", ".d")))
    with pytest.raises(CorpusShrankError) as refused:
        check_corpus_kept(only_hidden, 12, 0, 0)
    assert str(refused.value) == (
        "the corpus /srv/docs holds only hidden names (.docs, .git, .a, .b, .c and 1 more: names "
        "starting with '.' are not part of a corpus): nothing is indexed, the served index is as "
        "it was; if it is meant to be empty, index with --allow-shrink (in the UI: "
        "`allow_shrink: true` in the corpus resource's config)")


def test_the_report_counts_every_change_and_round_trips_through_its_table():
    assert REPORT.counts() == {"added": 1, "changed": 1, "renamed": 1, "deleted": 1,
                               "unchanged": 1, "failed": 1, "skipped": 1, "hidden": 1}
    assert REPORT.summary() == ("added 1, changed 1, renamed 1, deleted 1, unchanged 1, failed 1, "
                                "skipped 1, hidden 1")
    table = reconciliation_table(REPORT, "2026-12-01T22:00:00.000000Z")
    assert table.column_names == ["change", "document_id", "previous_id", "detail", "source",
                                  "revision", "run_at"]
    assert report_from_table(table) == (REPORT, "2026-12-01T22:00:00.000000Z")
    assert report_from_table(table.slice(0, 0)) is None


def test_status_lines_and_markdown_name_the_ids():
    assert report_lines(REPORT, "T") == [
        "last reconciliation (s3://docs/p, T): added 1, changed 1, renamed 1, deleted 1, "
        "unchanged 1, failed 1, skipped 1, hidden 1",
        "  added     new.md", "  changed   edit.md", "  renamed   a.md -> b.md",
        "  deleted   gone.md", "  failed    bad.pdf: no text",
        "  hidden    .git: a name starting with '.': not part of the corpus"]
    assert reconciliation_markdown(REPORT).splitlines()[2:5] == [
        "| added | 1 | new.md |", "| changed | 1 | edit.md |", "| renamed | 1 | a.md -> b.md |"]
    many = Reconciliation("c", "abc", tuple(Reconciled("added", f"{i}.md") for i in range(12)))
    assert report_lines(many, "T", ids_per_change=2) == [
        "last reconciliation (c at abc, T): added 12, changed 0, renamed 0, deleted 0, "
        "unchanged 0, failed 0, skipped 0, hidden 0",
        "  added     0.md", "  added     1.md",
        "  added     ... and 10 more (select * from reconciliation)"]


def test_served_changes_count_what_two_served_tables_differ_in():
    before = {"a.md": "1", "b.md": "2", "c.md": "3", "old/d.md": "4"}
    after = {"a.md": "1", "b.md": "20", "new/d.md": "4", "e.md": "5"}
    assert served_changes(before, after) == {"added": 1, "changed": 1, "renamed": 1, "deleted": 1}
    assert served_changes({}, after) == {"added": 4, "changed": 0, "renamed": 0, "deleted": 0}
    assert served_changes(after, after) == {"added": 0, "changed": 0, "renamed": 0, "deleted": 0}
