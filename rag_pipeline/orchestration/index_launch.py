"""``rag-pipeline index`` with a Dagster daemon running (``make dev``): runs launched through
the project's code location on the project's instance, carried down the index by the
``index_automation`` sensor, as the UI does it.

The command launches one ``documents_job`` run (``dagster job launch -w workspace.yaml``), then
follows the runs the sensor launches until the index is current: every declared chunker x model
serves a generation built from the latest documents, and every model's evaluation scored those
generations. It uses the daemon's run queue, so it never races the sensor into duplicate runs.
With no daemon running, the command runs the same runs itself
(:mod:`rag_pipeline.orchestration.index_local`). Either way the runs show on the job pages and
the timeline like any UI run. What both share lives here: the failed partitions to retry, a
killed run marked failed, "is the index current", a run's events read for its progress.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg

from rag_pipeline.core.index.plan import index_plan
from rag_pipeline.core.runtime.processes import pid_alive
from rag_pipeline.core.storage.table_names import DOCUMENTS
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.orchestration.automation import (
    CHUNKS_JOB,
    EMBEDDINGS_JOB,
    EVAL_JOB,
    SENSOR_INTERVAL_SECONDS,
)
from rag_pipeline.orchestration.daemon_processes import daemon_pids
from rag_pipeline.orchestration.index_runs import IndexRunFailed, first_error, vectors_done
from rag_pipeline.orchestration.index_worker import RUNS_LOG
from rag_pipeline.orchestration.run_tags import PID_TAG, REQUEST_TAG
from rag_pipeline.project_paths import PROJECT_ROOT

WORKSPACE = PROJECT_ROOT / "workspace.yaml"
RETRY_TAG = "rag_pipeline/retry"
HEARTBEAT_MAX_AGE_SECONDS = 45.0
REAP_SECONDS = 5.0
QUEUED_WITHOUT_DAEMON_SECONDS = 3.0
STALL_SECONDS = 6 * SENSOR_INTERVAL_SECONDS + 30
ACTIVE = {dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED,
          dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED,
          dg.DagsterRunStatus.CANCELING}
WAITING = {dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED}
"""A run in these states starts only when a daemon dequeues it."""
MODEL_PARTITION_TAG = "dagster/partition/model"
_PROGRESS = re.compile(r"embedded (\d+)/(\d+) texts")


def _bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def daemon_running(instance: dg.DagsterInstance, home: Path | None = None) -> bool:
    """A ``dagster-daemon`` of this machine runs on this instance (``DAGSTER_HOME`` = ``home``,
    default the instance's folder) and wrote a heartbeat in the last
    ``HEARTBEAT_MAX_AGE_SECONDS``. A heartbeat alone is never trusted: a stopped daemon's last
    one stays fresh for a while."""
    now = time.time()
    fresh = any(now - beat.timestamp < HEARTBEAT_MAX_AGE_SECONDS
                for beat in instance.get_daemon_heartbeats().values())
    return fresh and bool(daemon_pids(home or Path(instance.root_directory)))


def run_worker_pid(instance: dg.DagsterInstance, run_id: str) -> int | None:
    """The pid a run's worker reported ("Started process for run (pid: N)"), if any."""
    records = instance.get_records_for_run(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT).records
    for record in records:
        event = record.event_log_entry.dagster_event
        metadata = getattr(event.event_specific_data, "metadata", None) or {}
        pid = metadata.get("pid")
        if pid is not None:
            return int(getattr(pid, "value", pid))
    return None


def fail_dead_runs(instance: dg.DagsterInstance, echo: Callable[[str], None]) -> list[str]:
    """Marks failed every started run whose process on this machine is gone (killed): the run
    worker's reported pid, or the pid an in-process run was tagged with."""
    failed = []
    started = instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
    for run in started:
        pid = run_worker_pid(instance, run.run_id)
        if pid is None and run.tags.get(PID_TAG, "").isdigit():
            pid = int(run.tags[PID_TAG])
        if pid is not None and not pid_alive(pid):
            instance.report_run_failed(run, f"the run's process (pid {pid}) is gone: it was "
                                            "killed or crashed; marked failed by rag-pipeline index")
            echo(f"marked killed run {run.run_id[:8]} ({run.job_name}) as failed")
            failed.append(run.run_id)
    return failed


EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b")


def run_reading(instance: dg.DagsterInstance, job: str, fingerprint: str) -> dg.RunRecord | None:
    """The newest run of ``job`` queued or running, if it was launched for the corpus as it is
    now (its ``corpus_fingerprint`` tag is ``fingerprint``): with a daemon, one the
    ``corpus_watch`` sensor launched for an edit before ``rag-pipeline index`` took the
    instance's lock, which the command then follows instead of launching a second. A run
    launched for an earlier state of the corpus (a file edited since) is not: it may have read
    the file before the edit."""
    from rag_pipeline.orchestration.corpus_watch import FINGERPRINT_TAG

    records = instance.get_run_records(filters=dg.RunsFilter(
        job_name=job, statuses=sorted(ACTIVE - {dg.DagsterRunStatus.CANCELING}, key=str)), limit=1)
    if records and records[0].dagster_run.tags.get(FINGERPRINT_TAG) == fingerprint:
        return records[0]
    return None


def launch_error(output: str) -> str:
    """The line of a failed command's output that says what went wrong: the last exception line
    of a traceback (its other last lines are a frame's source or ``^^^`` markers), else the
    last line with a word in it."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in reversed(lines):
        if EXCEPTION_LINE.match(line):
            return line
    worded = [line for line in lines if re.search(r"[A-Za-z]", line)]
    return worded[-1] if worded else "no output"


def launch_run(job: str, env: Mapping[str, str], run_config: Mapping | None = None,
               tags: Mapping[str, str] | None = None) -> str:
    """Launches one run through the code location (``dagster job launch``); returns its id."""
    request = uuid.uuid4().hex
    command = [_bin("dagster"), "job", "launch", "-w", str(WORKSPACE), "-j", job,
               "--tags", json.dumps({**(tags or {}), REQUEST_TAG: request})]
    if run_config:
        command += ["--config-json", json.dumps(run_config)]
    result = subprocess.run(command, cwd=PROJECT_ROOT, env=dict(env), capture_output=True,
                            text=True, timeout=600)
    home = env.get("DAGSTER_HOME")
    if result.returncode != 0:
        output = result.stderr or result.stdout
        where = ""
        if home:
            log = Path(home) / RUNS_LOG
            with log.open("a", encoding="utf-8") as handle:
                handle.write(f"`dagster job launch -j {job}` exited with code "
                             f"{result.returncode}:\n{output}\n")
            where = f" (its whole output: {log})"
        raise IndexRunFailed(f"could not launch {job}: {launch_error(output)}{where}")
    with (dg.DagsterInstance.from_config(home) if home else dg.DagsterInstance.get()) as instance:
        runs = instance.get_runs(filters=dg.RunsFilter(tags={REQUEST_TAG: request}))
    if not runs:
        raise IndexRunFailed(f"{job} was launched but no run carries request {request}")
    return runs[0].run_id


@dataclass(frozen=True)
class FailedPartition:
    """A partition whose last run failed (or was killed or canceled) and has not succeeded
    since: the job that builds it, its key and tags, and why the run failed."""

    job: str
    partition: str
    tags: dict[str, str]
    reason: str


RETRY_JOBS = (CHUNKS_JOB, EMBEDDINGS_JOB, EVAL_JOB)
"""The partitioned jobs, in the order the index runs them."""


def failed_partitions(instance: dg.DagsterInstance,
                      defs: dg.Definitions) -> list[FailedPartition]:
    """Every partition of the index whose latest run (the sensor's or a job's) failed or was
    canceled, in stage order. (Dagster's own partition status counts a canceled run as never
    attempted, so the runs are read instead.)"""
    found = []
    for job_name in RETRY_JOBS:
        partitions_def = defs.resolve_job_def(job_name).partitions_def
        for key in map(str, partitions_def.get_partition_keys()):
            runs = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/partition": key}),
                                     limit=1)
            if not runs or runs[0].status not in (dg.DagsterRunStatus.FAILURE,
                                                  dg.DagsterRunStatus.CANCELED):
                continue
            run = runs[0]
            ended = "failed" if run.status == dg.DagsterRunStatus.FAILURE else "was canceled"
            reason = f"{ended} (run {run.run_id[:8]}): {first_error(instance, run.run_id)}"
            tags = {k: str(v) for k, v in partitions_def.get_tags_for_partition_key(key).items()}
            found.append(FailedPartition(job_name, key, tags, reason))
    return found


def retry_failed(instance: dg.DagsterInstance, defs: dg.Definitions, env: Mapping[str, str],
                 echo: Callable[[str], None]) -> list[str]:
    """Launches each failed partition's job (the run reuses every checkpointed vector) unless a
    run of that partition is already waiting or running; returns the launched run ids. Called
    before the daemon starts, so the sensor's first tick finds them queued (in progress) and
    does not request them a second time."""
    launched = []
    for failed in failed_partitions(instance, defs):
        busy = instance.get_runs(filters=dg.RunsFilter(
            tags={"dagster/partition": failed.partition}, statuses=list(ACTIVE)), limit=1)
        if busy:
            continue
        run_id = launch_run(failed.job, env, tags={**failed.tags, RETRY_TAG: "true"})
        echo(f"retrying {failed.job} [{failed.partition}] (run {run_id[:8]}), whose last run "
             f"{failed.reason}")
        launched.append(run_id)
    return launched


def index_is_current(warehouse: Warehouse, chunkers: Sequence[str], models: Sequence[str],
                     evaluate: bool = True, rules: str | None = None,
                     eval_sets: Mapping[str, str] | None = None) -> bool:
    """The documents are written and nothing is due (:func:`rag_pipeline.core.index.plan.index_plan`):
    every chunker x model serves the latest version of each of its generation's tables, none
    built from an input that has moved on nor labelled by other ``[access]`` rules than
    ``rules`` (their digest; None: none declared), and each model's evaluation scored those
    generations (and the gold and out-of-domain files of ``eval_sets``)."""
    return warehouse.version(DOCUMENTS) is not None and not index_plan(
        warehouse, chunkers, models, evaluate, rules, eval_sets)


@dataclass
class RunReport:
    run_id: str
    job: str
    partition: str
    status: str
    seconds: float | None
    error: str | None = None


def done_line(instance: dg.DagsterInstance, run_id: str, label: str, seconds: float) -> str:
    """``  done     <label> in 2.1 s``, and an embeddings run's counts after it (``: embedded
    1, reused 365, shared 0, duplicates 0, removed 1``: what an edit cost)."""
    vectors = vectors_done(instance, run_id)
    return f"  done     {label} in {seconds:.1f} s" + (f": {vectors}" if vectors else "")


def _label(run: dg.DagsterRun) -> str:
    return f"{run.job_name} [{run.tags.get('dagster/partition', '-')}]"


def read_run_events(instance: dg.DagsterInstance, run: dg.DagsterRun, cursor: str | None,
                    progress: Callable[[str], None] | None = None,
                    log: Callable[[str], None] | None = None) -> str | None:
    """Passes on what ``run`` logged after ``cursor``: every line to ``log``, an embedding
    run's progress ("<job> [<partition>] done/total") to ``progress``; returns the new cursor.
    Reads nothing when neither wants it (only embedding runs have progress: the sensor's
    asset-job runs too, known by their model partition)."""
    if log is None and (progress is None or MODEL_PARTITION_TAG not in run.tags):
        return cursor
    connection = instance.get_records_for_run(run.run_id, cursor=cursor)
    for entry in (r.event_log_entry for r in connection.records):
        if log is not None:
            log(f"    {run.run_id[:8]} {entry.user_message or ''}".rstrip())
        match = _PROGRESS.search(entry.user_message or "")
        if progress is not None and entry.dagster_event is None and match:
            progress(f"{_label(run)} {match.group(1)}/{match.group(2)}")
    return connection.cursor


def _succeeded_later(record: dg.RunRecord, records: list[dg.RunRecord]) -> bool:
    """Whether a run of the same job and partition created after ``record``'s succeeded (the
    sensor's retry of a run terminated in the UI): its failure no longer fails the command."""
    run = record.dagster_run
    same = (run.job_name, run.tags.get("dagster/partition"))
    return any(r.dagster_run.status == dg.DagsterRunStatus.SUCCESS
               and r.create_timestamp > record.create_timestamp
               and (r.dagster_run.job_name, r.dagster_run.tags.get("dagster/partition")) == same
               for r in records)


def follow_runs(instance: dg.DagsterInstance, since: float, is_current: Callable[[], bool],
                echo: Callable[[str], None], progress: Callable[[str], None] | None = None,
                log: Callable[[str], None] | None = None,
                stall_seconds: float = STALL_SECONDS,
                daemon_alive: Callable[[], bool] | None = None,
                checkpoint: Callable[[], None] | None = None) -> list[RunReport]:
    """Prints each run created since ``since`` as it starts and ends, with embedding progress
    (and, with ``log``, every line the runs log), until nothing is queued or running and the
    index is current. Every ``REAP_SECONDS`` a run whose worker process is gone is marked
    failed. Raises on a failed or canceled run (unless a later run of its job and partition
    succeeded while it was followed), and when a run is queued while ``daemon_alive``
    says no daemon is there to start it. ``checkpoint`` is called once a poll (it raises to
    stop following)."""
    reported: dict[str, dg.DagsterRunStatus] = {}
    cursors: dict[str, str | None] = {}
    reports: dict[str, RunReport] = {}
    idle_since: float | None = None
    created_after = datetime.fromtimestamp(since, UTC)
    last_reap = time.monotonic()
    while True:
        if checkpoint is not None:
            checkpoint()
        if time.monotonic() - last_reap > REAP_SECONDS:
            # A run whose worker was killed never reports its own end.
            fail_dead_runs(instance, echo)
            last_reap = time.monotonic()
        records = sorted(instance.get_run_records(
            filters=dg.RunsFilter(created_after=created_after)), key=lambda r: r.create_timestamp)
        for record in records:
            run = record.dagster_run
            if reported.get(run.run_id) != run.status:
                reported[run.run_id] = run.status
                seconds = (record.end_time - record.start_time) \
                    if record.end_time and record.start_time else None
                report = RunReport(run.run_id, run.job_name,
                                   run.tags.get("dagster/partition", "-"), run.status.value,
                                   seconds)
                reports[run.run_id] = report
                if run.status == dg.DagsterRunStatus.STARTED:
                    echo(f"  started  {_label(run)}")
                elif run.status == dg.DagsterRunStatus.SUCCESS:
                    echo(done_line(instance, run.run_id, _label(run), seconds or 0))
                elif run.status in (dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED):
                    report.error = first_error(instance, run.run_id)
                    ended = "FAILED  " if run.status == dg.DagsterRunStatus.FAILURE else "CANCELED"
                    echo(f"  {ended} {_label(run)}: {report.error}")
            if run.status == dg.DagsterRunStatus.STARTED or run.run_id in cursors:
                cursor = read_run_events(instance, run, cursors.get(run.run_id), progress, log)
                # A finished run is read one last time, then no more.
                if run.status in ACTIVE:
                    cursors[run.run_id] = cursor
                else:
                    cursors.pop(run.run_id, None)
        active = [r for r in records if r.dagster_run.status in ACTIVE]
        failed = [reports[r.dagster_run.run_id] for r in records
                  if r.dagster_run.status in (dg.DagsterRunStatus.FAILURE,
                                              dg.DagsterRunStatus.CANCELED)
                  and not _succeeded_later(r, records)]
        queued = [r for r in records if r.dagster_run.status in WAITING]
        if queued and daemon_alive is not None and not daemon_alive():
            time.sleep(QUEUED_WITHOUT_DAEMON_SECONDS)  # a daemon that just dequeued it
            if not daemon_alive() and instance.get_run_by_id(
                    queued[0].dagster_run.run_id).status in WAITING:
                run = queued[0].dagster_run
                raise IndexRunFailed(f"{_label(run)} (run {run.run_id[:8]}) is queued but no "
                                     "Dagster daemon is running on this instance to start it")
        if not active:
            if failed:
                first = failed[0]
                ended = "was canceled" if first.status == dg.DagsterRunStatus.CANCELED.value \
                    else "failed"
                raise IndexRunFailed(f"{first.job} [{first.partition}] {ended} (run "
                                     f"{first.run_id[:8]}): {first.error}")
            if is_current():
                return list(reports.values())
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since > stall_seconds:
                raise IndexRunFailed(
                    "nothing is running, but the index is not current: is the index_automation "
                    "sensor stopped? Start it in the Dagster UI (Automation) and run again")
        else:
            idle_since = None
        time.sleep(1.0)
