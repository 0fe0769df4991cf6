"""What a run of the index says: when it fails, :class:`IndexRunFailed` and :func:`first_error`
(the failed step and its own error, in one line); when an embeddings run succeeds, how many
vectors it embedded and reused (:func:`vectors_done`).
``rag-pipeline index`` launches runs through the code location
(:mod:`rag_pipeline.orchestration.index_launch`); the tests' in-process runner is
``rag_pipeline_tests/index_runs.py``."""

from __future__ import annotations

from typing import Protocol

import dagster as dg


class IndexRunFailed(Exception):
    """A run of the index failed; the message names the run and the step."""


def first_error(instance: dg.DagsterInstance, run_id: str) -> str:
    """The first failed step and the error its own code raised (not Dagster's wrapper around
    it), in one line; the run's failure message when no step failed."""
    records = instance.get_records_for_run(
        run_id, of_type={dg.DagsterEventType.STEP_FAILURE, dg.DagsterEventType.RUN_FAILURE}).records
    events = [record.event_log_entry.dagster_event for record in records]
    for event in events:
        error = getattr(event.event_specific_data, "error", None)
        if event.is_step_failure and error is not None:
            while error.cls_name and error.cls_name.startswith("Dagster") and error.cause:
                error = error.cause
            return f"step {event.step_key}: {' '.join(_without_module(error).split())}"
    failures = [event.message for event in events if event.message]
    return failures[-1] if failures else "see the run in the Dagster UI"


VECTOR_COUNTS = ("embedded", "reused", "shared", "duplicates", "removed")
"""The embeddings materialisation's counts a finished run is reported with: its rows are
``reused + shared + embedded + duplicates`` (each text embedded once: a row repeating a text
another row holds is a duplicate), ``removed`` the previous table's rows no longer there."""


def vectors_done(instance: dg.DagsterInstance, run_id: str) -> str:
    """``embedded 1, reused 365, shared 0, duplicates 0, removed 1`` for a run that materialised
    embeddings (its metadata's counts: what an edit cost), ``""`` for any other run."""
    records = instance.get_records_for_run(
        run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION).records
    for record in records:
        materialization = record.event_log_entry.asset_materialization
        metadata = materialization.metadata if materialization is not None else {}
        if all(name in metadata for name in VECTOR_COUNTS):
            return ", ".join(f"{name} {metadata[name].value}" for name in VECTOR_COUNTS)
    return ""


class _ErrorInfo(Protocol):
    """What a step failure's error carries (Dagster's serialisable error info)."""

    message: str
    cls_name: str | None


def _without_module(error: _ErrorInfo) -> str:
    """An error's message with its class named as raised, not by its module path
    (``ComputeUnreachableError: ...``, not ``rag_pipeline.core.embedding.compute.Compute...``;
    an error with no message: its class name alone)."""
    head, sep, rest = error.message.partition(": ")
    if error.cls_name and head.strip().rpartition(".")[2] == error.cls_name:
        return f"{error.cls_name}: {rest}" if sep else error.cls_name
    return error.message
