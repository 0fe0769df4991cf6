"""A model version adapted to the corpus: training pairs made from the corpus alone, their
digest, the key that names base + data + recipe, and a seeded fine-tune on CPU.

Pairs never come from gold questions. Two kinds are made from the chunks of one chunker:

* ``header``: a chunk's context header (``Document > Section``) and the chunk's content, so
  the model learns which passages a topic's vocabulary points to;
* ``neighbour``: a chunk's content and the next chunk's content in the same section, so
  passages that talk about the same thing in different words land close together.

Training uses sentence-transformers' ``MultipleNegativesRankingLoss`` (in-batch negatives,
Henderson et al. 2017, "Efficient Natural Language Response Suggestion for Smart Reply"),
AdamW at a constant learning rate, batches in a seeded order, one CPU thread: the same pairs
and recipe give the same weights, byte for byte (tested).

The key of an adapted model is ``<name>@<fingerprint>`` where the fingerprint is the first 8
hex digits of the sha256 of ``{base key, recipe, pairs digest, window}``, known before any
training, so the model's partitions are declared like any other. Making the pairs means
extracting and chunking the whole corpus, too slow for every configuration load (``ask``,
``models``, ``serve``, the code location): :func:`pairs_digest` records the digest in the model
cache under the sha256 of what the pairs are made from (the corpus files' bytes, the code and
libraries that read them, the recipe), so it is recomputed only when one of those changes.
The trained folder carries ``adaptation.json``: that key, the recipe, the pairs' digest and
count, the loss, and the sha256 of every file it holds; a folder whose files or key differ
refuses to load.

Torch and sentence-transformers are imported only by :func:`train_adapted`.

Some 550 lines in one module because it is one concept from corpus to trained folder (the
pairs, their digest and its record, the recipe, the training, the folder's manifest); each part
only makes sense beside the key the others feed.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import stat
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from functools import cache
from importlib import util
from pathlib import Path

from rag_pipeline.core.chunking.strategies import Chunk, ChunkingStrategy, chunk_document
from rag_pipeline.core.embedding.models import (
    FINGERPRINT_CHARS,
    ModelMismatchError,
    ModelSpec,
    model_files,
    weights_sha256,
)

PAIRS_VERSION = "rag_pipeline adaptation pairs v1"
ADAPTATION_FILE = "adaptation.json"
"""Written into the trained folder; not itself among the files it lists."""
DIGESTS_FOLDER = "pairs-digests"
"""Under the model cache: one ``<inputs sha256>.json`` per corpus x code x recipe seen."""
READER_LIBRARIES = ("beautifulsoup4", "lxml", "openpyxl", "pypdfium2", "PyStemmer", "python-docx",
                    "webvtt-py")
"""The installed distributions whose versions can change what a document's text reads as."""
CORE_FOLDER = Path(__file__).resolve().parents[1]
"""``rag_pipeline/core``: every source file of it is part of what the pairs are made by."""


class ModelNotTrainedError(ModelMismatchError):
    """An adapted model is declared but its folder has not been trained yet."""


class PairKind(StrEnum):
    HEADER = "header"
    NEIGHBOUR = "neighbour"


@dataclass(frozen=True)
class Pair:
    """One training pair: ``anchor`` should retrieve ``positive`` (the rest of the batch are
    its negatives)."""

    anchor: str
    positive: str
    kind: PairKind
    document_id: str


@dataclass(frozen=True)
class CorpusDocument:
    """A document as the pairs see it: its id, title and canonical text."""

    document_id: str
    title: str
    canonical_text: str


@dataclass(frozen=True)
class AdaptRecipe:
    """How an adapted model is trained (the ``adapt = {...}`` table of a ``[[models]]`` entry).

    Attributes:
        base: The declared model (by name) that is fine-tuned.
        chunker: The chunker whose chunks the pairs are made from.
        epochs: Passes over the pairs.
        batch_size: Pairs per step; the other pairs of a batch are each anchor's negatives.
        seed: Seeds the pair sample, the batch order, dropout and the held-out split.
        max_seq_length: Word-pieces per text while training.
        max_pairs: At most this many pairs, a seeded sample when the corpus makes more.
        learning_rate: AdamW's learning rate (constant).
        held_out: Documents no pair may come from (the held-out half of a gold set, see
            :func:`held_out_half`), sorted.
    """

    base: str
    chunker: ChunkingStrategy = ChunkingStrategy.HEADER
    epochs: int = 1
    batch_size: int = 32
    seed: int = 0
    max_seq_length: int = 128
    max_pairs: int = 4000
    learning_rate: float = 2e-5
    held_out: tuple[str, ...] = ()

    def text(self) -> str:
        """The canonical JSON of the recipe (part of the key)."""
        values = asdict(self)
        values["chunker"] = self.chunker.value
        values["held_out"] = list(self.held_out)
        return json.dumps(values, sort_keys=True)


@dataclass(frozen=True)
class Adaptation:
    """What an adapted model's spec carries: the recipe, the base model's spec, and the pairs'
    digest and count as computed when the key was minted."""

    recipe: AdaptRecipe
    base: ModelSpec
    pairs_sha256: str
    pairs: int
    available: int = field(default=0)
    """Pairs the corpus made before the ``max_pairs`` sample."""
    record: Path | None = field(default=None, compare=False)
    """The model cache's record of the digest (:func:`pairs_digest`), dropped when training
    finds the corpus makes other pairs."""


@dataclass(frozen=True)
class PairsDigest:
    """The digest of the pairs a recipe makes from a corpus, and where it is recorded.

    Attributes:
        sha256: :func:`pairs_sha256` of the pairs.
        pairs: How many pairs (after the ``max_pairs`` sample).
        available: How many the corpus made before the sample.
        record: The record's file in the model cache (None without a cache).
        computed: True when the pairs were made now, False when read from the record.
    """

    sha256: str
    pairs: int
    available: int
    record: Path | None
    computed: bool


@dataclass(frozen=True)
class TrainingResult:
    """What :func:`train_adapted` did.

    Attributes:
        path: The trained folder.
        pairs: Pairs trained on.
        steps: Optimiser steps.
        epochs: Passes over the pairs.
        first_loss: Mean loss over the first epoch's first tenth of the steps (at least one).
        last_loss: Mean loss over the last tenth of the steps (at least one).
        seconds: Wall time of the training.
        weights_sha256: sha256 of the trained weights file.
    """

    path: Path
    pairs: int
    steps: int
    epochs: int
    first_loss: float
    last_loss: float
    seconds: float
    weights_sha256: str


def held_out_half(documents: Iterable[str], seed: int) -> tuple[str, ...]:
    """The held-out half of a gold set's documents: sorted by ``sha256("<seed>:<id>")``, the
    first ``ceil(n / 2)``, returned sorted by id. A seeded, order-free split by topic."""
    ranked = sorted(set(documents), key=lambda d: hashlib.sha256(f"{seed}:{d}".encode()).hexdigest())
    return tuple(sorted(ranked[:(len(ranked) + 1) // 2]))


def corpus_chunks(documents: Sequence[CorpusDocument], chunker: ChunkingStrategy) -> list[Chunk]:
    """Every document cut by ``chunker``, in document id order."""
    out: list[Chunk] = []
    for doc in sorted(documents, key=lambda d: d.document_id):
        out.extend(chunk_document(doc.document_id, doc.title, doc.canonical_text, chunker))
    return out


def make_pairs(chunks: Sequence[Chunk], exclude: Iterable[str] = ()) -> list[Pair]:
    """The ``header`` and ``neighbour`` pairs of the chunks (in reading order per document),
    none from a document in ``exclude``. A chunk whose content has fewer than 8 words makes
    no pair (a lone code line or a heading's remains teach nothing)."""
    excluded = set(exclude)
    pairs: list[Pair] = []
    previous: Chunk | None = None
    for chunk in chunks:
        if chunk.document_id in excluded:
            continue
        content = " ".join(chunk.content.split())
        if len(content.split()) < 8:
            previous = None
            continue
        header = chunk.header or chunk.section
        pairs.append(Pair(header, content, PairKind.HEADER, chunk.document_id))
        if (previous is not None and previous.document_id == chunk.document_id
                and previous.section == chunk.section):
            pairs.append(Pair(" ".join(previous.content.split()), content, PairKind.NEIGHBOUR,
                              chunk.document_id))
        previous = chunk
    return pairs


def sample_pairs(pairs: Sequence[Pair], limit: int, seed: int) -> list[Pair]:
    """At most ``limit`` pairs: all of them, or a seeded sample kept in corpus order."""
    if len(pairs) <= limit:
        return list(pairs)
    chosen = sorted(random.Random(seed).sample(range(len(pairs)), limit))
    return [pairs[i] for i in chosen]


def pairs_sha256(pairs: Iterable[Pair]) -> str:
    """sha256 of the pairs in order (version line, then kind, document, anchor, positive)."""
    digest = hashlib.sha256(PAIRS_VERSION.encode())
    for pair in pairs:
        for value in (pair.kind.value, pair.document_id, pair.anchor, pair.positive):
            digest.update(b"\x00" + value.encode("utf-8"))
        digest.update(b"\x01")
    return digest.hexdigest()


def training_pairs(documents: Sequence[CorpusDocument], recipe: AdaptRecipe) -> tuple[list[Pair], int]:
    """The pairs a recipe trains on, and how many the corpus made before the sample."""
    pairs = make_pairs(corpus_chunks(documents, recipe.chunker), recipe.held_out)
    return sample_pairs(pairs, recipe.max_pairs, recipe.seed), len(pairs)


def _hash_file(digest, path: Path) -> None:
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def reader_versions() -> tuple[str, ...]:
    """``name-version`` of each installed reader library, from the names of the ``.dist-info``
    folders on ``sys.path`` (reading each one's metadata, as ``importlib.metadata.version``
    does, cost about 0.35 s of a configuration load)."""
    wanted = {_normalised(name) for name in READER_LIBRARIES}
    found = set()
    for entry in sys.path:
        folder = Path(entry or ".")
        if not folder.is_dir():
            continue
        for info in folder.glob("*.dist-info"):
            name, _, version = info.name.removesuffix(".dist-info").partition("-")
            if _normalised(name) in wanted:
                found.add(f"{_normalised(name)}-{version}")
    return tuple(sorted(found))


@cache
def _code_sha256() -> str:
    """sha256 of every ``.py`` file under ``rag_pipeline/core`` (path and bytes), the Python
    version and the reader libraries' versions: the code that turns a corpus into pairs."""
    digest = hashlib.sha256(sys.version.encode())
    for version in reader_versions():
        digest.update(f"\x00{version}".encode())
    for path in sorted(CORE_FOLDER.rglob("*.py")):
        digest.update(b"\x00" + path.relative_to(CORE_FOLDER).as_posix().encode() + b"\x00")
        _hash_file(digest, path)
    return digest.hexdigest()


def corpus_inputs_sha256(corpus: Path | None, recipe: AdaptRecipe) -> str:
    """sha256 of everything the pairs of ``recipe`` are made from: the recipe, the code
    (:func:`_code_sha256`), and the corpus: the bytes of every regular file
    :func:`~rag_pipeline.core.ingest.discover` lists (by relative path; a symlink by its target,
    another special file by its kind, never read), or for the bundled reference (None) the bytes
    of the ``pydoc_data.topics`` module it is exported from.

    Not covered: external programs a reader runs (the OCR engine of a scanned PDF); training
    recomputes the pairs and drops a record that no longer matches (:func:`train_adapted`).

    Raises:
        FileNotFoundError: ``corpus`` is not a folder.
    """
    digest = hashlib.sha256(f"{PAIRS_VERSION}\x00{recipe.text()}\x00{_code_sha256()}".encode())
    if corpus is None:
        digest.update(b"\x00bundled\x00")
        _hash_file(digest, Path(util.find_spec("pydoc_data.topics").origin))
        return digest.hexdigest()
    from rag_pipeline.core.ingest import discover

    corpus = Path(corpus)
    if not corpus.is_dir():
        raise FileNotFoundError(f"corpus folder not found: {corpus}")
    for path in discover(corpus):
        digest.update(b"\x00" + path.relative_to(corpus).as_posix().encode() + b"\x00")
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            digest.update(b"link:" + os.readlink(path).encode())
        elif stat.S_ISREG(mode):
            _hash_file(digest, path)
        else:
            digest.update(f"special:{stat.S_IFMT(mode)}".encode())
    return digest.hexdigest()


def pairs_digest(corpus: Path | None, recipe: AdaptRecipe, cache_dir: Path | None) -> PairsDigest:
    """The digest of the pairs ``recipe`` makes from ``corpus`` (None: the bundled reference),
    read from the model cache's record when one exists for the same inputs
    (:func:`corpus_inputs_sha256`), else made from the corpus and recorded (a temp file, then
    a rename). A record that cannot be read is made again; a cache that cannot be written
    leaves the digest computed, unrecorded.

    Raises:
        FileNotFoundError: ``corpus`` is not a folder.
    """
    inputs = corpus_inputs_sha256(corpus, recipe)
    record = cache_dir / DIGESTS_FOLDER / f"{inputs}.json" if cache_dir is not None else None
    if record is not None and record.is_file():
        try:
            saved = json.loads(record.read_text(encoding="utf-8"))
            if saved["inputs"] == inputs:
                return PairsDigest(saved["pairs_sha256"], saved["pairs"], saved["available"],
                                   record, computed=False)
        except (ValueError, KeyError, TypeError):
            pass
    pairs, available = training_pairs(corpus_documents(corpus), recipe)
    digest = pairs_sha256(pairs)
    if record is not None:
        try:
            record.parent.mkdir(parents=True, exist_ok=True)
            tmp = record.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"inputs": inputs, "pairs_sha256": digest,
                                       "pairs": len(pairs), "available": available},
                                      sort_keys=True) + "\n", encoding="utf-8")
            tmp.replace(record)
        except OSError:
            record = None
    return PairsDigest(digest, len(pairs), available, record, computed=True)


def adapted_fingerprint(base_key: str, recipe: AdaptRecipe, digest: str, window: int) -> str:
    """First 8 hex digits of the sha256 of the base key, the recipe, the pairs' digest and the
    embedding window: a different corpus (or recipe, or base) is a different key."""
    text = json.dumps({"base": base_key, "recipe": recipe.text(), "pairs_sha256": digest,
                       "window": window}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:FINGERPRINT_CHARS]


def adapted_files(path: Path) -> dict[str, str]:
    """``relative path -> sha256`` of the trained folder, its own manifest left out."""
    return {name: sha for name, sha in model_files(path).items() if name != ADAPTATION_FILE}


def verify_adapted(spec: ModelSpec) -> None:
    """Refuses an adapted model whose folder is missing, was trained for another key, or whose
    files changed after training.

    Raises:
        ModelNotTrainedError: no trained folder yet.
        ModelMismatchError: another key, or a file changed.
    """
    manifest_path = spec.path / ADAPTATION_FILE
    if not manifest_path.is_file():
        raise ModelNotTrainedError(f"{spec.key} is not trained yet (no {manifest_path}): run "
                                   "`rag-pipeline adapt`")
    recorded = json.loads(manifest_path.read_text(encoding="utf-8"))
    if recorded.get("key") != spec.key:
        raise ModelMismatchError(f"{spec.path} was trained as {recorded.get('key')!r}, not "
                                 f"{spec.key}: run `rag-pipeline adapt`")
    actual = adapted_files(spec.path)
    changed = sorted(n for n in set(actual) | set(recorded["files"])
                     if actual.get(n) != recorded["files"].get(n))
    if changed:
        raise ModelMismatchError(f"{spec.key} refuses to load: in {spec.path}, "
                                 f"{', '.join(changed)} changed since training")


def train_adapted(spec: ModelSpec, pairs: Sequence[Pair],
                  log: Callable[[str], None] = lambda _: None) -> TrainingResult:
    """Fine-tunes ``spec.adaptation.base`` on ``pairs`` and writes the folder at ``spec.path``
    (a temporary sibling, then a rename: a crash never leaves half a model).

    Args:
        spec: The adapted model's spec (its ``adaptation`` names the base and the recipe).
        pairs: The pairs, as :func:`training_pairs` makes them; their digest must be the one
            the key was minted for.
        log: Called with a progress line about every tenth of the steps.

    Raises:
        ModelMismatchError: the pairs' digest is not the key's (the corpus changed since the
            key was computed); the model cache's record of the old digest is removed first.
        ValueError: fewer pairs than one batch.
    """
    adaptation = spec.adaptation
    if adaptation is None:
        raise ValueError(f"{spec.key} is not an adapted model")
    recipe = adaptation.recipe
    digest = pairs_sha256(pairs)
    if digest != adaptation.pairs_sha256:
        if adaptation.record is not None:
            adaptation.record.unlink(missing_ok=True)
        raise ModelMismatchError(f"the pairs have digest {digest[:12]}…, but {spec.key} was "
                                 f"minted for {adaptation.pairs_sha256[:12]}…: the corpus changed "
                                 "(the recorded digest is dropped); reload the definitions (or "
                                 "rerun the command)")
    if len(pairs) < recipe.batch_size:
        raise ValueError(f"{len(pairs)} pairs is fewer than one batch ({recipe.batch_size})")

    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.losses import MultipleNegativesRankingLoss

    from rag_pipeline.core.embedding.torch_threads import apply_torch_threads

    apply_torch_threads()
    started = time.perf_counter()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        random.seed(recipe.seed)
        np.random.seed(recipe.seed)
        torch.manual_seed(recipe.seed)
        model = SentenceTransformer(str(adaptation.base.path), device="cpu")
        model.max_seq_length = recipe.max_seq_length
        loss_fn = MultipleNegativesRankingLoss(model)
        encode = getattr(model, "preprocess", None) or model.tokenize
        optimiser = torch.optim.AdamW(model.parameters(), lr=recipe.learning_rate)
        order = random.Random(recipe.seed)
        batches_per_epoch = len(pairs) // recipe.batch_size
        total = batches_per_epoch * recipe.epochs
        losses: list[float] = []
        model.train()
        for epoch in range(recipe.epochs):
            indices = list(range(len(pairs)))
            order.shuffle(indices)
            for b in range(batches_per_epoch):
                batch = [pairs[i] for i in indices[b * recipe.batch_size:(b + 1) * recipe.batch_size]]
                features = [encode([p.anchor for p in batch]), encode([p.positive for p in batch])]
                loss = loss_fn(features, None)
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
                losses.append(float(loss.detach()))
                step = len(losses)
                if step == 1 or step == total or step % max(1, total // 10) == 0:
                    log(f"epoch {epoch + 1}/{recipe.epochs} step {step}/{total} loss "
                        f"{losses[-1]:.4f} ({time.perf_counter() - started:.0f} s)")
        model.eval()
        tmp = spec.path.with_name(spec.path.name + ".tmp")
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.parent.mkdir(parents=True, exist_ok=True)
        model.save(str(tmp))
    finally:
        torch.set_num_threads(threads)
    tenth = max(1, len(losses) // 10)
    seconds = time.perf_counter() - started
    files = adapted_files(tmp)
    weights = weights_sha256(tmp)
    (tmp / ADAPTATION_FILE).write_text(json.dumps({
        "key": spec.key, "base": adaptation.base.key, "recipe": json.loads(recipe.text()),
        "pairs_sha256": digest, "pairs": len(pairs), "steps": len(losses),
        "first_loss": sum(losses[:tenth]) / tenth, "last_loss": sum(losses[-tenth:]) / tenth,
        "seconds": round(seconds, 1), "files": files}, indent=2, sort_keys=True) + "\n",
        encoding="utf-8")
    if spec.path.exists():
        shutil.rmtree(spec.path)
    tmp.replace(spec.path)
    return TrainingResult(spec.path, len(pairs), len(losses), recipe.epochs,
                          sum(losses[:tenth]) / tenth, sum(losses[-tenth:]) / tenth, seconds,
                          weights)


def corpus_documents(corpus: Path | None) -> list[CorpusDocument]:
    """The ok documents of a corpus folder, or (None) of the bundled Python reference as
    CPython ships it (the text ``rag-pipeline index`` exports, read without writing it)."""
    if corpus is None:
        from pydoc_data.topics import topics

        from rag_pipeline.core.ingest import format_named
        from rag_pipeline.core.ingest.corpus_export import topic_to_markdown

        markdown = format_named("markdown")
        out = []
        for name in sorted(topics):
            extracted = markdown.extract(topic_to_markdown(topics[name]).encode("utf-8"), name)
            out.append(CorpusDocument(f"{name}.md", extracted.title, extracted.canonical_text))
        return out
    from rag_pipeline.core.ingest import discover, extract_document

    corpus = Path(corpus)
    if not corpus.is_dir():
        raise FileNotFoundError(f"corpus folder not found: {corpus}")
    records = [extract_document(path, corpus) for path in discover(corpus)]
    return [CorpusDocument(r.document_id, r.title, r.canonical_text) for r in records if r.ok]


def adapt_model(spec: ModelSpec, documents: Sequence[CorpusDocument],
                log: Callable[[str], None] = lambda _: None) -> TrainingResult:
    """Makes the recipe's pairs from ``documents`` and trains ``spec`` on them.

    Raises:
        ModelMismatchError: the documents make other pairs than the key was minted for.
    """
    if spec.adaptation is None:
        raise ValueError(f"{spec.key} is not an adapted model")
    pairs, available = training_pairs(documents, spec.adaptation.recipe)
    kinds = {kind: sum(p.kind is kind for p in pairs) for kind in PairKind}
    log(f"{spec.key}: {len(pairs)} pairs ({', '.join(f'{n} {k.value}' for k, n in kinds.items())}"
        f"; {available} made, {len(spec.adaptation.recipe.held_out)} held-out documents "
        f"excluded) from {len({p.document_id for p in pairs})} documents")
    return train_adapted(spec, pairs, log)


def trained_result(spec: ModelSpec) -> TrainingResult:
    """The :class:`TrainingResult` recorded in a trained folder (verified first).

    Raises:
        ModelNotTrainedError: not trained yet.
        ModelMismatchError: trained for another key, or changed since.
    """
    verify_adapted(spec)
    recorded = json.loads((spec.path / ADAPTATION_FILE).read_text(encoding="utf-8"))
    return TrainingResult(spec.path, recorded["pairs"], recorded["steps"],
                          recorded["recipe"]["epochs"], recorded["first_loss"],
                          recorded["last_loss"], recorded["seconds"], weights_sha256(spec.path))
