"""``rag-pipeline index``: build or update the index through Dagster, with its progress, one
``index`` per instance, and a stop on SIGINT/SIGTERM that leaves nothing running."""

from __future__ import annotations

import functools
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from rag_pipeline.cli.corpus_param import CorpusParam
from rag_pipeline.cli.edge import (
    Invocation,
    config_source,
    dagster_home,
    declared_models_or_fail,
    echo,
    eval_folder,
    fail,
)
from rag_pipeline.core.runtime.processes import SignalLatch
from rag_pipeline.project_paths import (
    ENV_PROFILE,
    INDEX_LOCK,
    dagster_home_line,
)


class _Progress:
    """One line per embedding run: done/total, a bar, the rate and the time left. On a terminal
    the line is redrawn in place; otherwise (a log file, a pipe) a line is printed at every
    quarter and at least every :data:`LOG_EVERY_SECONDS` while the count moves, so a log shows
    a long run advancing."""

    LOG_EVERY_SECONDS = 30.0
    RATE_AFTER_SECONDS = 1.0
    """How long after a run's first count the rate is shown: counts the command reads in one
    batch (a run that resumed from a stopped run's vectors) are moments apart, and their rate
    would be millions a second."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, tty: bool | None = None,
                 columns: Callable[[], int] | None = None) -> None:
        self.tty = (sys.stdout is not None and sys.stdout.isatty()) if tty is None else tty
        self.clock = clock
        self.columns = columns or (lambda: shutil.get_terminal_size((100, 24)).columns)
        self.seen: dict[str, tuple[float, int, int]] = {}
        self.printed: dict[str, tuple[float, int]] = {}

    def __call__(self, line: str) -> None:
        label, counts = line.rsplit(" ", 1)
        done, total = (int(x) for x in counts.split("/"))
        now = self.clock()
        first_time, first_done, last_quarter = self.seen.get(label, (now, done, -1))
        rate = ((done - first_done) / (now - first_time)
                if now - first_time >= self.RATE_AFTER_SECONDS else 0.0)
        left = f"~{(total - done) / rate:.0f} s left" if rate > 0 and done < total else ""
        width = 24
        bar = "#" * (width * done // max(total, 1))
        speed = f"{rate:.1f}/s " if rate > 0 else ""  # none measured yet: not "0.0/s"
        text = f"  {label} {done}/{total} [{bar:<{width}}] {speed}{left}"
        quarter = 4 * done // max(total, 1)
        self.seen[label] = (first_time, first_done, quarter)
        if self.tty:
            # Narrower than the terminal, or a redraw wraps and leaves a line per update.
            fitted = _fit(text, f"  {label} {done}/{total} {speed}{left}",
                          self.columns() - 1)
            click.echo("\r" + fitted.ljust(self.columns() - 1), nl=done >= total)
            return
        printed_at, printed_done = self.printed.get(label, (now, -1))
        if quarter > last_quarter or (done > printed_done
                                      and now - printed_at >= self.LOG_EVERY_SECONDS):
            click.echo(text)
            self.printed[label] = (now, done)



def _fit(line: str, without_bar: str, width: int) -> str:
    """``line`` if it fits in ``width`` columns, else the line without its bar, else that cut
    to ``width`` (the label's end elided)."""
    for candidate in (line, without_bar.rstrip()):
        if len(candidate) <= width:
            return candidate
    return without_bar[:max(width - 1, 0)] + "…"


@contextmanager
def _index_lock(home: Path) -> Iterator[int]:
    """One ``index`` per Dagster instance: the second refuses in one line naming the holder
    (it waits up to a minute while a killed holder's guard marks its runs canceled)."""
    from rag_pipeline.core.runtime.processes import LockHeldError, exclusive_lock

    try:
        with exclusive_lock(home / INDEX_LOCK, "rag-pipeline index", wait_seconds=60) as fd:
            yield fd
    except LockHeldError as exc:
        holder = exc.holder.describe() if exc.holder else "holder unknown"
        fail(f"another `rag-pipeline index` is running on this Dagster instance ({holder}; "
              f"lock {exc.path}): wait for it to finish or stop it")


@contextmanager
def _data_folder_lock(data_dir: Path) -> Iterator[None]:
    """One ``index`` per data folder, whatever its Dagster home: two instances' runs would
    publish, and collect the garbage of, one set of tables at once."""
    from rag_pipeline.core.runtime.processes import LockHeldError, exclusive_lock

    try:
        with exclusive_lock(data_dir / INDEX_LOCK, "rag-pipeline index", wait_seconds=60):
            yield
    except LockHeldError as exc:
        holder = exc.holder.describe() if exc.holder else "holder unknown"
        fail(f"another `rag-pipeline index` is running on this data folder, with another Dagster "
             f"home ({holder}; lock {exc.path}): wait for it to finish or stop it")


_LOCAL_STOP = ("the runs of this index are stopped and marked canceled; the published index is "
               "as it was")
_SUMMARY_STOP = ("every run of this index had succeeded and what it built is served; only its "
                 "summary was cut short (`rag-pipeline status` prints the index)")
_DAEMON_STOP = ("the runs already launched go on under the running Dagster daemon (the Dagster "
                "UI shows them)")


def _served(warehouse) -> dict[tuple[str, str], str]:
    """The served generation of each partition, by chunker and model."""
    from rag_pipeline.core.index.generations import current_generations

    return {(g.chunker, g.model): g.id for g in current_generations(warehouse)}


def _local_stop(warehouse, served_before: dict[tuple[str, str], str]) -> str:
    """What a stop of runs this command runs itself left served: the index as it was, or the
    generations it had published before the stop (``served_before``: those served when it
    began)."""
    try:
        published = sorted((key, generation) for key, generation in _served(warehouse).items()
                           if served_before.get(key) != generation)
    except (OSError, ValueError):
        published = []
    if not published:
        return _LOCAL_STOP
    names = ", ".join(f"{chunker} x {model} (generation {generation})"
                      for (chunker, model), generation in published)
    return (f"the runs of this index are stopped and marked canceled; it had published {names} "
            "before the stop, which is served now; the rest of the published index is as it was")


@contextmanager
def _stop_on_signals(note: list[Callable[[], str]]) -> Iterator[SignalLatch]:
    """Records the first SIGINT, SIGTERM or SIGHUP; the command stops at its next checkpoint
    (the block passes ``latch.checkpoint`` down): a run it runs itself is killed and marked
    canceled, and ``index`` exits with 128 + the signal's number, saying ``note[0]()`` (what
    became of the runs and of the published index). A signal that lands while the block
    closes what it opened (the Dagster instance) or while it fails for another reason still
    ends the command that way."""
    from rag_pipeline.core.runtime.processes import STOP_SIGNALS, Stopped, recorded_signals

    with recorded_signals(STOP_SIGNALS) as latch:
        try:
            yield latch
            latch.checkpoint()
        except (Exception, SystemExit) as exc:
            if latch.signum is None:
                raise
            stopped = exc if isinstance(exc, Stopped) else Stopped(latch.signum)
            try:
                echo(f"\nstopped by {stopped}: {note[0]()}", err=True)
                sys.stdout.flush()
            except OSError:  # the terminal closed (SIGHUP): nothing is read there any more
                _write_nowhere()
            sys.exit(stopped.exit_code)


def _write_nowhere() -> None:
    """Points standard output and error at ``/dev/null``: a terminal that closed refuses
    writes, and the interpreter's last flush would end the command with another exit code."""
    null = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        os.dup2(null, fd)
    os.close(null)


@click.command()
@click.option("--corpus", type=CorpusParam(),
              help="Folder of documents to index instead of the bundled Python reference, or a "
                   "source URI: s3://bucket/prefix, git+file:///repo[@ref], git+https://...[@ref] "
                   "(also what the nightly schedule reads: set RAG_PIPELINE_CORPUS for the UI).")
@click.option("--allow-shrink", is_flag=True,
              help="Publish even when the corpus lost more than half its documents (or all of "
                   "them) since the last index; otherwise that run is refused.")
@click.option("--retry-failed", "retry_failed_documents", is_flag=True,
              help="Extract failed documents again although their files did not change.")
@click.option("--refresh-corpus", is_flag=True,
              help="Export the bundled Python reference again (it is otherwise exported once and "
                   "then left alone).")
@click.option("--profile", "profile_name", default=None, envvar=ENV_PROFILE,
              help="What to build: production (the header chunker and the default model) or "
                   "evaluation (several chunkers x models, as [profiles.evaluation] lists "
                   "them), or a profile of the config "
                   "(default: [index] profile, else production for --corpus and evaluation for "
                   f"the bundled corpus; env {ENV_PROFILE}).")
@click.option("--no-eval", is_flag=True, help="Do not wait for the evaluation runs.")
@click.option("--timings", is_flag=True, help="Print where the wall time went: extraction, "
              "chunking, model load, encoding, writing, ANN build, publish, start-ups; and the "
              "encoding rate against this machine's fp32 floor.")
@click.option("--verbose", is_flag=True, help="Also print every line the runs log (Dagster's "
                                              "debug stream).")
@click.pass_obj
def index(invocation: Invocation, corpus: Path | str | None, allow_shrink: bool,
          retry_failed_documents: bool, refresh_corpus: bool, profile_name: str | None,
          no_eval: bool, timings: bool, verbose: bool) -> None:
    """Build or update the whole index through Dagster. With a Dagster daemon running (the UI's
    `make dev`), runs are launched through the code location and carried down by the
    index_automation sensor; with none, this command runs the same runs itself, one after the
    other, recorded on the same instance (the UI shows them either way)."""
    from rag_pipeline.core.config.keys import write_lock
    from rag_pipeline.core.config.lock import effective_lock
    from rag_pipeline.core.config.parse import load_config
    from rag_pipeline.core.embedding.models import ModelConfigError
    from rag_pipeline.project_paths import context_environment, resolve_context

    home = dagster_home()
    eval_folder()  # a RAG_PIPELINE_EVAL_DIR that names no folder fails here, before any work
    try:
        config = load_config(invocation.config_path)
        if corpus is None and isinstance(config.corpus, Path) and not config.corpus.is_dir():
            fail(f"[index] corpus of {config.path}: folder not found: {config.corpus}")
        lock = effective_lock(config)
        unlocked = [d.name for d in config.models if d.name not in lock and d.adapt is None]
        specs = write_lock(config) if unlocked and config.path else declared_models_or_fail(config)
        build = resolve_context(os.environ, config_file=config.path, profile=profile_name,
                                data_dir=invocation.data_dir, location=invocation.location,
                                corpus=corpus, specs=specs)
    except (ModelConfigError, FileNotFoundError) as exc:
        fail(str(exc))
    if unlocked and config.path:
        echo(f"locked new model(s) {', '.join(unlocked)} in {config.lock_path.name}")
    echo(f"profile {build.profile}: {', '.join(build.chunker_keys)} x "
          f"{', '.join(build.model_keys)} ({len(build.chunker_keys) * len(build.model_keys)} "
          "partition(s); `--profile` or [index] profile chooses another)")
    if (line := dagster_home_line(home)) is not None:
        echo(line)
    env = {**os.environ, **context_environment(build, invocation.config_file),
           "DAGSTER_HOME": str(home)}
    from rag_pipeline.orchestration.index_worker import RUNS_LOG, IndexWorker, open_instance

    # Started first: it loads the code location while this command opens the instance (on a
    # fresh Dagster home, creating its databases) and then loads its own; it opens the
    # instance after this command (with a daemon running, the worker is never used and ends
    # at once).
    worker = IndexWorker(env, home / RUNS_LOG)
    from rag_pipeline.orchestration.index_runs import IndexRunFailed

    chunkers, models = list(build.chunker_keys), list(build.model_keys)
    warehouse = build.warehouse
    not_indexed_before = _not_indexed_ids(warehouse)

    def eval_sets() -> dict[str, str]:
        """The gold and out-of-domain files as they are now (an edit makes the evaluation due)."""
        from rag_pipeline.core.config.gold_file import eval_set_inputs

        return eval_set_inputs(build.gold_path, build.ood_path)

    @functools.cache
    def evaluate() -> bool:
        """Whether the evaluation is waited for (asked once the documents are written)."""
        return not no_eval and no_gold_set_reason(warehouse, build.gold_path,
                                                    build.ood_path) is None

    stop_note: list[Callable[[], str]] = [lambda: _LOCAL_STOP]
    started = time.time()
    try:
        with worker, _index_lock(home) as lock_fd, _data_folder_lock(warehouse.data_dir), \
                _stop_on_signals(stop_note) as latch, open_instance(home, waiting=echo) as instance:
            from rag_pipeline.core.evaluation.gold import no_gold_set_reason
            from rag_pipeline.core.index.model_inventory import inventory
            from rag_pipeline.core.index.plan import index_plan
            from rag_pipeline.core.index.status import reading_unserved, row_counts, served_documents
            from rag_pipeline.definitions import definitions_from_environment
            from rag_pipeline.orchestration.daemon_processes import daemon_pids
            from rag_pipeline.orchestration.index_guard import guard
            from rag_pipeline.orchestration.index_launch import (
                daemon_running,
                fail_dead_runs,
                follow_runs,
                index_is_current,
                launch_run,
                retry_failed,
                run_reading,
            )
            from rag_pipeline.orchestration.index_local import LocalRuns, run_index_locally
            from rag_pipeline.orchestration.pools import ensure_pool_limits
            from rag_pipeline.orchestration.run_tags import launched_by

            defs = definitions_from_environment(env, build)
            fail_dead_runs(instance, click.echo)
            # The documents served now, when the last reading is not among them: what this
            # index publishes is then more than its own documents run finds changed.
            documents_before = served_documents(warehouse) if reading_unserved(warehouse) else None
            served_before = _served(warehouse)
            stop_note[0] = lambda: _local_stop(warehouse, served_before)
            latch.checkpoint()
            knobs = {name: True for name, given in (
                ("refresh_python_reference", refresh_corpus), ("allow_shrink", allow_shrink),
                ("retry_failed", retry_failed_documents)) if given}
            run_config = defs.resources["corpus"].run_config(**knobs) if knobs else None
            progress = None if verbose else _Progress()
            log = click.echo if verbose else None
            if daemon_running(instance, home):
                worker.close()
                stop_note[0] = lambda: _DAEMON_STOP
                _refuse_another_build(build, home)
                retry_failed(instance, defs, env, click.echo)
                latch.checkpoint()
                ensure_pool_limits(instance)
                # The corpus_watch sensor may have launched a documents run for an edit just
                # before this command took the lock: that run reads the corpus as it is now.
                running = None if knobs else run_reading(instance, "documents_job",
                                                          _corpus_now(defs))
                if running is None:
                    run_id = launch_run("documents_job", env, run_config)
                    click.echo(f"using the running Dagster daemon: launched documents_job (run "
                               f"{run_id[:8]}); following the runs the index_automation sensor "
                               "launches")
                    since = started
                else:
                    by = launched_by(running.dagster_run.tags) or "another command"
                    click.echo(f"using the running Dagster daemon: documents run "
                               f"{running.dagster_run.run_id[:8]} (launched by {by}) is queued or "
                               "running; following it and the runs the index_automation sensor "
                               "launches, instead of launching another")
                    since = min(started, running.create_timestamp.timestamp() - 0.001)
                reports = follow_runs(
                    instance, since, lambda: index_is_current(
                        warehouse, chunkers, models, evaluate=evaluate(), rules=build.rules,
                        eval_sets=eval_sets()),
                    click.echo, progress, log, daemon_alive=lambda: bool(daemon_pids(home)),
                    checkpoint=latch.checkpoint)
            else:
                click.echo(f"no Dagster daemon runs on {home}: this command runs the index's "
                           f"runs itself (what they print: {home / RUNS_LOG})")
                with guard(home, started, lock_fd):
                    runs = LocalRuns(instance, defs, worker, click.echo, progress, log,
                                     latch.checkpoint)
                    reports = run_index_locally(runs, lambda: index_plan(
                        warehouse, chunkers, models, evaluate(), build.rules, eval_sets()),
                        run_config, build.models)
            read_before = _read_before(instance, reports)
            if timings:
                from rag_pipeline.cli.index_timings import echo_timings
                from rag_pipeline.orchestration.index_timings import index_timings

                echo_timings(index_timings(instance, [r.run_id for r in reports],
                                           time.time() - started), warehouse, specs[0])
    except IndexRunFailed as exc:
        fail(str(exc))
    # Every run succeeded: a signal while the summary prints stops it with that said.
    with _stop_on_signals([lambda: _SUMMARY_STOP]):
        echo(f"\n{len(reports)} runs, all succeeded, in {time.time() - started:.1f} s")
        from rag_pipeline.core.index.status import last_reconciliation

        reconciled = last_reconciliation(warehouse)  # read once: three lines below report it
        _echo_reconciliation(reconciled, reports, read_before, documents_before, warehouse)
        if build.access is not None:
            from rag_pipeline.core.index.access_table import UNMATCHED_GLOB, globs_matching_nothing

            for glob in globs_matching_nothing(warehouse, build.access):
                echo("warning: " + UNMATCHED_GLOB.format(glob=glob))
        for entry in inventory(specs, warehouse):
            if not entry.declared:
                echo(f"note: {entry.key} is no longer declared in {config_source(config)}; its "
                      f"partitions ({', '.join(entry.embedding_chunkers)}) are kept but neither "
                      f"built nor served: `{invocation.command('models', '--drop', entry.key)}` "
                      "deletes them")
        echo(f"\nbuilt (DuckDB file {warehouse.db_path}):")
        for table, rows in row_counts(warehouse).items():
            for row in rows:
                echo(f"  {table:11s} {' / '.join(str(v) for v in row[:-1]):55s} {row[-1]:>7}")
        from rag_pipeline.cli.status import echo_over_the_window

        echo_over_the_window(warehouse, build.models[0].max_tokens)
        _echo_not_indexed(warehouse, invocation, not_indexed_before, reconciled)
        _echo_hidden(reconciled)
        if not no_eval:
            _echo_evaluation(build, invocation)


def _documents_run(reports) -> str | None:
    """The id of the documents run among ``reports`` that succeeded (None: none did)."""
    return next((r.run_id for r in reports if r.job == "documents_job" and r.status == "SUCCESS"),
                None)


def _read_before(instance, reports):
    """The sensor's or schedule's documents run that had already read the corpus as this
    command's documents run found it (:func:`~rag_pipeline.orchestration.corpus_watch.
    earlier_reading`), or None."""
    from rag_pipeline.orchestration.corpus_watch import earlier_reading

    run_id = _documents_run(reports)
    return earlier_reading(instance, run_id) if run_id is not None else None


def _echo_reconciliation(reconciled, reports, read_before=None, served_before=None,
                         warehouse=None) -> None:
    """What this command's documents run found in the corpus (``reconciled``: the last
    reconciliation and when), on one line (its counts; the ids are in ``status`` and the
    ``reconciliation`` table); the run that had already indexed the corpus as it is when
    this one found nothing changed (``read_before``); and, when the index served before this
    command had not held the last reading (``served_before``: its documents; an ``index``
    stopped after its documents run, a run by hand), what the documents served now changed
    against it."""
    from rag_pipeline.core.index.status import served_documents
    from rag_pipeline.core.ingest.reconcile import SERVED_CHANGES, counts_summary, served_changes

    if reconciled is None or _documents_run(reports) is None:
        return
    echo(f"documents: {reconciled[0].summary()}")
    if read_before is not None:
        at = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(read_before.ended_at))
        echo(f"  ({read_before.launched_by}'s documents run {read_before.run_id[:8]} had read the "
             f"corpus as it is now, at {at}: {counts_summary(read_before.counts)})")
    if served_before is not None and warehouse is not None:
        changes = served_changes(served_before, served_documents(warehouse))
        if any(changes.values()):
            echo("  (this index serves what an earlier documents run read and no index had "
                 "served: against the documents served before, "
                 + ", ".join(f"{change.value} {changes[change.value]}" for change in SERVED_CHANGES)
                 + ")")


def _corpus_now(defs) -> str:
    """The corpus's watch token now, as ``corpus_watch`` takes it (``""`` when it cannot be
    read: no run then matches it, and the command launches its own)."""
    from rag_pipeline.core.ingest.sources import SourceError
    from rag_pipeline.orchestration.corpus_watch import watch_token

    try:
        return watch_token(defs.resources["corpus"])
    except SourceError:
        return ""


def _not_indexed_ids(warehouse) -> set[str]:
    """The failed and skipped documents the data folder's DuckDB file lists; none when there
    is no such file yet (nothing imported: a first index starts its runs sooner), or it cannot
    be read (publishing writes it again)."""
    if not warehouse.db_path.exists():
        return set()
    import duckdb

    from rag_pipeline.core.index.status import documents_not_indexed

    try:
        return {document_id for _, document_id, _ in documents_not_indexed(warehouse)}
    except (duckdb.Error, OSError):
        return set()


def _echo_not_indexed(warehouse, invocation: Invocation, before: set[str], reconciled,
                      shown: int = 10) -> None:
    """The failed and skipped documents, with why (the first ``shown`` of each, those not
    among ``before``, the ones listed before this run, first: a file that broke now is never
    behind older ones; a document ``reconciled`` says left the index says so), and the
    documents read with a caveat (part left out, or a charset guessed)."""
    from rag_pipeline.cli.status import echo_left_out, echo_not_indexed
    from rag_pipeline.core.index.status import documents_left_out, documents_not_indexed
    from rag_pipeline.core.ingest.reconcile import LEFT_THE_INDEX

    partly = documents_left_out(warehouse)
    if partly:
        echo("\nread with a caveat: part left out, or a charset guessed (each document's notes "
             "in the documents table):")
        echo_left_out(partly, shown)

    rows = documents_not_indexed(warehouse)
    if not rows:
        return
    new = sum(document_id not in before for _, document_id, _ in rows)
    first = f"{new} new in this run, listed first; " if new and len(rows) > new else ""
    echo(f"\nnot indexed ({first}a failed document is read again when its file changes, or with "
         f"--retry-failed; `{invocation.command('status')}` lists them all):")
    rows.sort(key=lambda row: row[1] in before)
    leaving = {r.document_id for r in reconciled[0].rows
               if r.detail.endswith(LEFT_THE_INDEX)} if reconciled is not None else set()
    for status in ("failed", "skipped"):
        echo_not_indexed(status, [
            (document_id, f"{reason}; {LEFT_THE_INDEX}" if document_id in leaving else reason)
            for s, document_id, reason in rows if s == status], shown)


def _echo_hidden(reconciled, shown: int = 10) -> None:
    """The hidden names the last listing left out (``reconciled``'s; the first ``shown``), on
    one line."""
    from rag_pipeline.core.ingest.reconcile import Change
    from rag_pipeline.core.text.arguments import listed
    from rag_pipeline.core.text.terminal import one_line

    names = reconciled[0].ids(Change.HIDDEN) if reconciled is not None else []
    if names:
        echo(f"\nhidden (names starting with '.', not part of the corpus): "
             f"{listed((one_line(name) for name in names), shown)}")


def _refuse_another_build(build, home: Path) -> None:
    """A one-line failure when the running daemon's code location builds something else than
    this ``index`` was asked for (its runs would build that instead)."""
    from rag_pipeline.core.embedding.models import ModelConfigError
    from rag_pipeline.orchestration.daemon_build import build_differences, daemon_build

    try:
        served = daemon_build(home, os.environ)
    except (ModelConfigError, FileNotFoundError) as exc:
        fail(f"a Dagster daemon is running on this instance with a configuration that does not "
             f"resolve ({exc}): stop it, or start it with the configuration index is given")
    differences = build_differences(build, served)
    if differences:
        fail("a Dagster daemon is running on this instance for another build: "
             f"{'; '.join(differences)}. Start it with the same configuration "
             "(RAG_PIPELINE_CONFIG, RAG_PIPELINE_DATA_DIR, RAG_PIPELINE_CORPUS, "
             "RAG_PIPELINE_PROFILE) or stop it")


def _echo_scores(build) -> None:
    """One line per model the gold set scored: recall@4 (its Wilson interval), recall@20 and
    MRR of the ``header`` chunker (else the profile's first) with the hybrid retriever, every
    query style; the rest is in ``eval_summary``."""
    from rag_pipeline.core.evaluation.evaluate import ALL_STYLES
    from rag_pipeline.core.evaluation.report import HEADLINE_RETRIEVER
    from rag_pipeline.core.evaluation.run import behind_note, chunkers_behind, evaluation_is_stale
    from rag_pipeline.core.index.generations import current_generations
    from rag_pipeline.core.index.plan import EVAL_SUMMARY

    chunker = "header" if "header" in build.chunker_keys else build.chunker_keys[0]
    lines, notes = [], []
    served = current_generations(build.warehouse)
    for model in build.model_keys:
        table = build.warehouse.read_or_none(EVAL_SUMMARY, {"model": model})
        rows = [] if table is None else [
            row for row in table.to_pylist()
            if (row["chunker"], row["retriever"], row["style"]) == (chunker, HEADLINE_RETRIEVER,
                                                                    ALL_STYLES)]
        if not rows:
            continue
        row = rows[0]
        lines.append(f"  {model}: recall@4 {row['recall@4']:.3f} (95% "
                     f"{row['recall@4_low']:.3f}-{row['recall@4_high']:.3f}), recall@20 "
                     f"{row['recall@20']:.3f}, MRR {row['mrr']:.3f} on {row['queries']} "
                     "queries")
        errors = build.warehouse.read_or_none("eval_gold_errors", {"model": model})
        if errors is not None and errors.num_rows:
            notes.append(f"  {model}: {errors.num_rows} gold line(s) not scored, each with why: "
                         "`select * from eval_gold_errors`")
        if behind := chunkers_behind(build.warehouse, model,
                                     sorted(g.chunker for g in served if g.model == model)):
            notes.append(f"  {model}: {behind_note(behind)}")
    for partition in build.warehouse.partitions(EVAL_SUMMARY):
        other = partition.get("model", "")
        if other not in build.model_keys and evaluation_is_stale(build.warehouse, other):
            notes.append(f"  {other}: its rows in the eval_* tables scored older documents (this "
                         "profile does not build it; an `index` whose profile does scores it again)")
    if lines:
        echo(f"\nevaluation ({chunker} x {HEADLINE_RETRIEVER}, gold set; every chunker, retriever "
             "and query style: the eval_summary table):")
        for line in lines + notes:
            echo(line)


def _echo_evaluation(build, invocation: Invocation) -> None:
    """The evaluation's scores, or its one line when there is no gold set for this corpus (it
    was skipped: the scores an earlier gold set left in ``eval_summary`` are not this
    corpus's)."""
    from rag_pipeline.core.evaluation.gold import no_gold_set_reason

    reason = no_gold_set_reason(build.warehouse, build.gold_path, build.ood_path)
    if reason is not None:
        echo(f"\nevaluation skipped: {invocation.commands_in(reason)}")
    else:
        _echo_scores(build)

