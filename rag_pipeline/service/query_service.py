"""The query service's state: one model, one followed partition, requests answered from both.

A request takes a worker slot (at most ``workers`` questions are embedded at once, so the cores
are not oversubscribed), reads the served generation once and answers wholly from it. Nothing a
request carries reaches the index: it only selects among the settings listed in
:class:`AskRequest`.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rag_pipeline.core.answer.answer_json import answer_json
from rag_pipeline.core.answer.ask import AskSettings, ask
from rag_pipeline.core.answer.gate import gate_cut
from rag_pipeline.core.answer.question import MAX_QUESTION_CHARS, check_question
from rag_pipeline.core.answer.quoted import check_quoted
from rag_pipeline.core.config.validation import COSINE_DISTANCE_RANGE, check_chunker, check_threshold
from rag_pipeline.core.embedding.models import TextEmbedder
from rag_pipeline.core.embedding.question import QueryPath
from rag_pipeline.core.index.access import labelled, readable_rows
from rag_pipeline.core.index.follower import IndexFollower, ServedIndex
from rag_pipeline.core.index.store import PartitionIndex
from rag_pipeline.core.ingest.reading import DEFAULT_MAX_DOCUMENT_BYTES
from rag_pipeline.core.retrieval.retriever import RetrievalSettings, Retriever, dense_path
from rag_pipeline.core.text.analyzers import Analyzer
from rag_pipeline.service.auth import AccessState

MAX_K = 20


class RequestError(ValueError):
    """A well-formed request the service cannot answer (a partition it does not serve)."""


class AskRequest(BaseModel):
    """A question and the per-request settings; omitted settings take the service's."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(description=f"The question (1 to {MAX_QUESTION_CHARS} characters).",
                          examples=["what happens to the loop variable when a for loop is broken"])
    chunker: str | None = Field(None, description="Must name the served chunker when given.")
    model: str | None = Field(None, description="Must name the served model key when given.")
    retriever: Retriever | None = None
    analyzer: Analyzer | None = Field(None, description="BM25 analyzer.")
    # Strict: a JSON string ("0.5") is refused rather than coerced, as a wrong type should be.
    k: int | None = Field(None, ge=1, le=MAX_K, strict=True, description="At most this many sources.")
    cut: float | None = Field(None, strict=True, description="Cosine-distance cut in [{:g}, {:g}].".format(
        *COSINE_DISTANCE_RANGE))

    @field_validator("question")
    @classmethod
    def _question(cls, value: str) -> str:
        return check_question(value)

    @field_validator("cut")
    @classmethod
    def _cut(cls, value: float | None) -> float | None:
        return None if value is None else check_threshold(value, "cut")

    @field_validator("chunker")
    @classmethod
    def _chunker(cls, value: str | None) -> str | None:
        return None if value is None else check_chunker(value).value


@dataclass(frozen=True)
class ServeSettings:
    """What ``rag-pipeline serve`` was started with; per-request settings default to these.

    Attributes:
        chunker: The served chunker.
        model_key: The served model's key.
        ask: What a request without settings of its own is answered with (retriever, analyzer,
            cut, ``max_sources``, ``base_url``). None: :class:`AskSettings`' defaults, gated at
            the served model's cut (:func:`~rag_pipeline.core.answer.gate.gate_cut`); the
            service holds the resolved settings.
        workers: Questions embedded at once.
        max_document_bytes: The configuration's ``[index] max_document_bytes``: the most bytes
            of an original read again from an S3 prefix or a git repository for its view.
    """

    chunker: str
    model_key: str
    ask: AskSettings | None = None
    workers: int = 2
    max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")

    def status_json(self) -> dict[str, Any]:
        """``/status``'s ``settings``: the keys and order it has always had."""
        ask = self.ask or AskSettings()
        return {"chunker": self.chunker, "model_key": self.model_key,
                "retriever": ask.retrieval.retriever.value, "analyzer": ask.retrieval.analyzer.value,
                "cut": ask.cut, "max_sources": ask.max_sources, "base_url": ask.base_url,
                "workers": self.workers}


def _iso(epoch: float | None) -> str | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")


def _query_path(embedder: TextEmbedder) -> dict[str, Any]:
    """How questions are embedded (a loaded model says; a test double runs its spec's backend).
    ``streams``, ``min_cosine`` and ``alone_threads`` are null on the model's own path."""
    return asdict(getattr(embedder, "query_path", None) or QueryPath(embedder.spec.backend.value))


class ClientGoneError(Exception):
    """The client went away before its question's turn: it is not answered."""


class QueryService:
    """Answers requests from the followed partition with the loaded model."""

    def __init__(self, follower: IndexFollower, embedder: TextEmbedder, settings: ServeSettings,
                 access: AccessState | None = None) -> None:
        if embedder.spec.key != settings.model_key:
            raise ValueError(f"the embedder is {embedder.spec.key}, the service serves {settings.model_key}")
        self.follower = follower
        self.embedder = embedder
        self.access = access or AccessState(None)
        if settings.ask is None:
            settings = replace(settings, ask=AskSettings(cut=gate_cut(embedder.spec)))
        self.settings = settings
        self.started_at = time.time()
        self._slots = threading.BoundedSemaphore(settings.workers)
        self._counts_lock = threading.Lock()
        self._by_generation: Counter[str] = Counter()
        self._outcomes: Counter[str] = Counter()
        self.on_answer: list[Callable[[dict[str, Any], frozenset[str] | None, str], None]] = []
        """Called with every answer's JSON, the asker's groups and name (the page's feedback
        remembers what each person was shown)."""

    def ask_settings(self, request: AskRequest) -> AskSettings:
        s, base = self.settings, self.settings.ask
        if request.chunker is not None and request.chunker != s.chunker:
            raise RequestError(f"chunker {request.chunker!r} is not served here; this service serves "
                               f"{s.chunker!r}")
        if request.model is not None and request.model != s.model_key:
            raise RequestError(f"model {request.model!r} is not served here; this service serves "
                               f"{s.model_key!r}")
        return replace(
            base,
            retrieval=replace(base.retrieval, retriever=request.retriever or base.retrieval.retriever,
                              analyzer=request.analyzer or base.retrieval.analyzer),
            cut=base.cut if request.cut is None else request.cut,
            max_sources=request.k or base.max_sources)

    def served_index(self, served: ServedIndex | None = None) -> PartitionIndex:
        """The served generation (or ``served``, one a request holds), its rows labelled by
        the access rules in force."""
        return labelled((served or self.follower.current).index, self.access.policy)

    def answer(self, request: AskRequest, groups: frozenset[str] | None = None,
               asker: str = "", gone: Callable[[], bool] | None = None) -> dict[str, Any]:
        """``ask --json``'s object (``generation`` names the one that answered); ``timings_ms``
        adds ``queue`` (waiting for a worker slot), ``cpu`` (the request thread's CPU time inside
        ``ask``: below ``total`` when the cores are shared; it does not count a runtime's own
        threads, which may run part of the fast question path) and ``request`` (validation to a JSON-ready
        dict). ``groups``: the asker's (None: everything); an asker restricted to groups gets
        ``request`` alone, in whole milliseconds. ``asker``: the principal's name. ``gone``:
        whether the client has gone away, asked once a worker slot is free.

        Raises:
            RequestError: A setting the service does not serve.
            ClientGoneError: ``gone`` said so: the question is never answered (a chat user who
                cancelled holds no slot ahead of the next one).
        """
        started = time.perf_counter()
        settings = self.ask_settings(request)
        with self._slots:
            if gone is not None and gone():
                with self._counts_lock:
                    self._outcomes["abandoned"] += 1
                raise ClientGoneError("the client went away before a worker was free")
            queued = time.perf_counter() - started
            served = self.follower.current
            cpu = time.thread_time()
            index = labelled(served.index, self.access.policy)
            answer = ask(request.question, index, self.embedder, settings, groups=groups)
            cpu = time.thread_time() - cpu
        check_quoted(answer.quoted, answer.citations, served.canonical)
        body = answer_json(answer)
        body["timings_ms"]["queue"] = round(queued * 1000, 3)
        body["timings_ms"]["cpu"] = round(cpu * 1000, 3)
        body["timings_ms"]["request"] = round((time.perf_counter() - started) * 1000, 3)
        if groups is not None:
            # A restricted asker gets the request's time alone, in whole milliseconds: a
            # stage's time depends on documents they cannot read (the postings of a word only
            # those hold, the rows the scan measures).
            body["timings_ms"] = {"request": float(round(body["timings_ms"]["request"]))}
        with self._counts_lock:
            self._by_generation[served.generation] += 1
            self._outcomes["answered" if answer.answered else "refused"] += 1
        for hook in self.on_answer:
            hook(body, groups, asker)
        return body

    def count_error(self) -> None:
        with self._counts_lock:
            self._outcomes["rejected"] += 1

    def health(self) -> dict[str, Any]:
        """Liveness; the served generation too unless ``[access]`` is declared (``/health``
        needs no token, and a new generation tells when any document changed, a document the
        caller may not read included)."""
        if self.access.policy is not None:
            return {"status": "ok"}
        return {"status": "ok", "generation": self.follower.current.generation}

    def status(self, groups: frozenset[str] | None = None, via: str = "",
               name: str = "") -> dict[str, Any]:
        """The served generation and its counts; for a principal of ``groups`` on a labelled
        index, counts of what those groups read only (nothing that follows from the whole
        index's size: the ANN index, the dense path it picks, the load time), who it is
        (``name``) and how it came (``via``: ``token``, ``session``, ``proxy``; the page offers
        to sign out of a session, and clears an answer it showed another principal)."""
        served = self.follower.current
        index, spec, now = labelled(served.index, self.access.policy), self.embedder.spec, time.time()
        readable = readable_rows(index, groups)
        with self._counts_lock:
            by_generation, outcomes = dict(self._by_generation), dict(self._outcomes)
        return {
            "generation": served.generation, "partition": f"{index.chunker}|{index.model_key}",
            "chunker": index.chunker,
            "model": {"key": index.model_key, "name": index.model_name,
                      "fingerprint": index.model_fingerprint, "dimension": spec.dimension},
            "query_path": _query_path(self.embedder),
            "dense_path": None if readable is not None else dense_path(index,
                                                                       RetrievalSettings()).value,
            "ann_index": None if index.ann is None or readable is not None else {
                "rows": index.ann.rows, "fingerprint": index.ann.fingerprint,
                "crossover": RetrievalSettings().crossover, "kind": "faiss IVF-SQ8",
                "nlist": index.ann.nlist, "nprobe": index.ann.nprobe,
                "measured_recall": index.ann.measured_recall},
            "chunks": len(index) if readable is None else len(readable),
            "vectors": int(index.vectors.shape[0]) if readable is None else len(readable),
            "documents": len(index.documents) if readable is None else sum(
                index.access.may_read(d, groups) for d in index.documents),
            # The rules' digest only to an in-process caller (groups None): hashed from globs,
            # file and group names, it would confirm a guessed rule about what others read.
            "access": None if index.access is None else {"rules": index.access.digest}
            if readable is None else {"name": name, "groups": sorted(groups or ()), "via": via},
            "published_at": index.published_at,
            "index_age_seconds": round(served.age_seconds(now), 3),
            "loaded_at": _iso(served.loaded_at),
            "load_seconds": round(served.load_seconds, 3) if readable is None else None,
            "swaps": self.follower.swaps,
            "last_error": self.follower.last_error if readable is None or not self.follower.last_error
            else "the service could not load a newer generation (its log says why)",
            # The service's traffic is everyone's: a principal restricted by [access] sees none
            # of it (how often others ask says something of what they read).
            "requests": None if readable is not None else {
                "answered": outcomes.get("answered", 0), "refused": outcomes.get("refused", 0),
                "rejected": outcomes.get("rejected", 0), "abandoned": outcomes.get("abandoned", 0)},
            "answered_by_generation": None if readable is not None else by_generation,
            "settings": self.settings.status_json(),
            "started_at": _iso(self.started_at), "uptime_seconds": round(now - self.started_at, 3),
        }
