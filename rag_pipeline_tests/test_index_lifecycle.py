"""The life cycle of ``rag-pipeline index`` with real processes and real signals, on one fresh
Dagster home: two commands at once (one runs, one refuses naming the holder), a transient fault
retried by the next command with no document changed, a run worker killed with ``kill -9``
mid-embedding, ``kill -9`` of the command itself and SIGTERM to it (0 processes left, its runs
canceled, the published index as it was), each followed by one ``index`` that brings the index
current."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest

from rag_pipeline.core.config.init_file import reference_config
from rag_pipeline.core.runtime.processes import group_members
from rag_pipeline.orchestration.index_launch import ACTIVE, MODEL_PARTITION_TAG, run_worker_pid
from rag_pipeline.orchestration.run_tags import PID_TAG
from rag_pipeline.project_paths import PROJECT_ROOT
from rag_pipeline_tests.conftest import DagsterProject, processes_on_home

pytestmark = pytest.mark.slow

MODEL = "all-MiniLM-L6-v2@53aa5117"
LIFECYCLE_CONFIG = reference_config(["header"])
GENERATION = "data/warehouse/_generations/chunker=header/model=" + MODEL + "/CURRENT.json"


def _index_command() -> list[str]:
    return [sys.executable, "-c", "from rag_pipeline.cli import main; main()", "index",
            "--no-eval"]


def _wait(predicate, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


HOLD = Path(__file__).parent / "planted_hold"
"""The planted step that waits for a release (its ``sitecustomize``)."""


@pytest.fixture(scope="module")
def project(dagster_project: Callable[[str, str], DagsterProject]) -> DagsterProject:
    made = dagster_project("lifecycle", LIFECYCLE_CONFIG)
    hold = made.root / "hold"
    hold.mkdir()
    made.env.update({"RAG_TEST_HOLD_DIR": str(hold),
                     "PYTHONPATH": os.pathsep.join([str(HOLD), made.env["PYTHONPATH"]])})
    return made


@contextmanager
def _held_embedding(project: DagsterProject) -> Iterator[Callable[[], tuple[str, int]]]:
    """Arms the planted hold: the next embeddings step waits, once its vectors are computed and
    before it checkpoints them, until the block ends (the release). Yields a wait for that
    moment: (run id, worker pid) of the held run."""
    hold = project.root / "hold"
    for stale in hold.iterdir():
        stale.unlink()
    (hold / "armed").touch()

    def held() -> tuple[str, int]:
        _wait(lambda: any(hold.glob("held-*")), 900, "an embeddings step to reach the hold")
        run_id, worker = _wait_for_embedding_run(project.home)
        # The hold is in the run's process: the runs' worker, which imports the module with
        # the planted hold first on its PYTHONPATH (inherited from the command).
        assert [p.name for p in hold.glob("held-*")] == [f"held-{worker}"]
        return run_id, worker

    try:
        yield held
    finally:
        (hold / "armed").unlink()
        (hold / "release").touch()


def _run(env) -> subprocess.CompletedProcess:
    return subprocess.run(_index_command(), cwd=PROJECT_ROOT, env=env, capture_output=True,
                          text=True, timeout=1500)


def _runs(home: Path, after: float) -> Counter:
    with dg.DagsterInstance.local_temp(tempdir=str(home)) as instance:
        runs = instance.get_runs(filters=dg.RunsFilter(
            created_after=datetime.fromtimestamp(after, UTC)))
        # The evaluation (partition: the model alone) is left out: --no-eval does not wait for it.
        return Counter((run.tags.get("dagster/partition", "-"), run.status.value) for run in runs
                       if run.tags.get("dagster/partition") != MODEL)


def _active_runs(home: Path) -> int:
    with dg.DagsterInstance.local_temp(tempdir=str(home)) as instance:
        return len(instance.get_runs(filters=dg.RunsFilter(statuses=list(ACTIVE))))


def _started_embedding_run(home: Path) -> tuple[str, int] | None:
    """(run id, worker pid) of an embeddings run that has started its step, if any."""
    with dg.DagsterInstance.local_temp(tempdir=str(home)) as instance:
        for run in instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED])):
            if MODEL_PARTITION_TAG not in run.tags:
                continue
            steps = instance.get_records_for_run(
                run.run_id, of_type=dg.DagsterEventType.STEP_START).records
            pid = run_worker_pid(instance, run.run_id)
            if steps and pid is not None:
                return run.run_id, pid
    return None


def _wait_for_embedding_run(home: Path) -> tuple[str, int]:
    deadline = time.monotonic() + 600
    while (found := _started_embedding_run(home)) is None:
        assert time.monotonic() < deadline, "timed out waiting for an embeddings run"
        time.sleep(0.2)
    return found


def _guard_of(command: int) -> list[int]:
    """The pids of the index guards watching ``command`` (``index_guard --parent <command>``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"rag_pipeline.orchestration.index_guard" in argv and \
                argv[argv.index(b"--parent") + 1:][:1] == [str(command).encode()]:
            found.append(int(entry.name))
    return found


def _edit(corpus: Path, version: int) -> None:
    (corpus / "notes.txt").write_text(f"Release notes.\n\nVersion {version} removed the legacy "
                                      "exporter.\n", encoding="utf-8")


def test_two_at_once_a_retried_fault_kills_and_signals(project):
    tmp_path, home, corpus, env = project.root, project.home, project.corpus, project.env
    current = tmp_path / GENERATION

    # 1. Two `index` at once on a fresh home, with a transient fault planted: a file where the
    # model's checkpoint folder must go, so the embeddings run fails (its vectors cannot be
    # checkpointed). One command runs (and fails at embeddings), the other refuses at once.
    blocker = tmp_path / "data" / "warehouse" / "_vector_cache" / f"model={MODEL}"
    blocker.parent.mkdir(parents=True)
    blocker.write_text("planted: not a folder\n")
    started = time.time()
    first = subprocess.Popen(_index_command(), cwd=PROJECT_ROOT, env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    second = subprocess.Popen(_index_command(), cwd=PROJECT_ROOT, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    outs = {p.pid: p.communicate(timeout=1500) for p in (first, second)}
    codes = sorted((p.returncode, (outs[p.pid][1].strip().splitlines() or [""])[-1])
                   for p in (first, second))
    assert [c for c, _ in codes] == [2, 2], outs
    refused = [line for _, line in codes if "another `rag-pipeline index` is running" in line]
    failed = [line for _, line in codes if "embeddings" in line and "failed" in line]
    assert len(refused) == 1 and len(failed) == 1, codes
    assert refused[0].startswith("error: another `rag-pipeline index` is running on this Dagster "
                                 "instance (pid ")
    assert processes_on_home(home) == [] and _active_runs(home) == 0
    assert not current.exists()
    assert _runs(home, started) == Counter({("-", "SUCCESS"): 1, ("header", "SUCCESS"): 1,
                                            (f"header|{MODEL}", "FAILURE"): 1})

    # 2. The fault goes away; the next `index` (1 s later, no document changed) retries the
    # failed partition and the index is current. The storage the two commands shared is whole.
    blocker.unlink()
    time.sleep(1)
    started = time.time()
    healed = _run(env)
    assert healed.returncode == 0, healed.stdout[-3000:] + healed.stderr[-3000:]
    assert f"retrying embeddings_job [header|{MODEL}] (run " in healed.stdout
    assert _runs(home, started) == Counter({("-", "SUCCESS"): 1,
                                            (f"header|{MODEL}", "SUCCESS"): 1})
    published = current.read_bytes()

    # 3. kill -9 of an embeddings run's worker (the process the command runs its runs in)
    # mid-embedding: the command marks the run failed and stops; the next `index` retries it.
    # The step waits at the planted hold (its vectors computed, not yet written), so the kill
    # lands mid-embedding however loaded the machine is.
    _edit(corpus, 3)
    with _held_embedding(project) as held:
        command = subprocess.Popen(_index_command(), cwd=PROJECT_ROOT, env=env, text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        run_id, worker = held()
        with dg.DagsterInstance.local_temp(tempdir=str(home)) as instance:
            assert instance.get_run_by_id(run_id).tags[PID_TAG] == str(worker)
        assert worker != command.pid
        os.kill(worker, signal.SIGKILL)
        out, err = command.communicate(timeout=600)
    assert command.returncode == 2, out + err
    assert f"  FAILED   embeddings_job [header|{MODEL}] (run {run_id[:8]})" in out, out
    assert f"error: embeddings_job [header|{MODEL}] failed (run {run_id[:8]}): " in err, err
    with dg.DagsterInstance.local_temp(tempdir=str(home)) as instance:
        assert instance.get_run_by_id(run_id).status == dg.DagsterRunStatus.FAILURE
    assert current.read_bytes() == published
    # The killed worker's helpers (Dagster's compute-log capture) end after it, as in step 4
    # (seen: four of them still there the moment the command returned, once).
    _wait(lambda: processes_on_home(home) == [], 90, "every process of the index to end")
    assert _active_runs(home) == 0
    healed = _run(env)
    assert healed.returncode == 0, healed.stdout[-3000:] + healed.stderr[-3000:]
    assert f"retrying embeddings_job [header|{MODEL}] (run " in healed.stdout
    published = current.read_bytes()

    # 4. kill -9 of the command mid-embedding, then SIGTERM to it: nothing of it is left, its
    # runs are canceled, the published index is as it was; the next `index` brings it current.
    for version, signum in ((4, signal.SIGKILL), (5, signal.SIGTERM)):
        _edit(corpus, version)
        started = time.time()
        # Held at the planted step: the one-text embedding cannot finish before the signal.
        with _held_embedding(project) as held:
            command = subprocess.Popen(_index_command(), cwd=PROJECT_ROOT, env=env, text=True,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            _, worker = held()
            # No daemon: on the home run the command, the guard that marks its runs canceled
            # should it be killed, and the runs' worker, which leads a process group of its
            # own with its helpers (Dagster's compute-log capture: `tail -F`, its watcher).
            (guard,) = _guard_of(command.pid)
            assert worker in group_members(worker)
            assert sorted(processes_on_home(home)) == sorted(
                [command.pid, guard, *group_members(worker)])
            os.kill(command.pid, signum)
            out, err = command.communicate(timeout=120)
            _wait(lambda: processes_on_home(home) == [], 90, "every process of the index to end")
        assert command.returncode == (-9 if signum == signal.SIGKILL else 128 + signum), out + err
        _wait(lambda: processes_on_home(home) == [], 90, "every process of the index to end")
        assert _active_runs(home) == 0
        runs = _runs(home, started)
        assert runs[(f"header|{MODEL}", "CANCELED")] == 1, runs
        assert current.read_bytes() == published
        healed = _run(env)
        assert healed.returncode == 0, healed.stdout[-3000:] + healed.stderr[-3000:]
        assert json.loads(current.read_bytes())["id"] != json.loads(published)["id"]
        published = current.read_bytes()
