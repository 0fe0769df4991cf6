"""The ``access`` table: the readers of every chunk, part of each generation under ``[access]``.

One partition per chunker: ``chunk_id``, ``document_id``, ``readers`` (the groups that may read
the chunk, sorted; empty: nobody) and ``rules`` (the digest of the ``[access]`` rules that
labelled it). It is a generation table built from ``chunks`` and from the rules
(:data:`rag_pipeline.core.index.GENERATION_TABLES`, ``labelled``): its pointer records the chunks
file and the rules' digest, so a rule edit makes it stale and the next build writes a new
``access`` file from the stored chunks alone
(:func:`rag_pipeline.core.index.build.build_access`), publishing a generation with the same
chunks and vector files. A document's readers come from one place,
:meth:`~rag_pipeline.core.config.access.AccessPolicy.readers_by_document`, which the served index also
labels its rows with (:class:`rag_pipeline.core.index.access.AccessLabels`), so the table and the
service agree.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from rag_pipeline.core.config.access import AccessPolicy, unmatched_globs
from rag_pipeline.core.storage.table_names import DOCUMENTS
from rag_pipeline.core.storage.warehouse import Warehouse

__all__ = ["access_table", "globs_matching_nothing", "UNMATCHED_GLOB"]

UNMATCHED_GLOB = ("[access] glob {glob!r} matches no document: a document it named was renamed or "
                  "deleted, or it has a typo; what it kept from others now falls to the next rule "
                  "that matches (`status` counts the documents each group reads)")
"""The warning for a glob that matches nothing, as ``index`` and the ``access`` step say it."""


def access_table(chunks: pa.Table, policy: AccessPolicy, corpus_ids: Sequence[str] = ()
                 ) -> pa.Table:
    """``chunk_id``, ``document_id``, ``readers``, ``rules`` of every chunk, the readers read
    over ``corpus_ids`` (every document of the corpus, whatever its status) and the chunks'."""
    documents = chunks.column("document_id").to_pylist()
    by_document = {d: list(r) for d, r in policy.readers_by_document([*corpus_ids, *documents]).items()}
    return pa.table({
        "chunk_id": chunks.column("chunk_id"),
        "document_id": chunks.column("document_id"),
        "readers": pa.array([by_document[d] for d in documents], pa.list_(pa.string())),
        "rules": pa.array([policy.digest] * len(documents), pa.string()),
    })


def globs_matching_nothing(warehouse: Warehouse, policy: AccessPolicy) -> list[str]:
    """The rules' globs that match no document of the latest ``documents`` table (whatever its
    status); none before any documents are written."""
    latest = warehouse.version(DOCUMENTS)
    if latest is None:
        return []
    ids = warehouse.read_file(latest.file, columns=["document_id"]).column("document_id").to_pylist()
    return unmatched_globs(policy, ids)
