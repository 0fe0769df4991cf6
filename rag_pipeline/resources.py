"""External things the assets use: where the tables live and where the documents come from."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from rag_pipeline.core.corpus_export import export_python_reference
from rag_pipeline.core.documents import DEFAULT_MAX_DOCUMENT_BYTES, ExtractionSettings
from rag_pipeline.core.warehouse import Warehouse


class IndexStorage(dg.ConfigurableResource):
    """The data folder: Parquet tables in ``<data_dir>/warehouse``, views in ``rag.duckdb``."""

    data_dir: str

    def warehouse(self) -> Warehouse:
        return Warehouse(Path(self.data_dir))


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
