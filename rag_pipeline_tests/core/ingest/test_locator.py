"""Locators: each notation parsed and formatted by its one class, round-tripping exactly."""

from __future__ import annotations

import pytest

from rag_pipeline.core.ingest.locator import (
    CharLocator,
    InvalidLocator,
    Locator,
    PageLocator,
    RangeLocator,
    RowLocator,
    TableRowsLocator,
    TimeLocator,
    locator_kind,
    parse_fragment,
    parse_locator,
)

CASES = [
    ("page=23", PageLocator(23)),
    ("char=10,250", CharLocator(10, 250)),
    ("t=12.500,15.000", TimeLocator(12500, 15000)),
    ("t=0.040,61.005", TimeLocator(40, 61005)),
    ("row=5", RowLocator(5, 5)),
    ("row=5-9", RowLocator(5, 9)),
    ("rows=3-17", TableRowsLocator(3, 17)),
    ("rows=4-4", TableRowsLocator(4, 4)),
    ("table=2&rows=4-4", TableRowsLocator(4, 4, table=2)),
    # The sheet's real name, percent-encoded in the notation.
    ("sheet=Budget%202026%21&range=A8:D12", RangeLocator("Budget 2026!", 1, 8, 4, 12)),
    ("sheet=S&range=AA1:AB30", RangeLocator("S", 27, 1, 28, 30)),
]


@pytest.mark.parametrize(("text", "locator"), CASES)
def test_each_notation_parses_to_its_value_and_formats_back(text: str, locator: Locator):
    assert parse_locator(text) == locator
    assert str(locator) == text
    assert locator.fragment == f"#{text}"
    assert parse_fragment(f"#{text}") == locator


def test_a_range_names_its_cells_and_its_sheet():
    located = parse_locator("sheet=Budget%202026%21&range=A8:D12")
    assert (located.sheet, located.cells) == ("Budget 2026!", "A8:D12")


@pytest.mark.parametrize("text", ["page=", "page=x", "page=3&x", "char=1", "t=1,", "row=1-",
                                  "rows=4", "rows=1-", "table=2", "table=&rows=1-2",
                                  "sheet=S&range=a1:b2", "slide=3", "", "=3"])
def test_anything_else_is_refused(text: str):
    with pytest.raises(InvalidLocator):
        parse_locator(text)


def test_a_new_kind_is_one_registered_class():
    from dataclasses import dataclass

    @locator_kind("test-slide")
    @dataclass(frozen=True)
    class SlideLocator(Locator):
        slide: int

        @classmethod
        def parse(cls, text: str) -> SlideLocator:
            return cls(int(text.removeprefix("test-slide=")))

        def __str__(self) -> str:
            return f"test-slide={self.slide}"

    assert parse_locator("test-slide=4") == SlideLocator(4)
    with pytest.raises(ValueError, match="a locator kind 'test-slide' is already registered"):
        locator_kind("test-slide")(SlideLocator)
