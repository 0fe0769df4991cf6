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


def test_cjk_runs_are_cut_into_bigrams_so_a_question_without_spaces_meets_the_passage():
    """Found by a team writing Chinese and Japanese: a run of CJK characters between punctuation
    was one term (a whole Japanese sentence), so BM25 found nothing for any question."""
    from rag_pipeline.core.text.analyzers import words

    assert words("备份文件保留十四天") == ["备份", "份文", "文件", "件保", "保留", "留十", "十四", "四天"]
    assert words("pam和nss的配置, 水") == ["pam", "和", "nss", "的配", "配置", "水"]
    assert words("백업은 며칠 보관") == ["백업", "업은", "며칠", "보관"]
    assert words("バックアップの設定") == ["バッ", "ック", "クア", "アッ", "ップ", "プの", "の設", "設定"]
    assert words("a plain English line, x y") == ["plain", "English", "line"]  # as before
    passage = analyze("数据库备份每天凌晨三点自动执行，备份文件保留十四天。", Analyzer.ENGLISH)
    question = analyze("备份文件保留多少天", Analyzer.ENGLISH)
    assert set(question) & set(passage) == {"备份", "份文", "文件", "件保", "保留"}
