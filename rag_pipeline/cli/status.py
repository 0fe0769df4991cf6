"""``rag-pipeline status`` and ``rag-pipeline models``: what is built and served, what is declared."""

from __future__ import annotations

import functools
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import click

from rag_pipeline.cli.edge import Invocation, config_source, declared_models_or_fail, echo, fail, read_config
from rag_pipeline.core.text.terminal import one_line
from rag_pipeline.project_paths import ENV_PROFILE

if TYPE_CHECKING:
    from rag_pipeline.core.config.schema import ProjectConfig
    from rag_pipeline.core.embedding.models import ModelSpec
    from rag_pipeline.core.index.generations import Generation
    from rag_pipeline.core.index.status import UnhealthyFile


STALE_SHOWN = 10
"""Stale documents named one by one (an upgrade's new extractor makes every document of a
format stale, for the same reason: 139 lines said it to a new user)."""


@click.command()
@click.pass_obj
def status(invocation: Invocation) -> None:
    """Per partition: model, chunk and vector counts; documents ok / failed; stale rows."""
    from rag_pipeline.core.index.query_db import refresh_query_db
    from rag_pipeline.core.index.status import index_status, unhealthy_files
    from rag_pipeline.core.storage.warehouse import CorruptFileError, IndexNotBuiltError

    warehouse = invocation.warehouse
    building = _index_running(warehouse.data_dir)
    try:
        if invocation.location is not None:
            # Another machine may have published since: refresh the local DuckDB snapshot
            # (never from a warehouse that has published nothing).
            refresh_query_db(warehouse)
        else:
            _snapshot_in_step(warehouse)
        report = index_status(warehouse)
    except IndexNotBuiltError as exc:
        message = str(exc)
        if building is not None and message.endswith(IndexNotBuiltError.HINT):
            message = (message.removesuffix(IndexNotBuiltError.HINT)
                       + f"the running `index` ({building}) is building it")
        fail(message)
    except CorruptFileError:  # a pointer or a manifest that does not parse: say which, and how
        _echo_unhealthy(unhealthy_files(warehouse), invocation)
        sys.exit(1)
    if building is not None:
        echo(f"an `index` is running on this data folder ({building}): what it builds is served "
             "when it publishes")
    skipped = f"{len(report.documents_skipped)} skipped, " if report.documents_skipped else ""
    echo(f"documents: {report.documents_ok} ok, {len(report.documents_failed)} failed, "
               f"{skipped}{len(report.stale_documents)} stale")
    echo_not_indexed("failed", report.documents_failed)
    echo_not_indexed("skipped", report.documents_skipped)
    for document_id in report.stale_documents[:STALE_SHOWN]:
        echo(f"  stale   {one_line(document_id)} (extracted by an older pipeline or extractor)")
    if len(report.stale_documents) > STALE_SHOWN:
        echo(f"  stale   ... and {len(report.stale_documents) - STALE_SHOWN} more, the same: "
             f"`{invocation.command('index')}` reads them again")
    for document_id, chunkers in report.without_chunks:
        echo(f"  no chunk {one_line(document_id)}: ok, but yields no chunk under "
              f"{', '.join(chunkers)} (nothing but headings?), so it can never be found")
    echo_left_out(report.left_out)
    for document_id, page, confidence in report.low_confidence_pages:
        echo(f"  low OCR {one_line(document_id)} page {page}: mean word confidence "
             f"{confidence:.1f}, under the floor")
    _echo_reconciliation(warehouse)
    echo(f"{'chunker':20s} {'model':28s} {'chunks':>7} {'vectors':>8} {'stale':>6} {'dense':>5}  "
          f"served generation (age)")
    config = functools.cache(read_config)  # parsed once, when a line first needs it
    declared = {spec.key for spec in declared_models_or_fail(config())} if report.partitions else set()
    for p in report.partitions:
        echo(f"{p.chunker:20s} {p.model:28s} {p.chunks:7d} {p.vectors:8d} "
              f"{p.stale_rows:6d} {p.dense_path.value:>5}  {p.generation} ({_age(p.age_seconds())})"
              + ("" if p.model in declared else "  NOT DECLARED: not served"))
    for key in sorted({p.model for p in report.partitions} - declared):
        echo(f"  not declared {key}: not in {config_source(config())}, so neither built nor "
             f"served; `{invocation.command('models', '--drop', key)}` deletes its partitions")
    if not report.partitions:
        builds = ("the running `index` builds them" if building is not None
                  else f"`{invocation.command('index')}` builds them")
        echo(f"(nothing served yet: no partition has published a generation; {builds})")
    behind = _behind(warehouse)
    _echo_behind(behind, config, invocation, building is not None)
    for (chunker, analyzer), n in sorted(report.bm25_terms.items()):
        echo(f"bm25 {chunker:20s} {analyzer:8s} {n:7d} terms")
    if report.partitions:
        echo_over_the_window(warehouse, declared_models_or_fail(config())[0].max_tokens)
    _echo_evaluations(warehouse, sorted({p.model for p in report.partitions}), invocation)
    if report.partitions:
        echo(f"tables: the DuckDB file {warehouse.db_path}")
    _print_access(warehouse, config, invocation, behind)
    unhealthy = unhealthy_files(warehouse)
    _echo_unhealthy(unhealthy, invocation)
    if unhealthy:
        sys.exit(1)


def _echo_evaluations(warehouse, models: Sequence[str], invocation: Invocation) -> None:
    """Per model with evaluation tables: when they were written, and whether they scored the
    generations served now (the ``eval_*`` rows carry no generation of their own)."""
    from rag_pipeline.core.evaluation.run import evaluation_is_stale
    from rag_pipeline.core.index.plan import EVAL_SUMMARY

    for model in models:
        version = warehouse.version(EVAL_SUMMARY, {"model": model})
        if version is None:
            continue
        if evaluation_is_stale(warehouse, model):
            of = (f"older generations than those served: an `{invocation.command('index')}` whose "
                  "profile builds the model scores them again (`eval` only prints)")
        else:
            of = "the generations served now"
        echo(f"evaluation {model}: the eval_* tables were written {version.written_at}, of {of}")


def _echo_unhealthy(unhealthy: Sequence[UnhealthyFile], invocation: Invocation) -> None:
    for file in unhealthy:
        echo(f"UNHEALTHY {file.partition}: {file.reason}")
        echo(f"  fix: {invocation.commands_in(file.fix)}")


def _snapshot_in_step(warehouse) -> None:
    """Rebuilds ``rag.duckdb`` when it shows other files than the published ones (what
    ``status`` reads must be what ``ask`` and ``serve`` serve); a data folder this user cannot
    write is said so, and read as it is."""
    from rag_pipeline.core.index.generations import current_generations
    from rag_pipeline.core.index.query_db import publish_query_db, query_db_in_step

    if not current_generations(warehouse) or query_db_in_step(warehouse):
        return
    was = "showed other tables than the published ones (a publication cut short, or a " \
          "warehouse restored under it)" if warehouse.db_path.exists() else "was missing"
    try:
        publish_query_db(warehouse)
    except OSError as exc:
        echo(f"note: {warehouse.db_path} {was} and could not be rebuilt ({exc}): what follows "
             "may not be what `ask` and `serve` serve")
        return
    echo(f"note: {warehouse.db_path} {was}: rebuilt from the published generations")


def echo_not_indexed(status: str, documents: Sequence[tuple[str, str]],
                     shown: int | None = None) -> None:
    """A line per failed or skipped document (``status``) with why: every one, or the first
    ``shown`` and how many more."""
    for document_id, reason in documents[:shown]:
        echo(f"  {status:8s}{one_line(document_id)}: {one_line(reason)}")
    if shown is not None and len(documents) > shown:
        echo(f"  {status:8s}... and {len(documents) - shown} more")


def echo_left_out(documents: Sequence[tuple[str, list[str]]], shown: int | None = None) -> None:
    """A line per document read with a caveat (part left out, or a charset guessed), saying
    what: every one, or the first ``shown`` and how many more."""
    for document_id, phrases in documents[:shown]:
        echo(f"  caveat   {one_line(document_id)}: {'; '.join(phrases)}")
    if shown is not None and len(documents) > shown:
        echo(f"  caveat   ... and {len(documents) - shown} more (`rag-pipeline status` lists "
             "them all)")


def echo_over_the_window(warehouse, window: int) -> None:
    """A line per chunker some of whose chunks are over the model's word-piece ``window``."""
    from rag_pipeline.core.index.status import over_the_window

    for chunker, over, chunks in over_the_window(warehouse):
        echo(f"  {chunker}: {over} of {chunks} chunks are longer than the model's {window} "
             f"word-piece window, so only their first {window} are embedded (`select chunk_id, "
             "wordpieces from chunks where truncated`)")


def _echo_reconciliation(warehouse) -> None:
    """What the last documents run added, changed, renamed, deleted, left and failed."""
    from rag_pipeline.core.index.status import last_reconciliation
    from rag_pipeline.core.ingest.reconcile import report_lines

    found = last_reconciliation(warehouse)
    if found is not None:
        for line in report_lines(*found):
            echo(one_line(line))


def _print_access(warehouse, config: Callable[[], ProjectConfig], invocation: Invocation,
                  behind: Sequence[Generation]) -> None:
    """With ``[access]`` in ``config()``: documents per group, every document no rule matches
    (readable by nobody; one only the generations ``behind`` the latest documents still serve
    says so), and each glob that matches no document (a warning)."""
    from rag_pipeline.core.config.access import access_report, unreadable_reason
    from rag_pipeline.core.index.generations import current_generations
    from rag_pipeline.core.storage.table_names import DOCUMENTS

    parsed = config()
    policy = parsed.access
    if policy is None:
        echo(f"access: no [access] in {config_source(parsed)}: every document is readable by "
             "everyone who reaches `serve`")
        return
    ids: set[str] = set()
    corpus: set[str] = set()  # a container's failed member narrows its readers too
    for file in {g.files[DOCUMENTS] for g in current_generations(warehouse)}:
        table = warehouse.read_file(file, columns=["document_id", "status"]).to_pylist()
        ids.update(row["document_id"] for row in table if row["status"] == "ok")
        corpus.update(row["document_id"] for row in table)
    report = access_report(policy, ids, corpus)
    groups = ", ".join(f"{g} {n}" for g, n in report.by_group.items())
    echo(f"access: rules {policy.digest}: {report.documents} documents; readable by group: "
         f"{groups}; {len(report.unreadable)} readable by nobody")
    # Behind generations only: the latest documents then differ from some served ones.
    latest = warehouse.version(DOCUMENTS) if behind and report.unreadable else None
    current = set() if latest is None else {
        row["document_id"] for row in warehouse.read_file(latest.file, columns=["document_id"]).to_pylist()}
    serving = ", ".join(f"{g.chunker} x {g.model}" for g in behind)
    for document_id in report.unreadable:
        gone = (f" (no longer in the corpus: still served by {serving}, behind the latest "
                "documents)") if latest is not None and document_id not in current else ""
        echo(f"  unreadable {document_id}: {unreadable_reason(policy, document_id)}{gone}")
    from rag_pipeline.core.index.access_table import UNMATCHED_GLOB

    for glob in report.unmatched:
        echo("  warning: " + UNMATCHED_GLOB.format(glob=glob))
    from rag_pipeline.core.storage.warehouse import open_to_every_user

    if (opened := open_to_every_user(warehouse.data_dir)) is not None:
        echo(f"  warning: {opened}")
    from rag_pipeline.core.index.tables import stale_tables
    from rag_pipeline.core.storage.table_names import ACCESS

    # A generation behind the latest documents has its own line (`behind`), with its fix.
    behind_ones = {(g.chunker, g.model) for g in behind}
    other_rules, older = set(), set()
    for generation in current_generations(warehouse):
        latest_access = warehouse.version(ACCESS, {"chunker": generation.chunker})
        if ACCESS in stale_tables(warehouse, generation.chunker, generation.model, policy.digest) \
                or ACCESS not in generation.files:
            other_rules.add(generation.chunker)
        elif (generation.files[ACCESS] != latest_access.file
              and (generation.chunker, generation.model) not in behind_ones):
            older.add(generation.chunker)
    index = f"`{invocation.command('index')}`"
    if other_rules:
        echo(f"  the served `access` table of {', '.join(sorted(other_rules))} labels other "
             f"rules (or none): {index} re-labels them in a new generation (nothing is "
             "re-extracted or re-embedded; a running serve already applies the rules in force)")
    if older - other_rules:
        echo(f"  the served `access` table of {', '.join(sorted(older - other_rules))} is older "
             f"than the latest written (the documents changed since it was published): {index} "
             "brings it up to date")


def _echo_behind(behind: Sequence[Generation], config: Callable[[], ProjectConfig],
                 invocation: Invocation, building: bool = False) -> None:
    """A line per served generation ``behind`` the latest documents (the run that would have
    brought it up to them was stopped, failed or has not run yet), with the ``index`` that
    builds it by ``config()``; while an ``index`` runs (``building``), that it may be building
    it."""
    for generation in behind:
        if building:
            echo(f"  behind  {generation.chunker} x {generation.model}: serves documents older "
                 "than the latest written (the running `index` brings it up to date if its "
                 "profile builds it)")
            continue
        fix = _index_that_builds(config(), invocation, generation.chunker, generation.model)
        echo(f"  behind  {generation.chunker} x {generation.model}: serves documents older than "
             f"the latest written (its index run was stopped, failed or has not run yet); {fix}")


def _index_running(data_dir) -> str | None:
    """Who runs an ``index`` on the data folder now (``pid N, started T``), or None."""
    from rag_pipeline.core.runtime.processes import lock_held, lock_holder
    from rag_pipeline.project_paths import INDEX_LOCK

    lock = data_dir / INDEX_LOCK
    if not lock_held(lock):
        return None
    holder = lock_holder(lock)
    return holder.describe() if holder is not None else "holder unknown"


def _behind(warehouse) -> list[Generation]:
    """The served generations built from documents older than the latest written."""
    from rag_pipeline.core.index.generations import current_generations
    from rag_pipeline.core.storage.table_names import DOCUMENTS

    latest = warehouse.version(DOCUMENTS)
    if latest is None:
        return []
    return [g for g in current_generations(warehouse) if g.files.get(DOCUMENTS) != latest.file]


def _index_that_builds(config: ProjectConfig, invocation: Invocation, chunker: str,
                       model: str) -> str:
    """"`rag-pipeline index` brings it up to date", with the options this invocation was
    given and the smallest profile that builds ``chunker x model`` when the one ``index``
    builds does not."""
    profile = _index_profile(config)
    names = {spec.key: spec.name for spec in declared_models_or_fail(config)}

    def builds(profile) -> bool:
        return chunker in {c.value for c in profile.chunkers} and names.get(model) in profile.models

    if builds(profile):
        return f"`{invocation.command('index')}` brings it up to date"
    others = [p for p in config.profiles if builds(p)]
    if not others:
        return f"not in profile {profile.name}, which `index` builds: no profile builds it"
    return (f"not in profile {profile.name}, which `index` builds: "
            f"`{invocation.command('index', '--profile', _smallest(others).name)}` brings it up "
            "to date")


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"



def _prepare(specs: Sequence[ModelSpec]) -> None:
    """Loads ``specs`` (the exports written and checked), a line for each; a model that does
    not load fails the command in one line."""
    from rag_pipeline.core.embedding.embedder import load_declared
    from rag_pipeline.core.embedding.export import ModelNotExportedError
    from rag_pipeline.core.embedding.models import ModelConfigError, ModelMismatchError

    started = time.perf_counter()
    try:
        loaded = load_declared(specs, click.echo)
    except (ModelMismatchError, ModelConfigError, ModelNotExportedError, OSError) as exc:
        fail(f"--prepare: {exc}")
    for embedder in loaded:
        click.echo(f"prepared {embedder.spec.key}: texts by {embedder.bulk_path.backend}")
    click.echo(f"{len(loaded)} of {len(specs)} model(s) prepared in "
               f"{time.perf_counter() - started:.1f} s (model cache: "
               f"{specs[0].cache_dir if specs else '-'})")


@click.command()
@click.option("--lock", "lock", is_flag=True,
              help="Pin every declared model's current files in rag_pipeline.lock.json.")
@click.option("--drop", "drop_key", default=None,
              help="Delete every stored partition of this undeclared model key.")
@click.option("--prepare", is_flag=True,
              help="Load every declared model now, writing its runtime files (the ONNX and "
                   "OpenVINO exports) into the model cache, as a first `index` would.")
@click.pass_obj
def models(invocation: Invocation, lock: bool, drop_key: str | None, prepare: bool) -> None:
    """Declared models and chunkers (rag_pipeline.toml), their keys and stored partitions."""
    from rag_pipeline.core.config.keys import model_specs, write_lock
    from rag_pipeline.core.config.parse import load_config
    from rag_pipeline.core.embedding.models import ModelConfigError, ModelMismatchError
    from rag_pipeline.core.index.model_inventory import drop_model_partitions, file_status, inventory

    try:
        config = load_config(invocation.config_path)
        specs = write_lock(config) if lock else model_specs(config)
    except (ModelConfigError, FileNotFoundError) as exc:
        fail(str(exc))
    if prepare:
        _prepare(specs)
    warehouse = invocation.warehouse
    if drop_key is not None:
        from rag_pipeline.core.config.validation import InvalidArgumentError

        try:
            dropped = drop_model_partitions(warehouse, drop_key, specs)
        except ModelMismatchError:
            fail(f"--drop: {drop_key} is still declared in {config_source(config)}: remove it "
                 "there first, then drop its partitions")
        except InvalidArgumentError as exc:
            fail(f"--drop: {exc}")
        from rag_pipeline.core.evaluation.report import report_path

        # Its evaluation report goes with it (eval/runs/<key>/).
        shutil.rmtree(report_path(warehouse.data_dir, drop_key).parent, ignore_errors=True)
        click.echo(f"dropped {dropped} stored partition(s) of {drop_key}")
    click.echo(f"config: {config_source(config)}"
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
    profile = _index_profile(config)
    names = {spec.key: spec.name for spec in specs}
    for entry in inventory(specs, warehouse):
        chunkers = ", ".join(entry.embedding_chunkers) or "none"
        if entry.declared:
            todo = _todo(config, profile, names[entry.key], entry.embedding_chunkers, invocation)
            click.echo(f"  {entry.key:34s} embeddings: {chunkers}{todo}")
        else:
            click.echo(f"  {entry.key:34s} NOT DECLARED (no longer built or served): embeddings: "
                       f"{chunkers}; tables {', '.join(entry.tables)}. Keep them to go back "
                       f"(declare the model again), or delete them: "
                       f"{invocation.command('models', '--drop', entry.key)}")


def _todo(config, profile, name: str, stored: tuple[str, ...], invocation: Invocation) -> str:
    """What `index` would still build for one declared model: the profile's chunkers it lacks,
    or, for a model the profile leaves out, that `index` never builds it and the smallest
    profile that does."""
    if name not in profile.models:
        others = [p for p in config.profiles if name in p.models]
        return (f"; not in profile {profile.name}, which `index` builds"
                + (f" (`{invocation.command('index', '--profile', _smallest(others).name)}` "
                   "builds it)" if others else ""))
    missing = sorted(c.value for c in profile.chunkers if c.value not in stored)
    return (f"; not built yet: {', '.join(missing)} (run `{invocation.command('index')}`)"
            if missing else "")


def _smallest(profiles):
    """The profile of ``profiles`` that builds the fewest partitions (the first of those)."""
    return min(profiles, key=lambda p: len(p.chunkers) * len(p.models))


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

