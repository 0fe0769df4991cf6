"""The JSON form of an answer: one function for ``ask --json`` and the service's ``/ask``."""

from __future__ import annotations

from typing import Any

from rag_pipeline.core.answer.answer import Answer
from rag_pipeline.core.answer.citations import quote_digest


def answer_json(answer: Answer) -> dict[str, Any]:
    """The answer as a JSON-ready dict; ``timings_ms`` holds milliseconds per stage;
    ``quote_digest`` of a citation or quoted sentence: :func:`quote_digest` of its text, which
    a link to its place carries."""
    return {
        "question": answer.question, "answered": answer.answered, "reason": answer.reason,
        "threshold": answer.cut, "partition": answer.partition,
        "generation": answer.generation,
        "closest_distance": answer.closest_distance, "reranked": answer.reranked,
        "citations": [{
            "index": c.index, "document_id": c.document_id, "document_name": c.document_name,
            "locator_label": c.locator_label, "fragment": c.fragment, "from": c.start,
            "to": c.end, "quote": c.quote, "cosine_distance": c.cosine_distance, "url": c.url,
            "locations": list(c.locations), "section": c.section,
            "left_out": list(c.left_out), "table_header": c.table_header,
            "identifier": c.identifier, "shown": c.shown_quote or c.quote,
            "quote_digest": quote_digest(c.quote)}
            for c in answer.citations],
        "prompt": answer.prompt,
        "answer": answer.rendered_answer,
        "quoted_answer": [{**q.to_json(), "quote_digest": quote_digest(q.text)} for q in answer.quoted],
        "timings_ms": {k: round(v * 1000, 3) for k, v in answer.timings.items()},
        "unheld_identifiers": list(answer.unheld),
    }


def answer_from_json(data: dict[str, Any]) -> Answer:
    """The answer :func:`answer_json` wrote (``prompt`` and the generated answer as text;
    timings back in seconds): how ``ask`` prints an answer a running ``serve`` gave."""
    from rag_pipeline.core.answer.citations import Citation
    from rag_pipeline.core.answer.quoted import QuotedSentence

    citations = [Citation(index=c["index"], document_id=c["document_id"],
                          document_name=c["document_name"], locator_label=c["locator_label"],
                          fragment=c["fragment"], start=c["from"], end=c["to"], quote=c["quote"],
                          cosine_distance=c["cosine_distance"], url=c["url"],
                          locations=tuple(c["locations"]), section=c.get("section", ""),
                          left_out=tuple(c.get("left_out", ())),
                          table_header=c.get("table_header", ""),
                          identifier=c.get("identifier", ""),
                          shown_quote="" if c.get("shown", c["quote"]) == c["quote"] else c["shown"])
                 for c in data["citations"]]
    return Answer(question=data["question"], answered=data["answered"], reason=data["reason"],
                  cut=data["threshold"], partition=data["partition"], citations=citations,
                  prompt=data["prompt"], closest_distance=data["closest_distance"],
                  reranked=data["reranked"], rendered_answer=data["answer"],
                  timings={k: v / 1000 for k, v in data["timings_ms"].items()},
                  generation=data.get("generation", ""),
                  quoted=[QuotedSentence(q["text"], q["citation"], q["from"], q["to"],
                                         fragment=q.get("fragment", ""),
                                         shown="" if q.get("shown", q["text"]) == q["text"] else q["shown"],
                                         columns=q.get("columns", ""))
                          for q in data.get("quoted_answer", [])],
                  unheld=tuple(data.get("unheld_identifiers", ())))
