"""``rag-pipeline eval`` (the gold sets, ``--versus``, ``--held-out``, BEIR) and
``rag-pipeline adapt`` (training the declared adapted models)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from rag_pipeline.cli.ask import principal_groups
from rag_pipeline.cli.edge import (
    FiniteFloatRange,
    Invocation,
    declared_model,
    declared_models_or_fail,
    echo,
    eval_folder,
    every_passed,
    fail,
    load_model,
    read_config,
)
from rag_pipeline.cli.gold import corpus_texts
from rag_pipeline.core.text.arguments import listed

if TYPE_CHECKING:
    from rag_pipeline.core.embedding.models import ModelSpec
    from rag_pipeline.core.evaluation.beir import BeirReport
    from rag_pipeline.core.evaluation.evaluate import EvalReport, PairedRow


@click.command(name="eval")
@click.option("--gold", "gold_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="Gold JSONL (default: gold.jsonl of the evaluation folder, "
                                 "RAG_PIPELINE_EVAL_DIR, else the bundled Python reference set).")
@click.option("--ood", "ood_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="Out-of-domain JSONL (default: ood.jsonl beside the gold file; "
                                 "without one the refusal gate is measured on the in-domain "
                                 "questions alone).")
@click.option("--chunker", "chunkers", multiple=True,
              help="Chunker partition(s) to evaluate (default: every built one).")
@click.option("--model", "model_key", default=None, help="Model partition key.")
@click.option("--versus", "versus_key", default=None,
              help="Another model key: evaluate it too and compare the two models on the same "
                   "chunkers and queries (paired sign tests).")
@click.option("--beir", "beir_dir", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=None, help="Evaluate on a BEIR dataset folder instead (corpus.jsonl, "
                                 "queries.jsonl, qrels/test.tsv); with --held-out, both models "
                                 "on it too, for the adoption rule's general-retrieval check.")
@click.option("--k1", "k1_values", type=FiniteFloatRange(0.0, None), multiple=True,
              help="BM25 k1 for --beir, a finite number >= 0 (repeatable; default the design's "
                   "1.2).")
@click.option("--candidates", is_flag=True,
              help="Also measure every candidate retrieval setting against the default (paired "
                   "sign tests per query style; embeds the header partition's sentences once).")
@click.option("--sentences", "sentence_vectors", is_flag=True,
              help="Embed the header partition's sentences (cached) for the best-sentence "
                   "refusal signal.")
@click.option("--held-out", "held_out", is_flag=True,
              help="With --model ADAPTED --versus BASE: score only the gold lines of the documents "
                   "the adapted model never trained on, per style, and apply the adoption rule.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--groups", default=None,
              help="Score what these groups see (a,b): rankings within what [access] lets them "
                   "read, and only the gold lines for them.")
@click.pass_obj
def evaluate_command(invocation: Invocation, gold_path: Path | None, ood_path: Path | None,
                     chunkers: tuple[str, ...], model_key: str | None, versus_key: str | None,
                     beir_dir: Path | None,
                     k1_values: tuple[float, ...], candidates: bool, sentence_vectors: bool,
                     held_out: bool, as_json: bool, groups: str | None) -> None:
    """Measure retrieval (no generation): recall, MRR, destroyed answers, paired tests, sweep."""
    from rag_pipeline.core.config.gold_file import GoldFormatError, no_ood_note
    from rag_pipeline.core.config.validation import InvalidArgumentError, check_chunker
    from rag_pipeline.core.index.store import UnknownPartitionError
    from rag_pipeline.core.storage.warehouse import IndexNotBuiltError
    data_dir = invocation.data_dir
    eval_dir = eval_folder()
    gold = gold_path or eval_dir / "gold.jsonl"
    # Another corpus's questions never score this gold set's gate: the default is its neighbour.
    ood = ood_path or gold.parent / "ood.jsonl"
    config = read_config()
    declared_models_or_fail(config)  # a configuration error is reported before a bad --chunker
    try:
        for name in chunkers:
            check_chunker(name)
    except InvalidArgumentError as exc:
        fail(str(exc))
    spec = declared_model(model_key, config)
    asker = principal_groups(groups, config)
    if asker is not None and (held_out or beir_dir is not None or versus_key is not None):
        fail("--groups scores one model on the gold set: it does not combine with --held-out, "
             "--beir or --versus")
    if held_out:
        if versus_key is None:
            fail("--held-out compares two models: give --model ADAPTED --versus BASE")
        _compare_held_out(invocation, spec, declared_model(versus_key, config),
                          gold, ood,
                          list(chunkers) or ["header"], beir_dir)
        return
    if beir_dir is not None:
        _print_beir(_run_beir(data_dir, beir_dir, spec, k1_values, as_json, candidates), spec,
                    as_json)
        return

    from rag_pipeline.core.evaluation.run import run_eval

    try:
        report = run_eval(invocation.warehouse, spec, gold, ood, list(chunkers) or None,
                          candidates=candidates,
                          sentence_vectors=sentence_vectors, policy=config.access,
                          groups=asker)
    except (IndexNotBuiltError, UnknownPartitionError, GoldFormatError) as exc:
        fail(str(exc))
    if report.skipped:
        skipped = invocation.commands_in(report.skipped)
        if gold_path is not None:
            fail(skipped)
        if as_json:
            import json

            echo(json.dumps({"skipped": skipped}))
        else:
            echo(skipped)
        return
    if (note := no_ood_note(ood)) is not None:
        echo(f"note: {note}", err=True)
    if report.behind:
        from rag_pipeline.core.evaluation.run import behind_note

        echo(f"note: {behind_note(report.behind)}", err=True)
    if versus_key is None:
        _print_eval(report, spec, as_json)
        return
    other = declared_model(versus_key, config)
    second, rows = _compare_models(invocation, spec, report, other, gold, ood, chunkers)
    if as_json:
        import json

        from rag_pipeline.core.evaluation.tables import paired_json, report_json

        echo(json.dumps({**report_json(report), "versus": {
            "model": other.key, "report": report_json(second), "paired": paired_json(rows)}},
            indent=2))
        return
    _print_eval(report, spec, as_json)
    _print_comparison(spec, report, other, second, rows)



def _compare_held_out(invocation: Invocation, spec, other, gold_path: Path, ood_path: Path,
                      chunkers: list[str], beir_dir: Path | None) -> None:
    """The adapted model against its base on the held-out half of the gold set only: per style
    and k, recall with Wilson intervals, paired sign tests, both models' nDCG@10 on the BEIR
    folder when one is given (document vectors cached per model), and the adoption rule."""
    import tempfile

    from rag_pipeline.core.config.gold_file import GoldFormatError, load_gold_set
    from rag_pipeline.core.embedding.export import ModelNotExportedError
    from rag_pipeline.core.embedding.models import ModelMismatchError
    from rag_pipeline.core.evaluation.adoption import (
        adoption,
        compare_by_style,
        general_retrieval,
        held_out_lines,
        write_gold,
    )
    from rag_pipeline.core.evaluation.run import run_eval
    from rag_pipeline.core.index.store import UnknownPartitionError
    from rag_pipeline.core.storage.warehouse import IndexNotBuiltError
    from rag_pipeline.core.text.markdown_table import markdown_table

    if spec.adaptation is None:
        fail(f"--held-out needs --model to be an adapted model; {spec.key} is not")
    try:
        gold = load_gold_set(gold_path)
    except GoldFormatError as exc:
        fail(str(exc))
    canonical, _, _ = corpus_texts(invocation, None)
    held = spec.adaptation.recipe.held_out
    lines = held_out_lines(gold, canonical, held)
    if not lines:
        fail(f"no line of {gold_path} has its needle in the {len(held)} held-out documents")
    documents = sorted(set(held) & set(canonical))
    with tempfile.TemporaryDirectory() as tmp:
        subset = write_gold(Path(tmp) / "held_out.jsonl", gold, lines, documents)
        try:
            adapted = run_eval(invocation.warehouse, spec, subset, ood_path, chunkers)
            base = run_eval(invocation.warehouse, other, subset, ood_path, chunkers)
        except (IndexNotBuiltError, UnknownPartitionError, GoldFormatError, ModelMismatchError,
                ModelNotExportedError) as exc:
            fail(str(exc))
    rows = compare_by_style(adapted, base)
    echo(f"held-out half: {len(lines)} of {len(gold.lines)} gold lines, in {len(documents)} "
          f"documents no training pair came from; a = {spec.key}, b = {other.key}")
    echo(markdown_table(
        ["chunker", "retriever", "style", "k", "n", "a recall [95% CI]", "b recall [95% CI]",
         "wins (a only)", "losses (b only)", "sign test p"],
        [[r.chunker, r.retriever, r.style, r.k, r.queries,
          f"{r.recall_a:.3f} [{r.interval_a[0]:.3f}, {r.interval_a[1]:.3f}]",
          f"{r.recall_b:.3f} [{r.interval_b[0]:.3f}, {r.interval_b[1]:.3f}]",
          r.wins, r.losses, f"{r.p:.4f}"] for r in rows]))
    for label, report in ((spec.key, adapted), (other.key, base)):
        if report.sweep:
            echo(f"refusal sweep cut for {label} (held-out gold + out-of-domain): "
                  f"{report.recommended_cut} ({report.cut_rule})")
    general = None
    if beir_dir is not None:
        general = general_retrieval(_run_beir(invocation.data_dir, beir_dir, spec, (), True),
                                    _run_beir(invocation.data_dir, beir_dir, other, (), True))
        echo(markdown_table(["retriever", f"a nDCG@10 ({general.dataset})", "b nDCG@10"],
                            [[name, f"{a:.5f}", f"{b:.5f}"]
                             for name, (a, b) in general.ndcg_at_10.items()]))
    chunker = "header" if "header" in chunkers else chunkers[0]
    decision = adoption(rows, chunker, "hybrid", general)
    verdict = "ADOPT" if decision.adopt else "keep the base as the default"
    echo(f"adoption ({chunker} x hybrid): {verdict}: {decision.reason}")



def _run_beir(data_dir: Path, beir_dir: Path, spec: ModelSpec, k1_values: tuple[float, ...],
              quiet: bool, candidates: bool = False) -> BeirReport:
    """Loads the BEIR folder and scores it (with every candidate retrieval setting too when
    ``candidates``); progress goes to stderr unless ``quiet``."""
    from rag_pipeline.core.evaluation.beir import load_beir, run_beir
    from rag_pipeline.core.index.bm25 import K1

    try:
        dataset = load_beir(beir_dir)
    except FileNotFoundError as exc:
        fail(str(exc))

    progress = None if quiet else every_passed(1024, lambda done, total: click.echo(
        f"  embedded {done}/{total} documents", err=True))
    embedder = load_model(spec, data_dir)
    report = run_beir(dataset, embedder, data_dir / "beir", progress, tuple(k1_values) or (K1,))
    if candidates:
        from rag_pipeline.core.evaluation.beir import run_beir_candidates
        from rag_pipeline.core.evaluation.catalogue import beir_candidates

        report.rows.extend(run_beir_candidates(dataset, embedder, beir_candidates(),
                                               data_dir / "beir", progress))
    return report


def _print_beir(report: BeirReport, spec: ModelSpec, as_json: bool) -> None:
    import json

    if as_json:
        click.echo(json.dumps({
            "dataset": report.dataset, "queries": report.queries, "documents": report.documents,
            "model": spec.key,
            "rows": [{"retriever": r.retriever, "analyzer": r.analyzer, "k1": r.k1,
                      "ndcg@10": r.ndcg_at_10,
                      "recall@100": r.recall_at_100, "mrr@10": r.mrr_at_10} for r in report.rows],
            "timings_s": {k: round(v, 3) for k, v in report.timings.items()}}, indent=2))
        return
    click.echo(f"{report.dataset}: {report.queries} queries, {report.documents} documents, "
               f"model {spec.key}")
    click.echo(f"{'retriever':10s} {'analyzer':9s} {'k1':>4s} {'nDCG@10':>8s} {'R@100':>8s} "
               f"{'MRR@10':>8s}")
    for r in report.rows:
        click.echo(f"{r.retriever:10s} {r.analyzer or '-':9s} {r.k1 or '-':>4} {r.ndcg_at_10:8.5f} "
                   f"{r.recall_at_100:8.5f} {r.mrr_at_10:8.5f}")
    click.echo("timings (s): " + ", ".join(f"{k} {v:.2f}" for k, v in report.timings.items()))


def _print_eval(report: EvalReport, spec: ModelSpec, as_json: bool) -> None:
    import json

    from rag_pipeline.core.evaluation.gold import GOLD_ERRORS_LISTED
    from rag_pipeline.core.evaluation.tables import (
        gate_cv_markdown,
        paired_markdown,
        report_json,
        summary_markdown,
        sweep_markdown,
    )

    if as_json:
        echo(json.dumps(report_json(report), indent=2))
        return
    echo(f"{report.queries} in-domain queries, {report.ood_queries} out-of-domain, "
               f"{len(report.gold_errors)} gold-set errors, model {spec.key}")
    for error in report.gold_errors[:GOLD_ERRORS_LISTED]:
        echo(f"  gold-set error {error.line_id}: {error.reason}")
    if len(report.gold_errors) > GOLD_ERRORS_LISTED:
        echo(f"  ... and {len(report.gold_errors) - GOLD_ERRORS_LISTED:,} more gold-set errors "
             "(--json lists them all)")
    echo("\n" + summary_markdown(report))
    for chunker, ids in report.destroyed.items():
        if ids:
            echo(f"destroyed by {chunker}: {', '.join(ids)}")
    echo("\n" + paired_markdown(report))
    if report.sweep:
        echo("\nrefusal sweep (header x hybrid):\n" + sweep_markdown(report))
        echo(f"recommended cut: {report.recommended_cut} ({report.cut_rule})")
    if report.gate_cv:
        echo("\ngate, 2-fold cross-validated (held-out counts; folds by gold line id):\n"
              + gate_cv_markdown(report))
        echo(f"top-distance cut under the refusal budget, over every query: "
              f"{report.budget_cut:.4f}")
    for a in report.ann:
        echo(f"ANN path of {a.chunker} against the exact one, {a.queries} queries: dense "
              f"recall@{a.k} {a.dense_recall:.4f} (worst {a.worst_recall:.2f}), same sources "
              f"{a.same_sources} / {a.queries}")
    echo(f"\neval wall time: {report.timings['total']:.1f} s")


def _compare_models(invocation: Invocation, spec: ModelSpec, report: EvalReport,
                    other: ModelSpec, gold_path: Path, ood_path: Path,
                    chunkers: tuple[str, ...]) -> tuple[EvalReport, list[PairedRow]]:
    """Evaluates the second model on the same chunkers; returns its report and the paired
    comparison of the two (per chunker x retriever, query style and k)."""
    from rag_pipeline.core.embedding.export import ModelNotExportedError
    from rag_pipeline.core.embedding.models import ModelMismatchError
    from rag_pipeline.core.evaluation.model_comparison import compare_models
    from rag_pipeline.core.evaluation.run import run_eval
    from rag_pipeline.core.index.store import UnknownPartitionError
    from rag_pipeline.core.storage.warehouse import IndexNotBuiltError

    try:
        load_model(other, invocation.data_dir)
        selected = list(chunkers) or sorted({r.chunker for r in report.ranks})
        second = run_eval(invocation.warehouse, other, gold_path, ood_path, selected)
    except (ModelMismatchError, ModelNotExportedError, IndexNotBuiltError,
            UnknownPartitionError) as exc:
        fail(str(exc))
    return second, compare_models(report, second, spec.key, other.key)


def _print_comparison(spec: ModelSpec, report: EvalReport, other: ModelSpec,
                      second: EvalReport, rows: list[PairedRow]) -> None:
    """The second model's summary, both recommended cuts and the paired comparison, as text."""
    from rag_pipeline.core.evaluation.tables import paired_rows_markdown, summary_markdown

    echo(f"\n--- {other.key} on the same chunkers ---\n" + summary_markdown(second))
    if second.sweep:
        echo(f"recommended cut for {other.key}: {second.recommended_cut} "
             f"({second.cut_rule}); for {spec.key}: {report.recommended_cut}")
    echo(f"\npaired, {spec.key} (a) vs {other.key} (b), same queries:\n"
         + paired_rows_markdown(rows))
    significant = [r for r in rows if r.p < 0.05]
    echo(f"significant differences (p < 0.05): {len(significant)} of {len(rows)}")


@click.command()
@click.option("--model", "model_key", default=None,
              help="The adapted model's key (default: every declared adapted model).")
@click.option("--force", is_flag=True, help="Train again even when the folder is trained.")
def adapt(model_key: str | None, force: bool) -> None:
    """Train the declared adapted model(s) on pairs made from the corpus (see "An adapted
    model" in docs/user-guide/models.md); a trained folder whose key and files match is kept."""
    from rag_pipeline.core.embedding.adaptation import (
        ModelNotTrainedError,
        adapt_model,
        corpus_documents,
        trained_result,
    )
    from rag_pipeline.core.embedding.models import ModelMismatchError, find_model

    config = read_config()
    models = declared_models_or_fail(config)
    adapted = [m for m in models if m.adaptation is not None]
    try:
        chosen = [find_model(model_key, models)] if model_key else adapted
    except ModelMismatchError as exc:
        fail(str(exc))
    if not chosen or any(m.adaptation is None for m in chosen):
        fail(f"no adapted model {'named ' + model_key if model_key else 'is declared'} "
              f"(declared adapted: {listed(m.key for m in adapted) or 'none'})")
    corpus = config.corpus
    for spec in chosen:
        if not force:
            try:
                result = trained_result(spec)
            except ModelNotTrainedError:
                result = None
            except ModelMismatchError as exc:
                echo(f"{exc}; training again", err=True)
                result = None
            if result is not None:
                echo(f"{spec.key}: trained ({result.pairs} pairs, {result.steps} steps, loss "
                      f"{result.first_loss:.4f} -> {result.last_loss:.4f}) in {spec.path}")
                continue
        try:
            result = adapt_model(spec, corpus_documents(corpus), lambda line: echo(line, err=True))
        except (ModelMismatchError, ValueError, FileNotFoundError) as exc:
            fail(str(exc))
        echo(f"{spec.key}: trained {result.pairs} pairs, {result.steps} steps, loss "
              f"{result.first_loss:.4f} -> {result.last_loss:.4f}, {result.seconds / 60:.1f} min, "
              f"weights sha256 {result.weights_sha256[:12]}…, in {spec.path}")

