"""How messages list names."""

from __future__ import annotations

from rag_pipeline.core.text.arguments import listed, repeated


def test_names_are_listed_with_commas_and_cut_after_shown():
    assert listed(["a", "b", 3]) == "a, b, 3"
    assert listed([]) == ""
    assert listed(["a", "b", "c"], 3) == "a, b, c"
    assert listed(["a", "b", "c", "d", "e"], 2) == "a, b and 3 more"


def test_repeated_names_are_each_named_once_sorted():
    assert repeated(["b", "a", "b", "c", "a", "b"]) == ["a", "b"]
    assert repeated(["a", "b"]) == []
