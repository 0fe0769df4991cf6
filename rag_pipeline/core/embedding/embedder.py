"""The loaded embedding model (heavy: torch, sentence-transformers, OpenVINO).

Only code that really embeds imports this module; names, keys, fingerprints and errors live in
:mod:`rag_pipeline.core.embedding.models`, the OpenVINO and ONNX conversions in
:mod:`rag_pipeline.core.embedding.export`, the checked question path in
:mod:`rag_pipeline.core.embedding.question`.

Texts are batched by word-piece count (the encoder's own tokenizer, truncated to the window):
sorted longest first and cut into batches of ``spec.batch_size``, so a batch pads to nearly its
own length. The vectors are those of plain ``SentenceTransformer.encode``; only the padding
(and the time spent on it) changes.

Two backends run the transformer: torch (fp32), and OpenVINO (fp32, or static int8 quantised
by NNCF on the corpus's own chunk texts), exported on first use. A torch fp32 model's texts are
embedded at fp32 from the same weights by ONNX Runtime or OpenVINO, whichever is faster here,
once :mod:`rag_pipeline.core.embedding.bulk` has checked that it gives torch's vectors (the same
vector space and key; ``bulk_path`` says which path runs). Pooling and normalisation run
through the model's own sentence-transformers modules (``1_Pooling``, ``2_Normalize``), or in
numpy when those are exactly mean pooling and normalisation.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from rag_pipeline.core.embedding.bulk import (
    BULK_MIN_COSINE,
    BULK_PROBES,
    BULK_RUNTIMES,
    BULK_TOKENIZER,
    FASTEST,
    TIMING_TEXTS,
    BulkPath,
    BulkRecord,
    bulk_inputs,
    bulk_transformer,
    checked_bulk_path,
    checked_bulk_tokenizer,
    machine,
    probes_sha256,
    read_bulk_records,
    runtime_versions,
    timed_runtimes,
    write_bulk_record,
)
from rag_pipeline.core.embedding.export import (
    EXPORT_MANIFEST,
    ONNX_FILE,
    OPENVINO_CONFIG,
    InferPool,
    Transformer,
    export_dir,
    export_openvino,
    onnx_dir,
    onnx_model,
    token_inputs,
    verify_export,
)
from rag_pipeline.core.embedding.models import (
    Backend,
    ModelMismatchError,
    ModelSpec,
    calibration_set,
    l2_normalise,
    verify_model_files,
)
from rag_pipeline.core.embedding.openvino_runtime import openvino_core
from rag_pipeline.core.embedding.question import (
    QUERY_MIN_COSINE,
    QUERY_PROBES,
    QUERY_RUNTIMES,
    QueryPath,
    QueryPathMismatchError,
    checked_direct_tokenizer,
    direct_inputs,
    fast_transformer,
    mean_pooled_and_normalised,
    wrapper_inputs,
)
from rag_pipeline.core.embedding.torch_threads import apply_torch_threads, pending_torch_threads

__all__ = ["Embedder", "is_loaded", "load_declared", "load_embedder", "wordpiece_batches"]

_log = logging.getLogger(__name__)


def wordpiece_batches(counts: Sequence[int], batch_size: int) -> list[list[int]]:
    """Positions grouped into batches of at most ``batch_size``, longest first (ties by
    position), so each batch pads to nearly its own length."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    order = sorted(range(len(counts)), key=lambda i: (-counts[i], i))
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


class Embedder:
    """A loaded model whose files match its declaration, on its declared backend.

    Args:
        spec: The declared model.
        verify: Check the model's files against the declaration first.
        bulk: For a torch fp32 model, ``"fastest"`` embeds texts by whichever of ONNX Runtime
            and OpenVINO fp32 is faster on this machine among those that give torch's vectors on
            :data:`rag_pipeline.core.embedding.bulk.BULK_PROBES` (torch stays when neither does,
            and ``bulk_path`` says so), recording the choice in the model cache;
            ``"onnxruntime"`` or ``"openvino"`` that runtime only, if it gives them (no record
            written); ``"torch"`` keeps torch.
    """

    def __init__(self, spec: ModelSpec, *, verify: bool = True, bulk: str = FASTEST) -> None:
        if bulk not in (FASTEST, *BULK_RUNTIMES, "torch"):
            raise ValueError(f"bulk must be {FASTEST}, {', '.join(BULK_RUNTIMES)} or torch, "
                             f"got {bulk!r}")
        if verify:
            verify_model_files(spec)
        self.spec = spec
        self._model = None
        self._transformer: InferPool | Transformer | None = None
        self._query_transformer: Transformer | None = None
        self._bulk_tokenizer = None
        self._direct_tokenizer = None
        self.query_path = QueryPath(spec.backend.value)
        self.bulk_path = BulkPath(spec.backend.value)
        if spec.backend is Backend.TORCH and bulk != "torch" and self._recorded_bulk(bulk):
            return
        self._pooled_in_numpy = mean_pooled_and_normalised(self.model)
        if spec.backend is Backend.OPENVINO:
            self._transformer = self._load_openvino()
        elif bulk != "torch":
            self._use_fp32_bulk(bulk)

    @property
    def model(self):
        """The model's ``SentenceTransformer`` (torch), loaded on first use: a torch fp32 model
        whose bulk check is recorded embeds texts without it."""
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            apply_torch_threads()
            model = SentenceTransformer(str(self.spec.path), device="cpu", local_files_only=True)
            model.max_seq_length = self.spec.max_tokens
            dimension = model.get_embedding_dimension() if hasattr(
                model, "get_embedding_dimension") else model.get_sentence_embedding_dimension()
            if dimension != self.spec.dimension:
                raise ModelMismatchError(f"{self.spec.key} produces {dimension} dimensions, "
                                         f"declared {self.spec.dimension} (the `dimension` of its "
                                         "[[models]] table in the configuration)")
            self._model = model
        return self._model

    def _bulk_threads(self) -> int:
        """torch's thread count for this process (what it is given, else one per core),
        read without importing torch when torch is not loaded."""
        if "torch" in sys.modules:
            import torch

            apply_torch_threads()
            return torch.get_num_threads()
        return pending_torch_threads() or len(os.sched_getaffinity(0))

    def _use_fp32_bulk(self, requested: str) -> None:
        """Texts go through the fp32 ONNX export on torch's thread count, on the ``requested``
        runtime (or, for ``"fastest"``, the faster of those of :data:`BULK_RUNTIMES` by
        :func:`~rag_pipeline.core.embedding.bulk.timed_runtimes` on the calibration texts) if
        it gives torch's vectors on the probes (min cosine >= :data:`BULK_MIN_COSINE`). With a
        model cache, a ``"fastest"`` choice made with the direct tokenizer is recorded beside
        the export (:func:`~rag_pipeline.core.embedding.bulk.write_bulk_record`)."""
        onnx = onnx_model(self.spec, self.model)
        if self._pooled_in_numpy:
            self._bulk_tokenizer = checked_bulk_tokenizer(self.model, self.spec.max_tokens)
        reference = l2_normalise(self._torch_forward(list(BULK_PROBES)))
        passed: dict[str, tuple] = {}
        for runtime in BULK_RUNTIMES if requested == FASTEST else (requested,):
            try:
                candidate, threads = bulk_transformer(runtime, onnx, self._bulk_threads())
                min_cosine = checked_bulk_path(
                    reference, lambda texts, c=candidate: l2_normalise(self._forward(texts, c)))
            except Exception as exc:
                if requested != FASTEST:
                    raise
                _log.warning("%s: %s fp32 could not embed the probes (%s: %s); not timed",
                             self.spec.key, runtime, type(exc).__name__, exc)
                continue
            if min_cosine >= BULK_MIN_COSINE:
                passed[runtime] = (candidate, threads, min_cosine)
            else:
                _log.warning("%s: %s fp32 differs from torch on the probes (min cosine %.7f "
                             "< %s); not used", self.spec.key, runtime, min_cosine,
                             BULK_MIN_COSINE)
        if not passed:
            self._bulk_tokenizer = None
            return
        seconds = timed_runtimes(
            {runtime: self.on_transformer(candidate).embed
             for runtime, (candidate, _, _) in passed.items()},
            calibration_set().texts()[:TIMING_TEXTS]) if len(passed) > 1 else {}
        runtime = min(passed, key=lambda r: seconds.get(r, 0.0))
        self._transformer, threads, min_cosine = passed[runtime]
        self.bulk_path = BulkPath.fp32(runtime, threads, min_cosine)
        if requested == FASTEST and self.spec.cache_dir is not None \
                and self._bulk_tokenizer is not None:
            folder = onnx_dir(self.spec)
            tokenizer_json = self._bulk_tokenizer.to_str()
            write_bulk_record(folder, BulkRecord(
                self.spec.key, self._onnx_sha256(folder),
                hashlib.sha256(tokenizer_json.encode("utf-8")).hexdigest(), self.spec.dimension,
                min_cosine, runtime_versions(), probes_sha256(), runtime, machine(threads),
                {r: round(t, 4) for r, t in seconds.items()}), tokenizer_json)

    @staticmethod
    def _onnx_sha256(folder) -> str:
        return json.loads((folder / EXPORT_MANIFEST).read_text(encoding="utf-8"))["files"][ONNX_FILE]

    def _recorded_bulk(self, requested: str) -> bool:
        """Takes the bulk path a recorded check holds for (same model files, ONNX export,
        tokenizer, probes, runtimes and machine; for a ``requested`` runtime, a record of that
        runtime), without loading torch; False when there is none."""
        if self.spec.cache_dir is None:
            return False
        folder = onnx_dir(self.spec)
        records = read_bulk_records(folder)
        if not records or not (folder / ONNX_FILE).is_file():
            return False
        tokenizer_json = (folder / BULK_TOKENIZER).read_text(encoding="utf-8")
        holding = dict(key=self.spec.key, onnx_sha256=self._onnx_sha256(folder),
                       tokenizer_sha256=hashlib.sha256(tokenizer_json.encode("utf-8")).hexdigest(),
                       dimension=self.spec.dimension, probes_sha256=probes_sha256(),
                       versions=runtime_versions(), machine=machine(self._bulk_threads()))
        record = next((r for r in records if r.holds_for(**holding)), None)
        if record is None or requested not in (FASTEST, record.runtime):
            return False
        verify_export(self.spec, folder)
        from tokenizers import Tokenizer

        self._bulk_tokenizer = Tokenizer.from_file(str(folder / BULK_TOKENIZER))
        self._transformer, threads = bulk_transformer(
            record.runtime, (folder / ONNX_FILE).read_bytes(), self._bulk_threads())
        self._pooled_in_numpy = True
        self.bulk_path = BulkPath.fp32(record.runtime, threads, record.min_cosine)
        return True

    def _load_openvino(self) -> InferPool:
        folder = export_dir(self.spec)
        if not (folder / EXPORT_MANIFEST).is_file():
            export_openvino(self.spec, self.model)
        verify_export(self.spec, folder)
        compiled = openvino_core().compile_model(str(folder / "model.xml"), "CPU",
                                                 OPENVINO_CONFIG)
        return InferPool(compiled, 2)

    def fast_queries(self, runtime: str = "onnxruntime", streams: int = 1,
                     requests: int | None = None, alone_threads: int | None = None) -> QueryPath:
        """Questions embedded by ONNX Runtime or OpenVINO at fp32 from the same weights: a short
        question takes 5 to 7 ms instead of torch's 12 to 19 on two cores. Used only after
        :data:`QUERY_PROBES` give the model's own vectors (cosine >= :data:`QUERY_MIN_COSINE`).
        A model on the OpenVINO backend keeps its own path (returned unchanged).

        Args:
            runtime: ``onnxruntime`` (a question alone on ``alone_threads`` threads, questions
                side by side on one each: see
                :class:`rag_pipeline.core.embedding.question._AloneOrSideBySide`) or ``openvino``
                (``streams``).
            streams: OpenVINO only: 1 runs each question on every core; more ask OpenVINO for
                that many side by side, a core's share each (it gives at most one per core;
                the returned path says how many it gave).
            requests: OpenVINO only: how many questions may wait for or use a stream at once
                (default: the streams given); a caller's own limit (``--workers``) still applies.
            alone_threads: ONNX Runtime only: threads for a question embedded while no other is
                (default: the cores this process may run on; 1: every question on one core).

        Raises:
            QueryPathMismatchError: the converted model does not reproduce the model's vectors.
        """
        if runtime not in QUERY_RUNTIMES:
            raise ValueError(f"runtime must be one of {', '.join(QUERY_RUNTIMES)}, got {runtime!r}")
        if streams < 1:
            raise ValueError(f"streams must be at least 1, got {streams}")
        if alone_threads is not None and alone_threads < 1:
            raise ValueError(f"alone_threads must be at least 1, got {alone_threads}")
        if self.spec.backend is Backend.OPENVINO:
            return self.query_path
        fast, given, alone_threads = fast_transformer(self.model, runtime, streams, requests,
                                                      alone_threads)
        if self._pooled_in_numpy:
            self._use_direct_tokenizer()
        own = np.stack([self.embed([probe])[0] for probe in QUERY_PROBES])
        candidate = np.stack([self._question_vector(probe, fast) for probe in QUERY_PROBES])
        min_cosine = float(np.min(np.sum(own * candidate, axis=1)))
        if min_cosine < QUERY_MIN_COSINE:
            raise QueryPathMismatchError(
                f"{self.spec.key}: {runtime} fp32 questions differ from the model's own vectors "
                f"(min cosine {min_cosine:.7f} < {QUERY_MIN_COSINE}); questions stay on "
                f"{self.spec.backend.value}")
        self._query_transformer = fast
        self.query_path = QueryPath(f"{runtime}-fp32", given, min_cosine, alone_threads)
        return self.query_path

    def _question_inputs(self, question: str) -> dict[str, np.ndarray]:
        """The transformer's inputs for one question: by the model's Rust tokenizer called
        directly once :meth:`_use_direct_tokenizer` has checked it gives the wrapper's inputs
        (about 0.05 ms instead of 0.3 to 0.45), otherwise by the wrapper."""
        if self._direct_tokenizer is not None:
            return direct_inputs(self._direct_tokenizer, question)
        with _WRAPPER:
            return wrapper_inputs(self.model, question, self.spec.max_tokens)

    def _use_direct_tokenizer(self) -> None:
        """Questions are tokenized by a copy of the model's Rust tokenizer (truncated to the
        window, no padding) if it gives exactly the wrapper's inputs on :data:`QUERY_PROBES`;
        otherwise they stay on the wrapper."""
        self._direct_tokenizer = checked_direct_tokenizer(self.model, self.spec.max_tokens)

    def _question_vector(self, question: str, transformer: Transformer,
                         ) -> np.ndarray:
        if not self._pooled_in_numpy:
            return l2_normalise(self._forward([question], transformer))[0]
        inputs = self._question_inputs(question)
        hidden = transformer(inputs)[0]
        mask = inputs["attention_mask"][0].astype(np.float32)[:, None]
        pooled = (hidden * mask).sum(axis=0) / max(float(mask.sum()), 1e-9)
        return l2_normalise(pooled[None])[0]

    def wordpieces(self, texts: Sequence[str]) -> list[int]:
        """Word-pieces the encoder reads per text: special tokens included, at most the window."""
        if self._bulk_tokenizer is not None:
            return [sum(e.attention_mask) for e in self._bulk_tokenizer.encode_batch(list(texts))]
        with _WRAPPER:
            encoded = self.model.tokenizer(list(texts), add_special_tokens=True, truncation=True,
                                           max_length=self.spec.max_tokens,
                                           return_attention_mask=False, verbose=False)
        return [len(ids) for ids in encoded["input_ids"]]

    def _torch_forward(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(texts, batch_size=len(texts), convert_to_numpy=True,
                                 normalize_embeddings=True, show_progress_bar=False)

    def _forward(self, texts: list[str], transformer: Transformer | None = None,
                 ) -> np.ndarray:
        transformer = transformer or self._transformer
        if transformer is None:
            return self._torch_forward(texts)
        if self._pooled_in_numpy and self.spec.backend is Backend.TORCH:
            if self._bulk_tokenizer is not None:
                inputs = bulk_inputs(self._bulk_tokenizer, texts)
            else:
                with _WRAPPER:
                    inputs = token_inputs(self.model.tokenizer(
                        texts, padding=True, truncation=True, max_length=self.spec.max_tokens,
                        return_tensors="np"))
            hidden = transformer(inputs)
            mask = inputs["attention_mask"].astype(np.float32)[:, :, None]
            return (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        import torch

        with _WRAPPER:
            features = self.model.preprocess(texts)
        features["token_embeddings"] = torch.from_numpy(transformer(token_inputs(features)))
        with torch.no_grad():
            for module in list(self.model)[1:]:
                features = module(features)
        return features["sentence_embedding"].numpy()

    def embed(self, texts: Sequence[str], *, batch_size: int | None = None,
              progress: Callable[[int, int], None] | None = None,
              wordpieces: Sequence[int] | None = None) -> np.ndarray:
        """Unit-length float32 vectors, in input order, batched by word-piece count.

        Args:
            texts: The texts to embed.
            batch_size: Texts per forward pass (default: the spec's).
            progress: Called as ``progress(done, total)`` after each batch.
            wordpieces: Known word-piece counts of ``texts`` (the chunks table's column);
                counted with the model's tokenizer when omitted. Only the batching uses them.
        """
        texts = list(texts)
        out = np.zeros((len(texts), self.spec.dimension), dtype=np.float32)
        if not texts:
            return out
        if wordpieces is None:
            wordpieces = self.wordpieces(texts)
        elif len(wordpieces) != len(texts):
            raise ValueError(f"{len(wordpieces)} word-piece counts for {len(texts)} texts")
        counts = [min(int(n), self.spec.max_tokens) for n in wordpieces]
        batches = wordpiece_batches(counts, batch_size or self.spec.batch_size)
        done = 0
        for batch, vectors in zip(batches, self._forwards(texts, batches), strict=True):
            out[batch] = vectors
            done += len(batch)
            if progress is not None:
                progress(done, len(texts))
        return l2_normalise(out)

    @property
    def lanes(self) -> int:
        """How many batches run at once (the sessions of a :class:`~.bulk.SessionPool`, the
        streams of a bulk :class:`~.export.InferPool`; 1 for a transformer that runs one batch
        at a time on every thread)."""
        return getattr(self._transformer, "lanes", 1)

    @property
    def texts_at_once(self) -> int:
        """How many texts are embedded at once: a batch a lane."""
        return self.lanes * self.spec.batch_size

    def _forwards(self, texts: list[str], batches: list[list[int]]) -> Iterator[np.ndarray]:
        """Each batch's vectors, in order: as many batches at once as the transformer has
        :attr:`lanes` (a batch that fails stops the rest)."""
        lanes = self.lanes
        if lanes == 1 or len(batches) == 1:
            for batch in batches:
                yield self._forward([texts[i] for i in batch])
            return
        from concurrent.futures import ThreadPoolExecutor

        # Set by a batch that fails, or when the caller stops reading: a lane then begins no
        # other batch, however long the caller takes to see it. Lanes take batches in order, so
        # every batch passed over comes after the failed one, whose error the caller gets first.
        stop = threading.Event()

        def forward(batch: list[int]) -> np.ndarray | None:
            if stop.is_set():
                return None
            try:
                return self._forward([texts[i] for i in batch])
            except BaseException:
                stop.set()
                raise

        with ThreadPoolExecutor(lanes, thread_name_prefix="embed") as pool:
            try:
                yield from pool.map(forward, batches)
            finally:
                stop.set()

    def on_transformer(self, transformer: Transformer) -> Embedder:
        """A copy of this embedder whose texts go through ``transformer`` (the same graph on
        another runtime set-up, as a benchmark compares them); this one is unchanged."""
        other = copy.copy(self)
        other._transformer = transformer
        return other

    def embed_query(self, question: str) -> np.ndarray:
        """The question's unit vector, on the fast query path when :meth:`fast_queries` set one."""
        if self._query_transformer is None:
            return self.embed([question])[0]
        return self._question_vector(question, self._query_transformer)


_LOADED: dict[ModelSpec, Embedder] = {}
_WRAPPER = threading.Lock()
"""Held while an :class:`Embedder` tokenizes through a model's tokenizer wrapper (it sets its
truncation and padding on the Rust tokenizer at each call, so two batches tokenized at once by
:meth:`Embedder._forwards`'s threads could each get the other's settings; the direct
tokenizer, configured once, needs no lock)."""
_LOADING = threading.RLock()


def is_loaded(spec: ModelSpec) -> bool:
    """Whether this process has loaded ``spec`` (:func:`load_embedder` returns it at once)."""
    return spec in _LOADED


def load_embedder(spec: ModelSpec) -> Embedder:
    """One loaded model per spec per process (an OpenVINO model is exported on first use); a
    thread asking while another loads it waits for that load."""
    with _LOADING:
        if spec not in _LOADED:
            _LOADED[spec] = Embedder(spec)
        return _LOADED[spec]


def load_declared(models: Sequence[ModelSpec], skipped: Callable[[str], None]) -> list[Embedder]:
    """``models`` loaded (:func:`load_embedder`: an OpenVINO model exported, a torch model's
    ONNX export written and checked into the model cache); an adapted model not trained yet is
    skipped, with one line to ``skipped``."""
    from rag_pipeline.core.embedding.adaptation.training import ModelNotTrainedError

    embedders = []
    for spec in models:
        try:
            embedders.append(load_embedder(spec))
        except ModelNotTrainedError:
            skipped(f"skipped {spec.key}: an adapted model not trained yet, which nothing needs "
                    "until `rag-pipeline adapt` trains it")
    return embedders

