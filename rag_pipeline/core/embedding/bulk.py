"""The checked bulk path: chunk texts of an fp32 torch model embedded by ONNX Runtime or
OpenVINO at fp32, whichever is faster on this machine.

An index embeds thousands of texts in batches, where torch's eager kernels reach about 40 % of
the machine's fp32 matrix-product rate on two cores. The same weights converted to ONNX (fp32,
:func:`rag_pipeline.core.embedding.export.convert_to_onnx`) come much closer to the rate of the
products themselves, run by either of :data:`BULK_RUNTIMES` from the same file: ONNX Runtime as
one session of one thread per core (at most :data:`MAX_BULK_SESSIONS`), each on its own batch
(:class:`SessionPool`), or OpenVINO as as many streams, a batch each
(:func:`openvino_bulk_transformer`). Which is faster depends on the CPU (measured on two cores
of one Intel Xeon: OpenVINO 13.6 s against ONNX Runtime 16.8 s for the bundled corpus's chunk
texts; earlier rounds on an AMD EPYC and an AVX2 machine found OpenVINO no faster), so both are
timed on the same texts (:func:`timed_runtimes`) and the faster is kept. It is the same vector
space, so the same key: fp32 against fp32 differs by the order of the sums only (measured: max
abs difference 2e-7 per component for ONNX Runtime, 2.8e-7 for OpenVINO, min cosine 0.9999998
on the bundled corpus), and a runtime is used only after :data:`BULK_PROBES` give the model's
own torch vectors within :data:`BULK_MIN_COSINE` (:func:`checked_bulk_path`). A model whose
conversion drifts keeps torch, said by :class:`BulkPath`.

A check that passed is recorded beside the cached export (:data:`BULK_CHECK`, with the model's
Rust tokenizer as :data:`BULK_TOKENIZER`), keyed by the model's key, the export's and the
tokenizer's digests, the probes, the versions of the runtimes on both sides
(:data:`CHECKED_RUNTIMES`) and the machine and threads the runtimes were timed on
(:func:`machine`): a later load that finds a record holding for all of them embeds through the
recorded runtime and that tokenizer without importing torch or sentence-transformers (about
1 s instead of 5 to 11 s of a run's model load); any change checks and times again. The file
keeps a record for each machine and thread count (:data:`OTHER_MACHINES`) while the model
files and versions are those of the newest.

Batches are cut from texts sorted by word-piece count (longest first), each padded to its own
longest text only (:func:`rag_pipeline.core.embedding.embedder.wordpiece_batches`).
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from rag_pipeline.core.embedding.export import OPENVINO_CONFIG, InferPool, Transformer, token_inputs
from rag_pipeline.core.embedding.openvino_runtime import openvino_core
from rag_pipeline.core.embedding.question import QUERY_PROBES
from rag_pipeline.core.runtime.cpu import this_cpu

__all__ = ["BULK_CHECK", "BULK_MIN_COSINE", "BULK_PROBES", "BULK_RUNTIMES", "BULK_TOKENIZER",
           "FASTEST", "MAX_RECORDS", "OTHER_MACHINES", "BulkPath", "BulkRecord", "SessionPool",
           "bulk_inputs", "bulk_transformer",
           "checked_bulk_path", "checked_bulk_tokenizer", "machine", "onnx_bulk_transformer",
           "onnx_shared_session", "openvino_bulk_transformer", "probes_sha256",
           "read_bulk_records", "runtime_versions", "timed_runtimes", "write_bulk_record"]

BULK_RUNTIMES = ("onnxruntime", "openvino")
"""The runtimes that may embed a torch fp32 model's texts from its fp32 ONNX export (OpenVINO
reads the fused graph's ``com.microsoft`` nodes itself)."""
FASTEST = "fastest"
"""The bulk choice that times every runtime of :data:`BULK_RUNTIMES` passing the probes and
keeps the faster (what every load asks for unless told a runtime). Without a model cache
nothing is recorded, so each load times them again (about 4 s)."""
TIMING_TEXTS = 64
"""The bundled calibration texts (chunk texts of the bundled corpus) each runtime embeds for
:func:`timed_runtimes`: four batches of 16, two a lane on two cores; about 1 s each here."""

BULK_MIN_COSINE = 0.99999
"""The bulk path is used only when every probe's vector is this close to torch's (the bound
under which this project treats two runtimes as one vector space, as for questions)."""
BULK_PROBES = (*QUERY_PROBES,
               "A chunk of a reference page: the `for` statement is used to iterate over the "
               "elements of a sequence (such as a string, tuple or list) or other iterable "
               "object. " * 3,
               "short")
"""Texts whose vectors a bulk path must reproduce: the question probes (one at the window's
end, non-ASCII, code), a long passage and a one-word text, embedded as one batch (so padding
inside a batch is exercised) and one by one."""


@dataclass(frozen=True)
class BulkPath:
    """How chunk texts are embedded: ``backend`` runs the transformer on ``threads`` threads
    (ONNX Runtime: the sessions of :func:`session_threads`, a batch each); ``min_cosine`` is the
    smallest cosine to the model's own torch vectors over :data:`BULK_PROBES` (None on the
    model's own path)."""

    backend: str
    threads: int | None = None
    min_cosine: float | None = None

    @classmethod
    def fp32(cls, runtime: str, threads: int, min_cosine: float) -> BulkPath:
        """The fp32 bulk path on ``runtime`` (one of :data:`BULK_RUNTIMES`)."""
        return cls(f"{runtime}-fp32", threads, min_cosine)

    @property
    def fp32_runtime(self) -> str | None:
        """The runtime of an fp32 bulk path (one of :data:`BULK_RUNTIMES`); None on torch or on
        the model's own backend (the int8 model's OpenVINO)."""
        runtime = self.backend.removesuffix("-fp32")
        return runtime if runtime != self.backend and runtime in BULK_RUNTIMES else None


MAX_BULK_SESSIONS = 8
"""At most this many sessions in a :class:`SessionPool`: each holds the model's weights (about
90 MB more resident memory a session for all-MiniLM-L6-v2, measured), so past it the cores are
shared out among the sessions as intra-op threads."""


class SessionPool:
    """ONNX Runtime sessions of one model, one a core (up to :data:`MAX_BULK_SESSIONS`), shared
    by threads: a call takes a free session (as :class:`~rag_pipeline.core.embedding.export
    .InferPool` does for OpenVINO). :meth:`Embedder.embed
    <rag_pipeline.core.embedding.embedder.Embedder.embed>` runs :attr:`lanes` batches at once,
    one per session: each batch keeps its cores to itself, without the synchronisation of one
    session's threads at every operator (measured on two cores: 1.73 against 1.57 times plain
    encode in the embedding benchmark, the same outputs bit for bit)."""

    def __init__(self, sessions: list) -> None:
        self._free: queue.SimpleQueue = queue.SimpleQueue()
        for session in sessions:
            self._free.put(session)
        self.lanes = len(sessions)

    def __call__(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        session = self._free.get()
        try:
            return session.run(None, inputs)[0]
        finally:
            self._free.put(session)


def onnx_bulk_transformer(onnx: bytes, threads: int | None = None) -> tuple[SessionPool, int]:
    """An fp32 ONNX transformer on ``threads`` cores (default: the cores this process may run
    on) as the sessions of :func:`session_threads`, with the thread count."""
    threads = threads or len(os.sched_getaffinity(0))
    return SessionPool([_session(onnx, n) for n in session_threads(threads)]), threads


def session_threads(threads: int, most: int = MAX_BULK_SESSIONS) -> list[int]:
    """The intra-op threads of each session for ``threads`` cores: one session of one thread a
    core, at most ``most`` sessions, the cores then shared out as evenly as they go."""
    sessions = max(1, min(threads, most))
    each, extra = divmod(max(threads, 1), sessions)
    return [each + (i < extra) for i in range(sessions)]


def openvino_bulk_transformer(onnx: bytes, threads: int | None = None) -> tuple[InferPool, int]:
    """The same fp32 ONNX transformer on OpenVINO (f32 inference precision): as many streams
    as :func:`session_threads` gives sessions, ``threads`` threads between them, a batch a
    stream (the pool's lanes are the streams OpenVINO really compiled); with the thread count."""
    threads = threads or len(os.sched_getaffinity(0))
    core = openvino_core()
    compiled = core.compile_model(core.read_model(onnx), "CPU", {
        **OPENVINO_CONFIG, "PERFORMANCE_HINT": "THROUGHPUT",
        "NUM_STREAMS": len(session_threads(threads)), "INFERENCE_NUM_THREADS": threads})
    streams = int(compiled.get_property("NUM_STREAMS"))
    return InferPool(compiled, streams, lanes=streams), threads


def bulk_transformer(runtime: str, onnx: bytes, threads: int | None = None,
                     ) -> tuple[SessionPool | InferPool, int]:
    """The fp32 ONNX transformer on ``runtime`` (one of :data:`BULK_RUNTIMES`)."""
    if runtime == "onnxruntime":
        return onnx_bulk_transformer(onnx, threads)
    if runtime == "openvino":
        return openvino_bulk_transformer(onnx, threads)
    raise ValueError(f"runtime must be one of {', '.join(BULK_RUNTIMES)}, got {runtime!r}")


def timed_runtimes(embed_with: dict[str, Callable[[list[str]], object]], texts: list[str],
                   rounds: int = 2) -> dict[str, float]:
    """Wall seconds each runtime's ``embed_with[runtime](texts)`` takes, the best of ``rounds``
    with the runtimes taking turns (so a passing load slows both alike), after a warm-up on
    the first few texts."""
    for embed in embed_with.values():
        embed(texts[:4])
    best = dict.fromkeys(embed_with, float("inf"))
    for _ in range(rounds):
        for runtime, embed in embed_with.items():
            started = time.perf_counter()
            embed(texts)
            best[runtime] = min(best[runtime], time.perf_counter() - started)
    return best


def machine(threads: int) -> str:
    """The machine a timing holds for: the CPU's model name, a digest of its feature flags
    (two VMs of one name may differ in AVX-512) and the threads the runtimes were built with
    (a run given fewer cores gets fewer sessions or streams, which may change which is
    faster)."""
    cpu = this_cpu()
    digest = hashlib.sha256(" ".join(sorted(cpu.flags)).encode("utf-8")).hexdigest()[:12]
    return f"{cpu.name}; flags {digest}; {threads} threads"


def onnx_shared_session(onnx: bytes, threads: int) -> Transformer:
    """The same transformer as one session whose ``threads`` intra-op threads share every
    batch: what the embedding benchmark sets :class:`SessionPool` against."""
    session = _session(onnx, threads)
    return lambda inputs: session.run(None, inputs)[0]


def _session(onnx: bytes, threads: int):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(onnx, options, providers=["CPUExecutionProvider"])


def bulk_inputs(tokenizer, texts: list[str]) -> dict[str, np.ndarray]:
    """The transformer's three inputs for a batch from a ``tokenizers.Tokenizer`` that
    truncates to the window and pads to the batch's longest text."""
    encodings = tokenizer.encode_batch(texts)
    return {name: np.array([getattr(e, field) for e in encodings], dtype=np.int64)
            for name, field in (("input_ids", "ids"), ("attention_mask", "attention_mask"),
                                ("token_type_ids", "type_ids"))}


def checked_bulk_tokenizer(model, max_tokens: int):
    """A copy of the model's Rust tokenizer, truncating to the window and padding to a batch's
    longest text, if it gives exactly the wrapper's inputs on :data:`BULK_PROBES` as one batch
    and one by one; None otherwise (texts stay on the wrapper)."""
    wrapper = model.tokenizer
    backend = getattr(wrapper, "backend_tokenizer", None)
    if backend is None or wrapper.pad_token_id is None:
        return None
    from tokenizers import Tokenizer

    direct = Tokenizer.from_str(backend.to_str())
    direct.enable_truncation(max_tokens)
    direct.enable_padding(pad_id=wrapper.pad_token_id, pad_token=wrapper.pad_token,
                          pad_type_id=wrapper.pad_token_type_id)
    for texts in [list(BULK_PROBES), *([p] for p in BULK_PROBES)]:
        expected = token_inputs(wrapper(texts, padding=True, truncation=True,
                                        max_length=max_tokens, return_tensors="np"))
        given = bulk_inputs(direct, texts)
        if expected.keys() != given.keys() or not all(
                np.array_equal(expected[k], given[k]) for k in expected):
            return None
    return direct


def checked_bulk_path(reference: np.ndarray,
                      candidate: Callable[[list[str]], np.ndarray]) -> float:
    """The smallest cosine between the unit vectors ``candidate`` gives :data:`BULK_PROBES`,
    embedded as one batch and one by one, and ``reference``: the model's own unit vectors of
    the probes, in their order."""
    probes = list(BULK_PROBES)
    batched = candidate(probes)
    alone = np.stack([candidate([p])[0] for p in probes])
    return float(min(np.min(np.sum(reference * batched, axis=1)),
                     np.min(np.sum(reference * alone, axis=1))))


BULK_CHECK = "bulk_check.json"
"""Beside the cached ONNX export: the bulk check's result, so a later load of the same model
files on the same runtimes reads it instead of importing torch to check again."""
BULK_TOKENIZER = "tokenizer.json"
"""Beside the cached ONNX export: the model's Rust tokenizer as its wrapper configures it."""
CHECKED_RUNTIMES = ("onnxruntime", "openvino", "tokenizers", "torch", "transformers",
                    "sentence-transformers", "onnx")
"""The packages whose versions a recorded bulk check holds for: the candidate's runtime and
tokenizer, and the reference's (torch through sentence-transformers)."""


def runtime_versions() -> dict[str, str]:
    """The installed versions of :data:`CHECKED_RUNTIMES` (read from package metadata: no
    import), ``-`` for one that is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in CHECKED_RUNTIMES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "-"
    return found


@dataclass(frozen=True)
class BulkRecord:
    """A bulk check that passed: for model ``key``, the ONNX file ``onnx_sha256`` and the
    tokenizer ``tokenizer_sha256`` (numpy mean pooling of ``dimension`` components) gave the
    model's torch vectors of :data:`BULK_PROBES` within ``min_cosine`` on ``runtime``, the
    faster on ``machine`` (``seconds``: each runtime's time for :func:`timed_runtimes`), with
    ``versions``."""

    key: str
    onnx_sha256: str
    tokenizer_sha256: str
    dimension: int
    min_cosine: float
    versions: dict[str, str]
    probes_sha256: str
    runtime: str
    machine: str
    seconds: dict[str, float]
    bound: float = BULK_MIN_COSINE

    def holds_for(self, key: str, onnx_sha256: str, tokenizer_sha256: str, dimension: int,
                  probes_sha256: str, versions: dict[str, str], machine: str) -> bool:
        """The record is this check's: same model, files, probes, bound, runtimes and machine."""
        return self.checked() == (key, onnx_sha256, tokenizer_sha256, dimension, probes_sha256,
                                  versions, BULK_MIN_COSINE) and self.machine == machine \
            and self.min_cosine >= BULK_MIN_COSINE and self.runtime in BULK_RUNTIMES

    def checked(self) -> tuple:
        """What the check was made on: model, files, probes, versions and bound (the machine
        apart)."""
        return (self.key, self.onnx_sha256, self.tokenizer_sha256, self.dimension,
                self.probes_sha256, self.versions, self.bound)


def probes_sha256() -> str:
    return hashlib.sha256("\x00".join(BULK_PROBES).encode("utf-8")).hexdigest()


OTHER_MACHINES = "other_machines"
"""In the record file: the records of other machines (or thread counts) for the same model
files, probes and versions, newest first, so processes that differ in either keep their own
choice instead of timing again at each turn."""
MAX_RECORDS = 16
"""Records kept in one file, this machine's included."""


def write_bulk_record(folder: Path, record: BulkRecord, tokenizer_json: str) -> None:
    """Writes the tokenizer and the record beside the export (each to a temporary file of its
    own, then renamed; the record last, so a record never names a tokenizer not yet in place).
    The record is written on top; the file's records of other machines follow it while they
    are for the same model files, tokenizer, probes, bound and versions (others are dropped).
    Two processes writing at once each keep the file whole, but the later may drop the
    earlier's record: that machine then times again once."""
    folder = Path(folder)
    others = [r for r in read_bulk_records(folder)
              if r.machine != record.machine and r.checked() == record.checked()][:MAX_RECORDS - 1]
    data = {**asdict(record), OTHER_MACHINES: [asdict(r) for r in others]}
    for name, text in ((BULK_TOKENIZER, tokenizer_json), (BULK_CHECK, json.dumps(data, indent=2))):
        # A name of its own, created under the umask (not mkstemp's 0600): the model cache is
        # shared by every folder and user, as the export beside it is.
        tmp = folder / f".{name}.{uuid.uuid4().hex}.tmp"
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), "w",
                       encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, folder / name)


def read_bulk_records(folder: Path) -> list[BulkRecord]:
    """The records beside the export, the newest first; none when none was written or the file
    is unreadable (a record of an older format is left out)."""
    try:
        data = json.loads((Path(folder) / BULK_CHECK).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return []
    if not isinstance(data, dict):
        return []
    others = data.pop(OTHER_MACHINES, None)
    entries = [data, *(e for e in others if isinstance(e, dict))] if isinstance(others, list) \
        else [data]
    records = []
    for entry in entries:
        try:
            records.append(BulkRecord(**entry))
        except TypeError:
            continue
    return records
