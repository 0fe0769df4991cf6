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


@pytest.mark.parametrize("analyzer", list(Analyzer))
def test_decomposed_accents_and_invisible_characters_give_the_words_a_reader_types(analyzer):
    # Found by an international team: "Zu\u0308rich" (combining diaeresis, as macOS and many
    # PDFs write it), "pass\u200bword" and "data\u00adbase" shared no term with the words typed.
    written = "Zu\u0308rich re\u0301sume\u0301 pass\u200bword data\u00adbase nai\u0308ve \ufeffbom"
    typed = "Zürich résumé password database naïve bom"
    assert analyze(written, analyzer) == analyze(typed, analyzer)
    assert {Analyzer.PLAIN: ["z", "rich", "r", "sum", "password", "database", "na", "ve", "bom"],
            Analyzer.ENGLISH: ["zürich", "résumé", "password", "databas", "naïv", "bom"],
            Analyzer.CODE: ["zürich", "résumé", "password", "databas", "naïv", "bom"]}[
        analyzer] == analyze(typed, analyzer)
