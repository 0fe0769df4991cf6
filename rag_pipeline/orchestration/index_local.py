"""``rag-pipeline index`` with no Dagster daemon running: the command runs the index's runs
itself, one after the other, each in a child process forked from the command.

The command has already imported Dagster and built the definitions, so a child starts its run
at once, where a daemon would first start, load its code location, wait for the sensor's tick
and the run queue, and start a fresh run worker for each run (about 40 s of a first index of
the bundled corpus). The runs are the same runs the ``index_automation`` sensor would request:
the same jobs, partitions and tags (the plan step's inputs and attempt), recorded on the same
instance, so the Dagster UI shows them on the job pages and the sensor of a daemon started
later finds the index current and launches nothing.

A run's child is its worker: its pid is in the run's engine events and ``rag_pipeline/pid``
tag, it dies with the command (``PR_SET_PDEATHSIG``), and when it is killed the run is marked
failed and the command stops. A signal to the command (or to its process group: the child is
in a group of its own) kills the child and marks its run canceled; ``kill -9`` of the command
is seen by :mod:`rag_pipeline.orchestration.index_guard`, which marks the runs canceled.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import traceback
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import dagster as dg

from rag_pipeline.core.index.plan import Step
from rag_pipeline.core.runtime.processes import set_parent_death_signal
from rag_pipeline.orchestration.automation import DOCUMENTS_JOB, past_runs, run_request
from rag_pipeline.orchestration.index_launch import (
    RETRY_TAG,
    RunReport,
    failed_partitions,
    read_run_events,
)
from rag_pipeline.orchestration.index_runs import PID_TAG, IndexRunFailed, first_error
from rag_pipeline.orchestration.retry_policy import consecutive_failures
from rag_pipeline.project_paths import PROJECT_ROOT

__all__ = ["RUNS_LOG", "index_guard", "run_index_locally"]

RUNS_LOG = "rag-pipeline-runs.log"
"""In the Dagster home: what the runs' processes print (Dagster's console log, a crash)."""
POLL_SECONDS = 0.1
EVENTS_EVERY_SECONDS = 1.0
"""How often a running run's new events are read (its progress lines)."""
ENDED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}


@contextmanager
def index_guard(home: Path, since: float, lock_fd: int | None = None) -> Iterator[None]:
    """Runs :mod:`rag_pipeline.orchestration.index_guard` for the block, holding ``lock_fd``
    (the instance lock) until its clean-up is over; released at the block's end, however it
    ends, so only a command that dies without unwinding leaves the guard work to do."""
    command = [sys.executable, "-m", "rag_pipeline.orchestration.index_guard",
               "--parent", str(os.getpid()), "--since", repr(since)]
    with (home / RUNS_LOG).open("ab") as log:
        guard = subprocess.Popen(command, cwd=PROJECT_ROOT,
                                 env={**os.environ, "DAGSTER_HOME": str(home)}, stdout=log,
                                 stderr=subprocess.STDOUT, start_new_session=True,
                                 pass_fds=() if lock_fd is None else (lock_fd,))
    try:
        yield
    finally:
        if guard.poll() is None:
            guard.send_signal(signal.SIGUSR1)
        guard.wait()


def _child(job: dg.JobDefinition, partition_key: str | dg.MultiPartitionKey | None,
           run_config: Mapping | None, tags: Mapping[str, str], run_id: str,
           instance: dg.DagsterInstance, parent: int, log_path: Path) -> None:
    """The forked child: runs one run and exits (never returns). It leaves the command's
    process group first, so a terminal's Ctrl-C (sent to the whole foreground group) reaches
    the command alone, which kills the child and marks its run canceled: Dagster's own
    interrupt handling in the child would mark the run failed first, if it won the race."""
    code = 1
    try:
        os.setpgid(0, 0)
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_DFL)
        set_parent_death_signal(signal.SIGKILL)
        if os.getppid() != parent:  # the command ended before the request reached the kernel
            os._exit(1)
        log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        result = job.execute_in_process(run_config=run_config, instance=instance,
                                        partition_key=partition_key, raise_on_error=False,
                                        run_id=run_id, tags={**tags, PID_TAG: str(os.getpid())})
        code = 0 if result.success else 1
    except BaseException:  # noqa: BLE001 - the child must exit, never return into the command
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


class LocalRuns:
    """Runs the index's runs in forked children of this process and prints them as
    :func:`rag_pipeline.orchestration.index_launch.follow_runs` prints a daemon's runs."""

    def __init__(self, instance: dg.DagsterInstance, defs: dg.Definitions,
                 echo: Callable[[str], None], progress: Callable[[str], None] | None = None,
                 log: Callable[[str], None] | None = None,
                 checkpoint: Callable[[], None] = lambda: None) -> None:
        self.instance = instance
        self.defs = defs
        self.echo = echo
        self.progress = progress
        self.log = log
        self.checkpoint = checkpoint
        self.log_path = Path(instance.root_directory) / RUNS_LOG
        self.reports: list[RunReport] = []

    def run(self, job_name: str, partition_key: str | dg.MultiPartitionKey | None = None,
            tags: Mapping[str, str] | None = None, run_config: Mapping | None = None,
            run_id: str | None = None) -> RunReport:
        """Runs one run of ``job_name`` (with ``run_id``, default a new one) to its end;
        returns its report.

        Raises:
            IndexRunFailed: If the run failed or its process died.
            Stopped: If :attr:`checkpoint` raised (the run is then killed and marked canceled).
        """
        job = self.defs.resolve_job_def(job_name)
        label = f"{job_name} [{partition_key if partition_key is not None else '-'}]"
        run_id = run_id or new_run_id()
        self.checkpoint()
        begun = time.monotonic()
        pid = os.fork()
        if pid == 0:
            _child(job, partition_key, run_config, tags or {}, run_id, self.instance,
                   os.getppid(), self.log_path)
        self.echo(f"  started  {label}")
        status = None
        try:
            status = self._follow(pid, run_id)
        finally:
            if status is None:
                self._stop(pid, run_id)
        seconds = time.monotonic() - begun
        run = self.instance.get_run_by_id(run_id)
        if run is None:
            raise IndexRunFailed(f"{label}: its process exited ({_exit_reason(status)}) before "
                                 f"the run began: see {self.log_path}")
        if run.status not in ENDED:
            self.instance.report_run_failed(run, f"the run's process (pid {pid}) is gone "
                                                 f"({_exit_reason(status)}): it was killed or "
                                                 "crashed; marked failed by rag-pipeline index")
            run = self.instance.get_run_by_id(run_id)
        report = RunReport(run_id, job_name, run.tags.get("dagster/partition", "-"),
                           run.status.value, seconds)
        self.reports.append(report)
        if run.status != dg.DagsterRunStatus.SUCCESS:
            report.error = first_error(self.instance, run_id)
            self.echo(f"  FAILED   {label}: {report.error}")
            raise IndexRunFailed(f"{label} failed (run {run_id[:8]}): {report.error}")
        self.echo(f"  done     {label} in {seconds:.1f} s")
        return report

    def _follow(self, pid: int, run_id: str) -> int:
        """Waits for the child, passing the run's events on; returns its wait status."""
        cursor: str | None = None
        read_at = time.monotonic()
        while True:
            self.checkpoint()
            done, status = os.waitpid(pid, os.WNOHANG)
            if done or time.monotonic() - read_at >= EVENTS_EVERY_SECONDS:
                run = self.instance.get_run_by_id(run_id)
                if run is not None:
                    cursor = read_run_events(self.instance, run, cursor, self.progress, self.log)
                read_at = time.monotonic()
            if done:
                return status
            time.sleep(POLL_SECONDS)

    def _stop(self, pid: int, run_id: str) -> None:
        """Kills the child and marks its run canceled (the command was told to stop)."""
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        run = self.instance.get_run_by_id(run_id)
        if run is not None and run.status not in ENDED:
            self.instance.report_run_canceled(run, f"rag-pipeline index (pid {os.getpid()}) "
                                                   "was told to stop")


def new_run_id() -> str:
    return str(uuid.uuid4())


def _exit_reason(status: int | None) -> str:
    if status is None:
        return "stopped"
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"


def run_index_locally(runs: LocalRuns, plan: Callable[[], Sequence[Step]],
                      run_config: Mapping | None = None) -> list[RunReport]:
    """Runs ``documents_job`` (with ``run_config``: the corpus's knobs), then every step of
    ``plan`` (the stale partitions, as the sensor reads them), planning again after each round,
    until nothing is due. A partition whose last run failed is retried (its run tagged
    ``rag_pipeline/retry``, and with its attempt at the same inputs) with a line saying so.

    Raises:
        IndexRunFailed: If a run failed, or a step is still due after its run succeeded.
    """
    failed = {(f.job, f.partition): f for f in failed_partitions(runs.instance, runs.defs)}
    runs.run(DOCUMENTS_JOB, run_config=run_config)
    succeeded: dict[str, RunReport] = {}
    while steps := plan():
        for step in steps:
            # The attempt at these inputs, as the sensor would tag it (2 after one failure).
            request = run_request(step, consecutive_failures(past_runs(runs.instance, step)) + 1)
            partition = str(request.partition_key)
            if step.key in succeeded:
                raise IndexRunFailed(
                    f"{request.job_name} [{partition}] is still due after its run "
                    f"{succeeded[step.key].run_id[:8]} succeeded: see the run in the Dagster UI")
            tags, run_id = dict(request.tags), new_run_id()
            retried = failed.pop((request.job_name, partition), None)
            if retried is not None:
                tags[RETRY_TAG] = "true"
                runs.echo(f"retrying {request.job_name} [{partition}] (run {run_id[:8]}), whose "
                          f"last run {retried.reason}")
            succeeded[step.key] = runs.run(request.job_name, request.partition_key, tags,
                                           run_id=run_id)
    return runs.reports
