"""Seconds from one document edit until the served index answers with the new text.

Run (it builds its own index first, in a temporary folder: a few minutes)::

    .venv/bin/python -m rag_pipeline.benchmarks.edit_latency

It copies the bundled corpus (or ``--corpus DIR``) into a temporary folder, starts a real
``dagster-daemon`` on a temporary instance (the project's ``dagster_home/dagster.yaml``) and
builds the index of one chunker x the default model with ``rag-pipeline index`` (which uses
that daemon), then starts ``rag-pipeline serve`` on 127.0.0.1 over it. It then appends one
paragraph holding a word no document has to one document and asks the server, every
``--poll`` seconds, a question naming that word, until a citation quotes it (``--keep`` leaves
the folder, ``--reuse`` measures it again without building first). With ``--trigger
sensor`` (the default) nothing else happens: the ``corpus_watch`` sensor notices the change;
with ``--trigger index`` the edit is followed by ``rag-pipeline index``, the command a user
runs. It prints, relative to the moment the file was written: each run's creation, start and
end, the publication of the served generation (``CURRENT.json``), the first answer quoting the
new text, and the machine's load average (the cores are shared: a figure means little without
it).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rag_pipeline.core.config.init_file import reference_config
from rag_pipeline.core.runtime.processes import stop_process
from rag_pipeline.project_paths import (
    DAGSTER_HOME,
    ENV_CONFIG,
    ENV_CORPUS,
    ENV_DATA_DIR,
    ENV_EVAL_DIR,
    PROJECT_ROOT,
)

HOST = "127.0.0.1"
DAEMON_READY_SECONDS = 300.0
SERVE_READY_SECONDS = 300.0
BUILD_SECONDS = 1800.0
EVAL_GOLD = ('{"corpus": "edit-latency", "documents": ["not-in-this-corpus.md"]}\n'
             '{"id": "e1", "needle": "seventeen seconds", '
             '"question": "How long does a call wait?", "ticket": "my call stops"}\n')
EVAL_OOD = '{"id": "o1", "query": "what is the capital of france", "kind": "off"}\n'


@dataclass(frozen=True)
class RunTimes:
    """One run of the instance, its times in seconds since the epoch (``None``: not yet)."""

    job: str
    partition: str
    status: str
    created: float
    started: float | None
    ended: float | None


@dataclass(frozen=True)
class Event:
    """Something that happened ``seconds`` after the edit."""

    seconds: float
    what: str


def timeline(edit_at: float, runs: Sequence[RunTimes], published_at: float | None,
             answered_at: float | None, steps: Sequence[tuple[float, str]] = ()) -> list[Event]:
    """The events after the edit in time order: each run's creation, start and end (with the
    queue wait and the run's own time), ``steps`` inside the runs (time, what), the publication
    and the first answer quoting the edit."""
    events = [Event(at - edit_at, what) for at, what in steps]
    for run in runs:
        label = f"{run.job} [{run.partition}]"
        events.append(Event(run.created - edit_at, f"{label} created"))
        if run.started is not None:
            events.append(Event(run.started - edit_at,
                                f"{label} started ({run.started - run.created:.1f} s after "
                                "creation)"))
        if run.ended is not None and run.started is not None:
            events.append(Event(run.ended - edit_at, f"{label} {run.status.lower()} "
                                                     f"({run.ended - run.started:.1f} s running)"))
    if published_at is not None:
        events.append(Event(published_at - edit_at, "new generation published (CURRENT.json)"))
    if answered_at is not None:
        events.append(Event(answered_at - edit_at, "serve's answer quotes the new text"))
    return sorted(events, key=lambda e: e.seconds)


def _bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def _cli(*args: str) -> list[str]:
    """``rag-pipeline ARGS`` run by this interpreter, so the code under test is what runs."""
    return [sys.executable, "-c", "import sys; from rag_pipeline.cli import main; sys.exit(main())",
            *args]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _get_json(url: str, timeout: float = 10.0) -> dict:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read().decode("utf-8"))


def _quoted(port: int, question: str, word: str, chunker: str) -> str | None:
    """The generation that answered, when a citation quotes ``word``."""
    query = urllib.parse.urlencode({"q": question, "chunker": chunker, "cut": 2.0})
    try:
        answer = _get_json(f"http://{HOST}:{port}/ask?{query}")
    except OSError:
        return None
    if any(word in citation["quote"] for citation in answer["citations"]):
        return answer["generation"]
    return None


def _runs_since(instance, since: float) -> list[RunTimes]:
    import dagster as dg

    records = instance.get_run_records(filters=dg.RunsFilter(
        created_after=datetime.fromtimestamp(since, UTC)))
    return sorted((RunTimes(r.dagster_run.job_name, r.dagster_run.tags.get("dagster/partition", "-"),
                            r.dagster_run.status.value, r.create_timestamp.timestamp(),
                            r.start_time, r.end_time) for r in records),
                  key=lambda run: run.created)


def run_steps(instance, run_id: str, label: str) -> list[tuple[float, str]]:
    """Milestones inside a run: its resources ready (the embedder's torch imported), each step
    done, and the model loaded (the embeddings step's "embedding with" line)."""
    import dagster as dg

    found = []
    for record in instance.all_logs(run_id):
        event = record.dagster_event
        if event is not None and event.event_type == dg.DagsterEventType.RESOURCE_INIT_SUCCESS:
            found.append((record.timestamp, f"{label} resources ready"))
        elif event is not None and event.event_type == dg.DagsterEventType.STEP_SUCCESS:
            found.append((record.timestamp, f"{label} step {event.step_key} done"))
        elif event is None and (record.user_message or "").startswith("embedding with"):
            found.append((record.timestamp, f"{label} model loaded"))
    return found


def _wait_for(predicate, seconds: float, what: str, process: subprocess.Popen | None = None):
    deadline = time.monotonic() + seconds
    while True:
        value = predicate()
        if value:
            return value
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{what}: the process exited with code {process.returncode}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not within {seconds:.0f} s")
        time.sleep(0.5)


def measure(work: Path, corpus: Path | None, chunker: str, trigger: str, poll: float,
            timeout: float, echo=print) -> list[Event]:
    """Builds the index in ``work`` (a folder of an earlier, kept run is used as it is), edits
    one document and returns the timeline."""
    import dagster as dg

    from rag_pipeline.core.config.keys import declared_models
    from rag_pipeline.core.config.parse import load_config
    from rag_pipeline.core.index.generations import current_generation
    from rag_pipeline.core.ingest.corpus_export import export_python_reference
    from rag_pipeline.core.storage.warehouse import Warehouse
    from rag_pipeline.orchestration.index_launch import daemon_running

    home, data, docs = work / "dagster_home", work / "data", work / "corpus"
    config, evals = work / "rag_pipeline.toml", work / "eval"
    if not home.is_dir():  # else: a kept folder, measured again (its index is current)
        home.mkdir()
        if corpus is None:
            export_python_reference(docs)
        else:
            shutil.copytree(corpus, docs)
        config.write_text(reference_config([chunker]), encoding="utf-8")
        shutil.copy(PROJECT_ROOT / "rag_pipeline.lock.json", work / "rag_pipeline.lock.json")
    shutil.copy(DAGSTER_HOME / "dagster.yaml", home / "dagster.yaml")  # the queue as it is now
    if not evals.is_dir():
        # A gold set of no document of this corpus: the evaluation after each publication is
        # skipped in one line (it runs, in its own run, but loads no model and holds no core
        # when the next edit comes).
        evals.mkdir()
        (evals / "gold.jsonl").write_text(EVAL_GOLD, encoding="utf-8")
        (evals / "ood.jsonl").write_text(EVAL_OOD, encoding="utf-8")
    model = declared_models(load_config(config))[0].key
    env = {**os.environ, "DAGSTER_HOME": str(home), ENV_DATA_DIR: str(data), ENV_CONFIG: str(config),
           ENV_CORPUS: str(docs), ENV_EVAL_DIR: str(evals), "HF_HUB_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    os.environ["DAGSTER_HOME"] = str(home)
    processes: list[subprocess.Popen] = []
    try:
        with (work / "daemon.log").open("ab") as log:
            daemon = subprocess.Popen([_bin("dagster-daemon"), "run", "-w", "workspace.yaml"],
                                      cwd=PROJECT_ROOT, env=env, stdout=log, stderr=log,
                                      start_new_session=True)
        processes.append(daemon)
        with dg.DagsterInstance.get() as instance:
            _wait_for(lambda: daemon_running(instance, home), DAEMON_READY_SECONDS,
                      "dagster-daemon", daemon)
            echo(f"daemon up; building the index of {chunker} x {model} (load {_load()})")
            built = subprocess.run(_cli("--data-dir", str(data), "index"), cwd=PROJECT_ROOT, env=env,
                                   capture_output=True, text=True, timeout=BUILD_SECONDS)
            if built.returncode != 0:
                raise RuntimeError(f"index failed: {(built.stdout + built.stderr)[-2000:]}")
            warehouse = Warehouse(data)
            before = current_generation(warehouse, chunker, model)
            port = _free_port()
            with (work / "serve.log").open("ab") as log:
                server = subprocess.Popen(
                    _cli("--data-dir", str(data), "serve", "--port", str(port), "--chunker", chunker,
                         "--poll", "0.5"), cwd=PROJECT_ROOT, env=env, stdout=log, stderr=log,
                    start_new_session=True)
            processes.append(server)

            def healthy() -> bool:
                try:
                    return bool(_get_json(f"http://{HOST}:{port}/health", timeout=2.0))
                except OSError:
                    return False

            _wait_for(healthy, SERVE_READY_SECONDS, "serve", server)
            word = "zq" + "".join(secrets.choice("bcdfghjklmnpstvwxz") for _ in range(8))
            target = sorted(docs.glob("*.md"))[0]
            question = f"What does the edit marker {word} say about this topic?"
            echo(f"serving generation {before.id}; editing {target.name} (word {word}, "
                 f"load {_load()})")
            time.sleep(6.0)  # the corpus watch has seen the folder as it was
            with target.open("a", encoding="utf-8") as handle:
                handle.write(f"\n\nThe edit marker {word} says this topic was edited by the "
                             "latency benchmark.\n")
                handle.flush()
                os.fsync(handle.fileno())
            edit_at = time.time()
            trigger_process = None
            if trigger == "index":
                trigger_process = subprocess.Popen(_cli("--data-dir", str(data), "index"),
                                                   cwd=PROJECT_ROOT, env=env,
                                                   stdout=subprocess.DEVNULL,
                                                   stderr=subprocess.DEVNULL,
                                                   start_new_session=True)
                processes.append(trigger_process)
            published_at = answered_at = None
            deadline = time.monotonic() + timeout
            while answered_at is None and time.monotonic() < deadline:
                if published_at is None:
                    now = current_generation(warehouse, chunker, model)
                    if now is not None and now.id != before.id:
                        published_at = time.time()
                if _quoted(port, question, word, chunker):
                    answered_at = time.time()
                    break
                time.sleep(poll)
            if answered_at is None:
                echo(f"the edit did not reach the served index in {timeout:.0f} s")
            # The evaluation runs after publication in its own run: waited for, to show it.
            end = time.monotonic() + timeout
            while time.monotonic() < end and (
                    any(r.ended is None for r in _runs_since(instance, edit_at - 1))
                    or (trigger_process is not None and trigger_process.poll() is None)):
                time.sleep(1.0)
            records = instance.get_run_records(filters=dg.RunsFilter(
                created_after=datetime.fromtimestamp(edit_at - 1, UTC)))
            steps = [step for r in records for step in run_steps(
                instance, r.dagster_run.run_id, r.dagster_run.job_name)]
            return timeline(edit_at, _runs_since(instance, edit_at - 1), published_at, answered_at,
                            steps)
    finally:
        for process in reversed(processes):
            stop_process(process, 60, group=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rag_pipeline.benchmarks.edit_latency",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=None,
                        help="Folder of documents to copy (default: the bundled corpus).")
    parser.add_argument("--chunker", default="header")
    parser.add_argument("--trigger", choices=["sensor", "index"], default="sensor")
    parser.add_argument("--poll", type=float, default=0.5, help="Seconds between questions.")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="Seconds to wait for the edit to be served.")
    parser.add_argument("--keep", action="store_true",
                        help="Keep the temporary folder (printed), for --reuse.")
    parser.add_argument("--reuse", type=Path, default=None,
                        help="A folder a --keep run left: measured again without building the "
                             "index first (kept).")
    args = parser.parse_args(argv)
    # SIGTERM (a `timeout`) unwinds like Ctrl-C, so the daemon, serve and index it started stop.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    work = args.reuse or Path(tempfile.mkdtemp(prefix="edit-latency-"))
    keep = args.keep or args.reuse is not None
    try:
        events = measure(work, args.corpus, args.chunker, args.trigger, args.poll, args.timeout)
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"trigger {args.trigger}; load average {_load()} (1, 5, 15 min)"
          + (f"; kept {work}" if keep else ""))
    for event in events:
        print(f"{event.seconds:+8.1f} s  {event.what}")
    answered = [e for e in events if e.what.startswith("serve's answer")]
    print(f"edit to served answer: {answered[0].seconds:.1f} s" if answered else
          "edit to served answer: not reached")
    return 0 if answered else 1


if __name__ == "__main__":
    sys.exit(main())
