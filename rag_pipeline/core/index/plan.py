"""What the index still has to build: one step per stale partition, from the table pointers.

The index is built in three partitioned stages after the documents: ``chunks`` (per chunker:
the chunks and the BM25 tables), ``embeddings`` (per chunker x model: the vectors, their
checks and the publication of the generation) and ``eval`` (per model, once every generation
of the model is current). A stage's partition is due when a table of
:data:`rag_pipeline.core.index.GENERATION_TABLES` it writes is missing or was built from an
input file that has moved on, or, for ``embeddings``, when the served generation is not the
latest tables or its ANN index is damaged; ``eval`` is due when the model's last evaluation
scored other generations of the chunkers built (another profile's, which it scores too, are
not asked for), or other gold and out-of-domain files than the ones there now.

Each step names the input files it builds from; its ``key`` is their digest, so the same stale
state is one step however often it is planned (the sensor's run key, with the attempt: a failed
run of the same inputs is retried after a back-off, a bounded number of times). An empty plan
with documents written is what "the index is current" means.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from rag_pipeline.core.config.gold_file import EVAL_SET_INPUTS
from rag_pipeline.core.index.ann_index import ann_index_whole
from rag_pipeline.core.index.generations import current_generation
from rag_pipeline.core.index.tables import (
    GENERATION_TABLES,
    RULES_INPUT,
    InconsistentBuildError,
    Scope,
    latest_tables,
    stale_tables,
)
from rag_pipeline.core.storage.table_names import ANN_INDEX, DOCUMENTS
from rag_pipeline.core.storage.warehouse import Warehouse

EVAL_SUMMARY = "eval_summary"
"""The evaluation table whose recorded inputs are the generations it scored."""


class Stage(Enum):
    """A partitioned stage of the index build, named after the job that runs it."""

    CHUNKS = "chunks"
    EMBEDDINGS = "embeddings"
    EVAL = "eval"


STAGE_SCOPES = {Stage.CHUNKS: Scope.CHUNKER, Stage.EMBEDDINGS: Scope.CHUNKER_MODEL}
"""Which generation tables each build stage writes (by scope): a new chunker x model table
(an ANN index) is built by the embeddings stage, so its asset goes into ``embeddings_job``."""


@dataclass(frozen=True)
class Step:
    """One partition of one stage to run, and the input files (or generations) it builds from."""

    stage: Stage
    chunker: str | None
    model: str | None
    inputs: tuple[tuple[str, str], ...]

    @property
    def key(self) -> str:
        """Digest of the stage, partition and inputs: the same stale state, the same key."""
        text = "\n".join([self.stage.value, self.chunker or "", self.model or "",
                          *(f"{name}={value}" for name, value in self.inputs)])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _rules_input(rules: str | None) -> tuple[tuple[str, str], ...]:
    """The rules' digest as a step input (none without ``[access]``: the key is as before)."""
    return () if rules is None else ((RULES_INPUT, rules),)


def _pointer_files(warehouse: Warehouse, chunker: str, model: str,
                   scopes: Sequence[Scope], rules: str | None = None) -> tuple[tuple[str, str], ...]:
    files = []
    for table in GENERATION_TABLES:
        if table.scope in scopes and table.declared(rules):
            version = warehouse.version(table.name, table.scope.partition(chunker, model))
            files.append((table.name, version.file if version else ""))
    return tuple(files)


def _served_is_latest(warehouse: Warehouse, chunker: str, model: str, rules: str | None) -> bool:
    """The served generation names the latest tables, and its ANN index is whole (a damaged
    graph, which ``status`` reports, is rebuilt by the embeddings step this makes due)."""
    generation = current_generation(warehouse, chunker, model)
    if generation is None:
        return False
    try:
        latest = latest_tables(warehouse, chunker, model, rules)
    except InconsistentBuildError:
        return False
    ann = generation.files.get(ANN_INDEX)
    return (all(generation.files.get(name) == table.file for name, table in latest.items())
            and (ann is None or ann_index_whole(warehouse, ann)))


def index_plan(warehouse: Warehouse, chunkers: Sequence[str], models: Sequence[str],
               evaluate: bool = True, rules: str | None = None,
               eval_sets: Mapping[str, str] | None = None) -> tuple[Step, ...]:
    """The steps that bring every ``chunker x model`` generation (and, with ``evaluate``, every
    model's evaluation) up to the latest documents and the ``[access]`` rules whose digest is
    ``rules`` (None: none declared; a rule edit makes each chunker's ``access`` table stale, a
    chunks step); empty when nothing is due or no documents are written yet. A stage waits for
    the stages it reads: no embeddings step for a chunker whose chunks are due, no eval step for
    a model with a generation due. ``eval_sets`` are the gold and out-of-domain files'
    inputs (:func:`~rag_pipeline.core.config.gold_file.eval_set_inputs`): an evaluation that
    scored other files is due (None: the files are not compared)."""
    if warehouse.version(DOCUMENTS) is None or not models:
        return ()
    steps: list[Step] = []
    for chunker in chunkers:
        stale = set(stale_tables(warehouse, chunker, models[0], rules))
        chunk_tables = {t.name for t in GENERATION_TABLES if t.scope == STAGE_SCOPES[Stage.CHUNKS]}
        if stale & chunk_tables:
            steps.append(Step(Stage.CHUNKS, chunker, None,
                              (*_pointer_files(warehouse, chunker, models[0], [Scope.CORPUS]),
                               *_rules_input(rules))))
            continue
        for model in models:
            if stale_tables(warehouse, chunker, model, rules) or not _served_is_latest(
                    warehouse, chunker, model, rules):
                steps.append(Step(Stage.EMBEDDINGS, chunker, model, _pointer_files(
                    warehouse, chunker, model, [Scope.CORPUS, Scope.CHUNKER], rules)))
    if evaluate:
        due = {step.model for step in steps if step.stage == Stage.EMBEDDINGS}
        chunking = any(step.stage == Stage.CHUNKS for step in steps)
        for model in models:
            if chunking or model in due:
                continue
            served = {}
            for chunker in chunkers:
                generation = current_generation(warehouse, chunker, model)
                if generation is not None:
                    served[chunker] = generation.id
            wanted = {**served, **(eval_sets or {})}
            summary = warehouse.version(EVAL_SUMMARY, {"model": model})
            scored = None if summary is None else {
                name: value for name, value in summary.inputs.items()
                if eval_sets is not None or name not in EVAL_SET_INPUTS}
            # Due when it scored another generation of a chunker built here, or other sets; the
            # generations of chunkers another profile built, which it scores too, are its own.
            if len(served) == len(chunkers) and (
                    scored is None or any(scored.get(name) != value for name, value in wanted.items())):
                steps.append(Step(Stage.EVAL, None, model, tuple(sorted(wanted.items()))))
    return tuple(steps)
