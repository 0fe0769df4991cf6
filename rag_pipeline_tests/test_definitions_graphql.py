"""What a Dagster user sees, asked of ``dagster-webserver``'s GraphQL on 127.0.0.1 where a
screenshot cannot be asserted: each named job lists the runs the sensor requested, the asset
groups, a failed blocking check, and the freshness state the daemon computed.

The runs are real runs on a temporary instance, requested by the ``index_automation`` sensor
and executed in this process with the hashed stand-in model (so no torch); one
``embeddings_job`` run has a planted flaw. The webserver and the daemon load the project's code
location from ``workspace.yaml`` on that instance, as ``make dev`` does."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg
import pytest

from rag_pipeline.core.config.init_file import reference_config
from rag_pipeline.core.index.generations import current_generation
from rag_pipeline.core.runtime.processes import stop_process
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.definitions import build_definitions
from rag_pipeline.orchestration.assets import embeddings as embeddings_asset
from rag_pipeline.orchestration.automation import (
    CHUNKS_JOB,
    DOCUMENTS_JOB,
    EMBEDDINGS_JOB,
    EVAL_JOB,
    INDEX_SENSOR,
    build_index_automation,
    build_index_jobs,
)
from rag_pipeline.project_paths import (
    DAGSTER_HOME,
    ENV_CONFIG,
    ENV_CORPUS,
    ENV_DATA_DIR,
    PROJECT_ROOT,
)
from rag_pipeline_tests.conftest import TINY_DOCS, write_corpus
from rag_pipeline_tests.fake_embedder import HashedEmbedder, hashed_spec
from rag_pipeline_tests.orchestration.assets.conftest import corrupting
from rag_pipeline_tests.orchestration.assets.test_embeddings import _stretch_first_vector
from rag_pipeline_tests.test_definitions import ASSET_GROUPS

pytestmark = pytest.mark.slow

HOST = "127.0.0.1"
LOCATION = {"repositoryLocationName": "rag_pipeline", "repositoryName": "__repository__"}
@dataclass
class Ui:
    url: str
    instance: dg.DagsterInstance
    model: str
    run_ids: dict[str, list[str]]
    """Per job, the run ids it got, oldest first."""
    generation: str
    """The generation the good embeddings run published (the flawed one published none)."""
    launched: dict[str, list[str]] = field(default_factory=dict)
    """Per job, the runs the daemon launched through the code location, oldest first."""

    def query(self, text: str, variables: dict | None = None) -> dict:
        body = json.dumps({"query": text, "variables": variables or {}}).encode()
        request = urllib.request.Request(f"{self.url}/graphql", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            answer = json.loads(response.read())
        assert "errors" not in answer, answer["errors"]
        return answer["data"]


def _bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def _wait(predicate, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            value = predicate()
        except OSError:
            value = None
        if value:
            return value
        time.sleep(1.0)
    raise AssertionError(f"{what} not within {seconds:.0f} s")


def run_the_sensors_requests(root: Path, instance: dg.DagsterInstance) -> dict[str, list[str]]:
    """The index of the tiny corpus for ``header`` x the hashed model, each run requested by
    the sensor and executed as the daemon would (its job, partition and tags), then one more
    ``embeddings_job`` run with a planted flaw. Returns the run ids per job."""
    spec = hashed_spec()
    run_ids: dict[str, list[str]] = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(embeddings_asset, "load_embedder", lambda s, *_: HashedEmbedder(s))
        defs = build_definitions(data_dir=root / "data", corpus_dir=root / "corpus", models=[spec])
        sensor = build_index_automation(["header"], [spec], build_index_jobs())

        def launch(job: str, partition=None, tags=None) -> dg.DagsterRunStatus:
            result = defs.resolve_job_def(job).execute_in_process(
                instance=instance, partition_key=partition, tags=tags, raise_on_error=False)
            run_ids.setdefault(job, []).append(result.run_id)
            return instance.get_run_by_id(result.run_id).status

        assert launch(DOCUMENTS_JOB) == dg.DagsterRunStatus.SUCCESS
        for job in (CHUNKS_JOB, EMBEDDINGS_JOB, EVAL_JOB):
            with dg.build_sensor_context(instance=instance, definitions=defs,
                                         resources={"storage": defs.resources["storage"]}) as context:
                [request] = sensor(context)
            assert request.job_name == job
            assert launch(job, request.partition_key, request.tags) == dg.DagsterRunStatus.SUCCESS
        # Planted flaw (trips the blocking check vectors_unit_length): the first vector of the
        # table doubled in length, so the run fails before index_generation.
        patch.setattr(embeddings_asset, "embeddings_table",
                      corrupting(embeddings_asset.embeddings_table, _stretch_first_vector))
        key = dg.MultiPartitionKey({"chunker": "header", "model": spec.key})
        assert launch(EMBEDDINGS_JOB, key) == dg.DagsterRunStatus.FAILURE
    return run_ids


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ui]:
    root = tmp_path_factory.mktemp("ui")
    home = root / "dagster_home"
    home.mkdir()
    shutil.copy(DAGSTER_HOME / "dagster.yaml", home / "dagster.yaml")
    write_corpus(root / "corpus", TINY_DOCS)
    (root / "rag_pipeline.toml").write_text(reference_config(["header"]), encoding="utf-8")
    shutil.copy(PROJECT_ROOT / "rag_pipeline.lock.json", root / "rag_pipeline.lock.json")
    env = {**os.environ, "DAGSTER_HOME": str(home), ENV_DATA_DIR: str(root / "data"),
           ENV_CONFIG: str(root / "rag_pipeline.toml"), ENV_CORPUS: str(root / "corpus"),
           "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "FRESHNESS_DAEMON_INTERVAL_SECONDS": "2"}
    processes = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DAGSTER_HOME", str(home))
        with dg.DagsterInstance.get() as instance:
            run_ids = run_the_sensors_requests(root, instance)
            port = _free_port()
            try:
                processes.append(subprocess.Popen(
                    [_bin("dagster-webserver"), "-h", HOST, "-p", str(port), "-w", "workspace.yaml"],
                    cwd=PROJECT_ROOT, env=env, stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL, start_new_session=True))
                served = current_generation(Warehouse(root / "data"), "header", hashed_spec().key)
                ui = Ui(f"http://{HOST}:{port}", instance, hashed_spec().key, run_ids, served.id)
                _wait(lambda: ui.query("{ workspaceOrError { ... on Workspace { locationEntries "
                                       "{ name loadStatus } } } }")["workspaceOrError"]
                      ["locationEntries"] == [{"name": "rag_pipeline", "loadStatus": "LOADED"}],
                      300, "the code location loaded in the webserver")
                # Stopped before the daemon starts, as a user would in Automation: the daemon's
                # code location declares the real model, whose partitions it would build.
                sensor = ui.query("query($s: SensorSelector!) { sensorOrError(sensorSelector: $s) "
                                  "{ ... on Sensor { id } } }",
                                  {"s": {**LOCATION, "sensorName": INDEX_SENSOR}})
                stopped = ui.query("mutation($id: String) { stopSensor(id: $id) { ... on "
                                   "StopSensorMutationResult { instigationState { status } } } }",
                                   {"id": sensor["sensorOrError"]["id"]})
                assert stopped == {"stopSensor": {"instigationState": {"status": "STOPPED"}}}
                processes.append(subprocess.Popen(
                    [_bin("dagster-daemon"), "run", "-w", "workspace.yaml"], cwd=PROJECT_ROOT,
                    env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    start_new_session=True))
                # One edit: corpus_watch (left running) launches documents_job through the
                # code location, as automation does (a run with the code location's origin).
                with (root / "corpus" / "notes.txt").open("a", encoding="utf-8") as handle:
                    handle.write("\nVersion 4 adds a TOML exporter.\n")

                def watched_run():
                    runs = instance.get_runs(filters=dg.RunsFilter(
                        job_name=DOCUMENTS_JOB, tags={"dagster/sensor_name": "corpus_watch"},
                        statuses=[dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE]))
                    return runs[0] if runs else None

                run = _wait(watched_run, 300, "corpus_watch's documents run")
                assert run.status == dg.DagsterRunStatus.SUCCESS
                ui.launched[DOCUMENTS_JOB] = [run.run_id]
                ui.run_ids[DOCUMENTS_JOB].append(run.run_id)
                yield ui
            finally:
                for process in reversed(processes):
                    stop_process(process, 60, group=True)


RUNS = """query($job: String!) { runsOrError(filter: {pipelineName: $job}) { ... on Runs {
  results { runId jobName status tags { key value } } } } }"""


def test_each_job_lists_the_runs_the_sensor_requested(ui: Ui):
    partition = f"header|{ui.model}"
    seen = {}
    for job in (DOCUMENTS_JOB, CHUNKS_JOB, EMBEDDINGS_JOB, EVAL_JOB):
        results = ui.query(RUNS, {"job": job})["runsOrError"]["results"]
        seen[job] = [(r["jobName"], r["status"], {t["key"]: t["value"] for t in r["tags"]}
                      .get("dagster/partition", "-")) for r in results]
        # Newest first, as the job page lists them: exactly this job's runs.
        assert [r["runId"] for r in results] == ui.run_ids[job][::-1]
    assert seen == {
        DOCUMENTS_JOB: [(DOCUMENTS_JOB, "SUCCESS", "-"), (DOCUMENTS_JOB, "SUCCESS", "-")],
        CHUNKS_JOB: [(CHUNKS_JOB, "SUCCESS", "header")],
        EMBEDDINGS_JOB: [(EMBEDDINGS_JOB, "FAILURE", partition),
                         (EMBEDDINGS_JOB, "SUCCESS", partition)],
        EVAL_JOB: [(EVAL_JOB, "SUCCESS", ui.model)]}
    # The sensor's runs carry what they build: chunker, model, inputs and attempt.
    tags = {t["key"]: t["value"] for t in
            ui.query(RUNS, {"job": EMBEDDINGS_JOB})["runsOrError"]["results"][1]["tags"]}
    assert {k: tags[k] for k in ("dagster/partition/chunker", "dagster/partition/model",
                                 "rag_pipeline/attempt")} == {
        "dagster/partition/chunker": "header", "dagster/partition/model": ui.model,
        "rag_pipeline/attempt": "1"}
    assert tags["rag_pipeline/generation"] == ui.generation
    # The job page lists the runs of the job launched through this code location (its query:
    # the job's runs with the code location's repository label): the daemon's. A run executed
    # in another process's memory (the sensor's requests above) has no such origin.
    for job in (DOCUMENTS_JOB, CHUNKS_JOB, EMBEDDINGS_JOB, EVAL_JOB):
        page = ui.query("""query($s: PipelineSelector!) { pipelineOrError(params: $s) {
            ... on Pipeline { runs { runId status } } } }""",
                        {"s": {**LOCATION, "pipelineName": job}})["pipelineOrError"]["runs"]
        assert [(r["runId"], r["status"]) for r in page] == [
            (run_id, "SUCCESS") for run_id in ui.launched.get(job, [])[::-1]]
    # No run of the implicit asset job: nothing is "Jobless".
    assert ui.query(RUNS, {"job": "__ASSET_JOB"})["runsOrError"]["results"] == []


def test_the_asset_groups_of_the_code_location(ui: Ui):
    data = ui.query("{ repositoriesOrError { ... on RepositoryConnection { nodes { name "
                    "location { name } assetGroups { groupName } } } } "
                    "assetNodes { assetKey { path } groupName owners { ... on TeamAssetOwner "
                    "{ team } } } }")
    [repository] = data["repositoriesOrError"]["nodes"]
    assert (repository["location"]["name"], sorted(g["groupName"] for g in repository[
        "assetGroups"])) == ("rag_pipeline", ["evaluation", "index", "ingest"])
    groups: dict[str, set[str]] = {}
    for node in data["assetNodes"]:
        groups.setdefault(node["groupName"], set()).add(node["assetKey"]["path"][-1])
        assert node["owners"] == [{"team": "rag-pipeline"}]
    assert groups == ASSET_GROUPS


def test_the_failed_blocking_check_shows_failed(ui: Ui):
    data = ui.query("""{ assetNodes(assetKeys: [{path: ["embeddings"]}]) { assetChecksOrError {
      ... on AssetChecks { checks { name blocking } } } } }""")
    checks = data["assetNodes"][0]["assetChecksOrError"]["checks"]
    assert sorted((c["name"], c["blocking"]) for c in checks) == [
        ("one_model_per_partition", True), ("vectors_match_model", True),
        ("vectors_unit_length", True)]
    history = {}
    for name in ("vectors_unit_length", "one_model_per_partition", "vectors_match_model"):
        executions = ui.query("""query($name: String!) { assetCheckExecutions(
            assetKey: {path: ["embeddings"]}, checkName: $name, limit: 10) {
            runId status partition } }""", {"name": name})["assetCheckExecutions"]
        history[name] = [(e["runId"], e["status"], e["partition"]) for e in executions]
    good, flawed = ui.run_ids[EMBEDDINGS_JOB]
    partition = f"header|{ui.model}"
    assert history == {
        "vectors_unit_length": [(flawed, "FAILED", partition), (good, "SUCCEEDED", partition)],
        "one_model_per_partition": [(flawed, "SUCCEEDED", partition), (good, "SUCCEEDED", partition)],
        "vectors_match_model": [(flawed, "SUCCEEDED", partition), (good, "SUCCEEDED", partition)]}
    # The failed run stopped at the check: neither ann_index nor index_generation ran in it.
    steps = ui.query("""query($id: ID!) { runOrError(runId: $id) { ... on Run {
        assetMaterializations { assetKey { path } } } } }""", {"id": flawed})
    assert [m["assetKey"]["path"] for m in steps["runOrError"]["assetMaterializations"]] == [
        ["embeddings"]]


def test_the_corpus_freshness_state(ui: Ui):
    query = """{ assetNodes(assetKeys: [{path: ["documents"]}]) { freshnessStatusInfo {
      freshnessStatus } internalFreshnessPolicy { ... on TimeWindowFreshnessPolicy {
      failWindowSeconds } } } }"""

    def evaluated():
        node = ui.query(query)["assetNodes"][0]
        return node if node["freshnessStatusInfo"]["freshnessStatus"] != "UNKNOWN" else None

    # The daemon's freshness evaluation (every 2 s here): documents were read minutes ago,
    # inside the 25 h window.
    node = _wait(evaluated, 180, "a freshness evaluation of documents")
    assert node == {"freshnessStatusInfo": {"freshnessStatus": "HEALTHY"},
                    "internalFreshnessPolicy": {"failWindowSeconds": 25 * 3600}}
    # Only documents carries the policy (the rest follows from it through the sensor).
    others = ui.query('{ assetNodes(assetKeys: [{path: ["index_generation"]}]) { '
                      'freshnessStatusInfo { freshnessStatus } } }')
    assert others == {"assetNodes": [{"freshnessStatusInfo": None}]}


LAUNCH = """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) { __typename
  ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } } }"""


def test_the_queue_holds_runs_launched_from_an_asset_page_by_their_pool(ui: Ui):
    # "Materialize" on the documents asset page, twice, as a user double-clicking: two runs of
    # Dagster's __ASSET_JOB, with none of the jobs' tags. The queue (2 runs at once) would start
    # both in one pass; the documents pool (1, per run) starts the second when the first ended.
    params = {"selector": {**LOCATION, "pipelineName": "__ASSET_JOB",
                           "assetSelection": [{"path": ["documents"]}]},
              "mode": "default", "runConfigData": {}, "executionMetadata": {"tags": []}}
    launched = []
    for _ in range(2):
        answer = ui.query(LAUNCH, {"p": params})["launchRun"]
        assert answer["__typename"] == "LaunchRunSuccess", answer
        launched.append(answer["run"]["runId"])

    def ended():
        records = ui.instance.get_run_records(filters=dg.RunsFilter(run_ids=launched))
        done = [r for r in records if r.dagster_run.status in (
            dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED)]
        return done if len(done) == 2 else None

    def launched_at(record: dg.RunRecord) -> float:
        [event] = ui.instance.all_logs(record.dagster_run.run_id,
                                       of_type=dg.DagsterEventType.RUN_STARTING)
        return event.timestamp

    first, second = sorted(_wait(ended, 300, "both documents runs"), key=launched_at)
    assert [r.dagster_run.status for r in (first, second)] == [dg.DagsterRunStatus.SUCCESS] * 2
    assert {r.dagster_run.job_name for r in (first, second)} == {"__ASSET_JOB"}
    assert not any(key.startswith("rag_pipeline/") for r in (first, second)
                   for key in r.dagster_run.tags)
    assert first.dagster_run.run_op_concurrency.all_pools == {"documents"}
    # Taken from the queue (and its worker started) only once the first run had ended.
    assert launched_at(second) >= first.end_time, (launched_at(first), first.end_time,
                                                   launched_at(second))
