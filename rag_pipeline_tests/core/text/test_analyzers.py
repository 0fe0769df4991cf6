"""Tests for ``rag_pipeline.core.text.analyzers``: the code analyzer keeps code tokens whole."""

from __future__ import annotations

import pytest

from rag_pipeline.core.text.analyzers import Analyzer, analyze, code_tokens


@pytest.mark.parametrize(("text", "tokens"), [
    ("why does [0] * -5 quietly give me []?", ["[0]", "*", "-5", "[]"]),
    ("my asserts vanish with -O, is that a bug??", ["-o"]),
    ("defining __iadd__ (see *args and **kwargs).", ["*args", "**kwargs"]),
    ('the "for" loop calls f(x). then x.y != z', ["f(x)", "x.y", "!="]),
    ("plain words only, nothing else.", []),
])
def test_code_tokens(text: str, tokens: list[str]):
    assert code_tokens(text) == tokens


def test_code_analyzer_is_english_terms_then_code_tokens():
    text = "Why does [0] * -5 give []?"
    assert analyze(text, Analyzer.ENGLISH) == ["whi", "doe", "give"]
    assert analyze(text, Analyzer.CODE) == ["whi", "doe", "give", "[0]", "*", "-5", "[]"]
    # __iadd__ is a word for the English analyzer already, so the code analyzer adds nothing.
    assert analyze("x.__iadd__(y)", Analyzer.CODE) == ["__iadd__", "x.__iadd__(y)"]


def test_analyzer_names():
    assert [a.value for a in Analyzer] == ["plain", "english", "code"]
