"""Tests for ``rag_pipeline.orchestration.index_launch``: a killed run is marked failed the next time the
project runs; the index counts as current only when every partition serves the latest state."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pytest

from rag_pipeline.core.index.generations import publish
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.orchestration.index_launch import (
    fail_dead_runs,
    index_is_current,
    launch_error,
    launch_run,
)
from rag_pipeline.orchestration.index_runs import IndexRunFailed
from rag_pipeline.orchestration.index_worker import RUNS_LOG
from rag_pipeline.project_paths import DAGSTER_HOME
from rag_pipeline_tests.conftest import TINY_DOCS, write_corpus
from rag_pipeline_tests.core.generation_fixtures import write_partition

KILLED_RUN = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    import dagster as dg
    import rag_pipeline.core.index.build as index_build
    from rag_pipeline.definitions import build_definitions
    from rag_pipeline_tests.index_runs import run_index

    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    index_build.extract_corpus = die
    instance = dg.DagsterInstance.local_temp(tempdir=sys.argv[1])
    run_index(build_definitions(data_dir=Path(sys.argv[2]), corpus_dir=Path(sys.argv[3])),
              instance, echo=lambda _: None, evaluate=False)
""")


def test_a_killed_run_is_marked_failed_the_next_time(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    corpus = write_corpus(tmp_path / "corpus", TINY_DOCS)
    result = subprocess.run([sys.executable, "-c", KILLED_RUN, str(home), str(tmp_path / "data"),
                             str(corpus)], env={**os.environ, "HF_HUB_OFFLINE": "1"},
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == -9, result.stderr[-2000:]
    instance = dg.DagsterInstance.local_temp(tempdir=str(home))
    (run,) = instance.get_runs()
    assert (run.job_name, run.status) == ("documents_job", dg.DagsterRunStatus.STARTED)
    said: list[str] = []
    assert fail_dead_runs(instance, said.append) == [run.run_id]
    assert instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.FAILURE
    assert said == [f"marked killed run {run.run_id[:8]} (documents_job) as failed"]
    # A second look finds nothing more to do.
    assert fail_dead_runs(instance, said.append) == []


def test_the_index_is_current_only_when_every_partition_serves_the_latest_state(tmp_path: Path):
    warehouse = Warehouse(tmp_path)
    model = "m@0000abcd"
    assert not index_is_current(warehouse, ["header"], [model], evaluate=False)
    versions = write_partition(warehouse, "header", model, 3)
    # Staged but not published: not current.
    assert not index_is_current(warehouse, ["header"], [model], evaluate=False)
    generation, _ = publish(warehouse, "header", model, versions)
    assert index_is_current(warehouse, ["header"], [model], evaluate=False)
    # The evaluation must have scored exactly the served generations.
    assert not index_is_current(warehouse, ["header"], [model])
    warehouse.write("eval_summary", pa.table({"x": [1]}), {"model": model},
                    inputs={"header": generation.id})
    assert index_is_current(warehouse, ["header"], [model])
    # New documents staged: not current until chunked, embedded and published again.
    write_partition(warehouse, "blind", model, 2, tag="b")
    assert not index_is_current(warehouse, ["header"], [model])


def test_a_queued_run_with_no_live_daemon_is_an_error_within_seconds(tmp_path: Path):
    import time

    from rag_pipeline.orchestration.index_launch import follow_runs
    from rag_pipeline.orchestration.index_runs import IndexRunFailed

    home = tmp_path / "home"
    home.mkdir()
    instance = dg.DagsterInstance.local_temp(tempdir=str(home))
    started = time.time() - 1
    # Planted: a run waiting for a daemon on an instance whose daemon is gone (QUEUED for 11
    # minutes in the issue, with the stopped daemon's heartbeat still fresh).
    run = instance.add_run(dg.DagsterRun(job_name="documents_job",
                                         status=dg.DagsterRunStatus.NOT_STARTED))
    began = time.monotonic()
    with pytest.raises(IndexRunFailed) as failed:
        follow_runs(instance, started, lambda: False, lambda _: None,
                    daemon_alive=lambda: False)
    assert time.monotonic() - began < 10
    assert str(failed.value) == (f"documents_job [-] (run {run.run_id[:8]}) is queued but no "
                                 "Dagster daemon is running on this instance to start it")


def test_the_documents_run_followed_is_one_in_progress_for_the_corpus_as_it_is(tmp_path: Path):
    """Found by a new user: with the daemon running, `index` right after an edit launched a
    second documents run beside the one corpus_watch had just launched, and `status` then said
    the edit changed nothing (the second run's reconciliation). Found by an attack on that fix:
    a run launched before a later edit was followed, and the later edit left out."""
    from rag_pipeline.orchestration.corpus_watch import FINGERPRINT_TAG
    from rag_pipeline.orchestration.index_launch import run_reading

    instance = dg.DagsterInstance.local_temp(tempdir=str(tmp_path))
    assert run_reading(instance, "documents_job", "now") is None
    for status in (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE,
                   dg.DagsterRunStatus.CANCELING):
        instance.add_run(dg.DagsterRun(job_name="documents_job", status=status,
                                       tags={FINGERPRINT_TAG: "now"}))
    instance.add_run(dg.DagsterRun(job_name="chunks_job", status=dg.DagsterRunStatus.STARTED,
                                   tags={FINGERPRINT_TAG: "now"}))
    assert run_reading(instance, "documents_job", "now") is None
    waiting = instance.add_run(dg.DagsterRun(  # waiting for the daemon
        job_name="documents_job", status=dg.DagsterRunStatus.NOT_STARTED,
        tags={"dagster/sensor_name": "corpus_watch", FINGERPRINT_TAG: "now"}))
    assert run_reading(instance, "documents_job", "now").dagster_run.run_id == waiting.run_id
    assert run_reading(instance, "documents_job", "after an edit") is None
    untagged = instance.add_run(dg.DagsterRun(job_name="documents_job",
                                              status=dg.DagsterRunStatus.STARTED))
    assert untagged.run_id != waiting.run_id
    assert run_reading(instance, "documents_job", "now") is None  # the newest is not for it


def test_a_run_canceled_while_followed_ends_the_command_saying_so(tmp_path: Path):
    """Found by an attack: a followed documents run terminated from the UI was reported as
    `1 runs, all succeeded`, with the previous run's counts, and the edit not indexed."""
    import time

    from rag_pipeline.orchestration.index_launch import follow_runs

    instance = dg.DagsterInstance.local_temp(tempdir=str(tmp_path))
    started = time.time() - 1
    run = instance.add_run(dg.DagsterRun(job_name="documents_job",
                                         status=dg.DagsterRunStatus.CANCELED))
    with pytest.raises(IndexRunFailed) as failed:
        follow_runs(instance, started, lambda: True, lambda _: None)
    assert str(failed.value).startswith(f"documents_job [-] was canceled (run {run.run_id[:8]}): ")


def test_a_run_canceled_then_rebuilt_by_a_later_run_does_not_fail_the_command(tmp_path: Path):
    """Found by a new operator: an embeddings run terminated in the UI, then rebuilt by the
    sensor's retry while `index` followed, still ended the command with exit 2 "was canceled"."""
    import time

    from rag_pipeline.orchestration.index_launch import follow_runs

    instance = dg.DagsterInstance.local_temp(tempdir=str(tmp_path))
    started = time.time() - 1
    tags = {"dagster/partition": "header|m@1"}
    instance.add_run(dg.DagsterRun(job_name="embeddings_job", tags=tags,
                                   status=dg.DagsterRunStatus.CANCELED))
    time.sleep(0.05)
    retry = instance.add_run(dg.DagsterRun(job_name="embeddings_job", tags=tags,
                                           status=dg.DagsterRunStatus.SUCCESS))
    lines: list[str] = []
    reports = follow_runs(instance, started, lambda: True, lines.append)
    assert [r.status for r in reports] == ["CANCELED", "SUCCESS"]
    assert lines[0].startswith("  CANCELED embeddings_job [header|m@1]: ")
    assert reports[1].run_id == retry.run_id
    # A later run of another partition rebuilds nothing of this one.
    other = instance.add_run(dg.DagsterRun(job_name="embeddings_job", tags={"dagster/partition": "x"},
                                           status=dg.DagsterRunStatus.CANCELED))
    time.sleep(0.05)
    instance.add_run(dg.DagsterRun(job_name="embeddings_job", tags=tags,
                                   status=dg.DagsterRunStatus.SUCCESS))
    with pytest.raises(IndexRunFailed, match=f"was canceled \\(run {other.run_id[:8]}\\)"):
        follow_runs(instance, started, lambda: True, lambda _: None)


def test_a_failed_launch_names_the_exception_line_not_the_traceback_markers():
    output = textwrap.dedent("""\
        Traceback (most recent call last):
          File "/venv/bin/dagster", line 8, in <module>
            sys.exit(main())
                     ^^^^^^
        sqlite3.OperationalError: database is locked

        The above exception was the direct cause of the following exception:

        Traceback (most recent call last):
          File "/venv/lib/dagster/_core/storage/runs/sql_run_storage.py", line 210, in add_run
            conn.execute(runs_insert)
        ^^^^^^^^^^^
        """)
    assert launch_error(output) == "sqlite3.OperationalError: database is locked"
    assert launch_error("Usage: dagster job launch [OPTIONS]\n\nError: Job \"x\" not found.\n") == (
        'Error: Job "x" not found.')
    assert launch_error("   \n^^^\n") == "no output"


@pytest.mark.slow
def test_a_failed_launch_keeps_the_whole_output_in_the_runs_log(tmp_path: Path):
    shutil.copy(DAGSTER_HOME / "dagster.yaml", tmp_path / "dagster.yaml")
    with pytest.raises(IndexRunFailed) as raised:
        launch_run("no_such_job", {**os.environ, "DAGSTER_HOME": str(tmp_path)})
    log = tmp_path / RUNS_LOG
    assert str(raised.value) == (
        'could not launch no_such_job: Error: Job "no_such_job" not found in repository '
        "\"__repository__\". Found ['__ASSET_JOB', 'chunks_job', 'documents_job', "
        f"'embeddings_job', 'eval_job'] instead. (its whole output: {log})")
    assert log.read_text(encoding="utf-8").startswith(
        "`dagster job launch -j no_such_job` exited with code 2:\nUsage: dagster job launch")
