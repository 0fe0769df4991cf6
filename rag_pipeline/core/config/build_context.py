"""What one index build is about, as one explicit value: the chosen profile's chunkers and model
specs, the one :class:`~rag_pipeline.core.storage.warehouse.Warehouse`, and the folders the
corpus and the gold sets are read from.

Each edge builds it once (the CLI from its invocation, the code location from its environment:
:func:`rag_pipeline.project_paths.resolve_context`) and hands it down: the Dagster partitions,
the assets' resources, ``index``'s launch environment and its wait all come from it, so the CLI
and the UI build the same thing without reading process state at import.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rag_pipeline.core.chunking.strategies import ChunkingStrategy
from rag_pipeline.core.config.access import AccessPolicy
from rag_pipeline.core.embedding.compute import ComputeSettings
from rag_pipeline.core.embedding.models import ModelSpec
from rag_pipeline.core.ingest.reading import DEFAULT_MAX_DOCUMENT_BYTES
from rag_pipeline.core.ingest.reading_limits import DEFAULT_MAX_DOCUMENT_SECONDS
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.core.text.arguments import listed, repeated
from rag_pipeline.core.text.suggested_commands import commands_in

__all__ = ["BuildContext", "Folders"]


@dataclass(frozen=True)
class Folders:
    """Where a build reads and writes, as comparable values (two builds agree when these and
    their partitions are equal).

    Attributes:
        data_dir: The local data folder (``rag.duckdb``, reports, caches), absolute.
        tables_at: Where the Parquet tables live (a folder or a URI).
        corpus: The folder of documents read, or the source URI.
        eval_dir: The folder of ``gold.jsonl`` and ``ood.jsonl``.
    """

    data_dir: Path
    tables_at: str
    corpus: Path | str
    eval_dir: Path


@dataclass(frozen=True)
class BuildContext:
    """One build: these chunkers x these models, into this warehouse, from this corpus.

    Attributes:
        profile: The profile's name (``production``, ``evaluation`` or a declared one).
        chunkers: The profile's chunkers, in declaration order (the chunker partitions).
        models: The profile's model specs, the default first (the model partitions; the first
            also counts the chunks' word-pieces).
        warehouse: The one handle on the tables.
        corpus: The folder of documents (for the bundled corpus, the folder it is exported to),
            or a source URI (``s3://bucket/prefix``, ``git+file:///repo@ref``:
            :mod:`rag_pipeline.core.ingest.sources`).
        python_reference: ``corpus`` is the bundled Python reference's export (written on first
            use), not a user's folder.
        eval_dir: The folder of the gold set (``gold.jsonl``) and the out-of-domain set
            (``ood.jsonl``).
        compute: Where embeddings runs compute their vectors (``[compute]``: in-process, or
            a Ray cluster).
        access: The ``[access]`` rules when the context was resolved (None: none declared);
            each generation carries an ``access`` table labelled by them.
        config_file: The configuration file it was resolved from (None: the built-in
            declaration), which a long-lived process (the sensor) reads the rules in force from
            (:meth:`rules_in_force`).
        max_document_bytes: ``[index] max_document_bytes``: the largest file read (the
            ``corpus`` resource's default, which a run's config may still change).
        max_document_seconds: ``[index] max_document_seconds``: the longest a document's reading
            may take (the ``corpus`` resource's default, as ``max_document_bytes``).
    """

    profile: str
    chunkers: tuple[ChunkingStrategy, ...]
    models: tuple[ModelSpec, ...]
    warehouse: Warehouse
    corpus: Path | str
    python_reference: bool
    eval_dir: Path
    compute: ComputeSettings = ComputeSettings()
    access: AccessPolicy | None = None
    config_file: Path | None = None
    max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES
    max_document_seconds: float = DEFAULT_MAX_DOCUMENT_SECONDS

    def __post_init__(self) -> None:
        if not self.chunkers:
            raise ValueError(f"profile {self.profile!r} builds no chunker")
        if not self.models:
            raise ValueError(f"profile {self.profile!r} builds no model")
        keys = self.model_keys
        if len(set(keys)) != len(keys):
            raise ValueError(f"partition keys of more than one declared model: "
                             f"{listed(repeated(keys))}")

    @property
    def data_dir(self) -> Path:
        return self.warehouse.data_dir

    @property
    def chunker_keys(self) -> tuple[str, ...]:
        """The chunker partitions' keys."""
        return tuple(c.value for c in self.chunkers)

    @property
    def model_keys(self) -> tuple[str, ...]:
        """The model partitions' keys (``name@fingerprint``)."""
        return tuple(m.key for m in self.models)

    @property
    def rules(self) -> str | None:
        """The digest of :attr:`access` (None without ``[access]``)."""
        return self.access.digest if self.access is not None else None

    def rules_in_force(self) -> str | None:
        """The digest of the ``[access]`` rules the configuration file holds now (an edit made
        after this context was resolved included); :attr:`rules` without a file."""
        if self.config_file is None:
            return self.rules
        from rag_pipeline.core.config.parse import load_config

        policy = load_config(self.config_file).access
        return policy.digest if policy is not None else None

    def commands_in(self, message: str) -> str:
        """``message`` with each ```rag-pipeline ...``` it suggests given ``--config`` and the
        file this context was resolved from (unchanged without one): a command that works on
        the same folder, suggested where no command line is at hand (the sensor, an asset)."""
        return commands_in(message, () if self.config_file is None
                           else ("--config", str(self.config_file)))

    @property
    def gold_path(self) -> Path:
        return self.eval_dir / "gold.jsonl"

    @property
    def ood_path(self) -> Path:
        return self.eval_dir / "ood.jsonl"

    @property
    def folders(self) -> Folders:
        corpus = self.corpus if isinstance(self.corpus, str) else self.corpus.absolute()
        return Folders(self.data_dir.absolute(), self.warehouse.location, corpus,
                       self.eval_dir.absolute())
