"""The production deployment on loopback: PostgreSQL instance storage, the queued run
coordinator and the daemon from ``deploy/dagster.yaml``, the tables in an S3 bucket (moto).

Builds two chunkers of a three-topic corpus through queued runs, kills the embedding run that
has checkpointed vectors with SIGKILL, and checks that Dagster's run retry finishes the
partition reusing them; then that every table, every ``ask`` answer and the DuckDB snapshot
equal those of the local mode on the same corpus.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import dagster as dg
import duckdb
import numpy as np
import pyarrow.fs as pafs
import pytest

from rag_pipeline.core.answer.answer_json import answer_json
from rag_pipeline.core.answer.ask import AskSettings, ask
from rag_pipeline.core.config.keys import declared_models
from rag_pipeline.core.embedding.embedder import load_embedder
from rag_pipeline.core.index.query_db import publish_query_db
from rag_pipeline.core.index.store import load_partition
from rag_pipeline.core.ingest.corpus_export import export_python_reference
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.definitions import build_definitions
from rag_pipeline.orchestration.automation import CHUNKS_JOB, DOCUMENTS_JOB, EMBEDDINGS_JOB, INDEX_SENSOR
from rag_pipeline.project_paths import PROJECT_ROOT

pytestmark = [pytest.mark.deploy, pytest.mark.slow]

SCRIPT = PROJECT_ROOT / "deploy" / "local_services.sh"
BIN = Path(sys.executable).parent
# 422 header chunks (over one 256-text checkpoint) and 294 blind ones.
TOPICS = ("specialnames.md", "compound.md", "types.md")
CHUNKERS = ("header", "blind")
QUESTIONS = ("what does break do in a for loop",
             "how do I customise attribute access on a class",
             "what does __slots__ do",
             "what is the capital of france")
TIMEOUT = 600


def _env_file(path: Path) -> dict[str, str]:
    env = {}
    for line in path.read_text().splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        env[key] = "".join(shlex.split(value)) if value else ""
    return env


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """PostgreSQL and an S3 server on 127.0.0.1 (installing PostgreSQL first if it can)."""
    env = {**os.environ, "PYTHON": sys.executable}
    install = subprocess.run([str(SCRIPT), "install"], env=env, capture_output=True, text=True,
                             timeout=900)
    if install.returncode != 0:
        pytest.skip("PostgreSQL is not installed and cannot be installed here: "
                    + (install.stderr or install.stdout).strip().splitlines()[-1])
    state = tmp_path_factory.mktemp("services")
    started = subprocess.run([str(SCRIPT), "start", str(state)], env=env, capture_output=True,
                             text=True, timeout=300)
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        yield _env_file(state / "env")
    finally:
        subprocess.run([str(SCRIPT), "stop", str(state)], env=env, timeout=120)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    every = tmp_path_factory.mktemp("reference")
    export_python_reference(every)
    folder = tmp_path_factory.mktemp("corpus")
    for topic in TOPICS:
        shutil.copy(every / topic, folder / topic)
    return folder


class Deployment:
    """A daemon on a fresh DAGSTER_HOME with the production dagster.yaml, and the CLI."""

    def __init__(self, home: Path, env: dict[str, str]) -> None:
        self.home = home
        self.env = env
        self.daemon: subprocess.Popen | None = None

    def cli(self, *args: str) -> str:
        result = subprocess.run([str(BIN / "dagster"), *args, "-w", "workspace.yaml"],
                                cwd=PROJECT_ROOT, env=self.env, capture_output=True, text=True,
                                timeout=TIMEOUT)
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout + result.stderr

    def launch(self, runs: list[tuple[str, dict[str, str]]]) -> None:
        """``dagster job launch`` once per (job, partition tags), all at once."""
        launches = [subprocess.Popen([str(BIN / "dagster"), "job", "launch", "-j", job, "--tags",
                                      json.dumps(tags), "-w", "workspace.yaml"], cwd=PROJECT_ROOT,
                                     env=self.env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True) for job, tags in runs]
        for launch in launches:
            out, _ = launch.communicate(timeout=TIMEOUT)
            assert launch.returncode == 0, out

    def start_daemon(self) -> None:
        log = (self.home / "daemon.log").open("w")
        self.daemon = subprocess.Popen([str(BIN / "dagster-daemon"), "run", "-w", "workspace.yaml"],
                                       cwd=PROJECT_ROOT, env=self.env, stdout=log,
                                       stderr=subprocess.STDOUT, start_new_session=True)

    def stop_daemon(self) -> None:
        """Stops the daemon, then whatever is left of its process group (its code server and
        any run worker)."""
        if self.daemon is None:
            return
        if self.daemon.poll() is None:
            os.killpg(self.daemon.pid, signal.SIGTERM)
            try:
                self.daemon.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.daemon.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.daemon.wait(timeout=30)


def _embedding_tags(chunker: str, model: str) -> dict[str, str]:
    """The tags Dagster gives a run of one chunker x model partition."""
    return {"dagster/partition": f"{chunker}|{model}", "dagster/partition/chunker": chunker,
            "dagster/partition/model": model}


def _records(instance: dg.DagsterInstance, job: str) -> list[dg.RunRecord]:
    return list(reversed(instance.get_run_records(dg.RunsFilter(job_name=job))))


def _wait_finished(instance: dg.DagsterInstance, job: str, count: int) -> list[dg.RunRecord]:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        records = _records(instance, job)
        if len(records) >= count and all(r.dagster_run.is_finished for r in records):
            return records
        time.sleep(0.5)
    raise TimeoutError(f"{job}: runs not finished after {TIMEOUT} s: "
                       f"{[(r.dagster_run.run_id[:8], r.dagster_run.status) for r in records]}")


def _worker_pid(instance: dg.DagsterInstance, run_id: str) -> int:
    for event in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        message = event.message or ""
        if message.startswith("Started process for run (pid: "):
            return int(message.split("pid: ")[1].split(")")[0])
    raise LookupError(f"run {run_id}: no run worker pid in its events")


def _metadata(instance: dg.DagsterInstance, run_id: str, asset: str) -> dict[str, object]:
    """The metadata of the run's one materialisation of ``asset`` (an embeddings run also
    materialises ann_index and index_generation)."""
    events = [e for e in instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)
              if e.dagster_event.event_specific_data.materialization.asset_key == dg.AssetKey(asset)]
    assert len(events) == 1, run_id
    mat = events[0].dagster_event.event_specific_data.materialization
    return {k: getattr(v, "value", v) for k, v in mat.metadata.items()}


def _build_local(data: Path, corpus: Path) -> None:
    """The same partitions in local mode: in-process runs, tables in ``data/warehouse``."""
    defs = build_definitions(data_dir=data, corpus_dir=corpus)
    instance = dg.DagsterInstance.ephemeral()
    model = declared_models()[0].key
    runs = [(DOCUMENTS_JOB, None)] + [(CHUNKS_JOB, c) for c in CHUNKERS] + [
        (EMBEDDINGS_JOB, dg.MultiPartitionKey({"chunker": c, "model": model})) for c in CHUNKERS]
    for job, partition in runs:
        result = defs.resolve_job_def(job).execute_in_process(instance=instance,
                                                              partition_key=partition)
        assert result.success, (job, partition)


def _rows(db: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


def _comparable(answer) -> dict:
    """An answer as JSON without its timings and generation id, distances to 5 decimals (the
    vectors of a killed-and-retried run were computed in other batches: equal to ~1e-7)."""
    data = answer if isinstance(answer, dict) else answer_json(answer)
    data.pop("timings_ms")
    for c in data["citations"]:
        c["cosine_distance"] = round(c["cosine_distance"], 5)
    if data["closest_distance"] is not None:
        data["closest_distance"] = round(data["closest_distance"], 5)
    data.pop("generation")
    return data


def test_queued_runs_on_postgres_and_s3_equal_local_mode(
        tmp_path: Path, services: dict[str, str], corpus: Path, monkeypatch: pytest.MonkeyPatch):
    started = time.monotonic()
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(PROJECT_ROOT / "deploy" / "dagster.yaml", home / "dagster.yaml")
    env = {**os.environ, **services, "DAGSTER_HOME": str(home),
           "DAGSTER_MAX_CONCURRENT_RUNS": "3", "HF_HUB_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false", "RAG_PIPELINE_DATA_DIR": str(tmp_path / "worker"),
           "RAG_PIPELINE_CORPUS": str(corpus),
           # A user's corpus builds the production profile (header only); this test compares
           # two chunkers of the project's evaluation profile.
           "RAG_PIPELINE_PROFILE": "evaluation"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    location = services["RAG_PIPELINE_WAREHOUSE"]
    deployment = Deployment(home, env)
    # The automation sensor would materialise every chunker; this test launches its own runs.
    deployment.cli("sensor", "stop", INDEX_SENSOR)
    deployment.start_daemon()
    instance = dg.DagsterInstance.get()
    try:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
        assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"

        deployment.cli("job", "launch", "-j", DOCUMENTS_JOB)
        (documents_run,) = _wait_finished(instance, DOCUMENTS_JOB, 1)
        model = declared_models()[0].key
        first, second = CHUNKERS
        deployment.cli("job", "backfill", "-j", CHUNKS_JOB, "--partitions", first, "--noprompt")
        _wait_finished(instance, CHUNKS_JOB, 1)
        # The first chunker embeds while the second one chunks: two runs at once. One launch
        # per partition (a CLI job backfill is complete once it has submitted its runs, and
        # Dagster does not retry runs of a finished backfill).
        deployment.launch([(EMBEDDINGS_JOB, _embedding_tags(first, model)),
                           (CHUNKS_JOB, {"dagster/partition": second})])
        # Kill the run that has checkpointed vectors, as soon as its first shard is stored.
        warehouse = Warehouse(tmp_path / "reader", location)
        deadline = time.monotonic() + TIMEOUT
        killed = None
        while killed is None and time.monotonic() < deadline:
            shards = warehouse.list_files(f"_vector_cache/model={model}")
            running = [r for r in _records(instance, EMBEDDINGS_JOB)
                       if r.dagster_run.status == dg.DagsterRunStatus.STARTED]
            if shards and running:
                killed = running[0].dagster_run.run_id
                os.kill(_worker_pid(instance, killed), signal.SIGKILL)
            time.sleep(0.2)
        assert killed is not None, "no embedding run was seen with a checkpoint"
        chunk_runs = _wait_finished(instance, CHUNKS_JOB, 2)
        deployment.launch([(EMBEDDINGS_JOB, _embedding_tags(second, model))])
        embedding_runs = _wait_finished(instance, EMBEDDINGS_JOB, 3)
        build_seconds = time.monotonic() - started
    finally:
        deployment.stop_daemon()

    # Every run succeeded, except the killed one, which Dagster retried once, successfully.
    by_id = {r.dagster_run.run_id: r for r in embedding_runs}
    assert by_id[killed].dagster_run.status == dg.DagsterRunStatus.FAILURE
    retries = [r for r in embedding_runs if r.dagster_run.tags.get("dagster/parent_run_id") == killed]
    assert len(retries) == 1
    retry = retries[0]
    assert retry.dagster_run.tags["dagster/retry_number"] == "1"
    assert retry.dagster_run.tags["dagster/partition"] == by_id[killed].dagster_run.tags[
        "dagster/partition"]
    for record in [documents_run, *chunk_runs, *embedding_runs]:
        if record.dagster_run.run_id != killed:
            assert record.dagster_run.status == dg.DagsterRunStatus.SUCCESS, record.dagster_run
    # The queue did not hold the second chunker's chunks run behind the first chunker's
    # embedding run (the one that was killed): both were launched together and the chunks run
    # started before the embedding run ended. (Whether their worker processes overlapped is up to
    # the machine: on a loaded one the short chunks run has ended 1.4 s before the embedding run's
    # worker came up.) The embedding runs of the one model never ran at the same time.
    assert by_id[killed].dagster_run.tags["dagster/partition/chunker"] == CHUNKERS[0]
    (second_chunks,) = [r for r in chunk_runs
                        if r.dagster_run.tags["dagster/partition"] == CHUNKERS[1]]
    assert second_chunks.start_time < by_id[killed].end_time
    assert {r.dagster_run.tags["dagster/partition/model"] for r in embedding_runs} == {model}
    starts = sorted((r.start_time, r.end_time) for r in embedding_runs)
    assert all(later[0] >= earlier[1] - 0.5 for earlier, later in pairwise(starts))
    # The retry reused the killed run's checkpoint: at least one shard of 256 vectors.
    meta = _metadata(instance, retry.dagster_run.run_id, "embeddings")
    assert meta["shared"] >= 256
    assert meta["embedded"] == meta["rows"] - meta["reused"] - meta["shared"] - meta["duplicates"]
    for line in [f"{r.dagster_run.job_name} {r.dagster_run.tags.get('dagster/partition', '-')} "
                 f"{r.dagster_run.status.value} {r.start_time:.1f}-{r.end_time:.1f}"
                 for r in [documents_run, *chunk_runs, *embedding_runs]]:
        print(line)
    overlap = (min(second_chunks.end_time, by_id[killed].end_time)
               - max(second_chunks.start_time, by_id[killed].start_time))
    print(f"chunks {CHUNKERS[1]} and embeddings {CHUNKERS[0]} overlapped {overlap:.1f} s; "
          f"retry of {killed[:8]}: " + ", ".join(
              f"{k} {meta[k]}" for k in ("rows", "reused", "shared", "embedded",
                                         "chunks_per_second")))
    instance.dispose()

    # The objects are in the bucket; the worker's data folder holds no table.
    fs, root = pafs.FileSystem.from_uri(location)
    names = {info.path[len(root) + 1:] for info in fs.get_file_info(
        pafs.FileSelector(root, recursive=True)) if info.type == pafs.FileType.File}
    for chunker in CHUNKERS:
        assert f"_generations/chunker={chunker}/model={model}/CURRENT.json" in names
        assert f"chunks/chunker={chunker}/_latest.json" in names
        assert f"embeddings/chunker={chunker}/model={model}/_latest.json" in names
    assert not [n for n in names if n.startswith("_vector_cache/")]
    assert not (tmp_path / "worker" / "warehouse").exists()

    # Local mode on the same corpus gives the same tables, answers and DuckDB rows.
    local_started = time.monotonic()
    local = tmp_path / "local"
    _build_local(local, corpus)
    local_seconds = time.monotonic() - local_started
    remote_reader = tmp_path / "reader"
    publish_query_db(Warehouse(remote_reader, location))
    local_db, remote_db = local / "rag.duckdb", remote_reader / "rag.duckdb"
    for sql in ("select document_id, status, content_sha256, canonical_text from documents "
                "order by all",
                "select * exclude (pipeline_version) from chunks order by chunker, chunk_id",
                "select * from bm25_terms order by all",
                "select * from bm25_postings order by all",
                "select * from bm25_params order by all",
                "select chunker, model, chunk_id, text_sha256 from embeddings order by all"):
        local_rows = _rows(local_db, sql)
        assert local_rows and _rows(remote_db, sql) == local_rows, sql
    vectors = "select vector from embeddings order by chunker, chunk_id"
    np.testing.assert_allclose(np.array([r[0] for r in _rows(remote_db, vectors)]),
                               np.array([r[0] for r in _rows(local_db, vectors)]), atol=2e-6)
    embedder = load_embedder(declared_models()[0])
    for chunker in CHUNKERS:
        local_index = load_partition(local, chunker, model)
        remote_index = load_partition(remote_reader, chunker, model, location)
        for question in QUESTIONS:
            assert _comparable(ask(question, remote_index, embedder, AskSettings())) == \
                _comparable(ask(question, local_index, embedder, AskSettings())), question
    # The CLI's --warehouse edge reads the bucket.
    def cli(*args: str) -> str:
        result = subprocess.run([sys.executable, "-c", "from rag_pipeline.cli import main; main()",
                                 "--data-dir", str(tmp_path / "cli"), "--warehouse", location,
                                 *args], env=env, capture_output=True, text=True, timeout=TIMEOUT)
        assert result.returncode == 0, result.stderr
        return result.stdout

    assert _comparable(json.loads(cli("ask", QUESTIONS[0], "--json"))) == _comparable(
        ask(QUESTIONS[0], load_partition(local, "header", model), embedder, AskSettings()))
    status = cli("status")
    assert "documents: 3 ok, 0 failed, 0 stale" in status
    for chunker in CHUNKERS:
        assert f"{chunker:20s} {model:28s}" in status
    print(f"deploy build {build_seconds:.1f} s, local build {local_seconds:.1f} s, "
          f"test {time.monotonic() - started:.1f} s")
