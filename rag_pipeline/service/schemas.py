"""The JSON bodies the service answers with, as ``/openapi.json``, ``/docs`` and the HTTP
reference describe them.

The routes build their bodies themselves (an answer's is :func:`~rag_pipeline.core.answer.
answer_json.answer_json`'s, the object ``ask --json`` prints); these models only describe them,
and the tests hold each model's fields to the body a route sends.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Body(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class ErrorBody(_Body):
    """Every error: a 4xx (or 5xx) status and one line saying what was wrong."""

    error: str = Field(description="What was wrong and, where there is one, what to do.")


class CitationBody(_Body):
    """One source ``[n]`` of an answer: the exact passage and where it is."""

    index: int = Field(description="n, as the answer cites it: `[n]`.")
    document_id: str = Field(description="The document's path in the corpus (an archive's or a "
                                         "mail's member: `docs.zip/guide.md`).")
    document_name: str = Field(description="The document's title.")
    locator_label: str = Field(description="`Title > Section`: what a reader is shown as the place.")
    fragment: str = Field(description="The locator: `#char=from,to`, `#page=N`, `#slide=N`, "
                                      "`#t=start,end`, `#sheet=...&range=A4:D4`.")
    from_: int = Field(alias="from", description="Where the quote starts in the document's "
                                                 "extracted text (a character offset).")
    to: int = Field(description="Where it ends: `canonical_text[from:to] == quote`.")
    quote: str = Field(description="The passage, exactly as the document's text holds it.")
    cosine_distance: float = Field(description="The passage's distance to the question.")
    url: str = Field(description="The document's URL with the fragment (`--base-url`, else its "
                                 "file's URI).")
    locations: list[str] = Field(description="Every place this passage occurs (`document_id` "
                                             "percent-encoded, then the fragment).")
    section: str = Field(description="The section the passage is in.")
    left_out: list[str] = Field(description="What the document's reading left out or may have "
                                            "read wrongly where the passage is.")
    table_header: str = Field(description="The header row of the table whose rows the quote "
                                          "holds without it (`\"\"`: none).")
    identifier: str = Field(description="The code or option of the question the quote holds "
                                        "verbatim (`\"\"`: none).")
    shown: str = Field(description="The quote's words as a reader sees them (Markdown's markup "
                                   "left out).")
    quote_digest: str = Field(description="16 hex digits of the quote's SHA-256: a link to the "
                                          "place carries it.")


class QuotedSentenceBody(_Body):
    """A sentence of the sources that best answers the question."""

    text: str = Field(description="The sentence, exactly as the source holds it.")
    citation: int = Field(description="The `index` of the citation it is in.")
    from_: int = Field(alias="from", description="Where it starts in the document's text.")
    to: int = Field(description="Where it ends.")
    fragment: str = Field(description="Its own locator.")
    shown: str = Field(description="Its words as a reader sees them.")
    columns: str = Field(description="The header row of its table row (`\"\"`: none).")
    quote_digest: str = Field(description="16 hex digits of the sentence's SHA-256.")


class AnswerBody(_Body):
    """An answer with its citations, or a refusal (`answered` false, no citation)."""

    question: str = Field(description="The question as answered.")
    answered: bool = Field(description="False: refused (nothing under the cut, or a code the "
                                       "question names is held by no passage).")
    reason: str | None = Field(description="Why it was refused (null when answered).")
    threshold: float = Field(description="The cut: the largest cosine distance kept.")
    partition: str = Field(description="`chunker|model key` that answered.")
    generation: str = Field(description="The published index generation that answered.")
    closest_distance: float | None = Field(description="The best passage's distance (null: "
                                                       "no passage at all).")
    reranked: bool = Field(description="Whether a cross-encoder reordered the shortlist.")
    citations: list[CitationBody] = Field(description="The sources, best first.")
    prompt: str | None = Field(description="What a generator is given (null when refused).")
    answer: str | None = Field(description="The generated answer with its `[n]` linked (null "
                                           "without a generator, or when refused).")
    quoted_answer: list[QuotedSentenceBody] = Field(description="The sentences that best answer "
                                                                "it (none when refused).")
    timings_ms: dict[str, float] = Field(description="Milliseconds per stage; an asker "
                                                     "restricted by `[access]` gets `request` "
                                                     "alone, in whole milliseconds.")
    unheld_identifiers: list[str] = Field(description="Codes the question names that no "
                                                      "passage holds.")


class FeedbackStoredBody(_Body):
    """A verdict stored in the `feedback` table."""

    stored: bool = Field(description="Always true: an error is an error body.")
    generation: str = Field(description="The generation of the answer judged: the one the "
                                        "request named, else the asker's last answer to this "
                                        "question.")
    sources: list[str] = Field(description="The sources that answer showed (`document_id` then "
                                           "the fragment).")
    at: str = Field(description="When it was stored (ISO 8601, UTC).")


class SessionBody(_Body):
    """Who a session is for (`groups` null: everything, no `[access]` declared)."""

    name: str = Field(description="The token's name.")
    groups: list[str] | None = Field(description="The token's groups (null: every document).")


class SessionStateBody(_Body):
    """Whether the request is signed in, and as whom."""

    signed_in: bool = Field(description="Whether a token or a session cookie signed it in.")
    name: str | None = Field(default=None, description="The token's name (signed in only).")
    groups: list[str] | None = Field(default=None, description="Its groups (signed in only; "
                                                               "null: every document).")


class SignedOutBody(_Body):
    """The session ended."""

    signed_out: bool = Field(description="Always true.")
