"""The retrieval evaluation as assets, per model, one per table of ``EVAL_TABLES``
(``eval_ranks``, ``eval_summary``, ``eval_paired``, ``eval_sweep``, ``eval_gold_errors`` and
``eval_gate_cv``): :func:`~rag_pipeline.core.evaluation.run.run_eval` scores the served
generations, the tables and the report page are written by the core, and the asset says what
was written in each table's metadata."""

import base64
from dataclasses import asdict, fields
from pathlib import Path

import dagster as dg
from dagster import AssetExecutionContext

from rag_pipeline.core.config.build_context import BuildContext
from rag_pipeline.core.storage.table_names import EVAL_TABLES
from rag_pipeline.orchestration.asset_metadata import table_metadata
from rag_pipeline.orchestration.assets.index_generation import INDEX_GENERATION
from rag_pipeline.orchestration.partitions import MODEL, model_partitions, one_dimension_of
from rag_pipeline.orchestration.pools import MODEL_POOL
from rag_pipeline.orchestration.resources import EvalSets, IndexStorage, ReportSite

__all__ = ["EVAL_TABLES", "build_retrieval_eval_asset"]


def build_retrieval_eval_asset(build: BuildContext) -> dg.AssetsDefinition:
    by_key = {m.key: m for m in build.models}
    partitions = model_partitions(build.models)
    deps = [dg.AssetDep(INDEX_GENERATION, partition_mapping=one_dimension_of(MODEL))]
    descriptions = {
        "eval_ranks": "Rank of the first chunk holding the gold needle, per query, chunker and "
                      "retriever (null: not in the top 100).",
        "eval_summary": "Recall@1/4/8/20 with Wilson 95 % intervals, MRR and answers destroyed "
                        "by chunking, per chunker x retriever x query style (all, question, "
                        "ticket).",
        "eval_paired": "Wins and losses on the same queries at R@4/8/20 with a two-sided exact "
                       "sign test on the discordant pairs, over all queries and per style.",
        "eval_sweep": "Refusal sweep over cosine-distance cuts 0.45-0.75: in-domain correct / "
                      "wrong / refused, out-of-domain bluffs; recommended cut and its rule "
                      "(the gate's 2-fold cross-validated figures: table eval_gate_cv).",
        "eval_gold_errors": "Gold lines never scored, with the reason (needle not found exactly "
                            "once, or found only in a heading).",
        "eval_gate_cv": "The refusal gate by 2-fold cross-validation (folds by gold line): "
                        "held-out in-domain refusals and out-of-domain bluffs per refusal signal.",
    }

    @dg.multi_asset(
        # Skippable: with no gold set for the corpus nothing is materialised (the assets show
        # skipped, not green), and the sensor launches no evaluation run for them.
        specs=[dg.AssetSpec(name, deps=deps, partitions_def=partitions, skippable=True,
                            description=descriptions[name], kinds={"parquet", "duckdb"})
               for name in EVAL_TABLES],
        partitions_def=partitions,
        can_subset=False,
        pool=MODEL_POOL,
    )
    def retrieval_eval(context: AssetExecutionContext, storage: IndexStorage, eval_sets: EvalSets,
                       report_site: ReportSite):
        # Imported here, not with the code location: the evaluation's imports (the retrievers,
        # the report) would otherwise be paid by every run worker of every job at its start.
        from rag_pipeline.core.config.gold_file import no_ood_note
        from rag_pipeline.core.evaluation.gold import GOLD_ERRORS_LISTED
        from rag_pipeline.core.evaluation.report import (
            HeadlineRow,
            headline_rows,
            write_report_files,
        )
        from rag_pipeline.core.evaluation.run import run_eval
        from rag_pipeline.core.evaluation.tables import (
            gate_cv_markdown,
            paired_markdown,
            summary_markdown,
            sweep_markdown,
            write_report_tables,
        )

        spec = by_key[context.partition_key]
        warehouse = storage.warehouse()
        report = run_eval(warehouse, spec, Path(eval_sets.gold_path), Path(eval_sets.ood_path))
        if report.skipped:
            context.log.warning(f"evaluation skipped: {build.commands_in(report.skipped)}")
            return
        if (note := no_ood_note(Path(eval_sets.ood_path))) is not None:
            context.log.warning(note)
        if report.behind:
            from rag_pipeline.core.evaluation.run import behind_note

            context.log.warning(behind_note(report.behind))
        stored = write_report_tables(warehouse, report, spec.key)
        written = {name: version for name, (version, _) in stored.items()}
        tables = {name: table for name, (_, table) in stored.items()}
        for error in report.gold_errors[:GOLD_ERRORS_LISTED]:
            context.log.warning(f"gold-set error {error.line_id}: {error.reason}")
        if len(report.gold_errors) > GOLD_ERRORS_LISTED:
            context.log.warning(f"... and {len(report.gold_errors) - GOLD_ERRORS_LISTED:,} more "
                                "gold-set errors: the eval_gold_errors table lists them all")
        files = write_report_files(warehouse.data_dir, report, spec.key)
        headline = headline_rows(report)
        image = base64.b64encode(files.chart_png).decode("ascii")
        chart_md = f"![refusal sweep](data:image/png;base64,{image})"

        def common(name: str) -> dict[str, object]:
            return {**table_metadata(written[name], tables[name].schema), **shared}

        shared = {"queries": report.queries, "ood_queries": report.ood_queries,
                  "gold_errors": len(report.gold_errors),
                  "generations": dg.MetadataValue.json(report.generations),
                  "eval_seconds": round(report.timings["total"], 2)}
        yield dg.MaterializeResult(asset_key="eval_ranks", metadata={
            **common("eval_ranks")})
        yield dg.MaterializeResult(asset_key="eval_summary", metadata={
            **common("eval_summary"),
            "headline": dg.MetadataValue.table(
                records=[dg.TableRecord(asdict(row)) for row in headline],
                schema=dg.TableSchema(columns=[
                    dg.TableColumn(f.name, "float" if f.name == "mrr" else
                                   "int" if f.type in ("int", int) else "string")
                    for f in fields(HeadlineRow)])),
            "report": dg.MetadataValue.md(
                f"{summary_markdown(report)}\n\n**Refusal sweep** (recommended cut "
                f"{report.recommended_cut}: {report.cut_rule})\n\n{chart_md}"),
            "report_url": dg.MetadataValue.url(report_site.report_url(spec.key)),
            "report_file": dg.MetadataValue.path(str(files.report)),
            "destroyed": dg.MetadataValue.json(report.destroyed),
            "gold_error_ids": dg.MetadataValue.json(
                {e.line_id: e.reason for e in report.gold_errors})})
        yield dg.MaterializeResult(asset_key="eval_paired", metadata={
            **common("eval_paired"), "paired": dg.MetadataValue.md(paired_markdown(report))})
        yield dg.MaterializeResult(asset_key="eval_sweep", metadata={
            **common("eval_sweep"), "recommended_cut": report.recommended_cut, "cut_rule": report.cut_rule,
            "sweep": dg.MetadataValue.md(sweep_markdown(report)),
            "gate_cross_validated": dg.MetadataValue.md(gate_cv_markdown(report)),
            "chart": dg.MetadataValue.md(chart_md),
            "chart_path": dg.MetadataValue.path(str(files.chart))})
        yield dg.MaterializeResult(asset_key="eval_gold_errors", metadata={
            **common("eval_gold_errors")})
        yield dg.MaterializeResult(asset_key="eval_gate_cv", metadata={
            **common("eval_gate_cv"),
            "gate_cv": dg.MetadataValue.md(gate_cv_markdown(report)) if report.gate_cv else
            "not measured"})

    return retrieval_eval
