"""When the ``index_automation`` sensor requests a failed partition again: exponential back-off
with a cap, and a last attempt after which it waits for an input to change or for a person.

A partition's attempts are counted per inputs (the plan step's key): a run that failed for one
state of the documents says nothing about the next state, which starts again at attempt 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum


class Outcome(Enum):
    """How a run of a partition's inputs ended, as the policy sees it."""

    ACTIVE = "active"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class Verdict(Enum):
    LAUNCH = "launch"
    WAIT = "wait"
    """Backing off: the next attempt is due at :attr:`RetryDecision.due_at`."""
    GAVE_UP = "gave_up"
    """Every attempt failed: nothing more until an input changes or a person re-executes it."""
    DONE = "done"
    """A run of these inputs succeeded (or is running): never the same run twice."""


@dataclass(frozen=True)
class PastRun:
    """A run of the same job, partition and inputs: how it ended and when (seconds since the
    epoch; ``None`` while it has not ended)."""

    outcome: Outcome
    ended_at: float | None
    canceled: bool = False
    """Stopped by a person or a signal (the policy counts it as failed; a message says which)."""


def consecutive_failures(runs: Sequence[PastRun]) -> int:
    """How many of ``runs`` (newest first) failed since the last one that did not: a launch
    now is attempt ``consecutive_failures(runs) + 1``."""
    failures = 0
    for run in runs:
        if run.outcome != Outcome.FAILED:
            break
        failures += 1
    return failures


@dataclass(frozen=True)
class RetryDecision:
    verdict: Verdict
    attempt: int
    """The attempt a launch would be (1 for the first run of these inputs); for ``WAIT`` and
    ``GAVE_UP`` the failed attempts so far."""
    due_at: float | None = None


@dataclass(frozen=True)
class RetryPolicy:
    """``max_attempts`` runs per partition and inputs; after the ``n``-th failure the next
    attempt waits ``min(first_delay_seconds * 2 ** (n - 1), max_delay_seconds)``."""

    first_delay_seconds: float = 60.0
    max_delay_seconds: float = 900.0
    max_attempts: int = 4
    gone_after_seconds: float = 15.0
    """A partition still due this long after a run of the same inputs succeeded has lost what
    that run wrote (a backup restored over it: the files are named by their content, so the
    inputs are the same): it is launched once more, never twice in a row."""

    def __post_init__(self) -> None:
        if self.first_delay_seconds < 0 or self.max_delay_seconds < self.first_delay_seconds:
            raise ValueError("delays must satisfy 0 <= first_delay_seconds <= max_delay_seconds")
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, not {self.max_attempts}")

    def delay_after(self, failures: int) -> float:
        """Seconds to wait after the ``failures``-th consecutive failure (``failures >= 1``)."""
        return min(self.first_delay_seconds * 2 ** (failures - 1), self.max_delay_seconds)

    def decide(self, runs: Sequence[PastRun], now: float) -> RetryDecision:
        """What to do with a due partition, given its runs for the same inputs, newest first."""
        if not runs:
            return RetryDecision(Verdict.LAUNCH, 1)
        newest = runs[0]
        if (newest.outcome == Outcome.SUCCEEDED and newest.ended_at is not None
                and now - newest.ended_at >= self.gone_after_seconds
                and (len(runs) == 1 or runs[1].outcome != Outcome.SUCCEEDED)):
            return RetryDecision(Verdict.LAUNCH, 1)  # what it wrote is gone: once more
        if runs[0].outcome != Outcome.FAILED:
            return RetryDecision(Verdict.DONE, len(runs))
        failures = consecutive_failures(runs)
        if failures >= self.max_attempts:
            return RetryDecision(Verdict.GAVE_UP, failures)
        due_at = (runs[0].ended_at or now) + self.delay_after(failures)
        if now < due_at:
            return RetryDecision(Verdict.WAIT, failures, due_at)
        return RetryDecision(Verdict.LAUNCH, failures + 1)
