"""The checked question path: one short question at a time, off torch.

A service embeds one short question at a time, where torch's per-call overhead dominates.
:func:`fast_transformer` converts the same weights (fp32) to ONNX Runtime (the default) or
OpenVINO for questions only; :meth:`rag_pipeline.core.embedding.embedder.Embedder.fast_queries`
uses that path only after it reproduces the model's own vectors on :data:`QUERY_PROBES`
(cosine >= :data:`QUERY_MIN_COSINE`), and :class:`QueryPath` says which path questions take.
A question is tokenized by the model's Rust tokenizer called directly only when
:func:`checked_direct_tokenizer` finds it gives the wrapper's inputs on the same probes.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

import numpy as np

from rag_pipeline.core.embedding.export import (
    InferPool,
    Transformer,
    convert_to_onnx,
    convert_to_openvino,
    token_inputs,
)
from rag_pipeline.core.embedding.models import ModelMismatchError
from rag_pipeline.core.embedding.openvino_runtime import openvino_core

__all__ = [
    "QUERY_MIN_COSINE", "QUERY_PROBES", "QUERY_RUNTIMES", "QueryPath", "QueryPathMismatchError",
    "checked_direct_tokenizer", "direct_inputs", "fast_transformer", "mean_pooled_and_normalised",
    "wrapper_inputs",
]

QUERY_PROBES = (
    "warm up",
    "what does break do to the loop variable of a for loop",
    "why does [0] * -5 quietly give me []?",
    "TypeError: unsupported operand type(s) for +: 'int' and 'str'",
    "How do I read a file line by line without loading it whole into memory, and what happens "
    "to the newline at the end of each line? Is it kept, stripped, or translated on Windows?",
    "__iadd__ *args **kwargs -O -m pip",
    "Überschrift, naïve café: non-ASCII text still embeds",
    "the window ends here " * 80,
)
"""Questions on which a fast query path must give the vectors of the model's own path."""
QUERY_RUNTIMES = ("onnxruntime", "openvino")
"""The runtimes :meth:`Embedder.fast_queries` can embed questions with."""
QUERY_MIN_COSINE = 0.99999
"""A fast query path is used only if every probe's vector is this close to the model's own
(fp32 against fp32 differs by rounding only: about 1e-7)."""


class QueryPathMismatchError(ModelMismatchError):
    """A fast query path gave vectors that are not the model's own."""


@dataclass(frozen=True)
class QueryPath:
    """How questions are embedded. ``backend`` runs the transformer; on a fast path
    ``min_cosine`` is the smallest cosine between its vectors and the model's own over
    :data:`QUERY_PROBES`, and ``streams`` how many questions run side by side: for
    ``openvino-fp32`` the streams OpenVINO really compiled (it may give fewer than asked: no
    more than the cores), for ``onnxruntime-fp32`` the cores (questions side by side run on one
    each, a question alone on ``alone_threads``, every core unless asked). On the model's own
    path they are None: there is nothing to compare."""

    backend: str
    streams: int | None = None
    min_cosine: float | None = None
    alone_threads: int | None = None

    @property
    def is_models_own(self) -> bool:
        return self.min_cosine is None


class _AloneOrSideBySide:
    """Runs a question on ``alone`` when no other question is being embedded, on ``beside``
    when another one is. ``beside`` runs on one core, so questions side by side share the cores
    instead of each spreading over all of them and colliding; ``alone`` on every core gives one
    client the idle core too. On two cores, in one serve_load run: one client p50 11.2 ms
    against 13.7 with one core for a question alone, four clients 109 to 136 against 113 to 124
    requests/s over three rounds each (a question that finds the other request in its Python
    work still shares a core with it, so under load neither setting wins clearly)."""

    def __init__(self, alone: Transformer, beside: Transformer) -> None:
        self._alone = alone
        self._beside = beside
        self._lock = threading.Lock()
        self._running = 0

    def __call__(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        with self._lock:
            transformer = self._alone if self._running == 0 else self._beside
            self._running += 1
        try:
            return transformer(inputs)
        finally:
            with self._lock:
                self._running -= 1


def _onnx_questions(model: bytes, alone_threads: int) -> _AloneOrSideBySide:
    """ONNX Runtime sessions of ``model``: ``alone_threads`` threads for a question alone, one
    for each question beside another (a session serves concurrent calls)."""
    import onnxruntime as ort

    def session(threads: int) -> Transformer:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # A spinning pool keeps its cores busy after a run, taking them from the request's own
        # Python work and from a question beside it.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        loaded = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        return lambda inputs: loaded.run(None, inputs)[0]

    beside = session(1)
    return _AloneOrSideBySide(session(alone_threads) if alone_threads > 1 else beside, beside)


def fast_transformer(model, runtime: str, streams: int, requests: int | None,
                     alone_threads: int | None) -> tuple[Transformer, int, int | None]:
    """The model's transformer converted for questions on ``runtime`` (arguments as
    :meth:`Embedder.fast_queries`'s, already checked), with the streams it runs side by side
    and, for ONNX Runtime, the threads a question alone gets (None on OpenVINO)."""
    if runtime == "onnxruntime":
        given = len(os.sched_getaffinity(0))
        alone_threads = alone_threads or given
        return _onnx_questions(convert_to_onnx(model), alone_threads), given, alone_threads
    config = {"INFERENCE_PRECISION_HINT": "f32", "NUM_STREAMS": streams,
              "PERFORMANCE_HINT": "LATENCY" if streams == 1 else "THROUGHPUT"}
    compiled = openvino_core().compile_model(convert_to_openvino(model), "CPU", config)
    given = int(compiled.get_property("NUM_STREAMS"))
    return InferPool(compiled, max(given, requests or given)), given, None


def mean_pooled_and_normalised(model) -> bool:
    """Whether the model's modules after the transformer are exactly mean pooling and
    normalisation (then a question is pooled in numpy, without a pass through torch)."""
    modules = list(model)[1:]
    return ([type(m).__name__ for m in modules] == ["Pooling", "Normalize"]
            and getattr(modules[0], "pooling_mode", None) == "mean")


def direct_inputs(tokenizer, question: str) -> dict[str, np.ndarray]:
    """The transformer's three inputs for one question from a ``tokenizers.Tokenizer``."""
    encoding = tokenizer.encode(question)
    return {"input_ids": np.array([encoding.ids], dtype=np.int64),
            "attention_mask": np.array([encoding.attention_mask], dtype=np.int64),
            "token_type_ids": np.array([encoding.type_ids], dtype=np.int64)}


def wrapper_inputs(model, question: str, max_tokens: int) -> dict[str, np.ndarray]:
    """The transformer's three inputs for one question from the model's tokenizer wrapper."""
    return token_inputs(model.tokenizer([question], padding=True, truncation=True,
                                        max_length=max_tokens, return_tensors="np"))


def checked_direct_tokenizer(model, max_tokens: int):
    """A copy of the model's Rust tokenizer (truncated to the window, no padding) if it gives
    exactly the wrapper's inputs on :data:`QUERY_PROBES` (about 0.05 ms a question instead of
    0.3 to 0.45); None otherwise, and questions stay on the wrapper."""
    backend = getattr(model.tokenizer, "backend_tokenizer", None)
    if backend is None:
        return None
    from tokenizers import Tokenizer

    direct = Tokenizer.from_str(backend.to_str())
    direct.no_padding()
    direct.enable_truncation(max_tokens)
    for probe in QUERY_PROBES:
        expected, given = wrapper_inputs(model, probe, max_tokens), direct_inputs(direct, probe)
        if expected.keys() != given.keys() or not all(
                np.array_equal(expected[k], given[k]) for k in expected):
            return None
    return direct
