"""Tests for ``rag_pipeline.core.text.sentence_ends``: where content splits into sentences."""

from __future__ import annotations

from rag_pipeline.core.answer.quoted import sentence_spans
from rag_pipeline.core.retrieval.sentences import split_sentences
from rag_pipeline.core.text.sentence_ends import MIN_SENTENCE_CHARS, SENTENCE_END, sentence_length


def test_sentences_end_at_a_stop_with_its_closing_quotes_or_at_a_blank_line():
    text = 'He said "stop." Then left (quietly.) Why?\nNo.\n\nNext part'
    assert SENTENCE_END.split(text) == ['He said "stop.', "Then left (quietly.", "Why?",
                                        "No.", "Next part"]
    assert MIN_SENTENCE_CHARS == 20


def test_the_scorer_and_the_quoted_answer_split_a_mail_the_same_way():
    mail = ("The office moves to the third floor on Monday.\n\nDesks are numbered 1 to 40 "
            "instead of 21.\n\nRegards,\nOps")
    pieces = ["The office moves to the third floor on Monday.",
              "Desks are numbered 1 to 40 instead of 21. Regards, Ops"]
    assert split_sentences(mail) == pieces
    assert [" ".join(mail[s:e].split()) for s, e in sentence_spans(mail)] == pieces


def test_a_stop_after_an_abbreviation_or_before_a_small_letter_ends_no_sentence():
    """Found by new users: "cf." cut a drafted gold sentence in two, and "9 a.m." a quote."""
    text = ("The proof is long, cf. Smith and Jones for a shorter one. As Lee et al. show, it "
            "holds (Fig. 3). The desk opens at 9 a.m. and closes at 5 p.m. Bring e.g. a badge. "
            "Done! then more")
    assert SENTENCE_END.split(text) == [
        "The proof is long, cf. Smith and Jones for a shorter one.",
        "As Lee et al. show, it holds (Fig. 3).",
        "The desk opens at 9 a.m. and closes at 5 p.m.",
        "Bring e.g. a badge.",
        "Done!",
        "then more"]
    assert split_sentences("See CF. Smith for the whole proof of it.  The rest is easy to check.") == [
        "See CF. Smith for the whole proof of it.", "The rest is easy to check."]


def test_chinese_and_japanese_stops_end_sentences_and_a_guillemets_stop_does_not():
    """Found by an international team: a Japanese answer was one paragraph of three sentences
    (``。`` ended none, and each was under 20 characters), and a French one was cut at the
    ``.`` of ``« . »``."""
    japanese = "日本語の説明書です。これは二番目の文で、少し長くなっています。最後の文はここです！"
    pieces = ["日本語の説明書です。", "これは二番目の文で、少し長くなっています。", "最後の文はここです！"]
    assert split_sentences(japanese) == pieces
    assert [japanese[s:e] for s, e in sentence_spans(japanese)] == pieces
    chinese = "「请先阅读手册。」然后安装软件包并重新启动服务。"
    assert SENTENCE_END.split(chinese) == ["「请先阅读手册。", "然后安装软件包并重新启动服务。", ""]
    french = ("Afficher les fichiers, sauf « . » et « .. » qui sont omis par défaut. "
              "Voici la seconde phrase du texte.")
    assert [french[s:e] for s, e in sentence_spans(french)] == [
        "Afficher les fichiers, sauf « . » et « .. » qui sont omis par défaut.",
        "Voici la seconde phrase du texte."]
    assert (sentence_length("日本語の説明書です。"), sentence_length("short one."),
            sentence_length("Zürich")) == (20, 10, 6)
