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
from rag_pipeline.core.storage.warehouse import Warehouse


class IndexStorage(dg.ConfigurableResource):
    """Where the index lives. ``data_dir`` is a local folder (the DuckDB snapshot ``rag.duckdb``
    and the evaluation charts); ``location`` is where the Parquet tables live: ``None`` for
    ``<data_dir>/warehouse``, or a folder or object-store URI (``s3://bucket/prefix``; S3
    credentials come from the standard AWS environment variables)."""

    data_dir: str
    location: str | None = None

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
    """The folder of documents to index. With ``python_reference`` set, the Python Language
    Reference that ships with CPython is exported into it once (the bundled default corpus);
    after that the folder is the user's and is never rewritten. A file over
    ``max_document_bytes`` fails with its size as the reason, unread."""

    path: str
    python_reference: bool = False
    refresh_python_reference: bool = False
    """Rewrite the exported topics from CPython's copy (the export otherwise happens once)."""
    max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES

    def extraction_settings(self) -> ExtractionSettings:
        return ExtractionSettings(max_document_bytes=self.max_document_bytes)

    def prepare(self) -> Path:
        root = Path(self.path)
        if self.python_reference:
            export_python_reference(root, refresh=self.refresh_python_reference)
        if not root.is_dir():
            raise FileNotFoundError(f"corpus folder not found: {root}")
        return root


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
