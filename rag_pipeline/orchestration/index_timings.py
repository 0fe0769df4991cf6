"""Where an ``index`` spent its wall time, read from the runs it followed: each step's time
(from its start and success events), the embeddings step split by its own metadata (model
load, encoding, writing), and what no step accounts for (run and code-location start-ups, the
daemon, the waits between runs). ``index --timings`` prints it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import dagster as dg

from rag_pipeline.orchestration.index_launch import MODEL_PARTITION_TAG

__all__ = ["IndexTimings", "index_timings"]

STAGES = {"documents": "extraction", "chunks": "chunking", "access": "access labels",
          "bm25_stats": "BM25 tables",
          "ann_index": "ANN build", "index_generation": "publish",
          "retrieval_eval": "evaluation"}
"""Step (asset) name -> the stage it is reported as; ``embeddings`` is split by its metadata."""


@dataclass
class IndexTimings:
    """Seconds per stage in the order first seen, the wall time, and the chunks embedded; per
    model key, the chunks it embedded and its seconds encoding (``encoded``: a profile of two
    models encodes at two rates)."""

    wall: float
    stages: dict[str, float] = field(default_factory=dict)
    embedded: int = 0
    runs: int = 0
    encoded: dict[str, tuple[int, float]] = field(default_factory=dict)

    def add(self, stage: str, seconds: float) -> None:
        self.stages[stage] = self.stages.get(stage, 0.0) + max(seconds, 0.0)

    @property
    def outside_steps(self) -> float:
        """Wall time no step accounts for: start-ups, waits between runs (and a daemon's)."""
        return max(self.wall - sum(self.stages.values()), 0.0)

    @property
    def encoding_share(self) -> float:
        return self.stages.get("encoding", 0.0) / self.wall if self.wall > 0 else 0.0


def _metadata_value(event: dg.DagsterEvent, key: str) -> float:
    value = event.event_specific_data.materialization.metadata.get(key)
    return float(getattr(value, "value", value) or 0.0)


def index_timings(instance: dg.DagsterInstance, run_ids: Iterable[str], wall: float) -> IndexTimings:
    """The stages of the runs ``run_ids`` over an ``index`` of ``wall`` seconds."""
    timings = IndexTimings(wall)
    for run_id in run_ids:
        timings.runs += 1
        run = instance.get_run_by_id(run_id)
        model = run.tags.get(MODEL_PARTITION_TAG, "") if run is not None else ""
        started: dict[str, float] = {}
        embedding: dict[str, float] = {}
        for record in instance.all_logs(run_id):
            event = record.dagster_event
            if event is None or event.step_key is None:
                continue
            if event.event_type == dg.DagsterEventType.STEP_START:
                started[event.step_key] = record.timestamp
            elif event.event_type == dg.DagsterEventType.ASSET_MATERIALIZATION \
                    and event.step_key == "embeddings":
                embedding = {key: _metadata_value(event, key) for key in (
                    "model_load_seconds", "embed_seconds", "write_seconds", "embedded")}
            elif event.event_type == dg.DagsterEventType.STEP_SUCCESS and event.step_key in started:
                seconds = record.timestamp - started[event.step_key]
                if event.step_key == "embeddings":
                    timings.add("model load", embedding.get("model_load_seconds", 0.0))
                    timings.add("encoding", embedding.get("embed_seconds", 0.0))
                    timings.add("writing", embedding.get("write_seconds", 0.0))
                    timings.add("embeddings checks and reads", seconds - sum(
                        embedding.get(k, 0.0) for k in ("model_load_seconds", "embed_seconds",
                                                        "write_seconds")))
                    timings.embedded += int(embedding.get("embedded", 0))
                    chunks, seconds_encoding = timings.encoded.get(model, (0, 0.0))
                    timings.encoded[model] = (chunks + int(embedding.get("embedded", 0)),
                                              seconds_encoding + embedding.get("embed_seconds", 0.0))
                else:
                    timings.add(STAGES.get(event.step_key, event.step_key), seconds)
    return timings
