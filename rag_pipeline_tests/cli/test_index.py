"""``rag-pipeline index`` in a real process on a project of its own."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable

import dagster as dg
import pytest

from rag_pipeline.core.config.init_file import reference_config
from rag_pipeline.orchestration.index_launch import ACTIVE
from rag_pipeline.orchestration.run_tags import PID_TAG
from rag_pipeline.project_paths import ENV_DATA_DIR, ENV_EVAL_DIR, PROJECT_ROOT
from rag_pipeline_tests.cli.invoke import one_line_failure
from rag_pipeline_tests.conftest import DagsterProject, processes_on_home

CLI = [sys.executable, "-c", "from rag_pipeline.cli import main; main()"]


def test_a_dagster_home_that_is_a_file_is_one_line_naming_it_before_any_work(
        tmp_path, monkeypatch: pytest.MonkeyPatch):
    # Planted: DAGSTER_HOME names a file (FileExistsError, naming nothing, after the lock and
    # the definitions were written).
    home = tmp_path / "dagster_home"
    home.write_text("not a folder\n")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    assert one_line_failure("--data-dir", str(tmp_path / "data"), "index") == (
        2, f"error: DAGSTER_HOME={str(home)!r} is not a folder: it must name the Dagster home "
           "folder (unset it for the project's own)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dagster_home"]


HOLD_LOCK = """
import sys, time
from pathlib import Path
from rag_pipeline.core.runtime.processes import exclusive_lock
with exclusive_lock(Path(sys.argv[1]), "rag-pipeline index"):
    print("held", flush=True)
    time.sleep(600)
"""


def test_a_second_index_on_one_data_folder_from_another_dagster_home_refuses(
        tmp_path, monkeypatch: pytest.MonkeyPatch):
    # Found by an operator: two `index` on one data folder with two Dagster homes both ran
    # (the lock was the home's alone), publishing and collecting the garbage of one warehouse.
    data = tmp_path / "data"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(data / "rag-pipeline-index.lock")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        home = tmp_path / "other_home"
        home.mkdir()
        env = {**os.environ, "DAGSTER_HOME": str(home), ENV_DATA_DIR: str(data)}
        refused = subprocess.run([*CLI, "index"], cwd=PROJECT_ROOT, env=env, text=True,
                                 capture_output=True, timeout=300)
        prefix = (f"error: another `rag-pipeline index` is running on this data folder, with "
                  f"another Dagster home (pid {holder.pid}, started ")
        last = refused.stderr.splitlines()[-1]
        assert (refused.returncode, last[:len(prefix)], last.endswith(": wait for it to finish or stop it")
                ) == (2, prefix, True)
        assert processes_on_home(home) == []
        assert sorted(p.name for p in data.iterdir()) == ["rag-pipeline-index.lock"]
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("command", [["index"], ["eval"]])
def test_an_eval_folder_variable_naming_no_folder_fails_before_any_work(
        tmp_path, monkeypatch: pytest.MonkeyPatch, command: list[str]):
    # Planted: RAG_PIPELINE_EVAL_DIR names a folder that does not exist: `index` failed after
    # building everything, and `eval` read the bundled gold set instead.
    missing = tmp_path / "no-such-eval"
    monkeypatch.setenv(ENV_EVAL_DIR, str(missing))
    assert one_line_failure("--data-dir", str(tmp_path / "data"), *command) == (
        2, f"error: {ENV_EVAL_DIR}={str(missing)!r} does not exist: it must name the folder of "
           "gold.jsonl and ood.jsonl (unset it for the bundled corpus's)")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_data_folder_whose_path_holds_glob_query_and_control_characters_indexes(
        dagster_project: Callable[[str, str], DagsterProject]):
    # "?" made DuckDB write rag.duckdb's WAL under ".../g [1]*.wal?#%..." (it reads "?" as the
    # start of a query string) and the documents job failed; "[", "*" are glob characters,
    # "#", "%" URL ones, and the newline a character a Linux folder name may hold.
    project = dagster_project("odd-path", reference_config(["header"]))
    data = project.root / "g [1]*?#% x\nnext"
    env = {**project.env, ENV_DATA_DIR: str(data)}
    index = subprocess.run([*CLI, "index", "--no-eval"], cwd=PROJECT_ROOT, env=env,
                           capture_output=True, text=True, timeout=1200)
    assert index.returncode == 0, index.stdout[-3000:] + index.stderr[-3000:]
    ask = subprocess.run([*CLI, "ask", "--json", "How long does a network call wait?"],
                         cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert ask.returncode == 0, ask.stdout[-3000:] + ask.stderr[-3000:]
    assert '"guide/config.md' in ask.stdout
    # Everything the index wrote is in the odd folder, but the model cache, which lives with the
    # configuration (`model_cache = "data/models"`): the fp32 model's ONNX export for indexing.
    assert sorted(p.name for p in project.root.iterdir()) == [
        "corpus", "dagster_home", "data", "eval", "g [1]*?#% x\nnext", "rag_pipeline.lock.json",
        "rag_pipeline.toml"]
    assert [p.name for p in (project.root / "data").iterdir()] == ["models"]


def test_an_index_started_with_its_stdout_closed_builds_and_ends_0(
        dagster_project: Callable[[str, str], DagsterProject]):
    # Planted: `>&-`. The worker's request pipe took descriptor 1, which the worker's own
    # stdout (the runs log) then replaced in it: the first run's request met a broken pipe.
    project = dagster_project("closed-stdout", reference_config(["header"]))
    index = subprocess.run(["bash", "-c", f"{sys.executable} -m rag_pipeline.cli index "
                                          "--no-eval >&-"],
                           cwd=PROJECT_ROOT, env=project.env, capture_output=True, text=True,
                           timeout=1200)
    assert (index.returncode, index.stdout) == (0, ""), index.stderr[-3000:]
    status = subprocess.run([*CLI, "status"], cwd=PROJECT_ROOT, env=project.env,
                            capture_output=True, text=True, timeout=600)
    assert status.returncode == 0 and "behind" not in status.stdout, status.stdout


_SIGNAL_AT = r"""
import os, signal, sys
import dagster as dg
from rag_pipeline.orchestration import index_launch, index_local

phase, signum = sys.argv[1], int(sys.argv[2])
command = os.getpid()
followed = []

def signal_command():
    os.kill(command, signum)

if phase == "dead_runs":
    original = index_launch.fail_dead_runs
    def fail_dead_runs(*args, **kwargs):
        signal_command()
        return original(*args, **kwargs)
    index_launch.fail_dead_runs = fail_dead_runs
elif phase == "connection_close":
    # Inside sqlalchemy's close of a connection of the instance's storage (the command opens
    # and closes them while it follows its runs), which logs and drops any Exception raised
    # there: a handler that raised was lost there and the command ran on to exit 0.
    from sqlalchemy.engine.default import DefaultDialect
    original_follow = index_local.LocalRuns._follow
    def _follow(self, run_id):
        followed.append(True)
        return original_follow(self, run_id)
    index_local.LocalRuns._follow = _follow
    original_close = DefaultDialect.do_close
    def do_close(self, connection):
        if followed and os.getpid() == command:
            followed.clear()
            signal_command()
        return original_close(self, connection)
    DefaultDialect.do_close = do_close
elif phase == "instance_close":
    original_run = index_local.run_index_locally
    def run_index_locally(*args, **kwargs):
        reports = original_run(*args, **kwargs)
        followed.append(True)
        return reports
    index_local.run_index_locally = run_index_locally
    original_dispose = dg.DagsterInstance.dispose
    def dispose(self):
        if followed:
            followed.clear()
            signal_command()
        return original_dispose(self)
    dg.DagsterInstance.dispose = dispose
elif phase == "summary":
    # While the command prints its summary (a DuckDB query of each table's rows): every run
    # succeeded, and a signal there ended it with no word, once with "Query interrupted".
    from rag_pipeline.core.index import status
    original_counts = status.row_counts
    def row_counts(*args, **kwargs):
        signal_command()
        return original_counts(*args, **kwargs)
    status.row_counts = row_counts
from rag_pipeline.cli import main
main(["index", "--no-eval"])
"""


HOLD = PROJECT_ROOT / "rag_pipeline_tests" / "planted_hold"
"""The planted step that waits for a release (its ``sitecustomize``): armed, the embeddings
step of the runs' worker waits there, so a signal lands while a run is in progress."""


@pytest.mark.slow
@pytest.mark.parametrize(("phase", "signum"), [
    ("dead_runs", signal.SIGTERM),
    ("local_run", signal.SIGINT),
    ("terminal", signal.SIGINT),
    ("terminal", signal.SIGHUP),
    ("summary", signal.SIGINT),
    ("connection_close", signal.SIGTERM),
    ("instance_close", signal.SIGTERM),
])
def test_a_signal_at_any_phase_ends_index_with_128_plus_the_signal_and_no_traceback(
        dagster_project: Callable[[str, str], DagsterProject], phase: str, signum: int):
    # The signal is sent to the command at an observed point: while it marks dead runs (before
    # anything started), while the embeddings run waits at the planted hold in the runs' worker
    # (the command runs the runs itself: no daemon runs), to the command's process group then
    # (a Ctrl-C: the worker must not take it as its own interrupt and fail the run), inside a
    # storage connection's close while the command follows a run, and inside the Dagster
    # instance's close after every run succeeded. The command leads a process group of its
    # own, as a shell's foreground job does.
    project = dagster_project(f"signal-{phase}", reference_config(["header"]))
    held = phase in ("local_run", "terminal")
    env = project.env
    if held:
        hold = project.root / "hold"
        hold.mkdir()
        (hold / "armed").touch()
        env = {**env, "RAG_TEST_HOLD_DIR": str(hold),
               "PYTHONPATH": os.pathsep.join([str(HOLD), env["PYTHONPATH"]])}
    command = subprocess.Popen([sys.executable, "-c", _SIGNAL_AT, phase, str(int(signum))],
                               cwd=PROJECT_ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    if held:
        deadline = time.monotonic() + 900
        while not any(hold.glob("held-*")):
            assert time.monotonic() < deadline and command.poll() is None, "never held"
            time.sleep(0.2)
        if phase == "terminal":
            os.killpg(command.pid, signum)
        else:
            os.kill(command.pid, signum)
    stdout, stderr = command.communicate(timeout=1200)
    name = signal.Signals(signum).name
    assert command.returncode == 128 + signum, stdout[-3000:] + stderr[-3000:]
    assert "Traceback" not in stderr and "Exception" not in stderr, stderr
    said = stderr.strip().splitlines()[-1]
    if phase == "summary":
        assert said == (f"stopped by {name}: every run of this index had succeeded and what it "
                        "built is served; only its summary was cut short (`rag-pipeline status` "
                        "prints the index)")
    elif phase == "instance_close":
        # Found by an operator's late Ctrl-C: every run had succeeded, the embeddings run had
        # published, and the command said "the published index is as it was".
        assert re.fullmatch(
            rf"stopped by {name}: the runs of this index are stopped and marked canceled; it had "
            r"published header x all-MiniLM-L6-v2@[0-9a-f]{8} \(generation \S+\) before the "
            r"stop, which is served now; the rest of the published index is as it was", said), said
    else:
        assert said == (f"stopped by {name}: the runs of this index are stopped and marked "
                        "canceled; the published index is as it was")
    local = (f"no Dagster daemon runs on {project.home}: this command runs the index's runs "
             f"itself (what they print: {project.home / 'rag-pipeline-runs.log'})")
    assert (local in stdout.splitlines()) == (phase != "dead_runs")
    # The summary after the instance's close is never printed: the command stopped there.
    assert ("runs, all succeeded" in stdout) == (phase == "summary")
    assert ("  done     embeddings_job" in stdout) == (phase in ("instance_close", "summary"))
    with dg.DagsterInstance.local_temp(tempdir=str(project.home)) as instance:
        runs = list(reversed(instance.get_runs()))
        assert [r for r in runs if r.status in ACTIVE] == []
        if held:
            # The run in progress was killed with the worker and marked canceled.
            assert [(r.job_name, r.status) for r in runs] == [
                ("documents_job", dg.DagsterRunStatus.SUCCESS),
                ("chunks_job", dg.DagsterRunStatus.SUCCESS),
                ("embeddings_job", dg.DagsterRunStatus.CANCELED)]
    deadline = time.monotonic() + 90
    while processes_on_home(project.home):
        assert time.monotonic() < deadline, processes_on_home(project.home)
        time.sleep(0.2)


@pytest.mark.slow
def test_a_rule_edit_relabels_in_a_new_generation_with_byte_identical_vectors(
        dagster_project: Callable[[str, str], DagsterProject]):
    import duckdb

    from rag_pipeline.core.index.generations import current_generations
    from rag_pipeline.core.storage.warehouse import Warehouse

    rules = '\n[access]\nrules = [\n  {{ glob = "guide/**", readers = ["eng"] }},\n{notes}]\n'
    project = dagster_project("access-edit", reference_config(["header"]) + rules.format(notes=""))
    config, warehouse = project.root / "rag_pipeline.toml", Warehouse(project.root / "data")

    def index() -> str:
        done = subprocess.run([*CLI, "index", "--no-eval"], cwd=PROJECT_ROOT, env=project.env,
                              capture_output=True, text=True, timeout=1200)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return done.stdout

    def readers() -> dict[str, tuple[str, ...]]:
        with duckdb.connect(str(warehouse.db_path), read_only=True) as con:
            return {d: tuple(r) for d, r in con.execute(
                "select distinct document_id, readers from access").fetchall()}

    index()
    (before,) = current_generations(warehouse)
    vectors = open(warehouse.full_path(before.files["embeddings"]), "rb").read()
    assert readers() == {"guide/config.md": ("eng",), "guide/install.md": ("eng",),
                         "notes.txt": ()}
    config.write_text(reference_config(["header"]) + rules.format(
        notes='  { glob = "notes.txt", readers = ["staff"] },\n'
              '  { glob = "guide/retired.md", readers = ["eng"] },\n'), encoding="utf-8")
    status = subprocess.run([*CLI, "status"], cwd=PROJECT_ROOT, env=project.env,
                            capture_output=True, text=True, timeout=600).stdout
    assert "  the served `access` table of header labels other rules (or none): " in status
    # A glob naming no document is said by `index` itself (found by an operator's upgrade: a
    # rule naming a renamed attachment widened its readers, said only by `status`), in the
    # words `status` says it with.
    from rag_pipeline.core.index.access_table import UNMATCHED_GLOB

    unmatched = f"warning: {UNMATCHED_GLOB.format(glob='guide/retired.md')}"
    assert f"  {unmatched}" in status.splitlines()
    assert unmatched in index().splitlines()
    (after,) = current_generations(warehouse)
    assert after.id != before.id
    assert {t for t in after.files if after.files[t] != before.files[t]} == {"access"}
    assert open(warehouse.full_path(after.files["embeddings"]), "rb").read() == vectors
    assert readers() == {"guide/config.md": ("eng",), "guide/install.md": ("eng",),
                         "notes.txt": ("staff",)}


def test_progress_in_a_log_prints_every_quarter_and_every_half_minute_while_it_moves(capsys):
    from rag_pipeline.cli.index import _Progress

    now = [0.0]
    progress = _Progress(clock=lambda: now[0], tty=False)
    for seconds, done in [(0, 256), (20, 512), (31, 768), (40, 768), (75, 768), (80, 2400),
                          (90, 2500), (200, 9443)]:
        now[0] = float(seconds)
        progress(f"embeddings header|m {done}/9443")
    lines = [line.split(" [")[0].strip() for line in capsys.readouterr().out.splitlines()]
    assert lines == ["embeddings header|m 256/9443", "embeddings header|m 768/9443",
                     "embeddings header|m 2400/9443", "embeddings header|m 9443/9443"]


def test_progress_on_a_terminal_redraws_one_line_narrower_than_the_terminal(capsys):
    from rag_pipeline.cli.index import _Progress

    now = [0.0]
    label = "embeddings_job [header|all-MiniLM-L6-v2@53aa5117]"
    for columns, expected in [
        (120, f"  {label} 512/1273 [#########               ] 25.6/s ~30 s left"),
        (80, f"  {label} 512/1273 25.6/s ~30 s left"),
        (40, f"  {label}"[:38] + "…"),
    ]:
        progress = _Progress(clock=lambda: now[0], tty=True, columns=lambda width=columns: width)
        now[0] = 0.0
        progress(f"{label} 0/1273")
        now[0] = 20.0
        progress(f"{label} 512/1273")
        first, second = capsys.readouterr().out.split("\r")[1:]
        assert second == expected.ljust(columns - 1)
        assert len(first) == len(second) == columns - 1



_HUNG_UP = r"""
import os, signal
import rag_pipeline.cli.index as index

def refused(*args, **kwargs):
    raise OSError(5, "Input/output error")  # what a closed terminal answers a write

index.echo = refused
with index._stop_on_signals([lambda: "note"]) as latch:
    os.kill(os.getpid(), signal.SIGHUP)
    latch.checkpoint()
"""


def test_a_stop_whose_terminal_closed_still_ends_with_128_plus_the_signal():
    """Found by an operator whose terminal closed under `index`: the stop's line could not be
    written there, and the command ended with exit code 1, not 129."""
    ended = subprocess.run([sys.executable, "-c", _HUNG_UP], cwd=PROJECT_ROOT,
                           capture_output=True, text=True, timeout=120)
    assert (ended.returncode, ended.stdout, ended.stderr) == (128 + signal.SIGHUP, "", "")


def test_counts_read_moments_apart_show_no_rate(capsys):
    """Found by an operator resuming a stopped index: its counts, read in one batch, showed
    "330/330 [...] 1010942.8/s"."""
    from rag_pipeline.cli.index import _Progress

    now = [0.0]
    progress = _Progress(clock=lambda: now[0], tty=False)
    for seconds, done in [(0.0, 0), (0.0003, 330)]:
        now[0] = seconds
        progress(f"embeddings header|m {done}/330")
    assert capsys.readouterr().out.splitlines()[-1] == (
        "  embeddings header|m 330/330 [########################] ")


def test_a_new_dagster_home_gets_the_projects_dagster_yaml_and_an_existing_one_is_left(tmp_path):
    from rag_pipeline.project_paths import DAGSTER_HOME, unsized_home_note
    from rag_pipeline.project_paths import prepare_dagster_home as _prepare_home

    missing, empty, own = tmp_path / "a" / "home", tmp_path / "empty", tmp_path / "own"
    empty.mkdir()
    own.mkdir()
    (own / "history").mkdir()  # an instance on Dagster's defaults: not ours to configure
    assert [_prepare_home(home) for home in (missing, empty, own)] == [True, True, False]
    project_yaml = (DAGSTER_HOME / "dagster.yaml").read_bytes()
    assert (missing / "dagster.yaml").read_bytes() == project_yaml
    assert (empty / "dagster.yaml").read_bytes() == project_yaml
    assert sorted(p.name for p in own.iterdir()) == ["history"]
    assert _prepare_home(missing) is False  # written once: the second index finds it
    # A home of files without one is named, with what that means and the fix.
    assert unsized_home_note(missing) is None
    assert unsized_home_note(own) == (
        f"note: the Dagster home {own} has no dagster.yaml: its runs are not queued by the "
        f"project's pools (model runs start side by side); copy the project's "
        f"{DAGSTER_HOME / 'dagster.yaml'} there and restart the daemon")


def test_the_documents_not_indexed_before_a_run_are_none_without_a_readable_duckdb_file(tmp_path):
    # Found by a second attack: an unreadable rag.duckdb (which publishing writes again) made
    # `index` stop with a traceback before any run.
    from rag_pipeline.cli.index import _not_indexed_ids
    from rag_pipeline.core.storage.warehouse import Warehouse

    warehouse = Warehouse(tmp_path / "data")
    assert _not_indexed_ids(warehouse) == set()
    warehouse.db_path.parent.mkdir(parents=True, exist_ok=True)
    warehouse.db_path.write_bytes(b"not a DuckDB file" * 100)
    assert _not_indexed_ids(warehouse) == set()


@pytest.mark.slow
def test_index_names_what_it_did_not_index_and_status_keeps_odd_names_on_one_line(
        dagster_project: Callable[[str, str], DagsterProject]):
    # Found by a user: `index` printed "documents failed 3" and "skipped 1" with no names, and
    # a line break in a file name broke `status`'s listing in two.
    project = dagster_project("not-indexed", reference_config(["header"]))
    (project.corpus / "broken.pdf").write_bytes(b"%PDF-1.7\ntruncated")
    (project.corpus / "tool.exe").write_bytes(b"MZ\x90\x00")
    (project.corpus / "two\nlines.md").write_text("# Two lines\n\nA name with a break.\n",
                                                  encoding="utf-8")
    # Left out without a word before: hidden names (a folder once, not each file in it).
    (project.corpus / ".git" / "objects").mkdir(parents=True)
    (project.corpus / ".git" / "objects" / "ab").write_bytes(b"x")
    (project.corpus / ".git" / "config").write_bytes(b"[core]\n")
    (project.corpus / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")

    found: list[str] = []  # what each documents run found, as `index` prints it

    def not_indexed() -> list[str]:
        """What `index` prints from its list of the documents not indexed on."""
        index = subprocess.run([*CLI, "index", "--no-eval"], cwd=PROJECT_ROOT, env=project.env,
                               capture_output=True, text=True, timeout=1200)
        assert index.returncode == 0, index.stdout[-3000:] + index.stderr[-3000:]
        found.append(next(line for line in index.stdout.splitlines() if line.startswith("documents: ")))
        return index.stdout[index.stdout.index("\nnot indexed"):].strip().splitlines()

    tail = not_indexed()
    assert tail[0] == ("not indexed (a failed document is read again when its file changes, or "
                       "with --retry-failed; `rag-pipeline status` lists them all):")
    assert [line.split(":")[0] for line in tail[1:3]] == ["  failed  broken.pdf",
                                                         "  skipped tool.exe"]
    assert tail[3:] == ["", "hidden (names starting with '.', not part of the corpus): "
                            ".DS_Store, .git"]
    status = subprocess.run([*CLI, "status"], cwd=PROJECT_ROOT, env=project.env,
                            capture_output=True, text=True, timeout=600)
    assert status.returncode == 0, status.stdout + status.stderr
    assert "  added     two\\u000alines.md" in status.stdout.splitlines()
    # Found by a new team: a file broken in this run was listed after the older failures, and
    # behind "... and 8 more" when they were ten.
    (project.corpus / "zz-new.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >>\n")
    tail = not_indexed()
    assert tail[0] == ("not indexed (1 new in this run, listed first; a failed document is read "
                       "again when its file changes, or with --retry-failed; `rag-pipeline status` "
                       "lists them all):")
    assert [line.split(":")[0] for line in tail[1:4]] == ["  failed  zz-new.pdf",
                                                         "  failed  broken.pdf",
                                                         "  skipped tool.exe"]
    # Found by a new user: a run that found nothing changed said so only in `status`.
    assert found == [
        "documents: added 4, changed 0, renamed 0, deleted 0, unchanged 0, failed 1, skipped 1, "
        "hidden 2",
        "documents: added 0, changed 0, renamed 0, deleted 0, unchanged 4, failed 2, skipped 1, "
        "hidden 2"]

    def after_an_earlier_run(tags: dict[str, str]) -> list[str]:
        """The lines under `documents:` of an `index` run after a documents run with `tags`."""
        earlier = subprocess.run([str(PROJECT_ROOT / ".venv" / "bin" / "dagster"), "job", "execute",
                                  "-m", "rag_pipeline.definitions", "-a", "defs", "-j",
                                  "documents_job", "--tags", json.dumps(tags)],
                                 cwd=PROJECT_ROOT, env=project.env, capture_output=True, text=True,
                                 timeout=600)
        assert earlier.returncode == 0, earlier.stdout[-3000:] + earlier.stderr[-3000:]
        index = subprocess.run([*CLI, "index", "--no-eval"], cwd=PROJECT_ROOT, env=project.env,
                               capture_output=True, text=True, timeout=1200)
        assert index.returncode == 0, index.stdout[-3000:] + index.stderr[-3000:]
        lines = index.stdout.splitlines()
        at = lines.index("documents: added 0, changed 0, renamed 0, deleted 0, unchanged 4, "
                         "failed 2, skipped 1, hidden 2")
        return [line for line in lines[at + 1:at + 3] if line.startswith("  (")]

    served = ("  (this index serves what an earlier documents run read and no index had served: "
              "against the documents served before, added 0, changed 1, renamed 0, deleted 0)")
    # Found by a new user: an edit the daemon's corpus_watch had indexed before `index` began
    # was reported as `changed 0`; the command now names the run that read it. The watch's
    # run is executed here as the daemon's sensor would launch it (the same job and tag).
    (project.corpus / "notes.txt").write_text("Release notes, edited.\n", encoding="utf-8")
    named, also = after_an_earlier_run({"dagster/sensor_name": "corpus_watch"})
    assert re.fullmatch(
        r"  \(corpus_watch's documents run [0-9a-f]{8} had read the corpus as it is now, at "
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d: added 0, changed 1, renamed 0, deleted 0, unchanged 3, "
        r"failed 2, skipped 1, hidden 2\)", named), named
    assert also == served  # the watch's run alone: no index had published what it read
    # Found by a team member using serve while the documents changed: after an `index` stopped
    # right after its documents run, the next one said `changed 0` though it served the edit.
    (project.corpus / "notes.txt").write_text("Release notes, edited again.\n", encoding="utf-8")
    assert after_an_earlier_run({PID_TAG: "4242"}) == [served]
    # Found by a team whose folder changes daily: an indexed document that became unreadable
    # left the index with nothing saying so ("changed 0, deleted 0, ..., failed 3").
    (project.corpus / "notes.txt").write_bytes(b"Release notes \xff\xfe\x81 edited.\n")
    tail = not_indexed()
    assert tail[1].startswith("  failed  notes.txt: ") and tail[1].endswith(
        "; it was indexed before and leaves the index"), tail[1]
    # A document that never was indexed is not said to leave it.
    assert [line for line in tail if "leaves the index" in line] == [tail[1]]


@pytest.mark.slow
def test_a_model_no_longer_declared_in_the_file_given_by_config_is_named_with_that_file(
        dagster_project: Callable[[str, str], DagsterProject]):
    project = dagster_project("undeclared", reference_config(["header"]))
    first = subprocess.run([*CLI, "index", "--no-eval"], cwd=PROJECT_ROOT, env=project.env,
                           capture_output=True, text=True, timeout=1200)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert "no longer declared" not in first.stdout
    # The same weights under another name: another key, so the first key's partition is kept
    # but no longer declared in the file --config gives (not the one the environment names).
    renamed = project.root / "renamed.toml"
    renamed.write_text(reference_config(["header"]).replace(
        'name = "all-MiniLM-L6-v2"', 'name = "minilm"'), encoding="utf-8")
    second = subprocess.run([*CLI, "--config", str(renamed), "index", "--no-eval"],
                            cwd=PROJECT_ROOT, env=project.env, capture_output=True, text=True,
                            timeout=1200)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    notes = [line for line in second.stdout.splitlines() if line.startswith("note: ")]
    assert notes == [
        f"note: all-MiniLM-L6-v2@53aa5117 is no longer declared in {renamed}; its partitions "
        f"(header) are kept but neither built nor served: `rag-pipeline --config {renamed} "
        "models --drop all-MiniLM-L6-v2@53aa5117` deletes them"]


def test_index_prints_each_scored_models_headline_figures(tmp_path, capsys, monkeypatch):
    from types import SimpleNamespace

    import pyarrow as pa

    from rag_pipeline.cli.index import _echo_scores
    from rag_pipeline.core.evaluation.tables import SUMMARY_SCHEMA
    from rag_pipeline.core.storage.warehouse import Warehouse

    warehouse = Warehouse(tmp_path)

    def row(chunker: str, retriever: str, style: str, recall_at_4: float) -> dict:
        figures = {name: 0.5 for name in SUMMARY_SCHEMA.names if name.startswith("recall@")}
        return {**figures, "chunker": chunker, "retriever": retriever, "style": style,
                "queries": 244, "recall@4": recall_at_4, "recall@4_low": 0.7562,
                "recall@4_high": 0.8566, "recall@20": 0.9057, "mrr": 0.7139, "destroyed": 0}

    warehouse.write("eval_summary", pa.Table.from_pylist([
        row("blind", "hybrid", "all", 0.5), row("header", "dense", "all", 0.6),
        row("header", "hybrid", "keyword", 0.7), row("header", "hybrid", "all", 0.8115)],
        schema=SUMMARY_SCHEMA), {"model": "m@00000001"})
    build = SimpleNamespace(chunker_keys=("blind", "header"), warehouse=warehouse,
                            model_keys=("m@00000001", "never-scored@00000002"))
    _echo_scores(build)
    assert capsys.readouterr().out == (
        "\nevaluation (header x hybrid, gold set; every chunker, retriever and query style: the "
        "eval_summary table):\n"
        "  m@00000001: recall@4 0.811 (95% 0.756-0.857), recall@20 0.906, MRR 0.714 on 244 "
        "queries\n")
    _echo_scores(SimpleNamespace(chunker_keys=("blind",), warehouse=warehouse,
                                 model_keys=("never-scored@00000002",)))
    assert capsys.readouterr().out == ""
    # Found by a newcomer: with no gold set for the corpus now, the scores an earlier gold set
    # left were printed above "evaluation skipped"; the skip alone is.
    from rag_pipeline.cli.edge import Invocation
    from rag_pipeline.cli.index import _echo_evaluation

    skipped = SimpleNamespace(**vars(build), gold_path=tmp_path / "gold.jsonl",
                              ood_path=tmp_path / "ood.jsonl")
    _echo_evaluation(skipped, Invocation(tmp_path))
    assert capsys.readouterr().out == (
        f"\nevaluation skipped: no gold set for this corpus: {tmp_path / 'gold.jsonl'} does not "
        "exist; nothing to score. Write one with `rag-pipeline gold draft`\n")
    # The command suggested repeats the options given (found by a newcomer's trial).
    _echo_evaluation(skipped, Invocation(tmp_path, None, tmp_path / "team.toml",
                                         ("--config", str(tmp_path / "team.toml"))))
    assert capsys.readouterr().out.endswith(
        f"Write one with `rag-pipeline --config {tmp_path / 'team.toml'} gold draft`\n")
    # With the corpus's gold set, its scores.
    import rag_pipeline.core.evaluation.gold as gold

    monkeypatch.setattr(gold, "no_gold_set_reason", lambda warehouse, gold, ood: None)
    _echo_evaluation(skipped, Invocation(tmp_path))
    assert capsys.readouterr().out.startswith("\nevaluation (header x hybrid, gold set;")
