"""``rag-pipeline``: index, status, ask and eval from a terminal."""

from __future__ import annotations

import math
import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from rag_pipeline.core.answer.gate import DEFAULT_CUT, MAX_SOURCES, gate_cut
from rag_pipeline.core.chunking.strategies import DEFAULT_STRATEGY, ChunkingStrategy
from rag_pipeline.core.retrieval.retriever import DEFAULT_ANALYZER, Retriever
from rag_pipeline.core.text.analyzers import Analyzer
from rag_pipeline.core.text.terminal import escape_controls
from rag_pipeline.project_paths import (
    DAGSTER_HOME,
    ENV_CONFIG,
    ENV_DATA_DIR,
    ENV_PROFILE,
    ENV_WAREHOUSE,
)

if TYPE_CHECKING:
    from rag_pipeline.core.answer.ask import Answer
    from rag_pipeline.core.embedding.models import ModelSpec
    from rag_pipeline.core.evaluation.beir import BeirReport
    from rag_pipeline.core.evaluation.evaluate import EvalReport
    from rag_pipeline.core.retrieval.rerank import Reranker


def _prepare_environment() -> None:
    """The CLI is the process edge: no model hub, and the project's own Dagster instance."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("DAGSTER_HOME", str(DAGSTER_HOME))
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def _echo(message: str = "", err: bool = False) -> None:
    """Print one line; control characters from documents or endpoints are escaped first."""
    click.echo(escape_controls(message), err=err)


def _declared_models():
    """The declared models, or a one-line failure naming what is wrong with the config file."""
    from rag_pipeline.core.config.keys import declared_models
    from rag_pipeline.core.config.parse import load_config
    from rag_pipeline.core.embedding.models import ModelConfigError
    from rag_pipeline.project_paths import config_path

    try:
        return declared_models(load_config(config_path()))
    except (ModelConfigError, FileNotFoundError) as exc:
        _fail(str(exc))


def _load_embedder(spec, data_dir: Path):
    """The loaded model (an int8 model not exported yet is exported, calibrated on its fixed
    texts, into the model cache)."""
    from rag_pipeline.core.embedding.embedder import load_embedder

    return load_embedder(spec)


def _location() -> str | None:
    """The ``--warehouse`` given to the command group (None: ``<data-dir>/warehouse``)."""
    return click.get_current_context().find_root().params.get("warehouse")




def _fail(message: str, code: int = 2) -> None:
    """Exit with ``error: <message>`` on stderr, as one line."""
    _echo(f"error: {' '.join(message.split())}", err=True)
    sys.exit(code)


class _FiniteFloatRange(click.FloatRange):
    """``click.FloatRange`` that also refuses NaN (which no range comparison catches)."""

    def convert(self, value: object, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail(f"{value!r} is not a number.", param, ctx)
        return number


class _OneLineErrors(click.Group):
    """Every failure ends in one line on stderr that names its cause: a usage error without the
    usage block, and an unexpected exception as its type and message, never a traceback."""

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: object) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.exceptions.NoArgsIsHelpError:
            raise
        except click.ClickException as exc:
            _fail(exc.format_message(), exc.exit_code)

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.Abort, click.exceptions.NoArgsIsHelpError):
            raise
        except click.ClickException as exc:
            _fail(exc.format_message(), exc.exit_code)
        except BrokenPipeError:
            # The reader of the output has gone (`rag-pipeline status | head`): stop quietly,
            # with what a process ended by SIGPIPE reports, and nothing left to flush.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(128 + signal.SIGPIPE)
        except Exception as exc:  # the last resort: the cause in one line, not a traceback
            _fail(f"{type(exc).__name__}: {exc}", 1)


@click.group(cls=_OneLineErrors)
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              envvar=ENV_DATA_DIR,
              help="Folder of rag.duckdb, the Parquet tables (unless --warehouse is given), the "
                   "bundled corpus's export and the evaluation's files (default: the config's "
                   f"[index] data_dir, else the project's data/; env {ENV_DATA_DIR}).")
@click.option("--warehouse", default=None, envvar=ENV_WAREHOUSE,
              help="Where the Parquet tables live: a folder or an object-store URI such as "
                   "s3://bucket/prefix (credentials from the AWS environment variables; "
                   f"env {ENV_WAREHOUSE}).")
@click.option("--config", "config_file", type=click.Path(path_type=Path), default=None,
              help="The configuration file (default: the project's rag_pipeline.toml; "
                   f"`rag-pipeline init DIR` writes one for a folder; env {ENV_CONFIG}).")
@click.pass_context
def main(ctx: click.Context, data_dir: Path | None, warehouse: str | None,
         config_file: Path | None) -> None:
    """A versioned hybrid search index that cites exact places and refuses when it must."""
    from rag_pipeline.project_paths import DEFAULT_DATA_DIR

    _prepare_environment()
    if config_file is not None:
        if not config_file.is_file():
            what = "is a folder" if config_file.is_dir() else "does not exist"
            _fail(f"--config {str(config_file)!r} {what}: it must name a rag_pipeline.toml file "
                  "(`rag-pipeline init DIR` writes one)")
        os.environ[ENV_CONFIG] = str(config_file.absolute())
    ctx.obj = data_dir or _config().data_dir or DEFAULT_DATA_DIR


def _config():
    """The configuration file, parsed, or a one-line failure naming what is wrong with it."""
    from rag_pipeline.core.config.parse import load_config
    from rag_pipeline.core.embedding.models import ModelConfigError
    from rag_pipeline.project_paths import config_path

    try:
        return load_config(config_path())
    except (ModelConfigError, FileNotFoundError) as exc:
        _fail(str(exc))


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


INDEX_LOCK = "rag-pipeline-index.lock"
"""The file in DAGSTER_HOME that one ``index`` at a time holds."""


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
        _fail(f"another `rag-pipeline index` is running on this Dagster instance ({holder}; "
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
        _echo(f"\nstopped by {exc}: the Dagster daemon, its code servers and the runs of this "
              f"index are stopped and marked canceled; the published index is as it was",
              err=True)
        sys.exit(128 + exc.signum)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@main.command()
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
@click.option("--verbose", is_flag=True, help="Also print every line the runs log (Dagster's "
                                              "debug stream).")
@click.pass_obj
def index(data_dir: Path, corpus: Path | None, refresh_corpus: bool, profile_name: str | None,
          no_eval: bool, verbose: bool) -> None:
    """Build or update the whole index through Dagster: runs are launched through the code
    location and carried down by the index_automation sensor, as in the UI."""
    import dagster as dg

    from rag_pipeline.core.config.keys import write_lock
    from rag_pipeline.core.config.lock import effective_lock
    from rag_pipeline.core.config.parse import choose_profile, load_config
    from rag_pipeline.core.embedding.models import ModelConfigError
    from rag_pipeline.core.index.model_inventory import inventory
    from rag_pipeline.core.index.status import row_counts
    from rag_pipeline.core.storage.warehouse import Warehouse
    from rag_pipeline.project_paths import DEFAULT_DATA_DIR, ENV_CORPUS, ENV_DATA_DIR, config_path

    try:
        config = load_config(config_path())
        if corpus is None and config.corpus is not None:
            if not config.corpus.is_dir():
                _fail(f"[index] corpus of {config.path}: folder not found: {config.corpus}")
            corpus = config.corpus
        profile = choose_profile(config, profile_name, corpus is not None or bool(
            os.environ.get(ENV_CORPUS)))
        lock = effective_lock(config)
        unlocked = [d.name for d in config.models if d.name not in lock and d.adapt is None]
        specs = write_lock(config) if unlocked and config.path else _declared_models()
    except (ModelConfigError, FileNotFoundError) as exc:
        _fail(str(exc))
    if unlocked and config.path:
        _echo(f"locked new model(s) {', '.join(unlocked)} in {config.lock_path.name}")
    _use_profile(profile)
    keys = [s.key for s in specs if s.name in profile.models]
    _echo(f"profile {profile.name}: {', '.join(c.value for c in profile.chunkers)} x "
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
    env = {**os.environ, ENV_DATA_DIR: str(data_dir.absolute()), ENV_PROFILE: profile.name}
    if _location() is not None:
        env[ENV_WAREHOUSE] = _location()
    if corpus is not None:
        env[ENV_CORPUS] = str(corpus.absolute())
    defs = build_definitions(data_dir=data_dir.absolute(), corpus_dir=corpus, location=_location())
    chunkers = defs.resolve_job_def("chunks_job").partitions_def.get_partition_keys()
    models = defs.resolve_job_def("eval_job").partitions_def.get_partition_keys()
    warehouse = Warehouse(data_dir, _location())
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
                _fail("a Dagster daemon is running with its own code location: for --data-dir / "
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
    except IndexRunFailed as exc:
        _fail(str(exc))
    _echo(f"\n{len(reports)} runs, all succeeded, in {time.time() - started:.1f} s")
    for entry in inventory(specs, warehouse):
        if not entry.declared:
            _echo(f"note: {entry.key} is no longer declared in rag_pipeline.toml; its "
                  f"partitions ({', '.join(entry.embedding_chunkers)}) are kept but neither "
                  f"built nor served: `rag-pipeline models --drop '{entry.key}'` deletes them")
    _echo(f"\nbuilt (DuckDB file {warehouse.db_path}):")
    for table, rows in row_counts(warehouse).items():
        for row in rows:
            _echo(f"  {table:11s} {' / '.join(str(v) for v in row[:-1]):55s} {row[-1]:>7}")
    if not no_eval:
        _echo_unscored(warehouse)


def _echo_unscored(warehouse) -> None:
    """The evaluation's one line when the gold set the runs used is not of this corpus."""
    from rag_pipeline.core.evaluation.gold import NoGoldSetError, check_corpus, load_gold_set
    from rag_pipeline.core.ingest import DocumentStatus
    from rag_pipeline.core.storage.table_names import DOCUMENTS
    from rag_pipeline.project_paths import DEFAULT_EVAL_DIR, ENV_EVAL_DIR

    gold = load_gold_set(Path(os.environ.get(ENV_EVAL_DIR) or DEFAULT_EVAL_DIR) / "gold.jsonl")
    documents = warehouse.read(DOCUMENTS, columns=["document_id", "status"]).to_pylist()
    try:
        check_corpus(gold, [d["document_id"] for d in documents if d["status"] == DocumentStatus.OK])
    except NoGoldSetError as exc:
        _echo(f"\nevaluation: {exc}")


def _use_profile(profile) -> None:
    """Makes ``profile`` the one this process's definitions build (the chunker partitions are
    declared when :mod:`rag_pipeline.orchestration.partitions` is first imported)."""
    os.environ[ENV_PROFILE] = profile.name
    partitions = sys.modules.get("rag_pipeline.orchestration.partitions")
    if partitions is not None and partitions.chunker_partitions.get_partition_keys() != [
            c.value for c in profile.chunkers]:
        _fail(f"this process already declared the chunkers "
              f"{partitions.chunker_partitions.get_partition_keys()}, not profile "
              f"{profile.name!r}'s: run the command in a fresh process")


@main.command()
@click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where to write the configuration (default: <FOLDER>.rag_pipeline.toml next "
                   "to the folder).")
@click.option("--force", is_flag=True, help="Overwrite an existing configuration file.")
@click.pass_context
def init(ctx: click.Context, folder: Path, output: Path | None, force: bool) -> None:
    """Write a commented configuration for FOLDER (its corpus, its data folder, the production
    profile) next to it, so the project's own rag_pipeline.toml stays as it is."""
    from rag_pipeline.core.config.init_file import folder_config_text
    from rag_pipeline.core.config.parse import parse_config

    folder = folder.resolve()
    output = (output or folder.with_name(folder.name + ".rag_pipeline.toml")).absolute()
    given = ctx.find_root().params.get("data_dir")
    data_dir = (given or folder.with_name(folder.name + ".rag-data")).absolute()
    if output.exists() and not force:
        _fail(f"{output} exists: edit it, or pass --force to write it again")
    if output.resolve().is_relative_to(folder) or data_dir.resolve().is_relative_to(folder):
        _fail(f"the configuration and the data folder must be outside {folder} (its files are "
              "indexed)")
    text = folder_config_text(folder, data_dir, output, _config())
    parse_config(text, output.parent, output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    _echo(f"wrote {output}: corpus {folder}, data folder {data_dir}, profile production")
    _echo(f"next: rag-pipeline --config {output} index")


@main.command()
@click.option("--lock", "lock", is_flag=True,
              help="Pin every declared model's current files in rag_pipeline.lock.json.")
@click.option("--drop", "drop_key", default=None,
              help="Delete every stored partition of this undeclared model key.")
@click.pass_obj
def models(data_dir: Path, lock: bool, drop_key: str | None) -> None:
    """Declared models and chunkers (rag_pipeline.toml), their keys and stored partitions."""
    from rag_pipeline.core.config.keys import model_specs, write_lock
    from rag_pipeline.core.config.parse import load_config
    from rag_pipeline.core.embedding.models import ModelConfigError, ModelMismatchError
    from rag_pipeline.core.index.model_inventory import drop_model_partitions, file_status, inventory
    from rag_pipeline.core.storage.warehouse import Warehouse
    from rag_pipeline.project_paths import config_path

    try:
        config = load_config(config_path())
        specs = write_lock(config) if lock else model_specs(config)
    except (ModelConfigError, FileNotFoundError) as exc:
        _fail(str(exc))
    warehouse = Warehouse(data_dir)
    if drop_key is not None:
        from rag_pipeline.core.config.validation import InvalidArgumentError

        try:
            dropped = drop_model_partitions(warehouse, drop_key, specs)
        except (ModelMismatchError, InvalidArgumentError) as exc:
            _fail(f"--drop: {exc}")
        click.echo(f"dropped {dropped} stored partition(s) of {drop_key}")
    click.echo(f"config: {config.path or 'built-in default (no rag_pipeline.toml)'}"
               f"{'  (lock written)' if lock else ''}")
    click.echo(f"chunkers: {', '.join(c.value for c in config.chunkers)}")
    declarations = {d.name: d for d in config.models}
    click.echo(f"{'key':34s} {'backend':8s} {'precision':9s} {'window':>6s} {'batch':>5s} "
               f"{'cut':>6s}  source")
    for spec in specs:
        declaration = declarations[spec.name]
        cut = f"{spec.cut:.3f}" if spec.cut is not None else "-"
        source = (declaration.source.describe() if declaration.source is not None
                  else f"adapted from {declaration.adapt.base}")
        click.echo(f"{spec.key:34s} {spec.backend.value:8s} {spec.precision.value:9s} "
                   f"{spec.max_tokens:6d} {spec.batch_size:5d} {cut:>6s}  "
                   f"{source}{'  (default)' if spec is specs[0] else ''}")
        state = file_status(spec)
        if state != "ok":
            click.echo(f"  files: {state}")
    _print_profiles(config)
    click.echo("\nstored partitions:")
    built = set(_index_profile(config).chunkers)
    for entry in inventory(specs, warehouse):
        chunkers = ", ".join(entry.embedding_chunkers) or "none"
        if entry.declared:
            missing = sorted(c.value for c in built if c.value not in entry.embedding_chunkers)
            todo = f"; not built yet: {', '.join(missing)} (run `rag-pipeline index`)" if missing else ""
            click.echo(f"  {entry.key:34s} embeddings: {chunkers}{todo}")
        else:
            click.echo(f"  {entry.key:34s} NOT DECLARED (no longer built or served): embeddings: "
                       f"{chunkers}; tables {', '.join(entry.tables)}. Keep them to go back "
                       f"(declare the model again), or delete them: rag-pipeline models --drop "
                       f"'{entry.key}'")


def _index_profile(config):
    """The profile `index` builds without --profile, by the environment and the config."""
    from rag_pipeline.core.config.parse import choose_profile
    from rag_pipeline.project_paths import ENV_CORPUS

    return choose_profile(config, os.environ.get(ENV_PROFILE) or None,
                          config.corpus is not None or bool(os.environ.get(ENV_CORPUS)))


def _print_profiles(config) -> None:
    """The profiles, and which one `index` builds without --profile."""
    from rag_pipeline.core.config.parse import choose_profile
    from rag_pipeline.project_paths import ENV_CORPUS

    requested = os.environ.get(ENV_PROFILE) or None
    if config.corpus is not None or os.environ.get(ENV_CORPUS):
        default = f"{choose_profile(config, requested, True).name} (the configured corpus)"
    else:
        default = (f"{choose_profile(config, requested, False).name} for the bundled corpus, "
                   f"{choose_profile(config, requested, True).name} for --corpus DIR")
    click.echo(f"\nprofiles (`index --profile NAME`; without it: {default}):")
    for profile in config.profiles:
        click.echo(f"  {profile.name}: {', '.join(c.value for c in profile.chunkers)} x "
                   f"{', '.join(profile.models)}")


@main.command()
@click.pass_obj
def status(data_dir: Path) -> None:
    """Per partition: model, chunk and vector counts; documents ok / failed; stale rows."""
    from rag_pipeline.core.index.status import index_status, unhealthy_files
    from rag_pipeline.core.storage.query_db import refresh_query_db
    from rag_pipeline.core.storage.warehouse import IndexNotBuiltError, Warehouse

    warehouse = Warehouse(data_dir, _location())
    try:
        if _location() is not None:
            # Another machine may have published since: refresh the local DuckDB snapshot
            # (never from a warehouse that has published nothing).
            refresh_query_db(warehouse)
        report = index_status(warehouse)
    except IndexNotBuiltError as exc:
        _fail(str(exc))
    skipped = f"{len(report.documents_skipped)} skipped, " if report.documents_skipped else ""
    _echo(f"documents: {report.documents_ok} ok, {len(report.documents_failed)} failed, "
               f"{skipped}{len(report.stale_documents)} stale")
    for document_id, reason in report.documents_failed:
        _echo(f"  failed  {document_id}: {reason}")
    for document_id, reason in report.documents_skipped:
        _echo(f"  skipped {document_id}: {reason}")
    for document_id in report.stale_documents:
        _echo(f"  stale   {document_id} (extracted by an older pipeline or extractor)")
    for document_id, chunkers in report.without_chunks:
        _echo(f"  no chunk {document_id}: ok, but yields no chunk under "
              f"{', '.join(chunkers)} (nothing but headings?), so it can never be found")
    for document_id, page, confidence in report.low_confidence_pages:
        _echo(f"  low OCR {document_id} page {page}: mean word confidence {confidence:.1f}, "
              f"under the floor")
    _echo(f"{'chunker':20s} {'model':28s} {'chunks':>7} {'vectors':>8} {'stale':>6} {'dense':>5}  "
          f"served generation (age)")
    for p in report.partitions:
        _echo(f"{p.chunker:20s} {p.model:28s} {p.chunks:7d} {p.vectors:8d} "
              f"{p.stale_rows:6d} {p.dense_path.value:>5}  {p.generation} ({_age(p.age_seconds())})")
    for (chunker, analyzer), n in sorted(report.bm25_terms.items()):
        _echo(f"bm25 {chunker:20s} {analyzer:8s} {n:7d} terms")
    unhealthy = unhealthy_files(warehouse)
    for file in unhealthy:
        _echo(f"UNHEALTHY {file.partition}: {file.reason}")
    if unhealthy:
        sys.exit(1)


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _ask_serve(data_dir: Path, question: str, chunker: str, model_key: str,
               base_url: str | None, params: dict[str, str]) -> tuple[Answer, str] | None:
    """The answer of a `serve` running on this data folder for this chunker, model and base URL
    (with where it runs), or None: then `ask` loads the index and the model itself."""
    from rag_pipeline.core.answer.answer_json import answer_from_json
    from rag_pipeline.core.runtime.serve_record import ask_running, read_serve_record

    record = read_serve_record(data_dir)
    if record is None or (record.chunker, record.model_key, record.base_url) != (
            chunker, model_key, base_url):
        return None
    data = ask_running(record, {"q": question, **params})
    if data is None:
        return None
    return answer_from_json(data), f"{record.url('/')} (pid {record.pid})"


def _print_answer(answer: Answer, show_prompt: bool, show_timings: bool, rerank_note: str,
                  answered_by: str = "") -> None:
    _echo(f"partition: {answer.partition}   cut: {answer.cut}"
          + (f"   {rerank_note}" if rerank_note else ""))
    if not answer.answered:
        _echo(answer.reason)
    else:
        _echo(f"{'#':>2}  {'document':28s} {'section':34s} {'fragment':22s} distance")
        for c in answer.citations:
            _echo(f"{c.index:>2}  {c.document_id[:28]:28s} {c.section[:34]:34s} "
                       f"{c.fragment:22s} {c.cosine_distance:.3f}")
        for c in answer.citations:
            more = f"  (also at {', '.join(c.locations[1:])})" if len(c.locations) > 1 else ""
            _echo(f"\n[{c.index}] {c.url}{more}\n{c.quote}")
        if answer.rendered_answer:
            _echo("\n" + answer.rendered_answer)
        if show_prompt and answer.prompt:
            _echo("\n--- prompt ---\n" + answer.prompt)
    if show_timings:
        _echo("\ntimings (ms): " + ", ".join(f"{k} {v * 1000:.1f}"
                                                 for k, v in answer.timings.items()))
        if answered_by:
            _echo(answered_by)


def _load_reranker(folder: Path) -> Reranker:
    """The cross-encoder in ``folder``, or a one-line failure naming the folder and the cause."""
    from rag_pipeline.core.retrieval.rerank import Reranker, RerankSettings

    try:
        return Reranker(RerankSettings(folder))
    except (OSError, ValueError) as exc:
        _fail(f"--rerank {str(folder)!r} could not be loaded: {type(exc).__name__}: {exc}")


QUESTION_OPTIONS = (
    click.option("--model", "model_key", default=None,
                 help="Model partition key (default: the default model of rag_pipeline.toml)."),
    click.option("--retriever", type=click.Choice([r.value for r in Retriever]),
                 default=Retriever.HYBRID.value, show_default=True),
    click.option("--analyzer", type=click.Choice([a.value for a in Analyzer]),
                 default=DEFAULT_ANALYZER.value, show_default=True, help="BM25 analyzer."),
    click.option("--k", "max_sources", type=click.IntRange(1, 20), default=MAX_SOURCES,
                 show_default=True, help="At most this many sources are kept."),
    click.option("--cut", "--threshold", "cut", type=float, default=None,
                 help="Cosine-distance cut in [0, 2]: only chunks under it are kept (--threshold "
                      "is the same; default: the model's `cut` in rag_pipeline.toml, else "
                      f"{DEFAULT_CUT})."),
    click.option("--base-url", default=None,
                 help="Cite URLs under this http(s) or file URL instead of file URIs."),
)
"""The options `ask` and `serve` share: same names, defaults and help."""


def question_options(command):
    """Adds :data:`QUESTION_OPTIONS` to a command, in that order."""
    for option in reversed(QUESTION_OPTIONS):
        command = option(command)
    return command


@main.command()
@click.argument("question")
@click.option("--chunker", default=DEFAULT_STRATEGY.value, show_default=True,
              help="Chunking partition: " + ", ".join(s.value for s in ChunkingStrategy) + ".")
@question_options
@click.option("--rerank", "rerank_model", default=None,
              help="Cross-encoder folder to rerank the hybrid top 25 (off by default).")
@click.option("--no-collapse", is_flag=True, help="Keep identical passages as separate hits.")
@click.option("--generate-url", default=None,
              help="OpenAI-compatible endpoint (e.g. http://127.0.0.1:8080/v1); off by default.")
@click.option("--generate-model", default=None,
              help="The model name the --generate-url endpoint serves (required with it).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--prompt", "show_prompt", is_flag=True, help="Print the prompt too.")
@click.option("--timings", "show_timings", is_flag=True, help="Print the time per stage.")
@click.pass_obj
def ask(data_dir: Path, question: str, chunker: str, model_key: str | None, retriever: str,
        analyzer: str, max_sources: int, cut: float, rerank_model: str | None,
        no_collapse: bool,
        base_url: str | None, generate_url: str | None, generate_model: str | None, as_json: bool,
        show_prompt: bool, show_timings: bool) -> None:
    """Answer QUESTION from the index with citations, or refuse."""
    import json

    from rag_pipeline.core.answer.answer_json import answer_json
    from rag_pipeline.core.answer.ask import InvalidQuestionError, check_question
    from rag_pipeline.core.config.validation import (
        InvalidArgumentError,
        check_base_url,
        check_chunker,
        check_endpoint_url,
        check_model_folder,
        check_threshold,
    )
    from rag_pipeline.core.embedding.models import ModelMismatchError, find_model
    try:
        question = check_question(question)
    except InvalidQuestionError as exc:
        _fail(str(exc))
    if (generate_url is None) != (generate_model is None):
        _fail("--generate-url and --generate-model go together: give the endpoint and the model "
              "name it serves, or neither")
    try:
        check_chunker(chunker)
        if cut is not None:
            check_threshold(cut, "--cut/--threshold")
        if base_url is not None:
            check_base_url(base_url, "--base-url")
        if generate_url is not None:
            check_endpoint_url(generate_url, "--generate-url")
        if rerank_model is not None:
            check_model_folder(Path(rerank_model), "--rerank")
    except InvalidArgumentError as exc:
        _fail(str(exc))
    models = _declared_models()
    try:
        spec = find_model(model_key, models) if model_key else models[0]
    except ModelMismatchError as exc:
        _fail(str(exc))
    the_cut = gate_cut(spec, cut)
    if not (rerank_model or generate_url or show_prompt or no_collapse):
        served = _ask_serve(data_dir, question, chunker, spec.key, base_url,
                            {"retriever": retriever, "analyzer": analyzer, "k": str(max_sources),
                             "cut": repr(the_cut)})
        if served is not None:
            answer, where = served
            if as_json:
                _echo(json.dumps(answer_json(answer), ensure_ascii=False, indent=2))
                return
            _print_answer(answer, show_prompt, show_timings, "",
                          f"answered by: the running serve at {where}")
            return
    # Only now the modules that load an index and a model (a served answer needs none of them).
    from rag_pipeline.core.answer.ask import AskSettings, EmptyQuestionError
    from rag_pipeline.core.answer.ask import ask as run_ask
    from rag_pipeline.core.answer.generation import GenerationError, GeneratorSettings
    from rag_pipeline.core.embedding.export import ModelNotExportedError
    from rag_pipeline.core.index.store import UnknownPartitionError, load_partition
    from rag_pipeline.core.retrieval.retriever import RetrievalSettings
    from rag_pipeline.core.storage.warehouse import IndexNotBuiltError

    started = time.perf_counter()
    try:
        index = load_partition(data_dir, chunker, spec.key, _location())
        embedder = _load_embedder(spec, data_dir)
        reranker = _load_reranker(Path(rerank_model)) if rerank_model else None
        settings = AskSettings(
            retrieval=RetrievalSettings(retriever=Retriever(retriever),
                                        analyzer=Analyzer(analyzer),
                                        collapse_duplicates=not no_collapse),
            cut=the_cut,
            max_sources=max_sources,
            base_url=base_url,
            generator=GeneratorSettings(base_url=generate_url, model=generate_model)
            if generate_url else None)
        loaded = time.perf_counter() - started
        answer = run_ask(question, index, embedder, settings, reranker)
    except (IndexNotBuiltError, UnknownPartitionError, ModelMismatchError, EmptyQuestionError,
            GenerationError, FileNotFoundError, ModelNotExportedError) as exc:
        _fail(str(exc))
    if as_json:
        _echo(json.dumps(answer_json(answer), ensure_ascii=False, indent=2))
        return
    _print_answer(answer, show_prompt, show_timings, "rerank: on" if reranker else "",
                  f"answered by: this process (index and model loaded in {loaded:.1f} s; a "
                  "running `serve` on this data folder answers in milliseconds)")


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option("--chunker", type=click.Choice([s.value for s in ChunkingStrategy]),
              default=DEFAULT_STRATEGY.value, show_default=True, help="Chunking partition.")
@question_options
@click.option("--workers", type=click.IntRange(1, 64), default=None,
              help="Questions answered at once (default: the number of CPUs).")
@click.option("--poll", "poll_seconds", type=_FiniteFloatRange(0.05, 3600), default=1.0,
              show_default=True, help="Seconds between checks for a new index generation.")
@click.option("--access-log", is_flag=True, help="Log every request.")
@click.option("--query-backend", type=click.Choice(["onnxruntime", "openvino", "model"]),
              default="onnxruntime", show_default=True,
              help="onnxruntime or openvino: questions run through the model's weights converted "
                   "to that runtime at fp32 (checked at start to give the model's own vectors); "
                   "model: the model's own backend.")
@click.option("--query-streams", type=click.IntRange(1, 64), default=1, show_default=True,
              help="OpenVINO question streams: 1 gives each question every core (lowest latency "
                   "for one client); more answer that many side by side (more throughput under "
                   "load).")
@click.option("--query-threads", type=click.IntRange(1, 64), default=None,
              help="ONNX Runtime: threads for a question embedded while no other is (default: "
                   "every core); questions side by side always get one each. 1 puts every "
                   "question on one core: slower for one client, as fast or a little faster "
                   "under load.")
@click.pass_obj
def serve(data_dir: Path, host: str, port: int, chunker: str, model_key: str | None, retriever: str,
          analyzer: str, max_sources: int, cut: float | None, base_url: str | None,
          workers: int | None, poll_seconds: float, access_log: bool, query_backend: str,
          query_streams: int, query_threads: int | None) -> None:
    """Answer questions over HTTP: POST /ask, GET /ask?q=, /health, /status, and a page at /."""
    from rag_pipeline.core.config.validation import InvalidArgumentError, check_base_url, check_threshold
    from rag_pipeline.core.embedding.models import ModelMismatchError, find_model
    from rag_pipeline.core.index.store import UnknownPartitionError
    from rag_pipeline.core.storage.warehouse import IndexNotBuiltError
    from rag_pipeline.service.query_service import ServeSettings
    from rag_pipeline.service.run import serve_forever

    try:
        if cut is not None:
            check_threshold(cut, "--cut/--threshold")
        if base_url is not None:
            check_base_url(base_url, "--base-url")
    except InvalidArgumentError as exc:
        _fail(str(exc))
    models = _declared_models()
    try:
        spec = find_model(model_key, models) if model_key else models[0]
        settings = ServeSettings(
            chunker=chunker, model_key=spec.key, retriever=Retriever(retriever),
            analyzer=Analyzer(analyzer),
            cut=cut,
            max_sources=max_sources, base_url=base_url,
            workers=workers or os.cpu_count() or 1)
        serve_forever(data_dir, spec, settings, host=host, port=port, poll_seconds=poll_seconds,
                      access_log=access_log, echo=_echo,
                      query_runtime=None if query_backend == "model" else query_backend,
                      query_streams=query_streams, query_threads=query_threads)
    except (IndexNotBuiltError, UnknownPartitionError, ModelMismatchError, FileNotFoundError,
            OSError) as exc:
        _fail(str(exc))


@main.command(name="eval")
@click.option("--gold", "gold_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="Gold JSONL (default: the bundled Python reference set).")
@click.option("--ood", "ood_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="Out-of-domain JSONL (default: the bundled set).")
@click.option("--chunker", "chunkers", multiple=True,
              help="Chunker partition(s) to evaluate (default: every built one).")
@click.option("--model", "model_key", default=None, help="Model partition key.")
@click.option("--versus", "versus_key", default=None,
              help="Another model key: evaluate it too and compare the two models on the same "
                   "chunkers and queries (paired sign tests).")
@click.option("--beir", "beir_dir", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=None, help="Evaluate on a BEIR dataset folder instead (corpus.jsonl, "
                                 "queries.jsonl, qrels/test.tsv).")
@click.option("--k1", "k1_values", type=_FiniteFloatRange(0.0, None), multiple=True,
              help="BM25 k1 for --beir, a finite number >= 0 (repeatable; default the design's "
                   "1.2).")
@click.option("--candidates", is_flag=True,
              help="Also measure every candidate retrieval setting against the default (paired "
                   "sign tests per query style; embeds the header partition's sentences once).")
@click.option("--sentences", "sentence_vectors", is_flag=True,
              help="Embed the header partition's sentences (cached) for the best-sentence "
                   "refusal signal.")
@click.option("--held-out", "held_out", is_flag=True,
              help="With --model ADAPTED --versus BASE: score only the gold lines of the documents "
                   "the adapted model never trained on, per style, and apply the adoption rule.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_obj
def evaluate_command(data_dir: Path, gold_path: Path | None, ood_path: Path | None, chunkers: tuple[str, ...],
                     model_key: str | None, versus_key: str | None, beir_dir: Path | None,
                     k1_values: tuple[float, ...], candidates: bool, sentence_vectors: bool,
                     held_out: bool, as_json: bool) -> None:
    """Measure retrieval (no generation): recall, MRR, destroyed answers, paired tests, sweep."""
    from rag_pipeline.core.config.validation import InvalidArgumentError, check_chunker
    from rag_pipeline.core.embedding.export import ModelNotExportedError
    from rag_pipeline.core.embedding.models import ModelMismatchError, find_model
    from rag_pipeline.core.evaluation.gold import GoldFormatError
    from rag_pipeline.core.index.store import UnknownPartitionError
    from rag_pipeline.core.storage.warehouse import IndexNotBuiltError
    from rag_pipeline.project_paths import DEFAULT_EVAL_DIR

    models = _declared_models()
    try:
        for name in chunkers:
            check_chunker(name)
        spec = find_model(model_key, models) if model_key else models[0]
    except (InvalidArgumentError, ModelMismatchError, ModelNotExportedError) as exc:
        _fail(str(exc))
    if beir_dir is not None:
        _print_beir(_run_beir(data_dir, beir_dir, spec, k1_values, as_json, candidates), spec,
                    as_json)
        return
    if held_out:
        if versus_key is None:
            _fail("--held-out compares two models: give --model ADAPTED --versus BASE")
        _compare_held_out(data_dir, spec, versus_key, gold_path or DEFAULT_EVAL_DIR / "gold.jsonl",
                          ood_path or DEFAULT_EVAL_DIR / "ood.jsonl", list(chunkers) or ["header"])
        return

    from rag_pipeline.core.evaluation.run import run_eval

    try:
        report = run_eval(data_dir, spec, gold_path or DEFAULT_EVAL_DIR / "gold.jsonl",
                          ood_path or DEFAULT_EVAL_DIR / "ood.jsonl", list(chunkers) or None,
                          location=_location(), candidates=candidates,
                          sentence_vectors=sentence_vectors)
    except (IndexNotBuiltError, UnknownPartitionError, GoldFormatError) as exc:
        _fail(str(exc))
    if report.skipped:
        if gold_path is not None:
            _fail(report.skipped)
        if as_json:
            import json

            _echo(json.dumps({"skipped": report.skipped}))
        else:
            _echo(report.skipped)
        return
    _print_eval(report, spec, as_json)
    if versus_key is not None:
        _compare_models(data_dir, spec, report, versus_key, gold_path or DEFAULT_EVAL_DIR /
                        "gold.jsonl", ood_path or DEFAULT_EVAL_DIR / "ood.jsonl", chunkers)


@main.command()
@click.option("--model", "model_key", default=None,
              help="The adapted model's key (default: every declared adapted model).")
@click.option("--force", is_flag=True, help="Train again even when the folder is trained.")
def adapt(model_key: str | None, force: bool) -> None:
    """Train the declared adapted model(s) on pairs made from the corpus (see README
    "An adapted model"); a trained folder whose key and files match is kept."""
    from rag_pipeline.core.config.parse import load_config
    from rag_pipeline.core.embedding.adaptation import (
        ModelNotTrainedError,
        adapt_model,
        corpus_documents,
        trained_result,
    )
    from rag_pipeline.core.embedding.models import ModelMismatchError, find_model
    from rag_pipeline.project_paths import config_path

    models = _declared_models()
    adapted = [m for m in models if m.adaptation is not None]
    try:
        chosen = [find_model(model_key, models)] if model_key else adapted
    except ModelMismatchError as exc:
        _fail(str(exc))
    if not chosen or any(m.adaptation is None for m in chosen):
        _fail(f"no adapted model {'named ' + model_key if model_key else 'is declared'} "
              f"(declared adapted: {[m.key for m in adapted]})")
    corpus = load_config(config_path()).corpus
    for spec in chosen:
        if not force:
            try:
                result = trained_result(spec)
            except ModelNotTrainedError:
                result = None
            except ModelMismatchError as exc:
                _echo(f"{exc}; training again", err=True)
                result = None
            if result is not None:
                _echo(f"{spec.key}: trained ({result.pairs} pairs, {result.steps} steps, loss "
                      f"{result.first_loss:.4f} -> {result.last_loss:.4f}) in {spec.path}")
                continue
        try:
            result = adapt_model(spec, corpus_documents(corpus), lambda line: _echo(line, err=True))
        except (ModelMismatchError, ValueError, FileNotFoundError) as exc:
            _fail(str(exc))
        _echo(f"{spec.key}: trained {result.pairs} pairs, {result.steps} steps, loss "
              f"{result.first_loss:.4f} -> {result.last_loss:.4f}, {result.seconds / 60:.1f} min, "
              f"weights sha256 {result.weights_sha256[:12]}…, in {spec.path}")


def _compare_held_out(data_dir: Path, spec, versus_key: str, gold_path: Path, ood_path: Path,
                      chunkers: list[str]) -> None:
    """The adapted model against its base on the held-out half of the gold set only: per style
    and k, recall with Wilson intervals, paired sign tests, and the adoption rule."""
    import tempfile

    from rag_pipeline.core.embedding.export import ModelNotExportedError
    from rag_pipeline.core.embedding.models import ModelMismatchError, find_model
    from rag_pipeline.core.evaluation.adoption import (
        adoption,
        compare_by_style,
        held_out_lines,
        write_gold,
    )
    from rag_pipeline.core.evaluation.gold import GoldFormatError, load_gold_set
    from rag_pipeline.core.evaluation.run import run_eval
    from rag_pipeline.core.index.store import UnknownPartitionError
    from rag_pipeline.core.storage.warehouse import IndexNotBuiltError
    from rag_pipeline.core.text.markdown_table import markdown_table

    try:
        other = find_model(versus_key, _declared_models())
    except ModelMismatchError as exc:
        _fail(str(exc))
    if spec.adaptation is None:
        _fail(f"--held-out needs --model to be an adapted model; {spec.key} is not")
    try:
        gold = load_gold_set(gold_path)
    except GoldFormatError as exc:
        _fail(str(exc))
    canonical, _ = _corpus_texts(data_dir, None)
    held = spec.adaptation.recipe.held_out
    lines = held_out_lines(gold, canonical, held)
    if not lines:
        _fail(f"no line of {gold_path} has its needle in the {len(held)} held-out documents")
    documents = sorted(set(held) & set(canonical))
    with tempfile.TemporaryDirectory() as tmp:
        subset = write_gold(Path(tmp) / "held_out.jsonl", gold, lines, documents)
        try:
            adapted = run_eval(data_dir, spec, subset, ood_path, chunkers, location=_location())
            base = run_eval(data_dir, other, subset, ood_path, chunkers, location=_location())
        except (IndexNotBuiltError, UnknownPartitionError, GoldFormatError, ModelMismatchError,
                ModelNotExportedError) as exc:
            _fail(str(exc))
    rows = compare_by_style(adapted, base)
    _echo(f"held-out half: {len(lines)} of {len(gold.lines)} gold lines, in {len(documents)} "
          f"documents no training pair came from; a = {spec.key}, b = {other.key}")
    _echo(markdown_table(
        ["chunker", "retriever", "style", "k", "n", "a recall [95% CI]", "b recall [95% CI]",
         "wins (a only)", "losses (b only)", "sign test p"],
        [[r.chunker, r.retriever, r.style, r.k, r.queries,
          f"{r.recall_a:.3f} [{r.interval_a[0]:.3f}, {r.interval_a[1]:.3f}]",
          f"{r.recall_b:.3f} [{r.interval_b[0]:.3f}, {r.interval_b[1]:.3f}]",
          r.wins, r.losses, f"{r.p:.4f}"] for r in rows]))
    for label, report in ((spec.key, adapted), (other.key, base)):
        if report.sweep:
            _echo(f"refusal sweep cut for {label} (held-out gold + out-of-domain): "
                  f"{report.recommended_cut} ({report.cut_rule})")
    chunker = "header" if "header" in chunkers else chunkers[0]
    decision = adoption(rows, chunker, "hybrid")
    verdict = "ADOPT" if decision.adopt else "keep the base as the default"
    _echo(f"adoption ({chunker} x hybrid): {verdict}: {decision.reason}")


@main.group()
def gold() -> None:
    """Gold sets for your own corpus: `gold draft` proposes the needles."""


@gold.command()
@click.option("--corpus", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=None, help="Folder of documents (default: the indexed corpus, as the index's "
                                 "documents table holds it).")
@click.option("--n", "count", type=click.IntRange(1, 10_000), default=40, show_default=True,
              help="How many candidate needles.")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the draft here (default: stdout).")
@click.pass_obj
def draft(data_dir: Path, corpus: Path | None, count: int, output: Path | None) -> None:
    """Propose candidate needles: sentences found exactly once in the corpus, outside headings,
    as a gold JSONL whose `question` and `ticket` you write (eval refuses it until you do)."""
    from rag_pipeline.core.evaluation.gold import draft_jsonl, draft_needles

    texts, name = _corpus_texts(data_dir, corpus)
    needles = draft_needles(texts, count)
    if not needles:
        _fail(f"no sentence of 8 to 40 words occurs exactly once in the {len(texts)} documents")
    text = draft_jsonl(name, needles)
    if output is None:
        click.echo(text, nl=False)
        return
    if output.exists():
        _fail(f"{output} exists: a draft never overwrites a gold set; choose another --output")
    output.write_text(text, encoding="utf-8")
    _echo(f"wrote {len(needles)} candidate needles from {len({n.document for n in needles})} of "
          f"{len(texts)} documents to {output}: write each line's question and ticket, delete "
          f"the lines you do not want, then `rag-pipeline eval --gold {output}`", err=True)


def _corpus_texts(data_dir: Path, corpus: Path | None) -> tuple[dict[str, str], str]:
    """The canonical text of every ok document (of the folder, else of the built index), and
    the corpus's name."""
    if corpus is not None:
        from rag_pipeline.core.ingest import discover, extract_document

        records = [extract_document(path, corpus) for path in discover(corpus)]
        return {r.document_id: r.canonical_text for r in records if r.ok}, corpus.resolve().name
    from rag_pipeline.core.ingest import DocumentStatus
    from rag_pipeline.core.storage.table_names import DOCUMENTS
    from rag_pipeline.core.storage.warehouse import IndexNotBuiltError, Warehouse

    try:
        rows = Warehouse(data_dir, _location()).read(
            DOCUMENTS, columns=["document_id", "canonical_text", "status", "path"]).to_pylist()
    except IndexNotBuiltError as exc:
        _fail(f"{exc} (or pass --corpus DIR)")
    ok = [r for r in rows if r["status"] == DocumentStatus.OK]
    name = Path(os.path.commonpath([str(Path(r["path"]).parent) for r in ok])).name if ok else ""
    return {r["document_id"]: r["canonical_text"] for r in ok}, name or "corpus"


def _run_beir(data_dir: Path, beir_dir: Path, spec: ModelSpec, k1_values: tuple[float, ...],
              quiet: bool, candidates: bool = False) -> BeirReport:
    """Loads the BEIR folder and scores it (with every candidate retrieval setting too when
    ``candidates``); progress goes to stderr unless ``quiet``."""
    from rag_pipeline.core.evaluation.beir import load_beir, run_beir
    from rag_pipeline.core.index.bm25 import K1

    try:
        dataset = load_beir(beir_dir)
    except FileNotFoundError as exc:
        _fail(str(exc))

    def progress(done: int, total: int) -> None:
        if not quiet and (done == total or done % 1024 == 0):
            click.echo(f"  embedded {done}/{total} documents", err=True)

    embedder = _load_embedder(spec, data_dir)
    report = run_beir(dataset, embedder, data_dir / "beir", progress, tuple(k1_values) or (K1,))
    if candidates:
        from rag_pipeline.core.evaluation.beir import run_beir_candidates
        from rag_pipeline.core.evaluation.catalogue import beir_candidates

        report.rows.extend(run_beir_candidates(dataset, embedder, beir_candidates(),
                                               data_dir / "beir", progress))
    return report


def _print_beir(report: BeirReport, spec: ModelSpec, as_json: bool) -> None:
    import json

    if as_json:
        click.echo(json.dumps({
            "dataset": report.dataset, "queries": report.queries, "documents": report.documents,
            "model": spec.key,
            "rows": [{"retriever": r.retriever, "analyzer": r.analyzer, "k1": r.k1,
                      "ndcg@10": r.ndcg_at_10,
                      "recall@100": r.recall_at_100, "mrr@10": r.mrr_at_10} for r in report.rows],
            "timings_s": {k: round(v, 3) for k, v in report.timings.items()}}, indent=2))
        return
    click.echo(f"{report.dataset}: {report.queries} queries, {report.documents} documents, "
               f"model {spec.key}")
    click.echo(f"{'retriever':10s} {'analyzer':9s} {'k1':>4s} {'nDCG@10':>8s} {'R@100':>8s} "
               f"{'MRR@10':>8s}")
    for r in report.rows:
        click.echo(f"{r.retriever:10s} {r.analyzer or '-':9s} {r.k1 or '-':>4} {r.ndcg_at_10:8.5f} "
                   f"{r.recall_at_100:8.5f} {r.mrr_at_10:8.5f}")
    click.echo("timings (s): " + ", ".join(f"{k} {v:.2f}" for k, v in report.timings.items()))


def _print_eval(report: EvalReport, spec: ModelSpec, as_json: bool) -> None:
    import json

    from rag_pipeline.core.evaluation.tables import (
        gate_cv_markdown,
        paired_markdown,
        report_json,
        summary_markdown,
        sweep_markdown,
    )

    if as_json:
        _echo(json.dumps(report_json(report), indent=2))
        return
    _echo(f"{report.queries} in-domain queries, {report.ood_queries} out-of-domain, "
               f"{len(report.gold_errors)} gold-set errors, model {spec.key}")
    for error in report.gold_errors:
        _echo(f"  gold-set error {error.line_id}: {error.reason}")
    _echo("\n" + summary_markdown(report))
    for chunker, ids in report.destroyed.items():
        if ids:
            _echo(f"destroyed by {chunker}: {', '.join(ids)}")
    _echo("\n" + paired_markdown(report))
    if report.sweep:
        _echo("\nrefusal sweep (header x hybrid):\n" + sweep_markdown(report))
        _echo(f"recommended cut: {report.recommended_cut} ({report.cut_rule})")
    if report.gate_cv:
        _echo("\ngate, 2-fold cross-validated (held-out counts; folds by gold line id):\n"
              + gate_cv_markdown(report))
        _echo(f"top-distance cut under the refusal budget, over every query: "
              f"{report.budget_cut:.4f}")
    for a in report.ann:
        _echo(f"ANN path of {a.chunker} against the exact one, {a.queries} queries: dense "
              f"recall@{a.k} {a.dense_recall:.4f} (worst {a.worst_recall:.2f}), same sources "
              f"{a.same_sources} / {a.queries}")
    _echo(f"\neval wall time: {report.timings['total']:.1f} s")


def _compare_models(data_dir: Path, spec, report, versus_key: str, gold_path: Path,
                    ood_path: Path, chunkers: tuple[str, ...]) -> None:
    """Evaluates the second model on the same chunkers and prints the paired comparison."""
    from rag_pipeline.core.embedding.export import ModelNotExportedError
    from rag_pipeline.core.embedding.models import ModelMismatchError, find_model
    from rag_pipeline.core.evaluation.model_comparison import compare_models
    from rag_pipeline.core.evaluation.run import run_eval
    from rag_pipeline.core.evaluation.tables import summary_markdown
    from rag_pipeline.core.index.store import UnknownPartitionError
    from rag_pipeline.core.storage.warehouse import IndexNotBuiltError
    from rag_pipeline.core.text.markdown_table import markdown_table

    try:
        other = find_model(versus_key, _declared_models())
        _load_embedder(other, data_dir)
        selected = list(chunkers) or sorted({r.chunker for r in report.ranks})
        second = run_eval(data_dir, other, gold_path, ood_path, selected)
    except (ModelMismatchError, ModelNotExportedError, IndexNotBuiltError,
            UnknownPartitionError) as exc:
        _fail(str(exc))
    _echo(f"\n--- {other.key} on the same chunkers ---\n" + summary_markdown(second))
    if second.sweep:
        _echo(f"recommended cut for {other.key}: {second.recommended_cut} "
                   f"({second.cut_rule}); for {spec.key}: {report.recommended_cut}")
    rows = compare_models(report, second, spec.key, other.key)
    _echo(f"\npaired, {spec.key} (a) vs {other.key} (b), same queries:\n" + markdown_table(
        ["a", "b", "k", "wins (a only)", "losses (b only)", "sign test p"],
        [[r.a, r.b, r.k, r.wins, r.losses, f"{r.p:.4f}"] for r in rows]))
    significant = [r for r in rows if r.p < 0.05]
    _echo(f"significant differences (p < 0.05): {len(significant)} of {len(rows)}")
