"""``corpus_watch``: a sensor that launches ``documents_job`` when a file of the corpus changes,
so an edit reaches the served index without waiting for the nightly run or a command.

Each tick lists the corpus as the documents run reads it (:func:`rag_pipeline.core.ingest.corpus.
discover`) with every entry's size and modification time, and compares their digest with the
one the last ``documents`` materialisation recorded (``corpus_fingerprint``, taken before it
read a file). A difference launches one ``documents_job`` run; ``index_automation`` carries it
down the index from there (a change that leaves every document's text as it was ends there:
the documents' data version is their content). So a run launched by ``rag-pipeline index`` or
the nightly schedule is not repeated, nothing is launched while a ``rag-pipeline index`` holds
the instance's lock (it launches its own documents run), and nothing before the first documents
run (the index is built by ``rag-pipeline index``). While a documents run is queued or running the
tick waits for it; when the latest documents run failed for the folder as it is now, it waits
for the folder to change again (no run every tick). A tick costs one ``lstat`` per file (about
0.3 s per 100,000 files).
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import dagster as dg

from rag_pipeline.core.ingest.corpus import discover
from rag_pipeline.core.runtime.processes import lock_holder, pid_alive
from rag_pipeline.core.storage.table_names import DOCUMENTS
from rag_pipeline.orchestration.resources import CorpusSource
from rag_pipeline.project_paths import INDEX_LOCK

CORPUS_WATCH = "corpus_watch"
CORPUS_FINGERPRINT = "corpus_fingerprint"
"""The ``documents`` metadata entry, and the tag of a run the watch launched."""
FINGERPRINT_TAG = f"rag_pipeline/{CORPUS_FINGERPRINT}"
WATCH_INTERVAL_SECONDS = 5
"""As often as the daemon evaluates sensors (every 5 s)."""


def corpus_fingerprint(root: Path) -> str:
    """Digest of every entry the documents run reads under ``root``: relative path, size and
    modification time in nanoseconds (``missing`` when the folder is not there)."""
    if not root.is_dir():
        return "missing"
    digest = hashlib.sha256()
    for path in discover(root):
        try:
            stat = os.lstat(path)
        except FileNotFoundError:  # removed between the listing and now: the next tick sees it
            continue
        digest.update(f"{path.relative_to(root)}\0{stat.st_size}\0{stat.st_mtime_ns}\n"
                      .encode("utf-8", "surrogateescape"))
    return digest.hexdigest()[:16]


UNRECORDED = "unrecorded"
"""The fingerprint of a ``documents`` materialisation that took none (an older version's): it
matches no folder, so the watch launches one run, which records one."""


def recorded_fingerprint(instance: dg.DagsterInstance) -> str | None:
    """The fingerprint the latest ``documents`` materialisation took (``None``: none yet)."""
    event = instance.get_latest_materialization_event(dg.AssetKey(DOCUMENTS))
    if event is None or event.asset_materialization is None:
        return None
    value = event.asset_materialization.metadata.get(CORPUS_FINGERPRINT)
    return UNRECORDED if value is None else str(getattr(value, "value", value))


def build_corpus_watch(documents_job: str, active_statuses: list[dg.DagsterRunStatus],
                       ) -> dg.SensorDefinition:
    """``corpus_watch``, launching ``documents_job`` unless one is in ``active_statuses``."""

    @dg.sensor(name=CORPUS_WATCH, job_name=documents_job,
               minimum_interval_seconds=WATCH_INTERVAL_SECONDS,
               default_status=dg.DefaultSensorStatus.RUNNING,
               description="Launches documents_job when a file of the corpus was added, changed "
                           "or removed since the last documents run read it (sizes and "
                           f"modification times, every {WATCH_INTERVAL_SECONDS} s); "
                           "index_automation does the rest.")
    def corpus_watch(context: dg.SensorEvaluationContext, corpus: CorpusSource):
        recorded = recorded_fingerprint(context.instance)
        if recorded is None:
            return dg.SkipReason("no documents run yet: `rag-pipeline index` builds the index")
        fingerprint = corpus_fingerprint(Path(corpus.path))
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
