"""The evaluation of a corpus without a gold set of its own: skipped (nothing materialised, no
run launched by the sensor), one line from the CLI, no needle errors."""

from __future__ import annotations

import dagster as dg
import pytest
from click.testing import CliRunner

from rag_pipeline.cli import main
from rag_pipeline.core.config.init_file import reference_config
from rag_pipeline.core.evaluation.gold import no_gold_set_reason
from rag_pipeline.core.index.plan import Stage, index_plan
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.orchestration.automation import (
    CHUNKS_JOB,
    EMBEDDINGS_JOB,
    EVAL_JOB,
    build_index_automation,
    build_index_jobs,
    unscored_reason,
)
from rag_pipeline.project_paths import DEFAULT_EVAL_DIR
from rag_pipeline_tests.orchestration.assets.conftest import TinyProject

SKIPPED = (f"no gold set for this corpus: {DEFAULT_EVAL_DIR / 'gold.jsonl'} is the gold set of "
           "corpus 'python-reference', none of whose 57 documents is in the index; nothing to score. "
           "Write one with `rag-pipeline gold draft --output gold.jsonl`, then `rag-pipeline eval "
           "--gold gold.jsonl` (or set RAG_PIPELINE_EVAL_DIR to its folder: `index` then scores it)")


def test_eval_without_a_gold_set_for_the_corpus_is_skipped_and_says_so_in_one_line(
        tiny_project: TinyProject, monkeypatch: pytest.MonkeyPatch):
    assert tiny_project.run(CHUNKS_JOB, "header").success
    assert tiny_project.run(EMBEDDINGS_JOB, tiny_project.embeddings_key()).success
    warehouse = Warehouse(tiny_project.data_dir)
    # The sensor launches no evaluation: its plan's eval step has no gold set to score.
    plan = index_plan(warehouse, ["header"], [tiny_project.spec.key])
    assert [step.stage for step in plan] == [Stage.EVAL]
    assert unscored_reason(plan, warehouse, DEFAULT_EVAL_DIR / "gold.jsonl") == SKIPPED
    sensor = build_index_automation(["header"], [tiny_project.spec], build_index_jobs(),
                                    gold_path=DEFAULT_EVAL_DIR / "gold.jsonl")
    with dg.build_sensor_context(instance=tiny_project.instance, definitions=tiny_project.defs,
                                 resources={"storage": tiny_project.defs.resources["storage"]}) as context:
        assert sensor(context) == dg.SkipReason(
            f"the index is current; evaluation skipped: {SKIPPED}")
    # Found by a user: the UI's reason suggested `rag-pipeline gold draft` without the
    # --config the sensor's folder needs; run as written, it drafted the bundled corpus's.
    configured = build_index_automation(
        ["header"], [tiny_project.spec], build_index_jobs(), gold_path=DEFAULT_EVAL_DIR / "gold.jsonl",
        commands=lambda message: message.replace("`rag-pipeline ", "`rag-pipeline --config 'my team.toml' "))
    with dg.build_sensor_context(instance=tiny_project.instance, definitions=tiny_project.defs,
                                 resources={"storage": tiny_project.defs.resources["storage"]}) as context:
        assert configured(context).skip_message.endswith(
            "Write one with `rag-pipeline --config 'my team.toml' gold draft --output gold.jsonl`, "
            "then `rag-pipeline --config 'my team.toml' eval --gold gold.jsonl` (or set "
            "RAG_PIPELINE_EVAL_DIR to its folder: `index` then scores it)")
    assert no_gold_set_reason(warehouse, tiny_project.data_dir / "none.jsonl") == (
        f"no gold set for this corpus: {tiny_project.data_dir / 'none.jsonl'} does not exist; "
        "nothing to score. Write one with `rag-pipeline gold draft`")
    # Run by hand, the evaluation materialises nothing (skipped, not green) and writes no table.
    result = tiny_project.run(EVAL_JOB, tiny_project.spec.key)
    assert result.success
    assert result.get_asset_materialization_events() == []
    assert warehouse.version("eval_summary", {"model": tiny_project.spec.key}) is None
    assert warehouse.version("eval_gold_errors", {"model": tiny_project.spec.key}) is None

    # The hashed stand-in is not declared in rag_pipeline.toml: the CLI is given it as declared.
    for module in ("edge", "evaluation"):
        monkeypatch.setattr(f"rag_pipeline.cli.{module}.declared_models_or_fail",
                            lambda config=None: (tiny_project.spec,))
    shown = CliRunner().invoke(main, ["--data-dir", str(tiny_project.data_dir), "eval", "--model",
                                      tiny_project.spec.key])
    # The commands it suggests work on the same data folder.
    here = SKIPPED.replace("`rag-pipeline ", f"`rag-pipeline --data-dir {tiny_project.data_dir} ")
    assert (shown.exit_code, shown.output) == (0, here + "\n")
    given = CliRunner().invoke(main, ["--data-dir", str(tiny_project.data_dir), "eval", "--model",
                                      tiny_project.spec.key, "--gold",
                                      str(DEFAULT_EVAL_DIR / "gold.jsonl")])
    assert (given.exit_code, given.output) == (2, f"error: {here}\n")
    # Found by a new user: with --config, `eval` suggested the commands without it (`index`
    # gave them with it); run as printed, they drafted from another index.
    config = tiny_project.data_dir.parent / "team.toml"
    config.write_text(reference_config(["header"]), encoding="utf-8")
    shown = CliRunner().invoke(main, ["--config", str(config), "--data-dir",
                                      str(tiny_project.data_dir), "eval", "--model",
                                      tiny_project.spec.key])
    assert shown.exit_code == 0, shown.output
    assert shown.output.endswith(
        f"Write one with `rag-pipeline --config {config} --data-dir {tiny_project.data_dir} gold "
        f"draft --output gold.jsonl`, then `rag-pipeline --config {config} --data-dir "
        f"{tiny_project.data_dir} eval --gold gold.jsonl` (or set RAG_PIPELINE_EVAL_DIR to its "
        "folder: `index` then scores it)\n")


def test_an_edited_gold_or_out_of_domain_file_makes_the_evaluation_due_again(tmp_path):
    """Found by a new user: after the gold set changed, `index` ran no evaluation and printed
    the old figures as current (the evaluation recorded only the generations it scored)."""
    from rag_pipeline.core.config.gold_file import eval_set_inputs
    from rag_pipeline.definitions import build_definitions
    from rag_pipeline.orchestration.automation import DOCUMENTS_JOB
    from rag_pipeline_tests.conftest import GOLD_LINE, TINY_DOCS, write_corpus
    from rag_pipeline_tests.fake_embedder import HashedEmbedder, hashed_spec

    spec = hashed_spec()
    evals = tmp_path / "eval"
    evals.mkdir()
    gold, ood = evals / "gold.jsonl", evals / "ood.jsonl"
    gold.write_text(GOLD_LINE, encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("rag_pipeline.orchestration.assets.embeddings.load_embedder",
                      lambda s, *_: HashedEmbedder(s))
        patch.setattr("rag_pipeline.core.evaluation.run.load_embedder", HashedEmbedder)
        defs = build_definitions(data_dir=tmp_path / "data", eval_dir=evals, models=[spec],
                                 corpus_dir=write_corpus(tmp_path / "corpus", TINY_DOCS))
        project = TinyProject(defs, dg.DagsterInstance.ephemeral(), tmp_path / "data", spec)
        for job, key in ((DOCUMENTS_JOB, None), (CHUNKS_JOB, "header"),
                         (EMBEDDINGS_JOB, project.embeddings_key())):
            assert project.run(job, key).success
        warehouse = Warehouse(project.data_dir)

        def due() -> list[Stage]:
            return [step.stage for step in index_plan(warehouse, ["header"], [spec.key],
                                                      eval_sets=eval_set_inputs(gold, ood))]

        assert due() == [Stage.EVAL]
        assert project.run(EVAL_JOB, spec.key).success
        assert due() == []
        scored = warehouse.version("eval_summary", {"model": spec.key}).inputs
        assert scored == {"header": scored["header"], **eval_set_inputs(gold, ood)}
        assert scored["out-of-domain set"] == "none"
        # Planned without the files (no gold path known), the evaluation is current.
        assert index_plan(warehouse, ["header"], [spec.key]) == ()
        gold.write_text(GOLD_LINE.replace('"t1"', '"t2"'), encoding="utf-8")
        assert due() == [Stage.EVAL]
        assert project.run(EVAL_JOB, spec.key).success and due() == []
        ood.write_text('{"id": "o1", "query": "what is the capital of france", "kind": "off"}\n',
                       encoding="utf-8")
        assert due() == [Stage.EVAL]
        assert project.run(EVAL_JOB, spec.key).success and due() == []
        ranks = warehouse.read("eval_ranks", {"model": spec.key}).to_pylist()
        assert {row["query_id"].split("/")[0] for row in ranks} == {"t2"}
        recorded = warehouse.version("eval_summary", {"model": spec.key}).inputs
        assert recorded["out-of-domain set"] == eval_set_inputs(gold, ood)["out-of-domain set"]
        assert recorded["out-of-domain set"] != "none"
        # Found by a user: a gold file broken by an edit stopped the whole `index` after its
        # documents run, and failed every tick of the sensor, with the file's format error. It
        # now skips the evaluation alone, saying why and that the figures are an earlier one's.
        gold.write_text(GOLD_LINE.replace('"needle"', '"neddle"'), encoding="utf-8")
        plan = index_plan(warehouse, ["header"], [spec.key], eval_sets=eval_set_inputs(gold, ood))
        assert [step.stage for step in plan] == [Stage.EVAL]
        reason = (f"the gold set cannot be read: {gold}:1: unknown field `neddle`: did you mean "
                  "`needle`? (a field of your own starts with `_`). Nothing was scored now: "
                  "figures in the eval_* tables are an earlier evaluation's, of the gold set as "
                  "it was then. Fix the file, and the next `rag-pipeline index` evaluates again")
        assert unscored_reason(plan, warehouse, gold) == reason
        sensor = build_index_automation(["header"], [spec], build_index_jobs(), gold_path=gold,
                                        ood_path=ood)
        with dg.build_sensor_context(instance=project.instance, definitions=defs,
                                     resources={"storage": defs.resources["storage"]}) as context:
            assert sensor(context) == dg.SkipReason(
                f"the index is current; evaluation skipped: {reason}")
        def unreadable(path):
            raise PermissionError(13, "Permission denied", str(path))  # root reads a file chmod 0

        patch.setattr("rag_pipeline.core.evaluation.gold.load_gold_set", unreadable)
        assert unscored_reason(plan, warehouse, gold) == reason.replace(
            f"{gold}:1: unknown field `neddle`: did you mean `needle`? (a field of your own "
            "starts with `_`)", f"{gold}: Permission denied")
        patch.undo()
        gold.write_text(GOLD_LINE, encoding="utf-8")
        ood.write_text('{"id": "o1", "query": "how long does a network call wait before giving up?", '
                       '"kind": "near"}\n', encoding="utf-8")
        plan = index_plan(warehouse, ["header"], [spec.key], eval_sets=eval_set_inputs(gold, ood))
        assert unscored_reason(plan, warehouse, gold, ood) == (
            f"the out-of-domain set cannot be read: {ood}: out-of-domain question 'o1' is asked by "
            f"gold line 't1' of {gold}: a question cannot be both answered from the documents and "
            "not. Nothing was scored now: figures in the eval_* tables are an earlier "
            "evaluation's, of the out-of-domain set as it was then. Fix the file, and the next "
            "`rag-pipeline index` evaluates again")
