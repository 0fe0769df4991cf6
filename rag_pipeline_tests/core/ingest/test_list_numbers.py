"""Tests for ``rag_pipeline.core.ingest.list_numbers``: a list item's number in each format."""

from __future__ import annotations

import pytest

from rag_pipeline.core.ingest.list_numbers import ODF_FORMATS, list_number


@pytest.mark.parametrize(("number_format", "numbers", "shown"), [
    ("decimal", (1, 27), ["1", "27"]),
    ("lowerRoman", (4, 1999), ["iv", "mcmxcix"]),
    ("upperRoman", (9,), ["IX"]),
    ("upperLetter", (3,), ["C"]),
    ("bullet", (5,), ["5"]),  # no format of numbers: digits
])
def test_a_number_in_each_format(number_format: str, numbers: tuple[int, ...], shown: list[str]):
    assert [list_number(number_format, n) for n in numbers] == shown


def test_letters_past_z_as_word_synchronises_them_and_as_an_opendocument_list_does_not():
    numbers = (1, 26, 27, 28, 52, 53, 702, 703)
    assert [list_number("lowerLetter", n) for n in numbers] == [
        "a", "z", "aa", "bb", "zz", "aaa", "zzzzzzzzzzzzzzzzzzzzzzzzzzz", "aaaaaaaaaaaaaaaaaaaaaaaaaaaa"]
    assert [list_number("lowerLetter", n, letter_sync=False) for n in numbers] == [
        "a", "z", "aa", "ab", "az", "ba", "zz", "aaa"]


def test_each_opendocument_format_names_a_format_of_the_same_numbers():
    assert {odf: list_number(word, 4) for odf, word in ODF_FORMATS.items()} == {
        "1": "4", "a": "d", "A": "D", "i": "iv", "I": "IV"}
