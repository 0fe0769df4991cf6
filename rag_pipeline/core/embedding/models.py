"""Embedding models as declarations: what a model is, the key of its vector space, and the
manifest of every file that shapes its vectors.

Light on purpose (no torch, no sentence-transformers, no OpenVINO): everything that only needs to
*name* a model, compare keys or refuse a mismatch imports this module; only code that really
embeds imports :mod:`rag_pipeline.core.embedding.embedder`.

A model's files are listed in a **manifest**: one sha256 per file of the model folder that can
change a vector (weights, ``config.json``, ``modules.json``, ``1_Pooling/config.json``,
``sentence_bert_config.json``, tokenizer files, ...), plus the backend, the precision, the
window and (for a quantised model) the quantisation recipe. The fingerprint of a new model is
the first 8 hex digits of the sha256 of that manifest, so the partition key
``<name>@<fingerprint>`` names the whole vector space. The lock file pins each declared model's
manifest; a model whose files no longer match its lock refuses to load, naming what changed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rag_pipeline.core.embedding.model_key import FINGERPRINT_CHARS, ModelKey
from rag_pipeline.core.text.arguments import listed
from rag_pipeline.core.text.jsonl import jsonl_objects, missing_fields

if TYPE_CHECKING:
    import numpy as np

    from rag_pipeline.core.embedding.adaptation import Adaptation

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
MANIFEST_VERSION = "rag_pipeline model manifest v1"
IGNORED_FILES = frozenset({".gitattributes", "README.md", "LICENSE", "data_config.json",
                           "train_script.py"})
"""Files of a sentence-transformers folder that cannot change a vector (documentation, the
training data list); every other file is fingerprinted."""
IGNORED_FOLDERS = frozenset({"onnx", "openvino", ".git", ".cache"})
"""Exports for other runtimes that this project never loads from the source folder."""


class ModelMismatchError(Exception):
    """A model's files, or a query's vector space, differ from what an index was built with."""


class ModelConfigError(ValueError):
    """The configuration file is malformed; the message is one line naming the field."""


class Backend(StrEnum):
    TORCH = "torch"
    OPENVINO = "openvino"


class Precision(StrEnum):
    FP32 = "fp32"
    INT8 = "int8"


SUPPORTED = frozenset({(Backend.TORCH, Precision.FP32), (Backend.OPENVINO, Precision.FP32),
                       (Backend.OPENVINO, Precision.INT8)})


CALIBRATION_TEXTS = Path(__file__).with_name("calibration_texts.jsonl")
"""The shipped calibration set: 300 ``header`` chunk texts of the Python Language Reference
(CPython 3.11's ``pydoc_data`` topics, spread evenly by chunk id), one ``{"text": ...}`` per line."""


@dataclass(frozen=True)
class Calibration:
    """Static int8 calibration on a fixed text set, the same whatever corpus is indexed: the
    quantised weights depend on the model and these texts only, so the key (whose recipe holds
    the texts' digest) names one set of weights. Build one with :func:`calibration_set`.

    Attributes:
        path: The JSONL file of texts (default: :data:`CALIBRATION_TEXTS`).
        sha256: sha256 of the texts joined by NUL, as the export records it.
        count: How many texts.
    """

    path: Path = field(compare=False)
    sha256: str
    count: int

    def recipe(self) -> str:
        return json.dumps({"method": "nncf.quantize", "model_type": "transformer",
                           "texts": self.count, "texts_sha256": self.sha256}, sort_keys=True)

    def texts(self) -> list[str]:
        """The texts, refused if the file no longer has the digest the key was minted for.

        Raises:
            ModelMismatchError: the file changed.
        """
        texts = _read_calibration(self.path)
        if texts_sha256(texts) != self.sha256:
            raise ModelMismatchError(f"the calibration texts {self.path} changed (sha256 "
                                     f"{texts_sha256(texts)[:12]}…, declared {self.sha256[:12]}…)")
        return texts


def texts_sha256(texts: Sequence[str]) -> str:
    """sha256 of the texts joined by NUL (the digest a calibration and its export record)."""
    return hashlib.sha256("\x00".join(texts).encode("utf-8")).hexdigest()


CALIBRATION_LINE = 'a calibration line must be {"text": "<a non-empty text>"}'


def _read_calibration(path: Path) -> list[str]:
    if not path.is_file():
        raise ModelConfigError(f"calibration texts not found: {path}")
    texts = []
    for number, row in jsonl_objects(path, ModelConfigError, CALIBRATION_LINE):
        if missing_fields(row, ("text",)):
            raise ModelConfigError(f"{path}:{number}: {CALIBRATION_LINE}")
        texts.append(row["text"])
    if len(texts) < 10:
        raise ModelConfigError(f"{path}: {len(texts)} calibration texts; at least 10 are needed")
    return texts


def calibration_set(path: Path = CALIBRATION_TEXTS) -> Calibration:
    """The calibration on the texts of ``path``, with their digest and count.

    Raises:
        ModelConfigError: the file is missing, malformed, or holds fewer than 10 texts.
    """
    texts = _read_calibration(Path(path))
    return Calibration(Path(path), texts_sha256(texts), len(texts))


@dataclass(frozen=True)
class ModelSpec:
    """A declared embedding model.

    Attributes:
        name: The model's name, the first half of its key.
        path: The folder of the sentence-transformers model (source weights).
        fingerprint: 8 hex digits naming the vector space (see :meth:`Manifest.fingerprint`).
        dimension: Vector size.
        max_tokens: The encoder window in word-pieces, special tokens included.
        backend: The runtime that executes the transformer.
        precision: fp32, or int8 (static, calibrated) for OpenVINO.
        batch_size: Texts per forward pass (texts of similar word-piece counts are batched).
        files: ``(relative path, sha256)`` of every fingerprinted file, as locked; empty for a
            model built in code, which is then checked by its fingerprint alone.
        cut: The gate's cosine-distance cut calibrated for this model (None: the default).
        calibration: The int8 recipe (None for fp32 models).
        cache_dir: Where exported runtime models are cached (int8 / OpenVINO).
        adaptation: For a model fine-tuned on the corpus, its recipe, base and pairs (see
            :mod:`rag_pipeline.core.embedding.adaptation`); its folder is checked against the
            ``adaptation.json`` it was trained with.
    """

    name: str
    path: Path
    fingerprint: str
    dimension: int
    max_tokens: int = 256
    backend: Backend = Backend.TORCH
    precision: Precision = Precision.FP32
    batch_size: int = 16
    files: tuple[tuple[str, str], ...] = ()
    cut: float | None = None
    calibration: Calibration | None = None
    cache_dir: Path | None = field(default=None, compare=False)
    adaptation: Adaptation | None = None

    @property
    def key(self) -> str:
        """The partition key of this model's vector space: ``all-MiniLM-L6-v2@53aa5117``."""
        return str(ModelKey(self.name, self.fingerprint))

    def manifest(self) -> Manifest:
        """The manifest as declared (locked files, backend, precision, window, recipe)."""
        return Manifest(dict(self.files), self.backend, self.precision, self.max_tokens,
                        self.calibration.recipe() if self.calibration else "")


class TextEmbedder(Protocol):
    """What retrieval, evaluation and the index need from an embedder (a loaded model or a
    test double): the spec it embeds with, and unit-length float32 vectors."""

    spec: ModelSpec

    def embed(self, texts: Sequence[str], **kwargs) -> np.ndarray: ...

    def embed_query(self, question: str) -> np.ndarray: ...


def file_sha256(path: Path) -> str:
    """sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def weights_file(model_path: Path) -> Path:
    for name in WEIGHT_FILES:
        if (model_path / name).is_file():
            return model_path / name
    raise FileNotFoundError(f"no weights file ({' or '.join(WEIGHT_FILES)}) in {model_path}")


def weights_sha256(model_path: Path) -> str:
    """sha256 of the model's weights file."""
    return file_sha256(weights_file(model_path))


def model_files(model_path: Path) -> dict[str, str]:
    """``relative path -> sha256`` of every file of the folder that can shape a vector."""
    model_path = Path(model_path)
    if not model_path.is_dir():
        raise FileNotFoundError(f"model folder not found: {model_path}")
    weights_file(model_path)
    out = {}
    for path in sorted(model_path.rglob("*")):
        relative = path.relative_to(model_path)
        if (not path.is_file() or relative.name in IGNORED_FILES
                or relative.parts[0] in IGNORED_FOLDERS):
            continue
        out[relative.as_posix()] = file_sha256(path)
    return out


@dataclass(frozen=True)
class Manifest:
    """Everything that shapes a model's vectors, in a canonical form."""

    files: Mapping[str, str]
    backend: Backend
    precision: Precision
    window: int
    recipe: str = ""

    def text(self) -> str:
        lines = [MANIFEST_VERSION, f"backend {self.backend.value}",
                 f"precision {self.precision.value}", f"window {self.window}"]
        if self.recipe:
            lines.append(f"recipe {self.recipe}")
        lines += [f"file {name} {sha}" for name, sha in sorted(self.files.items())]
        return "\n".join(lines) + "\n"

    def fingerprint(self) -> str:
        return hashlib.sha256(self.text().encode("utf-8")).hexdigest()[:FINGERPRINT_CHARS]


def manifest_changes(locked: Manifest, actual: Manifest) -> list[str]:
    """What differs between a locked manifest and the files on disk, one phrase per change."""
    changes = []
    for name in sorted(set(locked.files) | set(actual.files)):
        if name not in actual.files:
            changes.append(f"{name} was removed")
        elif name not in locked.files:
            changes.append(f"{name} was added")
        elif locked.files[name] != actual.files[name]:
            changes.append(f"{name} changed (sha256 {actual.files[name][:12]}…, locked "
                           f"{locked.files[name][:12]}…)")
    for label, before, after in (("backend", locked.backend, actual.backend),
                                 ("precision", locked.precision, actual.precision),
                                 ("window", locked.window, actual.window),
                                 ("quantisation recipe", locked.recipe, actual.recipe)):
        if before != after:
            changes.append(f"{label} changed from {before} to {after}")
    return changes


def verify_model_files(spec: ModelSpec) -> None:
    """Refuses a model whose folder no longer matches what its key was minted for.

    With locked files, every file is compared and the error names each one that changed;
    without (a spec built in code), the manifest's fingerprint must equal the declared one.

    Raises:
        ModelMismatchError: a file, the backend, the precision or the window changed.
    """
    if spec.adaptation is not None:
        from rag_pipeline.core.embedding.adaptation import verify_adapted

        verify_adapted(spec)
        return
    actual = Manifest(model_files(spec.path), spec.backend, spec.precision, spec.max_tokens,
                      spec.calibration.recipe() if spec.calibration else "")
    if spec.files:
        changes = manifest_changes(spec.manifest(), actual)
        if changes:
            raise ModelMismatchError(
                f"{spec.key} refuses to load: in {spec.path}, {'; '.join(changes)}. These files "
                "shape the vectors, so this is another model version: run `rag-pipeline models "
                "--lock` to give it a key (and partitions) of its own")
        # The key must be the one minted for these files: their manifest's fingerprint, or (for
        # a model locked before manifests) its weights' sha256 prefix.
        weights = actual.files.get(weights_file(spec.path).name, "")[:FINGERPRINT_CHARS]
        if spec.fingerprint not in (actual.fingerprint(), weights):
            raise ModelMismatchError(
                f"weights in {spec.path} have fingerprint {weights}, but the model is declared "
                f"as {spec.key}: declare the new weights as a model of their own")
        return
    if actual.fingerprint() != spec.fingerprint:
        raise ModelMismatchError(
            f"the files in {spec.path} have fingerprint {actual.fingerprint()}, but the model is "
            f"declared as {spec.key}: declare the new files as a model of their own")


def folder_dimension(model_path: Path) -> int:
    """The output dimension read from the folder: the pooling config's
    ``word_embedding_dimension``, else ``config.json``'s ``hidden_size``."""
    pooling = Path(model_path) / "1_Pooling" / "config.json"
    if pooling.is_file():
        return int(json.loads(pooling.read_text(encoding="utf-8"))["word_embedding_dimension"])
    config = Path(model_path) / "config.json"
    if config.is_file():
        return int(json.loads(config.read_text(encoding="utf-8"))["hidden_size"])
    raise ModelConfigError(f"cannot read the dimension of {model_path}: declare `dimension`")


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (float32), so cosine distance is ``1 - dot = L2^2 / 2``."""
    import numpy as np  # here, not at the top: reading model declarations needs no numpy

    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError("cannot normalise a zero vector")
    return (vectors / norms).astype(np.float32)


def find_model(key: str, models: Sequence[ModelSpec]) -> ModelSpec:
    for spec in models:
        if spec.key == key:
            return spec
    names = [m.key for m in models if m.name == key]
    hint = f" (a model is named by its key: {names[0]})" if names else ""
    raise ModelMismatchError(f"model {key!r} is not declared{hint}; declared: "
                             f"{listed(m.key for m in models)}")
