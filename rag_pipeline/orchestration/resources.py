"""External things the assets use: where the tables live, where the documents come from, and
how many cores a run may use."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from rag_pipeline.core.embedding.compute import ComputeSettings, Engine
from rag_pipeline.core.embedding.torch_threads import set_torch_threads
from rag_pipeline.core.ingest import DEFAULT_MAX_DOCUMENT_BYTES, ExtractionSettings
from rag_pipeline.core.ingest.corpus_export import export_python_reference
from rag_pipeline.core.ingest.reading_limits import DEFAULT_MAX_DOCUMENT_SECONDS
from rag_pipeline.core.ingest.reconcile import DEFAULT_MAX_SHRINK
from rag_pipeline.core.ingest.sources import (
    S3Settings,
    Source,
    SourceSettings,
    is_corpus_uri,
    open_source,
)
from rag_pipeline.core.storage.location import warehouse_location
from rag_pipeline.core.storage.warehouse import Warehouse


class IndexStorage(dg.ConfigurableResource):
    """Where the index lives. ``data_dir`` is a local folder (the DuckDB snapshot ``rag.duckdb``
    and the evaluation charts); ``location`` is where the Parquet tables live: ``None`` for
    ``<data_dir>/warehouse``, or a folder or object-store URI (``s3://bucket/prefix``; S3
    credentials come from the standard AWS environment variables)."""

    data_dir: str
    location: str | None = None

    @classmethod
    def of(cls, warehouse: Warehouse) -> IndexStorage:
        """The resource naming ``warehouse``'s folders (``location`` unset for the data folder's
        own tables)."""
        location = warehouse.location
        return cls(data_dir=str(warehouse.data_dir),
                   location=None if location == warehouse_location(warehouse.data_dir) else location)

    def warehouse(self) -> Warehouse:
        return Warehouse(Path(self.data_dir), self.location)


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, which container limits set)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class RunCompute(dg.ConfigurableResource):
    """The cores one run's model may use. ``torch_threads`` unset means every core the run's
    process is given, so a run launched on a 4-core pod uses 4 and two runs sharing a machine
    can each be given half; set at the start of the run, never deep in the core."""

    torch_threads: int | None = None
    engine: str = "in_process"
    """``[compute] engine``: ``in_process``, or ``ray`` (the shards run on the cluster at
    ``address``)."""
    address: str | None = None
    shard_texts: int = 64

    def settings(self) -> ComputeSettings:
        return ComputeSettings(Engine(self.engine), self.address, self.shard_texts)

    def threads(self) -> int:
        if self.torch_threads is not None and self.torch_threads < 1:
            raise ValueError(f"torch_threads must be at least 1, not {self.torch_threads}")
        return self.torch_threads or available_cores()

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        """Sets torch's threads without importing torch: a run that loads no model never
        imports it (see :mod:`rag_pipeline.core.embedding.torch_threads`)."""
        threads = self.threads()
        now = set_torch_threads(threads)
        if context.log is not None:
            context.log.info(f"torch uses {threads} threads" + ("" if now else " once a model loads"))


class CorpusSource(dg.ConfigurableResource):
    """Where the documents come from: a folder, ``s3://bucket/prefix`` or ``git+file:///repo``
    / ``git+https://...`` with an optional ``@ref`` (:mod:`rag_pipeline.core.ingest.sources`).
    With ``python_reference`` set, the Python Language Reference that ships with CPython is
    exported into the folder once (the bundled default corpus); after that the folder is the
    user's and is never rewritten. A file over ``max_document_bytes`` fails with its size as the
    reason, unread. A run that would keep fewer than ``1 - max_shrink`` of the last run's
    readable documents (or none) is refused unless ``allow_shrink``; a failed file is read again
    only once it changes, or with ``retry_failed``. S3 credentials and the endpoint come from the
    standard AWS variables (``AWS_ENDPOINT_URL`` for MinIO or moto), read here and nowhere
    deeper; remote git repositories are mirrored into ``cache_dir``."""

    path: str
    python_reference: bool = False
    refresh_python_reference: bool = False
    """Rewrite the exported topics from CPython's copy (the export otherwise happens once)."""
    max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES
    max_document_seconds: float = DEFAULT_MAX_DOCUMENT_SECONDS
    """A document whose reading takes longer fails with the limit as the reason (OCR not
    counted)."""
    max_shrink: float = DEFAULT_MAX_SHRINK
    allow_shrink: bool = False
    retry_failed: bool = False
    cache_dir: str | None = None

    def extraction_settings(self) -> ExtractionSettings:
        return ExtractionSettings(max_document_bytes=self.max_document_bytes,
                                  retry_failed=self.retry_failed,
                                  max_document_seconds=self.max_document_seconds)

    def source(self) -> Source:
        """The source ``path`` names (the bundled corpus exported first when it is the one).

        Raises:
            SourceError: If a URI does not parse.
        """
        if self.python_reference:
            export_python_reference(Path(self.path), refresh=self.refresh_python_reference)
        return open_source(self.path if is_corpus_uri(self.path) else Path(self.path),
                           SourceSettings(S3Settings.from_environment(os.environ),
                                          Path(self.cache_dir) if self.cache_dir else None))

    def run_config(self, **knobs: object) -> dict:
        """Run config for a run of this corpus with some fields changed (``allow_shrink=True``):
        a resource's run config replaces its whole configuration, so every field is given."""
        values = {k: v for k, v in {**self.model_dump(), **knobs}.items() if v is not None}
        return {"resources": {"corpus": {"config": values}}}


class EvalSets(dg.ConfigurableResource):
    """The gold set (needles with questions) and the out-of-domain set the eval scores."""

    gold_path: str
    ood_path: str


class ReportSite(dg.ConfigurableResource):
    """Where ``rag-pipeline serve`` is reachable for people using the Dagster UI: the
    evaluation's ``report_url`` links to ``<base_url>/reports/<model key>``, which serve
    answers with the report the evaluation wrote."""

    base_url: str = "http://127.0.0.1:8000"

    def report_url(self, model_key: str) -> str:
        return f"{self.base_url.rstrip('/')}/reports/{model_key}"
