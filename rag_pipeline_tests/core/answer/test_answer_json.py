"""Tests for ``rag_pipeline.core.answer.answer_json``: every field of an answer and a refusal, written out."""

from __future__ import annotations

from rag_pipeline.core.answer.answer import Answer
from rag_pipeline.core.answer.answer_json import answer_from_json, answer_json
from rag_pipeline.core.answer.citations import Citation
from rag_pipeline.core.answer.quoted import QuotedSentence

CITATION = Citation(
    index=1, document_id="guide/config.md", document_name="Configuring Frobnicator",
    locator_label="Configuring Frobnicator > Timeouts", fragment="#char=113,203", start=113, end=203,
    quote="Every network call gives up after seventeen seconds.", cosine_distance=0.3125,
    url="https://docs.example/guide/config.md#char=113,203",
    locations=("guide/config.md#char=113,203", "guide/faq.md#char=49,139"), section="Timeouts",
    left_out=("1 comment(s) left out (reviewers' remarks)",))


QUOTED = QuotedSentence("Every network call gives up after seventeen seconds.", 1, 113, 166, 0.71,
                        "#char=113,166")


def test_an_answer_keeps_every_citation_field_and_timings_in_milliseconds():
    answer = Answer("how long before a timeout", True, None, 0.625, "header|m@1", [CITATION],
                    "Sources: ...", 0.3125, False, timings={"embed_question": 0.0081234, "total": 0.0125},
                    generation="20261130T112142Z-0a1b2c3d", quoted=[QUOTED])
    assert answer_json(answer) == {
        "question": "how long before a timeout", "answered": True, "reason": None,
        "threshold": 0.625, "partition": "header|m@1", "generation": "20261130T112142Z-0a1b2c3d",
        "closest_distance": 0.3125, "reranked": False,
        "citations": [{
            "index": 1, "document_id": "guide/config.md", "document_name": "Configuring Frobnicator",
            "locator_label": "Configuring Frobnicator > Timeouts", "fragment": "#char=113,203",
            "from": 113, "to": 203, "quote": "Every network call gives up after seventeen seconds.",
            "cosine_distance": 0.3125, "url": "https://docs.example/guide/config.md#char=113,203",
            "locations": ["guide/config.md#char=113,203", "guide/faq.md#char=49,139"],
            "section": "Timeouts", "left_out": ["1 comment(s) left out (reviewers' remarks)"],
            "table_header": "", "identifier": "",
            "shown": "Every network call gives up after seventeen seconds.",
            # sha256("Every network call gives up after seventeen seconds.")[:16]
            "quote_digest": "6aaf8bec687b9d85"}],
        "prompt": "Sources: ...", "answer": None,
        "quoted_answer": [{"text": "Every network call gives up after seventeen seconds.",
                           "citation": 1, "from": 113, "to": 166, "fragment": "#char=113,166",
                           "shown": "Every network call gives up after seventeen seconds.",
                           "columns": "", "quote_digest": "6aaf8bec687b9d85"}],
        "timings_ms": {"embed_question": 8.123, "total": 12.5}, "unheld_identifiers": [],
    }
    # What `ask` prints from a running serve's JSON is the same answer (timings rounded to us).
    back = answer_from_json(answer_json(answer))
    assert back == Answer("how long before a timeout", True, None, 0.625, "header|m@1", [CITATION],
                          "Sources: ...", 0.3125, False,
                          timings={"embed_question": 0.008123, "total": 0.0125},
                          generation="20261130T112142Z-0a1b2c3d", quoted=[QUOTED])


def test_a_markdown_quote_is_shown_as_a_reader_sees_it_and_read_back():
    from dataclasses import replace

    cited = replace(CITATION, quote="Calls give up after **17 s** ([timeouts](t.md)).",
                    shown_quote="Calls give up after 17 s (timeouts).")
    quoted = replace(QUOTED, text="Calls give up after **17 s**.", shown="Calls give up after 17 s.")
    answer = Answer("timeout", True, None, 0.625, "header|m@1", [cited], "Sources: ...", 0.3125, False,
                    quoted=[quoted])
    written = answer_json(answer)
    assert [(c["quote"], c["shown"]) for c in written["citations"]] == [
        ("Calls give up after **17 s** ([timeouts](t.md)).", "Calls give up after 17 s (timeouts).")]
    assert [(q["text"], q["shown"]) for q in written["quoted_answer"]] == [
        ("Calls give up after **17 s**.", "Calls give up after 17 s.")]
    back = answer_from_json(written)
    assert (back.citations, back.quoted) == ([cited], [quoted])


def test_a_refusal_has_no_citations_and_no_prompt():
    reason = 'NO ANSWER: nothing under cosine distance 0.625 for "capital of france" (closest: 0.943)'
    answer = Answer("capital of france", False, reason, 0.625, "header|m@1", [], None, 0.9431, False)
    assert answer_json(answer) == {
        "question": "capital of france", "answered": False, "reason": reason, "threshold": 0.625,
        "partition": "header|m@1", "generation": "", "closest_distance": 0.9431, "reranked": False,
        "citations": [],
        "prompt": None, "answer": None, "quoted_answer": [], "timings_ms": {},
        "unheld_identifiers": []}
