"""The CLI's one hook for the ``access`` table: re-label the served chunks when the rules or the
chunks changed, and refresh the DuckDB file (``index`` and ``serve`` call it)."""

from __future__ import annotations

from rag_pipeline.cli.edge import echo, read_config


def relabel_access(warehouse) -> None:
    """Writes the stale ``access`` partitions for the ``[access]`` rules in force (none without
    ``[access]``) and republishes ``rag.duckdb`` when one was written."""
    policy = read_config().access
    if policy is None:
        return
    from rag_pipeline.core.index.access_table import write_access_labels
    from rag_pipeline.core.index.query_db import publish_query_db

    relabelled = write_access_labels(warehouse, policy)
    if relabelled:
        publish_query_db(warehouse)
        echo(f"access: labelled the chunks of {', '.join(relabelled)} under rules {policy.digest} "
             "(table `access` in rag.duckdb: chunk_id, document_id, readers)")
