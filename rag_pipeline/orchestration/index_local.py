"""``rag-pipeline index`` with no Dagster daemon running: the command runs the index's runs
itself, one after the other, in one worker process (:mod:`~rag_pipeline.orchestration.
index_worker`).

The worker is started as soon as the command knows its environment and loads the code
location while the command takes its lock and opens the instance; then it starts each run at
once, where a daemon would first start, load its code location, wait for the sensor's tick and
the run queue, and start a fresh run worker for each run (about 40 s of a first index of the
bundled corpus). The worker keeps what a run loaded for the next: the model is loaded once for
every partition and the evaluation. The runs are the runs the ``index_automation`` sensor would
request: the same jobs, partitions and tags (the plan step's inputs and attempt), recorded on
the same instance, so the Dagster UI shows them on the job pages and the sensor of a daemon
started later finds the index current and launches nothing.

The worker is the runs' process: its pid is in each run's engine events and
``rag_pipeline/pid`` tag, and it dies with the command (``PR_SET_PDEATHSIG``). When it is
killed, its run is marked failed and the command stops. A signal to the command (or to its
process group: the worker is in a session of its own) kills the worker and marks its run
canceled; ``kill -9`` of the command is seen by
:mod:`rag_pipeline.orchestration.index_guard`, which marks the runs canceled.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import dagster as dg

from rag_pipeline.core.embedding.models import ModelSpec
from rag_pipeline.core.index.plan import Stage, Step
from rag_pipeline.orchestration.automation import DOCUMENTS_JOB, past_runs, run_request
from rag_pipeline.orchestration.index_launch import (
    RETRY_TAG,
    RunReport,
    done_line,
    failed_partitions,
    read_run_events,
)
from rag_pipeline.orchestration.index_runs import IndexRunFailed, first_error
from rag_pipeline.orchestration.index_worker import RUNS_LOG, IndexWorker
from rag_pipeline.orchestration.retry_policy import consecutive_failures

__all__ = ["LocalRuns", "run_index_locally"]

POLL_SECONDS = 0.1
EVENTS_EVERY_SECONDS = 1.0
"""How often a running run's new events are read (its progress lines)."""
ENDED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}


class LocalRuns:
    """Runs the index's runs in an :class:`IndexWorker`, one after the other, and prints them
    as :func:`rag_pipeline.orchestration.index_launch.follow_runs` prints a daemon's runs."""

    def __init__(self, instance: dg.DagsterInstance, defs: dg.Definitions, worker: IndexWorker,
                 echo: Callable[[str], None], progress: Callable[[str], None] | None = None,
                 log: Callable[[str], None] | None = None,
                 checkpoint: Callable[[], None] = lambda: None) -> None:
        self.instance = instance
        self.defs = defs
        self.worker = worker
        self.echo = echo
        self.progress = progress
        self.log = log
        self.checkpoint = checkpoint
        self.reports: list[RunReport] = []

    def run(self, job_name: str, partition_key: str | dg.MultiPartitionKey | None = None,
            tags: Mapping[str, str] | None = None, run_config: Mapping | None = None,
            run_id: str | None = None, warm: Sequence[ModelSpec] = ()) -> RunReport:
        """Runs one run of ``job_name`` (with ``run_id``, default a new one) to its end;
        returns its report. The worker loads the models ``warm`` beside the run, for the runs
        after it.

        Raises:
            IndexRunFailed: If the run failed or the worker died.
            Stopped: If :attr:`checkpoint` raised (the worker is then killed and the run marked
                canceled).
        """
        label = f"{job_name} [{partition_key if partition_key is not None else '-'}]"
        run_id = run_id or new_run_id()
        self.checkpoint()
        worker = self.worker
        if worker.process.poll() is not None:
            raise IndexRunFailed(f"{label}: the runs' worker (pid {worker.pid}) "
                                 f"{_exit_reason(worker.process.returncode)} before it began")
        begun = time.monotonic()
        worker.send((job_name, partition_key, run_config, dict(tags or {}), run_id,
                     tuple(warm)))
        self.echo(f"  started  {label}")
        ended: str | None = None
        try:
            ended = self._follow(run_id)
        finally:
            if ended is None:
                self._stop(run_id)
        seconds = time.monotonic() - begun
        run = self.instance.get_run_by_id(run_id)
        if run is None:
            raise IndexRunFailed(f"{label}: the run never began (its process "
                                 f"{'failed' if ended == 'replied' else ended}): see "
                                 f"{Path(self.instance.root_directory) / RUNS_LOG}")
        if run.status not in ENDED:
            self.instance.report_run_failed(run, f"the run's process (pid {worker.pid}) "
                                                 f"{ended} before the run ended: marked failed "
                                                 "by rag-pipeline index")
            run = self.instance.get_run_by_id(run_id)
        report = RunReport(run_id, job_name, run.tags.get("dagster/partition", "-"),
                           run.status.value, seconds)
        self.reports.append(report)
        if run.status != dg.DagsterRunStatus.SUCCESS:
            report.error = first_error(self.instance, run_id)
            # The error is said once, by the command's last line (what IndexRunFailed says).
            self.echo(f"  FAILED   {label} (run {run_id[:8]})")
            raise IndexRunFailed(f"{label} failed (run {run_id[:8]}): {report.error}")
        self.echo(done_line(self.instance, run_id, label, seconds))
        return report

    def _follow(self, run_id: str) -> str:
        """Waits for the worker's reply, passing the run's events on; returns how the run's
        process ended it ("replied", or how the worker died)."""
        cursor: str | None = None
        run: dg.DagsterRun | None = None  # read until the worker has created it, then kept
        read_at = time.monotonic()
        replies, process = self.worker.replies, self.worker.process
        while True:
            self.checkpoint()
            ended = None
            if replies.poll(POLL_SECONDS):
                try:
                    replies.recv()
                    ended = "replied"
                except EOFError:
                    process.wait()
            if ended is None and process.poll() is not None:
                ended = _exit_reason(process.returncode)
            if ended is not None or time.monotonic() - read_at >= EVENTS_EVERY_SECONDS:
                if run is None:
                    run = self.instance.get_run_by_id(run_id)
                if run is not None:
                    cursor = read_run_events(self.instance, run, cursor, self.progress, self.log)
                read_at = time.monotonic()
            if ended is not None:
                return ended

    def _stop(self, run_id: str) -> None:
        """Kills the worker and marks its run canceled (the command was told to stop)."""
        self.worker.kill()
        run = self.instance.get_run_by_id(run_id)
        if run is not None and run.status not in ENDED:
            self.instance.report_run_canceled(run, f"rag-pipeline index (pid {os.getpid()}) "
                                                   "was told to stop")


def new_run_id() -> str:
    return str(uuid.uuid4())


def _exit_reason(returncode: int) -> str:
    if returncode < 0:
        return f"was killed by {signal.Signals(-returncode).name}"
    return f"exited with code {returncode}"


def run_index_locally(runs: LocalRuns, plan: Callable[[], Sequence[Step]],
                      run_config: Mapping | None = None,
                      models: Sequence[ModelSpec] = ()) -> list[RunReport]:
    """Runs ``documents_job`` (with ``run_config``: the corpus's knobs), then every step of
    ``plan`` (the stale partitions, as the sensor reads them), planning again after each round,
    until nothing is due. A partition whose last run failed is retried (its run tagged
    ``rag_pipeline/retry``, and with its attempt at the same inputs) with a line saying so.
    While a chunks run runs, the worker loads ``models`` (the build's), which the embeddings
    and evaluation runs after it embed with: the model load leaves their path.

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
            warm = models if step.stage is Stage.CHUNKS else ()
            succeeded[step.key] = runs.run(request.job_name, request.partition_key, tags,
                                           run_id=run_id, warm=warm)
    return runs.reports
