"""``rag-pipeline index``: build or update the index through Dagster, with its progress, one
``index`` per instance, and a stop on SIGINT/SIGTERM that leaves nothing running."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from rag_pipeline.cli.edge import Invocation, declared_models, echo, fail
from rag_pipeline.project_paths import ENV_PROFILE, ENV_WAREHOUSE, INDEX_LOCK


class _Progress:
    """One line per embedding run: done/total, a bar, the rate and the time left. On a terminal
    the line is redrawn in place; otherwise a line is printed at every quarter."""

    def __init__(self) -> None:
        self.tty = sys.stdout.isatty()
        self.seen: dict[str, tuple[float, int, int]] = {}

    def __call__(self, line: str) -> None:
        label, counts = line.rsplit(" ", 1)
        done, total = (int(x) for x in counts.split("/"))
        now = time.monotonic()
        first_time, first_done, last_quarter = self.seen.get(label, (now, done, -1))
        rate = (done - first_done) / (now - first_time) if now > first_time else 0.0
        left = f"~{(total - done) / rate:.0f} s left" if rate > 0 and done < total else ""
        width = 24
        bar = "#" * (width * done // max(total, 1))
        text = f"  {label} {done}/{total} [{bar:<{width}}] {rate:.1f}/s {left}"
        quarter = 4 * done // max(total, 1)
        self.seen[label] = (first_time, first_done, quarter)
        if self.tty:
            click.echo("\r" + text.ljust(100), nl=done >= total)
        elif quarter > last_quarter:
            click.echo(text)



@contextmanager
def _index_lock(home: Path) -> Iterator[int]:
    """One ``index`` per Dagster instance: the second refuses in one line naming the holder
    (it waits up to a minute while a killed holder's daemon is being cleaned up)."""
    from rag_pipeline.core.runtime.processes import LockHeldError, exclusive_lock

    try:
        with exclusive_lock(home / INDEX_LOCK, "rag-pipeline index", wait_seconds=60) as fd:
            yield fd
    except LockHeldError as exc:
        holder = exc.holder.describe() if exc.holder else "holder unknown"
        fail(f"another `rag-pipeline index` is running on this Dagster instance ({holder}; "
              f"lock {exc.path}): wait for it to finish or stop it")


class _Stopped(Exception):
    """SIGINT or SIGTERM reached ``index``."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


@contextmanager
def _stop_on_signals() -> Iterator[None]:
    """Turns the first SIGINT or SIGTERM into :class:`_Stopped` (later ones are ignored while
    the clean-up runs), so the daemon's guard ends it with its code servers and runs, marking
    them canceled, before ``index`` exits with 128 + the signal's number."""
    handled = (signal.SIGINT, signal.SIGTERM)

    def stop(signum: int, frame: object) -> None:
        for s in handled:
            signal.signal(s, signal.SIG_IGN)
        raise _Stopped(signum)

    previous = {s: signal.signal(s, stop) for s in handled}
    try:
        yield
    except _Stopped as exc:
        echo(f"\nstopped by {exc}: the Dagster daemon, its code servers and the runs of this "
              f"index are stopped and marked canceled; the published index is as it was",
              err=True)
        sys.exit(128 + exc.signum)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@click.command()
@click.option("--corpus", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Folder of documents to index instead of the bundled Python reference "
                   "(also what the nightly schedule reads: set RAG_PIPELINE_CORPUS for the UI).")
@click.option("--refresh-corpus", is_flag=True,
              help="Export the bundled Python reference again (it is otherwise exported once and "
                   "then left alone).")
@click.option("--profile", "profile_name", default=None, envvar=ENV_PROFILE,
              help="What to build: production (the header chunker and the default model) or "
                   "evaluation (every chunker x every model), or a profile of the config "
                   "(default: [index] profile, else production for --corpus and evaluation for "
                   f"the bundled corpus; env {ENV_PROFILE}).")
@click.option("--no-eval", is_flag=True, help="Do not wait for the evaluation runs.")
@click.option("--timings", is_flag=True, help="Print where the wall time went: extraction, "
              "chunking, model load, encoding, writing, ANN build, publish, start-ups; and the "
              "encoding rate against this machine's fp32 floor.")
@click.option("--verbose", is_flag=True, help="Also print every line the runs log (Dagster's "
                                              "debug stream).")
@click.pass_obj
def index(invocation: Invocation, corpus: Path | None, refresh_corpus: bool, profile_name: str | None,
          no_eval: bool, timings: bool, verbose: bool) -> None:
    """Build or update the whole index through Dagster: runs are launched through the code
    location and carried down by the index_automation sensor, as in the UI."""
    import dagster as dg

    from rag_pipeline.core.config.keys import write_lock
    from rag_pipeline.core.config.lock import effective_lock
    from rag_pipeline.core.config.parse import choose_profile, load_config
    from rag_pipeline.core.embedding.models import ModelConfigError
    from rag_pipeline.core.index.model_inventory import inventory
    from rag_pipeline.core.index.status import row_counts
    from rag_pipeline.project_paths import DEFAULT_DATA_DIR, ENV_CORPUS, ENV_DATA_DIR, config_path

    try:
        config = load_config(config_path())
        if corpus is None and config.corpus is not None:
            if not config.corpus.is_dir():
                fail(f"[index] corpus of {config.path}: folder not found: {config.corpus}")
            corpus = config.corpus
        profile = choose_profile(config, profile_name, corpus is not None or bool(
            os.environ.get(ENV_CORPUS)))
        lock = effective_lock(config)
        unlocked = [d.name for d in config.models if d.name not in lock and d.adapt is None]
        specs = write_lock(config) if unlocked and config.path else declared_models()
    except (ModelConfigError, FileNotFoundError) as exc:
        fail(str(exc))
    if unlocked and config.path:
        echo(f"locked new model(s) {', '.join(unlocked)} in {config.lock_path.name}")
    _use_profile(profile)
    keys = [s.key for s in specs if s.name in profile.models]
    echo(f"profile {profile.name}: {', '.join(c.value for c in profile.chunkers)} x "
          f"{', '.join(keys)} ({len(profile.chunkers) * len(keys)} partition(s); `--profile` or "
          "[index] profile chooses another)")
    from rag_pipeline.definitions import build_definitions
    from rag_pipeline.orchestration.index_launch import (
        daemon_running,
        fail_dead_runs,
        follow_runs,
        index_is_current,
        launch_run,
        project_daemon,
        retry_failed,
    )
    from rag_pipeline.orchestration.index_runs import IndexRunFailed

    home = Path(os.environ["DAGSTER_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    data_dir = invocation.data_dir
    env = {**os.environ, ENV_DATA_DIR: str(data_dir.absolute()), ENV_PROFILE: profile.name}
    if invocation.location is not None:
        env[ENV_WAREHOUSE] = invocation.location
    if corpus is not None:
        env[ENV_CORPUS] = str(corpus.absolute())
    defs = build_definitions(data_dir=data_dir.absolute(), corpus_dir=corpus,
                             location=invocation.location)
    chunkers = defs.resolve_job_def("chunks_job").partitions_def.get_partition_keys()
    models = defs.resolve_job_def("eval_job").partitions_def.get_partition_keys()
    warehouse = invocation.warehouse
    started = time.time()
    try:
        with _index_lock(home) as lock_fd, _stop_on_signals(), \
                dg.DagsterInstance.get() as instance:
            fail_dead_runs(instance, click.echo)
            # A running daemon serves the code location as its own environment configured it;
            # this shell's environment is the best evidence of that configuration.
            location_data = Path(os.environ.get(ENV_DATA_DIR) or DEFAULT_DATA_DIR).absolute()
            location_corpus = os.environ.get(ENV_CORPUS)
            differs = data_dir.absolute() != location_data or (
                corpus is not None and str(corpus.absolute()) != location_corpus)
            if differs and daemon_running(instance, home):
                fail("a Dagster daemon is running with its own code location: for --data-dir / "
                      "--corpus start it with RAG_PIPELINE_DATA_DIR / RAG_PIPELINE_CORPUS set to "
                      "the same folders (or stop it), then run index with the same variables")
            retry_failed(instance, defs, env, click.echo)
            with project_daemon(instance, env, home / "rag-pipeline-daemon.log", click.echo,
                                started, lock_fd) as daemon:
                run_config = {"resources": {"corpus": {"config": {
                    "refresh_python_reference": True}}}} if refresh_corpus else None
                run_id = launch_run("documents_job", env, run_config)
                click.echo(f"launched documents_job (run {run_id[:8]}); following the runs the "
                           "index_automation sensor launches")
                reports = follow_runs(
                    instance, started, lambda: index_is_current(warehouse, chunkers, models,
                                                                evaluate=not no_eval),
                    click.echo, None if verbose else _Progress(), click.echo if verbose else None,
                    daemon_alive=daemon.alive)
            if timings:
                from rag_pipeline.cli.index_timings import echo_timings
                from rag_pipeline.orchestration.index_timings import index_timings

                echo_timings(index_timings(instance, [r.run_id for r in reports],
                                           time.time() - started), warehouse, specs[0])
    except IndexRunFailed as exc:
        fail(str(exc))
    echo(f"\n{len(reports)} runs, all succeeded, in {time.time() - started:.1f} s")
    for entry in inventory(specs, warehouse):
        if not entry.declared:
            echo(f"note: {entry.key} is no longer declared in rag_pipeline.toml; its "
                  f"partitions ({', '.join(entry.embedding_chunkers)}) are kept but neither "
                  f"built nor served: `rag-pipeline models --drop '{entry.key}'` deletes them")
    echo(f"\nbuilt (DuckDB file {warehouse.db_path}):")
    for table, rows in row_counts(warehouse).items():
        for row in rows:
            echo(f"  {table:11s} {' / '.join(str(v) for v in row[:-1]):55s} {row[-1]:>7}")
    if not no_eval:
        _echo_unscored(warehouse)


def _echo_unscored(warehouse) -> None:
    """The evaluation's one line when the gold set the runs used is not of this corpus."""
    from rag_pipeline.core.config.gold_file import load_gold_set
    from rag_pipeline.core.evaluation.gold import NoGoldSetError, check_corpus
    from rag_pipeline.core.ingest import DocumentStatus
    from rag_pipeline.core.storage.table_names import DOCUMENTS
    from rag_pipeline.project_paths import DEFAULT_EVAL_DIR, ENV_EVAL_DIR

    gold = load_gold_set(Path(os.environ.get(ENV_EVAL_DIR) or DEFAULT_EVAL_DIR) / "gold.jsonl")
    documents = warehouse.read(DOCUMENTS, columns=["document_id", "status"]).to_pylist()
    try:
        check_corpus(gold, [d["document_id"] for d in documents if d["status"] == DocumentStatus.OK])
    except NoGoldSetError as exc:
        echo(f"\nevaluation: {exc}")


def _use_profile(profile) -> None:
    """Makes ``profile`` the one this process's definitions build (the chunker partitions are
    declared when :mod:`rag_pipeline.orchestration.partitions` is first imported)."""
    os.environ[ENV_PROFILE] = profile.name
    partitions = sys.modules.get("rag_pipeline.orchestration.partitions")
    if partitions is not None and partitions.chunker_partitions.get_partition_keys() != [
            c.value for c in profile.chunkers]:
        fail(f"this process already declared the chunkers "
              f"{partitions.chunker_partitions.get_partition_keys()}, not profile "
              f"{profile.name!r}'s: run the command in a fresh process")

