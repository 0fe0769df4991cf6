"""Jobs, the nightly schedule and the sensor that carries a documents change down the index.

The index is four jobs, one per stage, so each job's page lists its runs: ``documents_job``
(unpartitioned), ``chunks_job`` (per chunker: chunks, the four BM25 tables and, under ``[access]``, the
chunks' readers),
``embeddings_job`` (per chunker x model: the vectors, their blocking checks, then
``index_generation``, the publication) and ``eval_job`` (per model). The nightly schedule runs
``documents_job``; the ``index_automation`` sensor then launches a run of the right job for each
partition :func:`rag_pipeline.core.index.plan.index_plan` finds due (a table missing, built
from an input that moved on, or labelled by other ``[access]`` rules than the configuration file
holds at the tick; the evaluation of a model once all its generations are current),
so a night with no change launches nothing.

Why a sensor and not Dagster's declarative automation: an ``AutomationConditionSensorDefinition``
launches its runs as the implicit ``__ASSET_JOB`` (the Jobs page then shows none of them), and
job-level automation conditions are a preview that the default sensor alone evaluates. The
sensor asks the same question ``rag-pipeline index`` asks ("is the index current?") of the
same tables, so the two can never disagree. A partition that has a run queued or in progress
gets no second one. Each run request's ``run_key`` is the digest of the input files the step
builds from, with the attempt: a run that failed (a transient fault, a kill, a blocking check)
is requested again for the same inputs after a back-off (:mod:`rag_pipeline.orchestration.
retry_policy`: 60 s, doubling, at most 15 min, 4 attempts), reusing every checkpointed vector;
after the last attempt the partition waits for an input to change or for a person (re-execute
it from its run page, or ``rag-pipeline index``). The tick's skip reason names each partition
that waits, its attempts and when it is due.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from itertools import takewhile
from pathlib import Path

import dagster as dg

from rag_pipeline.core.config.gold_file import eval_set_inputs
from rag_pipeline.core.embedding.models import ModelSpec
from rag_pipeline.core.evaluation.gold import no_gold_set_reason
from rag_pipeline.core.index.plan import Stage, Step, index_plan
from rag_pipeline.core.storage.table_names import (
    ACCESS,
    ANN_INDEX,
    BM25_TABLES,
    CHUNKS,
    DOCUMENTS,
    EMBEDDINGS,
)
from rag_pipeline.core.storage.warehouse import Warehouse
from rag_pipeline.orchestration.assets.index_generation import INDEX_GENERATION
from rag_pipeline.orchestration.assets.retrieval_eval import EVAL_TABLES
from rag_pipeline.orchestration.partitions import CHUNKER, MODEL
from rag_pipeline.orchestration.pools import ensure_pool_limits
from rag_pipeline.orchestration.resources import IndexStorage
from rag_pipeline.orchestration.retry_policy import Outcome, PastRun, RetryPolicy, Verdict
from rag_pipeline.orchestration.run_tags import ATTEMPT_TAG, INPUTS_TAG

STAGE_TAG = "rag_pipeline/stage"
COMPUTE_TAG = "rag_pipeline/compute"
"""``model`` on the runs that load the embedding model with every core the run is given
(embeddings and eval): the run queue lets cores // torch threads of them run at once
(``dagster_home/dagster.yaml``)."""

DOCUMENTS_JOB = "documents_job"
CHUNKS_JOB = "chunks_job"
EMBEDDINGS_JOB = "embeddings_job"
EVAL_JOB = "eval_job"
NIGHTLY_SCHEDULE = "nightly_index"
INDEX_SENSOR = "index_automation"
JOB_OF_STAGE = {Stage.CHUNKS: CHUNKS_JOB, Stage.EMBEDDINGS: EMBEDDINGS_JOB, Stage.EVAL: EVAL_JOB}

SENSOR_INTERVAL_SECONDS = 5
"""Between two evaluations of the plan (a few pointer reads): a finished run's successor is
requested at most this long after it, so the three stages after the documents wait at most
15 s in all; the rest of a one-document edit's time is the runs' own (README, "Timing")."""

DEFAULT_RETRY = RetryPolicy()
"""60 s after a failure, doubling, at most 15 min; 4 attempts per partition and inputs."""

ACTIVE_STATUSES = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED,
                   dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED,
                   dg.DagsterRunStatus.CANCELING]


def build_index_jobs() -> Sequence[dg.UnresolvedAssetJobDefinition]:
    return (
        dg.define_asset_job(DOCUMENTS_JOB, selection=[DOCUMENTS], tags={STAGE_TAG: "documents"},
                            description="Extract every document of the corpus (stage 1 of 4)."),
        dg.define_asset_job(CHUNKS_JOB, selection=[CHUNKS, *BM25_TABLES, ACCESS],
                            tags={STAGE_TAG: "ingest"},
                            description="Chunk, count BM25 statistics and label the chunks' "
                                        "readers under [access], one chunker per run "
                                        "(stage 2 of 4)."),
        dg.define_asset_job(EMBEDDINGS_JOB, selection=[EMBEDDINGS, ANN_INDEX, INDEX_GENERATION],
                            tags={STAGE_TAG: "index", COMPUTE_TAG: "model"},
                            description="Embed the chunks, check the vectors (blocking), build "
                                        "their ANN index and publish the generation, one "
                                        "chunker x model per run (stage 3 of 4)."),
        dg.define_asset_job(EVAL_JOB, selection=list(EVAL_TABLES),
                            tags={STAGE_TAG: "evaluation", COMPUTE_TAG: "model"},
                            description="Evaluate retrieval on the gold sets, one model per run "
                                        "(stage 4 of 4)."),
    )


nightly_index = dg.ScheduleDefinition(
    name=NIGHTLY_SCHEDULE, job_name=DOCUMENTS_JOB, cron_schedule="0 2 * * *",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="02:00 every night: re-read the corpus; the index sensor does the rest.")


def partition_key(step: Step) -> str:
    """The partition of the step's job: a chunker, a chunker x model, or a model."""
    if step.stage == Stage.EMBEDDINGS:
        return dg.MultiPartitionKey({CHUNKER: step.chunker, MODEL: step.model})
    return step.chunker if step.stage == Stage.CHUNKS else step.model


def run_request(step: Step, attempt: int = 1, runs_before: int = 0) -> dg.RunRequest:
    """The request for ``step``; ``attempt`` (1 for the first run of these inputs) and the
    number of runs these inputs had make the run key, so a retry is a new run."""
    tags = {INPUTS_TAG: step.key, ATTEMPT_TAG: str(attempt)}
    run_key = f"{JOB_OF_STAGE[step.stage]}:{step.key}"
    return dg.RunRequest(run_key=run_key if not runs_before else f"{run_key}:{runs_before + 1}",
                         job_name=JOB_OF_STAGE[step.stage], partition_key=partition_key(step),
                         tags=tags)


_OUTCOMES = {dg.DagsterRunStatus.SUCCESS: Outcome.SUCCEEDED,
             dg.DagsterRunStatus.FAILURE: Outcome.FAILED,
             dg.DagsterRunStatus.CANCELED: Outcome.FAILED}


def past_runs(instance: dg.DagsterInstance, step: Step) -> list[PastRun]:
    """The runs of ``step``'s job and partition that built from the same inputs since the
    partition last ran on other inputs, newest first: a partition that moved on and came back
    (an edit reverted) is due again, however its earlier run of these inputs ended."""
    records = instance.get_run_records(filters=dg.RunsFilter(
        job_name=JOB_OF_STAGE[step.stage], tags={"dagster/partition": str(partition_key(step))}))
    since = takewhile(lambda r: r.dagster_run.tags.get(INPUTS_TAG) == step.key, records)
    return [PastRun(_OUTCOMES.get(r.dagster_run.status, Outcome.ACTIVE), r.end_time,
                    r.dagster_run.status == dg.DagsterRunStatus.CANCELED) for r in since]


def runs_of_inputs(instance: dg.DagsterInstance, step: Step) -> int:
    """How many runs ever built ``step``'s partition from its inputs: each had a run key of its
    own, and the sensor never launches a run key twice."""
    return len(instance.get_run_records(filters=dg.RunsFilter(
        job_name=JOB_OF_STAGE[step.stage],
        tags={"dagster/partition": str(partition_key(step)), INPUTS_TAG: step.key})))


def _label(step: Step) -> str:
    return f"{JOB_OF_STAGE[step.stage]} [{partition_key(step)}]"


def due_requests(steps: Sequence[Step], instance: dg.DagsterInstance, policy: RetryPolicy,
                 now: float) -> tuple[list[dg.RunRequest], list[str]]:
    """Run requests for the ``steps`` the retry policy lets run now, and one line for each
    step that waits (backing off, or given up after its last attempt)."""
    requests, waiting = [], []
    for step in steps:
        runs = past_runs(instance, step)
        decision = policy.decide(runs, now)
        if decision.verdict == Verdict.LAUNCH:
            requests.append(run_request(step, decision.attempt, runs_of_inputs(instance, step)))
        elif decision.verdict == Verdict.WAIT:
            ended = "was canceled" if runs[0].canceled else "failed"
            waiting.append(f"{_label(step)}: attempt {decision.attempt + 1} of "
                           f"{policy.max_attempts} in {decision.due_at - now:.0f} s (attempt "
                           f"{decision.attempt} {ended})")
        elif decision.verdict == Verdict.GAVE_UP:
            waiting.append(f"{_label(step)}: all {policy.max_attempts} attempts failed; waits "
                           "for an input to change or a re-execution")
    return requests, waiting


def active_runs(instance: dg.DagsterInstance) -> Sequence[dg.DagsterRun]:
    """Every run queued or in progress (read once per tick)."""
    return instance.get_runs(filters=dg.RunsFilter(statuses=ACTIVE_STATUSES))


def active_partitions(runs: Sequence[dg.DagsterRun]) -> set[tuple[str, str]]:
    """(job, partition) of each of ``runs``."""
    return {(run.job_name, run.tags.get("dagster/partition", "")) for run in runs}


def blocked_models(instance: dg.DagsterInstance, chunkers: Sequence[str],
                   models: Sequence[str]) -> set[str]:
    """Models with a chunker whose latest ``embeddings_job`` run failed (a blocking check, or a
    crash): their evaluation waits, even when the served generations are unchanged (a drifted
    model fails ``vectors_match_model`` without writing new vectors)."""
    blocked = set()
    for model in models:
        for chunker in chunkers:
            key = str(dg.MultiPartitionKey({CHUNKER: chunker, MODEL: model}))
            latest = instance.get_runs(filters=dg.RunsFilter(
                job_name=EMBEDDINGS_JOB, tags={"dagster/partition": key}), limit=1)
            if latest and latest[0].status == dg.DagsterRunStatus.FAILURE:
                blocked.add(model)
                break
    return blocked


def launchable(plan: Sequence[Step], instance: dg.DagsterInstance, chunkers: Sequence[str],
               models: Sequence[str], active: Sequence[dg.DagsterRun]) -> list[Step]:
    """The steps of ``plan`` to launch now: none for a partition with one of the ``active``
    runs (:func:`active_runs`), and no evaluation of a blocked model (:func:`blocked_models`)."""
    busy = active_partitions(active)
    blocked = blocked_models(instance, chunkers, models) if any(
        step.stage == Stage.EVAL for step in plan) else set()
    return [step for step in plan
            if (JOB_OF_STAGE[step.stage], str(partition_key(step))) not in busy
            and not (step.stage == Stage.EVAL and step.model in blocked)]


ASSET_JOB_PREFIX = "__ASSET_JOB"
"""The job name Dagster gives a run launched from an asset's page or a backfill."""


def launched_elsewhere(instance: dg.DagsterInstance, active: Sequence[dg.DagsterRun]) -> str | None:
    """Why the sensor waits although partitions are due: a backfill in progress (the UI's
    "Materialize all", or a partition range), or one of the ``active`` runs launched from an
    asset's page. Those build the same partitions: the sensor's own runs beside them did the
    work twice. None when there is neither."""
    backfills = [b for b in instance.get_backfills(limit=20) if b.status.value == "REQUESTED"]
    if backfills:
        return (f"backfill {backfills[0].backfill_id} is in progress: the sensor waits for it "
                "(it builds the same partitions)")
    runs = [run for run in active if run.job_name.startswith(ASSET_JOB_PREFIX)]
    if runs:
        return (f"run {runs[0].run_id[:8]}, launched from the UI, is queued or in progress: the "
                "sensor waits for it (it may build the same partitions)")
    return None


def unscored_reason(plan: Sequence[Step], warehouse: Warehouse, gold_path: Path,
                    ood_path: Path | None = None) -> str | None:
    """Why the evaluation steps of ``plan`` would score nothing (no gold set for this corpus,
    or a gold or out-of-domain file that cannot be read), or None (also when ``plan`` has no
    evaluation step: the files are then not read)."""
    if not any(step.stage == Stage.EVAL for step in plan):
        return None
    return no_gold_set_reason(warehouse, gold_path, ood_path)


def build_index_automation(chunkers: Sequence[str], models: Sequence[ModelSpec],
                           jobs: Sequence[dg.UnresolvedAssetJobDefinition],
                           retry: RetryPolicy = DEFAULT_RETRY,
                           clock: Callable[[], float] = time.time,
                           gold_path: Path | None = None,
                           ood_path: Path | None = None,
                           rules: Callable[[], str | None] = lambda: None,
                           commands: Callable[[str], str] = lambda message: message,
                           ) -> dg.SensorDefinition:
    """``index_automation`` over the declared chunkers and models, launching ``jobs`` and
    retrying failed partitions by ``retry``; ``clock`` is the time in seconds since the epoch
    (the runs' end times are compared with it). While the gold set at ``gold_path`` is not this
    corpus's, no evaluation run is requested (None: the gold set is not consulted), and an
    evaluation that scored another gold file or out-of-domain file (``ood_path``) than the ones
    there now is requested again. ``rules``
    gives, at each tick, the digest of the ``[access]`` rules in force (None: none declared),
    so a rule edit re-labels without a reload of the code location. ``commands`` gives the
    commands a reason suggests the options of the configuration the sensor was built from
    (:meth:`~rag_pipeline.core.config.build_context.BuildContext.commands_in`)."""
    model_keys = [m.key for m in models]

    @dg.sensor(name=INDEX_SENSOR, jobs=list(jobs),
               minimum_interval_seconds=SENSOR_INTERVAL_SECONDS,
               default_status=dg.DefaultSensorStatus.RUNNING,
               description="Launches chunks_job, embeddings_job and eval_job for each partition "
                           "whose inputs changed (its tables are missing or built from moved-on "
                           "files), so the nightly documents run rebuilds what it must and "
                           "nothing else. One run per partition at a time; a failed partition "
                           f"is requested again after {retry.first_delay_seconds:.0f} s, "
                           f"doubling, at most {retry.max_attempts} attempts per inputs.")
    def index_automation(context: dg.SensorEvaluationContext, storage: IndexStorage):
        ensure_pool_limits(context.instance)
        warehouse = storage.warehouse()
        if warehouse.version(DOCUMENTS) is None:
            return dg.SkipReason("no documents run yet: `rag-pipeline index`, the corpus_watch "
                                 "sensor or materialising `documents` builds the index")
        plan = index_plan(warehouse, chunkers, model_keys, rules=rules(), eval_sets=None
                          if gold_path is None else eval_set_inputs(gold_path, ood_path))
        unscored = None if gold_path is None else unscored_reason(plan, warehouse, gold_path,
                                                                   ood_path)
        unscored = None if unscored is None else commands(unscored)
        if unscored is not None:
            plan = tuple(step for step in plan if step.stage != Stage.EVAL)
            if not plan:
                return dg.SkipReason(f"the index is current; evaluation skipped: {unscored}")
        active = active_runs(context.instance) if plan else ()
        if plan and (elsewhere := launched_elsewhere(context.instance, active)) is not None:
            return dg.SkipReason(elsewhere)
        steps = launchable(plan, context.instance, chunkers, model_keys, active)
        requests, waiting = due_requests(steps, context.instance, retry, clock())
        if not requests:
            return dg.SkipReason("the index is current" if not plan else "; ".join(waiting) or
                                 f"{len(plan)} due partition(s) have a run or wait for one")
        for line in waiting:
            context.log.info(line)
        return requests

    return index_automation
