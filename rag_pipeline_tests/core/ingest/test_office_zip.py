"""Office zip limits: a bomb fails on the zip's directory before any XML is expanded."""

from __future__ import annotations

import pytest

from rag_pipeline.core.ingest.extracted import ExtractionError
from rag_pipeline.core.ingest.office_zip import MIB, ContentBudget, OfficeLimits, check_zip
from rag_pipeline_tests.core.ingest.archives import zipped


def test_a_member_expanding_past_the_ratio_fails_naming_it():
    bomb = zipped({"word/document.xml": b"a" * (4 * MIB)})  # 4 MiB of one byte: ~1000 times
    with pytest.raises(ExtractionError, match=r"zip bomb guard: word/document.xml expands "
                                              r"[\d,]+ times .* over the limit of 200"):
        check_zip(bomb, "DOCX", OfficeLimits())


def test_a_small_member_is_never_judged_by_its_ratio():
    check_zip(zipped({"styles.xml": b"a" * (MIB // 2)}), "DOCX", OfficeLimits())


def test_the_expanded_total_is_bounded():
    parts = zipped({f"part{i}.xml": bytes(range(256)) * 400 for i in range(3)})  # 3 x 102,400
    with pytest.raises(ExtractionError, match="the XLSX expands to 307,200 bytes, over the limit "
                                              "of 300,000"):
        check_zip(parts, "XLSX", OfficeLimits(max_expanded_bytes=300_000))


def test_members_are_counted():
    with pytest.raises(ExtractionError, match="3 members in the DOCX, over the limit of 2"):
        check_zip(zipped({"a": b"", "b": b"", "c": b""}), "DOCX", OfficeLimits(max_members=2))


def test_not_a_zip_is_unreadable():
    with pytest.raises(ExtractionError, match="unreadable DOCX: BadZipFile"):
        check_zip(b"not a zip", "DOCX", OfficeLimits())


def test_the_budget_stops_at_the_first_limit_passed():
    budget = ContentBudget("XLSX", OfficeLimits(max_rows=2, max_cells=10))
    budget.add(rows=2, cells=4)
    with pytest.raises(ExtractionError, match="the XLSX holds more than 2 rows"):
        budget.add(rows=1)
    budget = ContentBudget("DOCX", OfficeLimits(max_chars=5))
    with pytest.raises(ExtractionError, match="the DOCX holds more than 5 characters"):
        budget.add(chars=6)


def test_a_limit_must_be_positive():
    with pytest.raises(ValueError, match="max_rows must be positive, got 0"):
        OfficeLimits(max_rows=0)


@pytest.mark.parametrize("kind", ["PPTX", "ODT", "ODP", "ODS", "EPUB"])
def test_every_zip_package_format_checks_its_zip_before_parsing(kind: str):
    from rag_pipeline.core.ingest.formats import format_named

    fmt = type(format_named(kind.lower()))(OfficeLimits())
    bomb = zipped({"mimetype": b"x", "content.xml": b"a" * (4 * MIB)})  # Planted: ~1000 times
    with pytest.raises(ExtractionError, match=r"^zip bomb guard: content.xml expands [\d,]+ times"):
        fmt.extract(bomb, "bomb")
    many = type(format_named(kind.lower()))(OfficeLimits(max_members=2))
    with pytest.raises(ExtractionError, match=f"^zip bomb guard: 3 members in the {kind}, over "
                                              "the limit of 2$"):
        many.extract(zipped({"a": b"", "b": b"", "c": b""}), "many")
