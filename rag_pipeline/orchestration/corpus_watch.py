"""``corpus_watch``: a sensor that launches ``documents_job`` when the corpus changes, so an edit
reaches the served index without waiting for the nightly run or a command.

Each tick asks the corpus source for its watch token (:meth:`rag_pipeline.core.ingest.sources.
Source.watch_token`): for a folder, the digest of every entry the documents run reads with its
size and modification time (one ``lstat`` per file, about 0.3 s per 100,000 files); for an S3
prefix, the digest of the listing's keys, ETags and sizes (nothing downloaded); for a git
repository, the commit its ref names. It compares the token with the one the last ``documents``
materialisation recorded (``corpus_fingerprint``, taken before it read a file). A difference
launches one ``documents_job`` run; ``index_automation`` carries it down the index from there
(a change that leaves every document's text as it was ends there: the documents' data version
is their content). So a run launched by ``rag-pipeline index`` or the nightly schedule is not
repeated, nothing is launched while a ``rag-pipeline index`` holds the instance's lock (it
launches its own documents run), and nothing before the first documents run (the index is
built by ``rag-pipeline index``). While a documents run is queued or running the tick waits for
it; when the latest documents run failed for the corpus as it is now, it waits for the corpus
to change again (no run every tick). The interval is ``RAG_PIPELINE_WATCH_INTERVAL`` seconds
(default 5, as often as the daemon evaluates sensors; a bucket or a remote repository may want
60).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from rag_pipeline.core.ingest.sources import LocalSource, SourceError, is_corpus_uri
from rag_pipeline.core.runtime.processes import lock_holder, pid_alive
from rag_pipeline.core.storage.table_names import DOCUMENTS
from rag_pipeline.orchestration.pools import ensure_pool_limits
from rag_pipeline.orchestration.resources import CorpusSource
from rag_pipeline.orchestration.run_tags import launched_by
from rag_pipeline.project_paths import INDEX_LOCK

CORPUS_WATCH = "corpus_watch"
CORPUS_FINGERPRINT = "corpus_fingerprint"
"""The ``documents`` metadata entry, and the tag of a run the watch launched."""
FINGERPRINT_TAG = f"rag_pipeline/{CORPUS_FINGERPRINT}"
WATCH_INTERVAL_SECONDS = 5
"""As often as the daemon evaluates sensors (every 5 s)."""


def corpus_fingerprint(root: Path) -> str:
    """The watch token of a folder: digest of every entry the documents run reads under
    ``root``, its relative path, size, modification time, inode and change time (``missing``
    when the folder is not there)."""
    return LocalSource(root).watch_token()


def watch_token(corpus: CorpusSource) -> str:
    """The corpus's watch token as the documents run records it (a folder that is not there is
    ``missing``, never exported by a tick).

    Raises:
        SourceError: If a bucket or repository cannot be read.
    """
    if not is_corpus_uri(corpus.path):
        return corpus_fingerprint(Path(corpus.path))
    return corpus.source().watch_token()


UNRECORDED = "unrecorded"
"""The fingerprint of a ``documents`` materialisation that took none (an older version's): it
matches no folder, so the watch launches one run, which records one."""


def recorded_fingerprint(instance: dg.DagsterInstance) -> str | None:
    """The fingerprint the latest ``documents`` materialisation took (``None``: none yet)."""
    event = instance.get_latest_materialization_event(dg.AssetKey(DOCUMENTS))
    if event is None or event.asset_materialization is None:
        return None
    value = _value(event.asset_materialization.metadata, CORPUS_FINGERPRINT)
    return UNRECORDED if value is None else str(value)


@dataclass(frozen=True)
class EarlierReading:
    """A documents run a sensor or a schedule launched, which read the corpus in the state a
    later run found unchanged."""

    run_id: str
    launched_by: str
    ended_at: float
    counts: dict[str, int]


def earlier_reading(instance: dg.DagsterInstance, run_id: str) -> EarlierReading | None:
    """When run ``run_id`` made the latest ``documents`` materialisation and it changed
    nothing: the materialisation before it, if a sensor's or a schedule's run made it, that
    run changed the documents, and it took the same fingerprint (the corpus did not change
    between the two). An edit the daemon's ``corpus_watch`` indexed before a ``rag-pipeline
    index`` started is then named, not reported as ``changed 0``."""
    records = instance.fetch_materializations(dg.AssetKey(DOCUMENTS), limit=2).records
    if len(records) < 2 or records[0].run_id != run_id:
        return None
    ours, before = (record.asset_materialization.metadata for record in records)
    if _value(ours, "changed") or not _value(before, "changed") \
            or _value(before, CORPUS_FINGERPRINT) != _value(ours, CORPUS_FINGERPRINT):
        return None
    run = instance.get_run_by_id(records[1].run_id)
    by = launched_by(run.tags) if run is not None else None
    if not by:
        return None
    prefix = "reconciliation."
    return EarlierReading(records[1].run_id, by, records[1].timestamp,
                          {key.removeprefix(prefix): int(_value(before, key))
                           for key in before if key.startswith(prefix)})


def _value(metadata: dict, key: str) -> object:
    value = metadata.get(key)
    return getattr(value, "value", value)


def build_corpus_watch(documents_job: str, active_statuses: list[dg.DagsterRunStatus],
                       interval_seconds: int = WATCH_INTERVAL_SECONDS) -> dg.SensorDefinition:
    """``corpus_watch``, launching ``documents_job`` unless one is in ``active_statuses``,
    evaluated at most every ``interval_seconds``."""
    if interval_seconds < 1:
        raise ValueError(f"the corpus watch interval must be at least 1 s, not {interval_seconds}")

    @dg.sensor(name=CORPUS_WATCH, job_name=documents_job,
               minimum_interval_seconds=interval_seconds,
               default_status=dg.DefaultSensorStatus.RUNNING,
               description="Launches documents_job when the corpus changed since the last "
                           "documents run read it (a folder's sizes and modification times, a "
                           "bucket's ETags, a git ref's commit; every "
                           f"{interval_seconds} s); index_automation does the rest.")
    def corpus_watch(context: dg.SensorEvaluationContext, corpus: CorpusSource):
        ensure_pool_limits(context.instance)
        recorded = recorded_fingerprint(context.instance)
        if recorded is None:
            return dg.SkipReason("no documents run yet: `rag-pipeline index` builds the index")
        try:
            fingerprint = watch_token(corpus)
        except SourceError as exc:
            return dg.SkipReason(f"the corpus cannot be read: {exc}")
        if fingerprint == recorded:
            return dg.SkipReason("no file of the corpus changed since the last documents run")
        holder = lock_holder(Path(context.instance.root_directory) / INDEX_LOCK)
        if holder is not None and pid_alive(holder.pid):
            return dg.SkipReason(f"the corpus changed; rag-pipeline index (pid {holder.pid}) is "
                                 "running and launches its own documents run")
        latest = context.instance.get_runs(filters=dg.RunsFilter(job_name=documents_job), limit=1)
        if latest and latest[0].status in active_statuses:
            return dg.SkipReason(f"the corpus changed; waits for documents run "
                                 f"{latest[0].run_id[:8]} to end")
        if latest and latest[0].status == dg.DagsterRunStatus.FAILURE \
                and latest[0].tags.get(FINGERPRINT_TAG) == fingerprint:
            return dg.SkipReason(f"documents run {latest[0].run_id[:8]} failed on the corpus as "
                                 "it is: waits for another change")
        return dg.RunRequest(run_key=f"{CORPUS_WATCH}:{fingerprint}:{time.time_ns()}",
                             tags={FINGERPRINT_TAG: fingerprint})

    return corpus_watch
