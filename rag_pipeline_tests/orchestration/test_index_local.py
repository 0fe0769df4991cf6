"""Tests for ``rag_pipeline.orchestration.index_local`` (the runs in one worker process, on an
instance on disk, with the hashed stand-in model: the code location
``rag_pipeline_tests/local_definitions.py``) and for the index guard that marks a killed
command's runs canceled."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest

from rag_pipeline.core.config.build_context import BuildContext
from rag_pipeline.core.index.generations import current_generation
from rag_pipeline.core.index.plan import Step, index_plan
from rag_pipeline.core.runtime.processes import Stopped, pid_alive
from rag_pipeline.core.storage.table_names import RECONCILIATION
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.definitions import definitions_of
from rag_pipeline.orchestration.automation import DOCUMENTS_JOB
from rag_pipeline.orchestration.index_launch import RETRY_TAG, run_worker_pid
from rag_pipeline.orchestration.index_local import LocalRuns, run_index_locally
from rag_pipeline.orchestration.index_runs import IndexRunFailed
from rag_pipeline.orchestration.index_worker import (
    INSTANCE_OPEN_LOCK,
    RUNS_LOG,
    IndexWorker,
    open_instance,
    rotate,
)
from rag_pipeline.orchestration.run_tags import ATTEMPT_TAG, INPUTS_TAG, PID_TAG
from rag_pipeline.project_paths import ENV_CORPUS, ENV_DATA_DIR, PROJECT_ROOT
from rag_pipeline_tests import local_definitions
from rag_pipeline_tests.conftest import TINY_DOCS, write_corpus
from rag_pipeline_tests.fake_embedder import hashed_spec

TEST_DEFINITIONS = "rag_pipeline_tests.local_definitions:defs"

MODEL = hashed_spec().key
EMBEDDINGS = f"header|{MODEL}"
_SECONDS = re.compile(r" in \d+\.\d s(?=$|: )")


@dataclass
class LocalProject:
    """The tiny corpus's production build (header x the hashed model) on an instance on disk;
    ``workers`` collects every worker :meth:`runs` started, ``echoed`` the lines (the seconds
    of a ``done`` line written ``X``)."""

    root: Path
    env: dict[str, str]
    build: BuildContext
    defs: dg.Definitions
    instance: dg.DagsterInstance
    workers: list[IndexWorker]
    echoed: list[str]

    @contextmanager
    def runs(self, checkpoint: Callable[[], None] = lambda: None,
             plant: str = "") -> Iterator[LocalRuns]:
        """Runs in a worker of the test code location (with ``plant``: its planted fault)."""
        with IndexWorker({**self.env, "RAG_TEST_PLANT": plant},
                         Path(self.instance.root_directory) / RUNS_LOG,
                         definitions=TEST_DEFINITIONS) as worker:
            self.workers.append(worker)
            yield LocalRuns(self.instance, self.defs, worker,
                            lambda line: self.echoed.append(_SECONDS.sub(" in X s", line)),
                            checkpoint=checkpoint)

    @property
    def warehouse(self) -> Warehouse:
        return self.build.warehouse

    def plan(self) -> tuple[Step, ...]:
        """What is due, as ``rag-pipeline index --no-eval`` plans it."""
        return index_plan(self.warehouse, self.build.chunker_keys, self.build.model_keys,
                          evaluate=False, rules=self.build.rules)

    def recorded_runs(self) -> list[dg.DagsterRun]:
        """Every run of the instance, oldest first."""
        return list(reversed(self.instance.get_runs()))


@pytest.fixture
def project(tmp_path: Path) -> Iterator[LocalProject]:
    home = tmp_path / "dagster_home"
    home.mkdir()
    env = {**os.environ, "DAGSTER_HOME": str(home), ENV_DATA_DIR: str(tmp_path / "data"),
           ENV_CORPUS: str(write_corpus(tmp_path / "corpus", TINY_DOCS)),
           "HF_HUB_OFFLINE": "1"}
    build = local_definitions.build(env)
    with dg.DagsterInstance.local_temp(tempdir=str(home)) as instance:
        yield LocalProject(tmp_path, env, build, definitions_of(build), instance, [], [])


def _table_files(warehouse: Warehouse) -> list[str]:
    """The file of every table's latest version, but ``reconciliation`` (every documents run
    writes what it found, "no change" too)."""
    return [v.file for v in warehouse.versions() if v.table != RECONCILIATION]


def _watched_tags(run: dg.DagsterRun) -> dict[str, str]:
    return {k: v for k, v in run.tags.items()
            if k in ("dagster/partition", INPUTS_TAG, ATTEMPT_TAG, RETRY_TAG, PID_TAG)}


def test_an_index_runs_documents_then_each_due_step_in_one_worker_and_again_only_documents(
        project: LocalProject):
    planned: list[tuple[Step, ...]] = []

    def plan() -> tuple[Step, ...]:
        planned.append(project.plan())
        return planned[-1]

    with project.runs() as runs:
        reports = run_index_locally(runs, plan, models=(hashed_spec(),))
    # documents, then one round per stage (chunks, then the embeddings they make due), then an
    # empty plan: the index is current.
    assert [[(s.stage.value, s.chunker, s.model) for s in steps] for steps in planned] == [
        [("chunks", "header", None)], [("embeddings", "header", MODEL)], []]
    (chunks,), (embeddings,), _ = planned
    runs = project.recorded_runs()
    assert [(r.job_name, r.status) for r in runs] == [
        ("documents_job", dg.DagsterRunStatus.SUCCESS), ("chunks_job", dg.DagsterRunStatus.SUCCESS),
        ("embeddings_job", dg.DagsterRunStatus.SUCCESS)]
    # Every run in the one worker (not this process), its pid in the tag and in the run's
    # engine event, as a run worker's; a plan step's run carries its inputs and first attempt.
    (worker,) = project.workers
    assert worker.pid != os.getpid()
    assert [_watched_tags(r) for r in runs] == [
        {PID_TAG: str(worker.pid)},
        {"dagster/partition": "header", INPUTS_TAG: chunks.key, ATTEMPT_TAG: "1",
         PID_TAG: str(worker.pid)},
        {"dagster/partition": EMBEDDINGS, INPUTS_TAG: embeddings.key, ATTEMPT_TAG: "1",
         PID_TAG: str(worker.pid)}]
    assert [run_worker_pid(project.instance, r.run_id) for r in runs] == [worker.pid] * 3
    assert [(r.run_id, r.job, r.partition, r.status) for r in reports] == [
        (runs[0].run_id, "documents_job", "-", "SUCCESS"),
        (runs[1].run_id, "chunks_job", "header", "SUCCESS"),
        (runs[2].run_id, "embeddings_job", EMBEDDINGS, "SUCCESS")]
    assert project.echoed == [
        "  started  documents_job [-]", "  done     documents_job [-] in X s",
        "  started  chunks_job [header]", "  done     chunks_job [header] in X s",
        f"  started  embeddings_job [{EMBEDDINGS}]",
        f"  done     embeddings_job [{EMBEDDINGS}] in X s: embedded 5, reused 0, shared 0, "
        "duplicates 0, removed 0"]
    # The worker ended with the block, told to (exit code 0).
    assert worker.process.returncode == 0 and not pid_alive(worker.pid)
    # It loaded the build's model beside the chunks run, once, for the embeddings run.
    runs_log = Path(project.instance.root_directory) / RUNS_LOG
    loaded = [line for line in runs_log.read_text().splitlines()
              if line.startswith("rag-pipeline index: ")]
    assert [_SECONDS.sub(" in X s", line) for line in loaded] == [
        f"rag-pipeline index: loaded {MODEL} for the runs after this one in X s"]
    served = current_generation(project.warehouse, "header", MODEL)
    files = _table_files(project.warehouse)

    # Again with nothing changed: documents_job alone, and nothing is written.
    project.echoed.clear()
    with project.runs() as runs:
        again = run_index_locally(runs, plan)
    assert [(r.job, r.status) for r in again] == [("documents_job", "SUCCESS")]
    assert project.echoed == ["  started  documents_job [-]",
                              "  done     documents_job [-] in X s"]
    assert planned[3:] == [()]
    assert [line for line in runs_log.read_text().splitlines()
            if line.startswith("rag-pipeline index: ")] == loaded
    assert _table_files(project.warehouse) == files
    assert current_generation(project.warehouse, "header", MODEL) == served

    # One paragraph edited: its chunk alone is embedded, and the line says so (found by a team
    # whose folder changes daily: what an edit cost was only in the runs log).
    project.echoed.clear()
    config = project.root / "corpus" / "guide" / "config.md"
    config.write_text(config.read_text().replace("seventeen", "nineteen"), encoding="utf-8")
    with project.runs() as runs:
        run_index_locally(runs, plan)
    assert project.echoed[-1] == (f"  done     embeddings_job [{EMBEDDINGS}] in X s: embedded 1, "
                                  "reused 4, shared 0, duplicates 0, removed 1")


def test_a_run_whose_worker_is_killed_is_marked_failed_and_stops_the_index(
        project: LocalProject):
    # Planted: the documents step kills its own process, as `kill -9` of the runs' worker does.
    with project.runs(plant="kill") as runs, pytest.raises(IndexRunFailed) as failed:
        run_index_locally(runs, project.plan)
    (run,) = project.recorded_runs()
    (worker,) = project.workers
    error = (f"the run's process (pid {worker.pid}) was killed by SIGKILL before the run "
             "ended: marked failed by rag-pipeline index")
    assert (run.job_name, run.status, run.tags[PID_TAG]) == (
        "documents_job", dg.DagsterRunStatus.FAILURE, str(worker.pid))
    assert str(failed.value) == f"documents_job [-] failed (run {run.run_id[:8]}): {error}"
    assert project.echoed == ["  started  documents_job [-]",
                              f"  FAILED   documents_job [-] (run {run.run_id[:8]})"]
    assert [(r.run_id, r.job, r.status, r.error) for r in runs.reports] == [
        (run.run_id, "documents_job", "FAILURE", error)]
    assert worker.process.returncode == -signal.SIGKILL


def test_a_checkpoint_that_raises_kills_the_worker_and_marks_its_run_canceled(
        project: LocalProject):
    # The command is told to stop while the documents step runs (the worker waits there): the
    # checkpoint raises as the signal latch does.
    reached = project.root / "documents-step-reached"

    def checkpoint() -> None:
        if reached.exists():
            raise Stopped(signal.SIGTERM)

    with project.runs(checkpoint, plant=f"block:{reached}") as runs, pytest.raises(Stopped):
        runs.run(DOCUMENTS_JOB)
    (run,) = project.recorded_runs()
    (worker,) = project.workers
    assert reached.read_text(encoding="utf-8") == str(worker.pid)
    assert (run.job_name, run.status) == ("documents_job", dg.DagsterRunStatus.CANCELED)
    (canceled,) = project.instance.get_records_for_run(
        run.run_id, of_type=dg.DagsterEventType.RUN_CANCELED).records
    assert canceled.event_log_entry.dagster_event.message == (
        f"rag-pipeline index (pid {os.getpid()}) was told to stop")
    assert project.echoed == ["  started  documents_job [-]"]
    assert runs.reports == []
    assert worker.process.returncode == -signal.SIGKILL


def test_a_failed_partition_is_retried_by_the_next_index_with_a_line_saying_so(
        project: LocalProject):
    # Planted: a file where the model's checkpoint folder must go, so the embeddings run fails
    # (its vectors cannot be checkpointed); removed before the next index.
    blocker = project.root / "data" / "warehouse" / "_vector_cache" / f"model={MODEL}"
    blocker.parent.mkdir(parents=True)
    blocker.write_text("planted: not a folder\n")
    with project.runs() as runs, pytest.raises(IndexRunFailed) as failed_run:
        run_index_locally(runs, project.plan)
    failed = project.recorded_runs()[-1]
    assert (failed.job_name, failed.status) == ("embeddings_job", dg.DagsterRunStatus.FAILURE)
    assert project.echoed[-1] == f"  FAILED   embeddings_job [{EMBEDDINGS}] (run {failed.run_id[:8]})"
    error = str(failed_run.value).removeprefix(
        f"embeddings_job [{EMBEDDINGS}] failed (run {failed.run_id[:8]}): ")
    assert error.startswith("step embeddings: ")
    blocker.unlink()
    project.echoed.clear()

    with project.runs() as runs:
        reports = run_index_locally(runs, project.plan)
    retried = project.recorded_runs()[-1]
    assert [(r.job, r.partition, r.status) for r in reports] == [
        ("documents_job", "-", "SUCCESS"), ("embeddings_job", EMBEDDINGS, "SUCCESS")]
    assert project.echoed == [
        "  started  documents_job [-]", "  done     documents_job [-] in X s",
        f"retrying embeddings_job [{EMBEDDINGS}] (run {retried.run_id[:8]}), whose last run "
        f"failed (run {failed.run_id[:8]}): {error}",
        f"  started  embeddings_job [{EMBEDDINGS}]",
        f"  done     embeddings_job [{EMBEDDINGS}] in X s: embedded 5, reused 0, shared 0, "
        "duplicates 0, removed 0"]
    # The same inputs as the failed run, its second attempt (as the sensor tags a retry).
    assert _watched_tags(retried) == {
        "dagster/partition": EMBEDDINGS, INPUTS_TAG: failed.tags[INPUTS_TAG], ATTEMPT_TAG: "2",
        RETRY_TAG: "true", PID_TAG: str(project.workers[-1].pid)}
    assert project.plan() == ()


def _dagster_home(tmp_path: Path) -> Path:
    """A Dagster home as the project's: a folder with its (here empty) ``dagster.yaml``."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("", encoding="utf-8")
    return home


def _plant_started_run(instance: dg.DagsterInstance) -> str:
    return instance.add_run(dg.DagsterRun(job_name=DOCUMENTS_JOB, run_id=str(uuid.uuid4()),
                                          status=dg.DagsterRunStatus.STARTED)).run_id


def _handles_sigusr1(pid: int) -> bool:
    """Whether ``pid`` has installed its SIGUSR1 handler (the guard's release), read from the
    caught-signals mask of ``/proc/<pid>/status``."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGUSR1 - 1)))
    return False


def _wait(predicate: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _guard_command(parent: str, since: float) -> list[str]:
    return [sys.executable, "-m", "rag_pipeline.orchestration.index_guard", "--parent", parent,
            "--since", repr(since)]


_GUARDED_PARENT = """
import os, signal, subprocess, sys
with open(sys.argv[2], "wb") as log:
    guard = subprocess.Popen(sys.argv[3:] + ["--parent", str(os.getpid()), "--since", sys.argv[1]],
                             stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
print(guard.pid, flush=True)
while True:
    signal.pause()
"""


@pytest.mark.slow
def test_the_guard_of_a_killed_command_marks_its_runs_since_it_started_canceled(tmp_path: Path):
    home = _dagster_home(tmp_path)
    log = tmp_path / "guard.log"
    with dg.DagsterInstance.local_temp(tempdir=str(home)) as instance:
        before = _plant_started_run(instance)
        since = time.time()
        during = _plant_started_run(instance)
        parent = subprocess.Popen(
            [sys.executable, "-c", _GUARDED_PARENT, repr(since), str(log), sys.executable, "-m",
             "rag_pipeline.orchestration.index_guard"],
            cwd=PROJECT_ROOT, env={**os.environ, "DAGSTER_HOME": str(home)},
            stdout=subprocess.PIPE, text=True)
        guard = int(parent.stdout.readline())
        _wait(lambda: _handles_sigusr1(guard), 60, "the guard to set its handlers")
        parent.kill()
        assert parent.wait(timeout=60) == -signal.SIGKILL
        parent.stdout.close()
        _wait(lambda: not pid_alive(guard), 120, "the guard to end")
        assert instance.get_run_by_id(before).status == dg.DagsterRunStatus.STARTED
        assert instance.get_run_by_id(during).status == dg.DagsterRunStatus.CANCELED
        (canceled,) = instance.get_records_for_run(
            during, of_type=dg.DagsterEventType.RUN_CANCELED).records
    ended = f"rag-pipeline index (pid {parent.pid}) ended"
    assert canceled.event_log_entry.dagster_event.message == f"{ended} before its runs did"
    assert log.read_text(encoding="utf-8") == f"index guard: {ended}; marked 1 run(s) canceled\n"


def test_a_released_guard_marks_nothing_and_exits_0(tmp_path: Path):
    home = _dagster_home(tmp_path)
    with dg.DagsterInstance.local_temp(tempdir=str(home)) as instance:
        since = time.time()
        run_id = _plant_started_run(instance)
        guard = subprocess.Popen(_guard_command(str(os.getpid()), since), cwd=PROJECT_ROOT,
                                 env={**os.environ, "DAGSTER_HOME": str(home)},
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        _wait(lambda: _handles_sigusr1(guard.pid), 60, "the guard to set its handlers")
        guard.send_signal(signal.SIGUSR1)
        out, _ = guard.communicate(timeout=60)
        assert (guard.returncode, out) == (0, "")
        assert instance.get_run_by_id(run_id).status == dg.DagsterRunStatus.STARTED


def test_a_run_that_never_began_fails_naming_the_runs_log(project: LocalProject):
    # Planted: a run config the job refuses, so the worker's run is never created.
    with project.runs() as runs, pytest.raises(IndexRunFailed) as failed:
        runs.run(DOCUMENTS_JOB, run_config={"resources": {"no_such_resource": {}}})
    assert str(failed.value) == (
        "documents_job [-]: the run never began (its process failed): see "
        f"{Path(project.instance.root_directory) / RUNS_LOG}")
    assert project.recorded_runs() == []
    assert project.echoed == ["  started  documents_job [-]"]
    assert runs.reports == []
    assert "DagsterInvalidConfigError" in (
        Path(project.instance.root_directory) / RUNS_LOG).read_text(encoding="utf-8")


def test_a_worker_that_never_ran_a_run_is_killed_at_once(project: LocalProject):
    # The command refused (another index holds the lock) or a daemon runs: the worker started
    # for nothing holds nothing and is not waited for.
    with project.runs():
        pass
    (worker,) = project.workers
    assert worker.process.returncode == -signal.SIGKILL


def test_a_runs_log_past_its_size_moves_aside_replacing_the_one_before(tmp_path: Path):
    log = tmp_path / RUNS_LOG
    log.write_text("0123456789")
    rotate(log, keep_bytes=10)
    assert (log.exists(), sorted(p.name for p in tmp_path.iterdir())) == (True, [RUNS_LOG])
    log.write_text("first run\n" * 2)
    rotate(log, keep_bytes=10)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{RUNS_LOG}.1"]
    assert (tmp_path / f"{RUNS_LOG}.1").read_text() == "first run\n" * 2
    log.write_text("second run\n" * 2)
    rotate(log, keep_bytes=10)
    assert (tmp_path / f"{RUNS_LOG}.1").read_text() == "second run\n" * 2
    rotate(tmp_path / "absent.log", keep_bytes=10)


def test_a_runs_log_another_index_writes_to_stays_where_it_is(tmp_path: Path):
    import fcntl

    log, lock = tmp_path / RUNS_LOG, tmp_path / "rag-pipeline-index.lock"
    log.write_text("the running index's lines\n")
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        rotate(log, keep_bytes=10, busy=lock)
        assert sorted(p.name for p in tmp_path.iterdir()) == [lock.name, RUNS_LOG]
    rotate(log, keep_bytes=10, busy=lock)
    assert sorted(p.name for p in tmp_path.iterdir()) == [lock.name, f"{RUNS_LOG}.1"]


def test_an_instance_open_waits_for_the_lock_says_so_and_goes_ahead_after_its_bound(
        tmp_path: Path):
    import fcntl

    said: list[str] = []
    with (tmp_path / INSTANCE_OPEN_LOCK).open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        began = time.monotonic()
        with open_instance(tmp_path, wait_seconds=1.0, waiting=said.append,
                           say_after=0.2) as instance:
            waited = time.monotonic() - began
            assert instance.get_runs() == []
    assert waited >= 1.0
    assert said == [f"waiting for another process opening the Dagster instance (it holds "
                    f"{tmp_path / INSTANCE_OPEN_LOCK}; going ahead without it after 1 s)"]


def _state(pid: int) -> str:
    """The process's state letter (``T``: stopped), from ``/proc``."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _wait_for_states(pids: list[int], state: str, seconds: float = 30.0) -> list[str]:
    deadline = time.monotonic() + seconds
    while True:
        states = [_state(pid) for pid in pids]
        if all((s == "T") == (state == "T") for s in states) or time.monotonic() > deadline:
            return states
        time.sleep(0.001)


def _command_with_a_worker(project: LocalProject, **popen: object) -> subprocess.Popen:
    """The command's side of the worker in a process of its own (a stop signal here would
    stop the test); it prints the worker's pid, answers each ``ping`` line with ``pong`` and
    ends with its worker on any other line, waiting for input as the command waits for its
    worker's replies: in polls of 0.1 s. (A signal that lands just before a read with no
    timeout begins waits for that read to end: its Python handler runs in the main thread,
    between two of its steps; so a ``pong`` after a signal says its handler has run.)"""
    script = ("import os, select, sys\n"
              "from pathlib import Path\n"
              "from rag_pipeline.orchestration.index_worker import IndexWorker\n"
              "with IndexWorker(dict(os.environ), Path(sys.argv[1]), "
              f"definitions={TEST_DEFINITIONS!r}) as worker:\n"
              "    print(worker.pid, flush=True)\n"
              "    while True:\n"
              "        while not select.select([sys.stdin], [], [], 0.1)[0]:\n"
              "            pass\n"
              "        if sys.stdin.readline().strip() != 'ping':\n"
              "            break\n"
              "        print('pong', flush=True)\n")
    return subprocess.Popen(
        [sys.executable, "-c", script, str(Path(project.instance.root_directory) / RUNS_LOG)],
        cwd=PROJECT_ROOT, env=project.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True, **popen)


def _answer(command: subprocess.Popen, line: str, seconds: float = 30.0) -> str:
    """What the stand-in command answers ``line`` (``""`` when it does not within ``seconds``)."""
    import select

    _send(command, line)
    if not select.select([command.stdout], [], [], seconds)[0]:
        return ""
    return command.stdout.readline().strip()


def _send(command: subprocess.Popen, line: str) -> None:
    command.stdin.write(f"{line}\n")
    command.stdin.flush()


def _end(command: subprocess.Popen, worker: int) -> None:
    _send(command, "end")
    assert command.wait(timeout=60) == 0
    assert not pid_alive(worker)


def test_a_terminal_stop_of_the_command_stops_its_worker_and_fg_continues_both(
        project: LocalProject):
    # In a process group of its own in this session, as a shell runs a job: signalled as a
    # terminal's Ctrl-Z and `fg` signal it.
    command = _command_with_a_worker(project, process_group=0)
    try:
        worker = int(command.stdout.readline())
        # Stopped again by the next Ctrl-Z, continued again: many times, each Ctrl-Z sent as
        # soon as both run, in the moment the command's handlers are still at work.
        for _ in range(300):
            command.send_signal(signal.SIGTSTP)
            assert _wait_for_states([command.pid, worker], "T") == ["T", "T"]
            command.send_signal(signal.SIGCONT)
            assert "T" not in _wait_for_states([command.pid, worker], "running")
        _end(command, worker)
    finally:
        command.kill()
        command.wait()


def test_a_stop_the_kernel_does_not_carry_out_leaves_the_worker_running_too(
        project: LocalProject):
    # In a session of its own, its process group has no shell to continue it ("orphaned"):
    # the kernel discards SIGTSTP for it, so the command goes on, and so must its worker.
    command = _command_with_a_worker(project, start_new_session=True)
    try:
        worker = int(command.stdout.readline())
        command.send_signal(signal.SIGTSTP)
        assert _answer(command, "ping") == "pong"  # so the handler has stopped and continued
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            assert "T" not in [_state(command.pid), _state(worker)]
            time.sleep(0.05)
        _end(command, worker)
    finally:
        command.kill()
        command.wait()
