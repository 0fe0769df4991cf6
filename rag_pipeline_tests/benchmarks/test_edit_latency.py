"""The edit-latency benchmark's timeline: each run's creation, start and end, the publication
and the first answer, in seconds after the edit, in time order."""

from __future__ import annotations

from rag_pipeline.benchmarks.edit_latency import Event, RunTimes, timeline


def test_the_timeline_of_an_edit():
    runs = [RunTimes("documents_job", "-", "SUCCESS", 1003.0, 1010.0, 1012.5),
            RunTimes("chunks_job", "header", "SUCCESS", 1016.0, 1021.0, 1023.0),
            RunTimes("embeddings_job", "header|m", "STARTED", 1027.0, 1030.0, None),
            RunTimes("eval_job", "m", "QUEUED", 1040.0, None, None)]
    steps = [(1033.5, "embeddings_job model loaded")]
    assert timeline(1000.0, runs, published_at=1038.25, answered_at=1039.0, steps=steps) == [
        Event(3.0, "documents_job [-] created"),
        Event(10.0, "documents_job [-] started (7.0 s after creation)"),
        Event(12.5, "documents_job [-] success (2.5 s running)"),
        Event(16.0, "chunks_job [header] created"),
        Event(21.0, "chunks_job [header] started (5.0 s after creation)"),
        Event(23.0, "chunks_job [header] success (2.0 s running)"),
        Event(27.0, "embeddings_job [header|m] created"),
        Event(30.0, "embeddings_job [header|m] started (3.0 s after creation)"),
        Event(33.5, "embeddings_job model loaded"),
        Event(38.25, "new generation published (CURRENT.json)"),
        Event(39.0, "serve's answer quotes the new text"),
        Event(40.0, "eval_job [m] created")]
