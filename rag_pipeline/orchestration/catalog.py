"""How the assets appear in the Dagster catalog: a group per stage, owners, tags, freshness.

One table of who-is-where, applied to the assets as they enter the ``Definitions`` (the asset
modules stay about computing their table). The groups are the stages of the pipeline:
``models`` (an adapted model's training), ``ingest`` (documents and chunks), ``index`` (BM25
statistics, embeddings and the published generation) and ``evaluation`` (the ``eval_*``
tables). Automation is the ``index_automation`` sensor's (:mod:`rag_pipeline.orchestration.automation`), so
no asset carries an automation condition: one would make Dagster start its own default
automation sensor, whose runs belong to no job.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import dagster as dg

from rag_pipeline.core.index import GENERATION_TABLES
from rag_pipeline.core.storage.table_names import CHUNKS, DOCUMENTS, EVAL_TABLES

OWNERS = ("team:rag-pipeline",)
"""Who answers for every asset (set your team here: ``team:<name>`` or an e-mail address)."""

CORPUS_FRESHNESS = timedelta(hours=25)
"""The corpus is re-read every night at 02:00 (``nightly_index``): ``documents`` older than a
day and an hour means a night was missed, and the served index may be behind its corpus."""

SERVED = (*(table.name for table in GENERATION_TABLES), "index_generation")
"""What a reader of the index loads (the generation's tables and its manifest)."""
INGEST = (DOCUMENTS, CHUNKS)
GROUPS = {
    "models": ("adapted_model",),
    "ingest": INGEST,
    "index": tuple(name for name in SERVED if name not in INGEST),
    "evaluation": EVAL_TABLES,
}
"""The asset groups of the UI: a generation's tables beyond the documents and chunks are the
index's, so a table added to :data:`~rag_pipeline.core.index.GENERATION_TABLES` joins it."""


def group_of(name: str) -> str:
    for group, names in GROUPS.items():
        if name in names:
            return group
    raise KeyError(f"asset {name!r} is in no group of rag_pipeline.orchestration.catalog.GROUPS")


def catalogued(assets: Sequence[dg.AssetsDefinition], *,
               corpus_freshness: timedelta = CORPUS_FRESHNESS) -> list[dg.AssetsDefinition]:
    """``assets`` with their group, owners, tags and (for ``documents``) freshness policy, and
    no automation condition."""

    def entry(spec: dg.AssetSpec) -> dg.AssetSpec:
        name = spec.key.to_user_string()
        group = group_of(name)
        tags = {**spec.tags, "stage": group, "served": "true" if name in SERVED else "false"}
        freshness = (dg.FreshnessPolicy.time_window(fail_window=corpus_freshness)
                     if name == "documents" else spec.freshness_policy)
        return spec.replace_attributes(group_name=group, owners=list(OWNERS), tags=tags,
                                       automation_condition=None, freshness_policy=freshness)

    return [a.map_asset_specs(entry) for a in assets]
