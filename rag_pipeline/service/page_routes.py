"""The routes the page needs beside ``/ask``: document views, page images, originals, document
health and feedback.

``GET /documents/{id}`` shows a cited document as its format reads (:mod:`.views`),
``GET /page-images/{id}?page=N`` draws a PDF page, ``GET /originals/{id}`` is the file itself,
``GET /status/documents`` names the documents that failed or were skipped with their reasons,
and ``POST /feedback`` stores a verdict on an answer in the ``feedback`` table
(:mod:`rag_pipeline.core.evaluation.feedback`). Every document route resolves its document
through :func:`served_document`: a document of the served generation, or a 404.
"""

from __future__ import annotations

import json
import logging
import mimetypes
import os
import tempfile
import threading
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, field_validator

from rag_pipeline.core.answer.citations import QUOTE_DIGEST, quote_digest
from rag_pipeline.core.answer.question import check_question
from rag_pipeline.core.evaluation.feedback import (
    MAX_COMMENT_CHARS,
    Feedback,
    FeedbackFullError,
    append_feedback,
)
from rag_pipeline.core.index.query_db import publish_query_db
from rag_pipeline.core.index.store import DocumentInfo, PartitionIndex
from rag_pipeline.core.ingest.bom_text import text_charset
from rag_pipeline.core.ingest.formats import format_named
from rag_pipeline.core.ingest.formats.base import ContainerFormat
from rag_pipeline.core.ingest.formats.html import page_charset
from rag_pipeline.core.ingest.sources import S3Settings, SourceSettings, mirrors_dir
from rag_pipeline.core.runtime.recent import Recent
from rag_pipeline.core.storage.warehouse import Warehouse, utc_now
from rag_pipeline.service.auth import Principal, message_page, navigated, principal
from rag_pipeline.service.schemas import FeedbackStoredBody
from rag_pipeline.service.views import PAGED, ViewError, ViewRequest, page_png, path_url, render_document

log = logging.getLogger(__name__)

MAX_FEEDBACK_BYTES = 8 * 1024
"""A feedback body at most: a question (2,000 characters), a comment (2,000) and the verdict."""
RECENT_ANSWERS = 1024
FEEDBACK_PER_MINUTE = 30
"""Verdicts one principal may store a minute: each rewrites the whole table (its cost grows
with the rows held), so one holder posting in a loop must not keep the service busy."""
CHANGED_SINCE_CITED = ("This document has changed since the answer linking here quoted it: the "
                       "quoted words are no longer at that place, so nothing is marked. Ask the "
                       "question again to cite the document as it is now.")
INLINE_ORIGINALS = {".pdf", ".txt", ".md", ".csv", ".vtt", ".srt", ".png", ".jpg", ".jpeg"}
"""Originals a browser may show in the tab; any other (HTML above all: it would run as this
site) is sent as a download, and every original carries a sandboxing CSP."""


Asker = Annotated[Principal, Depends(principal)]
"""Who asks (:mod:`rag_pipeline.service.auth`): a document another group reads is, to this
asker, a document that does not exist."""


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": " ".join(message.split())}, status_code=status)


def _shown_error(request: Request, status: int, message: str) -> Response:
    """``_error``, or for a document link a browser opened itself, the same message as a page
    with the way back to the questions (it showed one line of JSON)."""
    if not navigated(request.scope, request.method):
        return _error(status, message)
    return message_page(status, "This view cannot be shown", message,
                        '<a href="/">Ask another question</a>')


def repeated_query_parameter(request: Request) -> str | None:
    """What is wrong with a request giving a query parameter more than once (which copy was
    meant is not ours to guess: a proxy or a log reading the first would see another request
    than the one served), or None."""
    params = request.query_params
    repeated = sorted((key, times) for key in set(params) if (times := len(params.getlist(key))) > 1)
    return f"{repeated[0][0]}: given {repeated[0][1]} times; give it once" if repeated else None


def _original_missing(document_id: str, view: ViewRequest) -> JSONResponse:
    """503 when the source of a document's original cannot be reached now (it may be there all
    the same: ask again), else 410: the original is gone or holds other bytes."""
    if view.unreachable:
        return _error(503, f"the original file of {document_id} cannot be read now: "
                           f"{view.unreachable}")
    return _error(410, f"the original file of {document_id} is gone or has changed since it was "
                       "indexed")


CONTAINER_WITHHELD = ("This file holds other documents (a mail's attachments, an archive's "
                      "members): under [access] its original file is not served, since it may "
                      "hold members no rule was read for.")
"""What a document view of an archive or a mail says in place of its original file's link, to
a reader ``[access]`` restricts (``/originals`` answers 404)."""


SPOOL_CHUNK_BYTES = 64 * 1024


def _spooled(data: bytes) -> Iterator[bytes]:
    """``data`` sent from an anonymous temporary file, a chunk at a time: a client that reads
    slowly, or stops reading, holds an open file rather than the whole original in memory (up
    to ``max_document_bytes`` each). The file is written at once, so the response holds no
    reference to ``data``; it is gone when the response ends, however it ends."""
    spool = tempfile.TemporaryFile()
    try:
        spool.write(data)
        spool.seek(0)
    except BaseException:
        spool.close()
        raise

    def chunks() -> Iterator[bytes]:
        with spool:
            while chunk := spool.read(SPOOL_CHUNK_BYTES):
                yield chunk

    return chunks()


def _disposition(kind: str, filename: str) -> str:
    """A ``Content-Disposition`` header naming ``filename`` (RFC 6266; as Starlette's files)."""
    quoted = quote(filename)
    return f"{kind}; filename*=utf-8''{quoted}" if quoted != filename else f'{kind}; filename="{filename}"'


NOT_THERE_NOW = (" (a link an answer gave leads here when its document was renamed, deleted or "
                 "could not be read when the index was built again: ask the question again; "
                 "/status/documents lists the documents that could not be read)")
"""Said after a document the served generation does not hold, to a link that was right once."""


class RecentAnswers:
    """The generation and sources of the last :data:`RECENT_ANSWERS` questions answered, per
    asker (name and groups), so a verdict is stored with what that person saw: never with
    sources another group was shown, and never telling one person whether another asked."""

    def __init__(self, size: int = RECENT_ANSWERS) -> None:
        # Two keys an answer: its question alone (the last answer to it) and with its generation.
        self._answers: Recent[tuple[str, frozenset[str] | None, str, str | None],
                              tuple[str, tuple[tuple[str, str], ...]]] = Recent(2 * size)

    def remember(self, body: dict[str, Any], groups: frozenset[str] | None = None,
                 asker: str = "") -> None:
        sources = tuple((c["document_id"], c["fragment"]) for c in body["citations"])
        shown = (body["generation"], sources)
        self._answers.put((asker, groups, body["question"], None), shown)
        self._answers.put((asker, groups, body["question"], body["generation"]), shown)

    def get(self, question: str, groups: frozenset[str] | None = None, asker: str = "",
            generation: str | None = None) -> tuple[str, tuple[tuple[str, str], ...]] | None:
        """The generation and the ``(document_id, fragment)`` sources of the last answer to
        ``question`` for ``asker`` of ``groups``, from ``generation`` when one is given (the
        answer a page showed, though the same question was answered from a newer generation
        since); None when not among the recent ones."""
        return self._answers.get((asker, groups, question, generation))


class FeedbackRate:
    """At most ``per_minute`` verdicts a principal in any sliding minute."""

    def __init__(self, per_minute: int = FEEDBACK_PER_MINUTE, clock: Any = None) -> None:
        import time

        self.per_minute = per_minute
        self.clock = clock or time.monotonic
        self._lock = threading.Lock()
        self._recent: dict[str, list[float]] = {}

    def admit(self, who: str) -> bool:
        now = self.clock()
        with self._lock:
            times = [t for t in self._recent.get(who, []) if now - t < 60.0]
            admitted = len(times) < self.per_minute
            if admitted:
                times.append(now)
            self._recent[who] = times
            if len(self._recent) > 10_000:  # principals that went quiet
                self._recent = {k: v for k, v in self._recent.items() if v and now - v[-1] < 60.0}
            return admitted


class QueryDbRefresher:
    """Brings ``rag.duckdb`` up to date after a feedback row, on one background thread at a
    time (rows arriving meanwhile are picked up by one more pass, never by a thread each)."""

    def __init__(self, warehouse: Warehouse) -> None:
        self.warehouse = warehouse
        self._lock = threading.Lock()
        self._running = False
        self._again = False
        self.passes = 0

    def request(self) -> None:
        with self._lock:
            if self._running:
                self._again = True
                return
            self._running = True
        # Not a daemon: a process leaving while DuckDB writes aborted (SIGABRT, "terminate
        # called"); interpreter exit waits for the pass instead (seconds at most).
        threading.Thread(target=self._run, name="feedback-publish", daemon=False).start()

    def _run(self) -> None:
        while True:
            try:
                publish_query_db(self.warehouse)
            except Exception as exc:  # noqa: BLE001 - the row is in Parquet; the next publish shows it
                log.warning("feedback stored, rag.duckdb not refreshed: %s: %s", type(exc).__name__, exc)
            with self._lock:
                self.passes += 1
                if not self._again:
                    self._running = False
                    return
                self._again = False


class FeedbackRequest(BaseModel):
    """A verdict on the answer to ``question``."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(description="The question as asked.")
    helpful: StrictBool = Field(description="Whether the answer helped.")
    comment: str | None = Field(None, max_length=MAX_COMMENT_CHARS,
                                description=f"At most {MAX_COMMENT_CHARS} characters.")
    generation: str | None = Field(None, max_length=100,
                                   description="The `generation` of the answer judged (the page "
                                               "sends it): the verdict is stored with the sources "
                                               "that answer showed, not a later answer's.")

    @field_validator("question")
    @classmethod
    def _question(cls, value: str) -> str:
        return check_question(value)


@lru_cache(maxsize=8)
def _document_rows(location: str, data_dir: str, file: str) -> tuple[dict[str, Any], ...]:
    from pathlib import Path

    table = Warehouse(Path(data_dir), location).read_file(file, columns=["document_id", "status", "error"])
    return tuple(row for row in table.to_pylist() if row["status"] != "ok")


def document_problems(warehouse: Warehouse, index: PartitionIndex,
                      readable: Any = None) -> dict[str, Any]:
    """The documents of ``index``'s generation (the served one, never a newer one that its
    labels do not cover) that failed (a format could not read them) or were skipped (no
    format reads them), each with its reason, sorted by id; with ``readable`` (a predicate on a
    document id), only those it admits, and no reason names where a symlink points
    (:func:`~rag_pipeline.core.ingest.reading.without_link_target`): a link the reader may read
    can point at a file they may not, or out of the corpus."""
    from rag_pipeline.core.ingest.reading import without_link_target

    rows = _document_rows(warehouse.location, str(warehouse.data_dir), index.documents_file)
    shown = (lambda reason: reason) if readable is None else without_link_target
    listed = {status: [{"document_id": r["document_id"], "reason": shown(r["error"] or "")}
                       for r in sorted(rows, key=lambda r: r["document_id"]) if r["status"] == status
                       and (readable is None or readable(r["document_id"]))]
              for status in ("failed", "skipped")}
    return {"generation": index.generation, **listed}


def may_read(index: PartitionIndex, document_id: str, groups: frozenset[str] | None) -> bool:
    """Whether ``groups`` (None: everything) read ``document_id`` in the labelled ``index``."""
    return index.access is None or index.access.may_read(document_id, groups)


def page_router(service: Any) -> APIRouter:
    """The routes above over a started :class:`~rag_pipeline.service.query_service.QueryService`."""
    router = APIRouter()
    refresher = QueryDbRefresher(service.follower.warehouse)

    @lru_cache(maxsize=1)
    def sources() -> SourceSettings:
        """How originals of an S3 prefix or a git repository are read again: with the standard
        AWS variables this service was started with, and the index's repository mirrors."""
        return SourceSettings(s3=S3Settings.from_environment(os.environ),
                              cache_dir=mirrors_dir(service.follower.warehouse.data_dir))

    def view_request(info: DocumentInfo, text: str, start: int = 0, end: int = 0,
                     page: int | None = None, sheet: str | None = None,
                     digest: str = "") -> ViewRequest:
        """A view of ``info``; its original, when it is in an S3 prefix or a git repository, is
        read from there (:func:`sources`) up to the configured ``max_document_bytes``."""
        return ViewRequest(info, text, start, end, page, sheet, sources(),
                           service.settings.max_document_bytes, digest)

    recent = RecentAnswers()
    rate = FeedbackRate()
    service.on_answer.append(recent.remember)

    def withheld(info: DocumentInfo, who: Principal) -> bool:
        """Whether the original file of ``info`` is kept from ``who``: a container's (an
        archive, a mail) to a principal restricted by ``[access]``, since it also holds what no
        document records (members past the reader's limits, hidden or unsafe names), whose
        readers no rule was read for."""
        return who.groups is not None and isinstance(format_named(info.format), ContainerFormat)

    def served_document(document_id: str, who: Principal,
                        request: Request) -> tuple[DocumentInfo, str] | Response:
        served = service.follower.current
        # Readability first, by the rules alone, and nothing read for a document the asker may
        # not read: it is refused in the time a missing one is.
        access = service.served_index(served).access
        readable = access is None or access.may_open(document_id, who.groups)
        info = served.index.documents.get(document_id) if readable else None
        text = served.canonical.get(document_id) if info is not None else None
        if info is None or text is None:
            return _shown_error(request, 404, f"no document {json.dumps(document_id)} in "
                                              f"generation {served.generation}{NOT_THERE_NOW}")
        return info, text

    @router.get("/documents/{document_id:anypath}", response_class=HTMLResponse,
                summary="A cited document shown as its format reads, the quoted place marked")
    def document(document_id: str, who: Asker, request: Request,
                 start: Annotated[int, Query(alias="from", ge=0)] = 0,
                 end: Annotated[int | None, Query(alias="to", ge=0)] = None,
                 page: Annotated[int | None, Query(description="A PDF's page (1-based).")] = None,
                 sheet: Annotated[str | None, Query(description="A workbook's sheet.")] = None,
                 digest: Annotated[str | None, Query(
                     description="The quote's digest an answer's link carries (its "
                                 "`quote_digest`): when the text at from/to no longer has it, "
                                 "the document changed since, and nothing is marked.")] = None,
                 ) -> Response:
        if (repeated := repeated_query_parameter(request)) is not None:
            return _shown_error(request, 422, repeated)
        found = served_document(document_id, who, request)
        if isinstance(found, Response):
            return found
        info, text = found
        end = (len(text) if "from" in request.query_params else start) if end is None else end
        digest = (digest or "").lower()
        if digest and not QUOTE_DIGEST.fullmatch(digest):
            return _shown_error(request, 422, "digest must be 16 hexadecimal digits (an "
                                              "answer's quote_digest)")
        digest = digest if "from" in request.query_params else ""  # nothing quoted to check
        # With a digest, a quote past the end is a document that changed since (it shrank).
        if start > end or (end > len(text) and not digest):
            return _shown_error(request, 422, f"from/to must satisfy 0 <= from <= to <= {len(text)}")
        note = ""
        if digest and (end > len(text) or quote_digest(text[start:end]) != digest):
            # The place cited is not known now: the document from its start (a page or sheet
            # the link named may be gone with it).
            start, end, digest, page, sheet = 0, 0, "", None, None
            note = CHANGED_SINCE_CITED
        view = view_request(info, text, start, end, page, sheet, digest)
        try:
            return HTMLResponse(render_document(
                view, path_url("/originals/", document_id),
                CONTAINER_WITHHELD if withheld(info, who) else "", note))
        except ViewError as exc:
            return _shown_error(request, exc.status, exc.message)

    @router.get("/page-images/{document_id:anypath}",
                summary="A page of a PDF, or a frame of an image, drawn as a PNG image",
                response_class=Response)
    def page_image(document_id: str, who: Asker, request: Request,
                   page: Annotated[int, Query(description="1-based page.")] = 1) -> Response:
        if (repeated := repeated_query_parameter(request)) is not None:
            return _shown_error(request, 422, repeated)
        found = served_document(document_id, who, request)
        if isinstance(found, Response):
            return found
        info, text = found
        if info.format not in PAGED:
            return _error(404, f"{document_id} is neither a PDF nor an image: it has no page "
                               "images")
        view = view_request(info, text)
        original = view.original
        if original is None:
            return _original_missing(document_id, view)
        try:
            return Response(page_png(original, page, info.format), media_type="image/png")
        except ViewError as exc:
            return _error(exc.status, exc.message)

    @router.get("/originals/{document_id:anypath}", summary="The original file of a document",
                response_class=Response)
    def original(document_id: str, who: Asker, request: Request) -> Response:
        found = served_document(document_id, who, request)
        if isinstance(found, Response):
            return found
        info, text = found
        if withheld(info, who):
            return _error(404, f"{document_id} holds other documents: under [access] its original "
                               "file is not served (it may hold members no rule was read for); "
                               "open each of its documents")
        # The bytes sent are those read from the handle checked and hashed again once read: a
        # file swapped since (for a link to another one above all), or rewritten in place
        # meanwhile, is no original of this document.
        view = view_request(info, text)
        original = view.original
        if original is None:
            return _original_missing(document_id, view)
        path = Path(original.name)
        inline = path.suffix.lower() in INLINE_ORIGINALS
        media = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        # A text original names the charset its text was read by: a windows-1252 note labelled
        # UTF-8 shows as mojibake.
        if format_named(info.format).plain_text and (charset := text_charset(original.data)):
            media = f"text/plain; charset={charset}"
        elif info.format == "html":
            media = f"text/html; charset={page_charset(original.data)}"
        return StreamingResponse(_spooled(original.data), media_type=media, headers={
            "Content-Length": str(len(original.data)),
            "Content-Disposition": _disposition("inline" if inline else "attachment", path.name),
            "Content-Security-Policy": "sandbox", "X-Content-Type-Options": "nosniff"})

    @router.get("/status/documents", summary="Documents that failed or were skipped, with reasons")
    def status_documents(who: Asker) -> dict[str, Any]:
        index = service.served_index()
        return document_problems(
            service.follower.warehouse, index, None if who.groups is None else
            lambda document_id: may_read(index, document_id, who.groups))

    @router.post("/feedback", summary="Store a verdict (helpful or not, a comment) on an answer",
                 responses={200: {"model": FeedbackStoredBody, "description": "Stored."}},
                 openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
                     "schema": FeedbackRequest.model_json_schema()}}}})
    async def feedback(request: Request, who: Asker) -> JSONResponse:
        if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
            # A form on another site (a sibling port is same-site to the cookie) cannot send it,
            # nor spend the principal's verdicts of the minute.
            return _error(415, "feedback must be sent as Content-Type: application/json: nothing "
                               "stored")
        if not rate.admit(f"{who.name}\0{sorted(who.groups or ())}"):
            return _error(429, f"more than {rate.per_minute} verdicts a minute from {who.name}: "
                               "nothing stored; try again in a minute")
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > MAX_FEEDBACK_BYTES:
            return _error(413, f"feedback body over {MAX_FEEDBACK_BYTES} bytes: nothing stored")
        raw = await request.body()
        if len(raw) > MAX_FEEDBACK_BYTES:
            return _error(413, f"feedback body over {MAX_FEEDBACK_BYTES} bytes: nothing stored")
        try:
            payload = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            return _error(422, f"the body is not JSON ({exc}): nothing stored")
        except RecursionError:  # [[[[... : json's decoder recurses once a level
            return _error(422, "the body is not JSON a verdict can be (nested too deeply): nothing stored")
        if not isinstance(payload, dict):
            return _error(422, "the body must be a JSON object: nothing stored")
        try:
            verdict = FeedbackRequest.model_validate(payload)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            message = str(first.get("msg", "invalid")).removeprefix("Value error, ")
            return _error(422, f"{where + ': ' if where else ''}{message}: nothing stored")
        from starlette.concurrency import run_in_threadpool

        return await run_in_threadpool(_store, verdict, who.groups, who.name)

    def _store(verdict: FeedbackRequest, groups: frozenset[str] | None,
               asker: str) -> JSONResponse:
        seen = recent.get(verdict.question, groups, asker, verdict.generation)
        if seen is None and verdict.generation is not None and (
                verdict.generation != service.follower.current.generation):
            # An answer of an earlier generation, no longer among the recent ones: what it
            # showed is not known, and the answer now would be another's.
            seen = (verdict.generation, ())
        if seen is not None and groups is not None:
            # A rule changed since: a source the asker no longer reads is never named again.
            index = service.served_index()
            if not all(may_read(index, document_id, groups) for document_id, _ in seen[1]):
                seen = None
        if seen is None:  # asked before a restart, or long ago: what it answers now
            from rag_pipeline.service.query_service import AskRequest

            body = service.answer(AskRequest(question=verdict.question), groups, asker)
            seen = recent.get(verdict.question, groups, asker) or (body["generation"], ())
        generation, sources = seen[0], tuple(f"{d}{fragment}" for d, fragment in seen[1])
        row = Feedback(utc_now(), verdict.question,
                       verdict.helpful, verdict.comment or None, generation, sources)
        try:
            append_feedback(service.follower.warehouse, row)
        except FeedbackFullError as exc:
            return _error(507, str(exc))
        refresher.request()
        # No count of the stored rows: it would tell anyone how often others give feedback.
        return JSONResponse({"stored": True, "generation": generation, "sources": list(sources),
                             "at": row.at})

    return router
