"""The nightly life of the pipeline with a real ``dagster-daemon`` on a temporary instance:
``rag-pipeline index`` with the daemon up launches no duplicate runs, a documents run with no
change launches nothing downstream, and a one-document change re-runs exactly the partitions
whose inputs changed, all succeeding."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest

from rag_pipeline.core.config.init_file import reference_config
from rag_pipeline.core.runtime.processes import stop_process
from rag_pipeline.orchestration.automation import INDEX_SENSOR
from rag_pipeline.orchestration.index_launch import daemon_running
from rag_pipeline.project_paths import PROJECT_ROOT
from rag_pipeline_tests.conftest import DagsterProject

pytestmark = pytest.mark.slow

CHUNKERS = ("blind", "header")
MODEL = "all-MiniLM-L6-v2@53aa5117"
CONFIG = reference_config(CHUNKERS)
"""Two chunkers and the reference model: the daemon's behaviour, not the full index, is the point."""


def _bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def _partitions(instance: dg.DagsterInstance, after: float) -> Counter:
    """(job or asset job, partition) of every run created after ``after``, with its status."""
    runs = instance.get_runs(filters=dg.RunsFilter(created_after=datetime.fromtimestamp(after, UTC)))
    return Counter((run.tags.get("dagster/partition", "-"), run.status.value) for run in runs)


def _wait_for_sensor_ticks(instance: dg.DagsterInstance, after: float, count: int) -> None:
    """Waits until the daemon has finished ``count`` evaluations of the index sensor begun
    after ``after``: any run the sensor would launch for the state at ``after`` is then
    launched (however slow the machine is, where a fixed wait proved nothing)."""
    deadline = time.monotonic() + 600
    while True:
        done = sum(1 for state in instance.all_instigator_state()
                   if state.instigator_name == INDEX_SENSOR
                   for tick in instance.get_ticks(state.instigator_origin_id, state.selector_id,
                                                  after=after)
                   if tick.status.value != "STARTED")
        if done >= count:
            return
        assert time.monotonic() < deadline, f"{done} of {count} sensor evaluations in 600 s"
        time.sleep(0.5)


def _index(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([_bin("rag-pipeline"), "index"], cwd=PROJECT_ROOT, env=env,
                          capture_output=True, text=True, timeout=1500)


@pytest.fixture
def instance_env(dagster_project: Callable[[str, str], DagsterProject],
                 monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, str], Path]:
    project = dagster_project("daemon", CONFIG)
    monkeypatch.setenv("DAGSTER_HOME", str(project.home))
    return project.env, project.corpus


def test_index_with_the_daemon_up_then_a_quiet_night_then_one_change(instance_env):
    env, corpus = instance_env
    # This test follows `index` after an edit; the corpus watch would launch a documents run
    # of its own for the edit (test_corpus_watch.py, benchmarks/edit_latency.py), so it is off.
    stop = subprocess.run([_bin("dagster"), "sensor", "stop", "corpus_watch", "-w",
                           "workspace.yaml"], cwd=PROJECT_ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert stop.returncode == 0, stop.stdout + stop.stderr
    daemon = subprocess.Popen([_bin("dagster-daemon"), "run", "-w", "workspace.yaml"],
                              cwd=PROJECT_ROOT, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        with dg.DagsterInstance.get() as instance:
            deadline = time.monotonic() + 240
            while not daemon_running(instance):
                assert daemon.poll() is None and time.monotonic() < deadline
                time.sleep(0.5)

            # 1. index with the daemon up: every partition built exactly once, no duplicates.
            started = time.time()
            first = _index(env)
            assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
            assert "using the running Dagster daemon" in first.stdout
            runs = _partitions(instance, started)
            expected = Counter({("-", "SUCCESS"): 1, (MODEL, "SUCCESS"): 1})
            expected.update({(c, "SUCCESS"): 1 for c in CHUNKERS})
            expected.update({(f"{c}|{MODEL}", "SUCCESS"): 1 for c in CHUNKERS})
            assert runs == expected

            # 2. a quiet night: the documents run changes nothing, so nothing runs after it
            # (three sensor evaluations after the command ended launch nothing).
            started = time.time()
            quiet = _index(env)
            assert quiet.returncode == 0, quiet.stdout[-3000:] + quiet.stderr[-3000:]
            _wait_for_sensor_ticks(instance, time.time(), 3)
            assert _partitions(instance, started) == Counter({("-", "SUCCESS"): 1})

            # 3. one document changes: every chunker's chunks of it change, so every chunks,
            # embeddings and eval partition runs once, and all succeed.
            (corpus / "notes.txt").write_text("Release notes.\n\nVersion 3 removed the YAML "
                                              "exporter.\n", encoding="utf-8")
            started = time.time()
            changed = _index(env)
            assert changed.returncode == 0, changed.stdout[-3000:] + changed.stderr[-3000:]
            _wait_for_sensor_ticks(instance, time.time(), 1)
            assert _partitions(instance, started) == expected
    finally:
        stop_process(daemon, 60, group=True)
