"""An answer: the question, the gate's decision with its cited sources, the prompt and the
optional generated prose; what ``ask`` returns, the service sends as JSON and the CLI prints.

Apart from :mod:`.ask` (which produces it) so that printing an answer a running service gave
needs no retrieval code.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rag_pipeline.core.answer.citations import Citation
from rag_pipeline.core.answer.generation import CheckedAnswer
from rag_pipeline.core.answer.quoted import QuotedSentence


@dataclass
class Answer:
    question: str
    answered: bool
    reason: str | None
    cut: float
    partition: str
    citations: list[Citation]
    prompt: str | None
    closest_distance: float | None
    reranked: bool
    generated: CheckedAnswer | None = None
    rendered_answer: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    generation: str = ""
    """The published index generation that answered."""
    quoted: list[QuotedSentence] = field(default_factory=list)
    """The sentences of the sources that best answer the question (:mod:`.quoted`); none for
    a refusal."""
    unheld: tuple[str, ...] = ()
    """The codes the question names that no passage holds beside their look-alikes: why it was
    refused (a record number), or what the answer lacks (a host one digit off, a record beside
    another code it names)."""
