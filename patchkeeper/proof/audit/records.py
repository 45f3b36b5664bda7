"""The audit's inputs: the jobs and the ledger's executions as read, and the kinds of loss.

The ledger keeps only the text of an execution's error, so how that text sorts a loss (locked,
a designed refusal, a lost fire claim) lives beside the records it classifies.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

LOCKED_TEXT = "database is locked"
# Refusals before start that are the scheduler working as designed, not a loss.
REFUSAL_TEXTS = ("dispatch claim rejected", "fire claim lost")
# What the scheduler books when a renewal of the run's fire claim failed: "Fire claim ownership
# lost; stale result was discarded." when the claim is another's, and its
# `_OWNERSHIP_LOST_INTERRUPTED` text, which reads like a shutdown, when the claim is still the
# run's own (the case of the fence bug, #105861, #108862).
OWNERSHIP_LOST_TEXTS = ("fire claim ownership lost", "interrupted by shutdown before terminal")


class LossKind(StrEnum):
    """Why an execution never started."""

    LOCKED = "locked"  # the #135487 loss: the worker could not adopt its claim in time
    OTHER = "other"  # anything else: unexplained, so an anomaly
    REFUSAL = "refusal"  # a designed refusal (claim rejected / lost): not an anomaly


@dataclass(frozen=True)
class Job:
    """A scheduled job as the jobs file states it."""

    id: str
    name: str | None
    last_status: str | None
    failure_streak: object

    @property
    def dashboard_healthy(self) -> bool:
        """What a dashboard shows green: last run ok and no failure streak recorded."""
        return self.last_status == "ok" and self.failure_streak in (None, 0)


@dataclass(frozen=True)
class Execution:
    """One row of the cron ledger: a job's execution as claimed."""

    id: str
    job_id: str
    status: str
    claimed_at: datetime
    started: bool
    started_at: datetime | None  # None when absent, or present but not a readable time
    error: str | None
    pid: int | None
    delivery_outcome: str | None = None  # the ledger's own column, in versions that have it

    @property
    def never_started(self) -> bool:
        """No start recorded and no longer just claimed (a young claim is simply in flight)."""
        return not self.started and self.status != "claimed"

    @property
    def loss(self) -> LossKind | None:
        """Why it never started; None when it started (or is still just claimed)."""
        return classify_loss(self.error) if self.never_started else None


@dataclass(frozen=True)
class Ledger:
    """The cron ledger as read: its columns and executions, and the rows that could not be."""

    columns: frozenset[str]
    rows: int
    executions: tuple[Execution, ...]
    bad_stamps: tuple[str, ...]  # "id: value" of rows whose claimed_at is not an instant


def classify_loss(error: str | None) -> LossKind:
    """Sort a never-started execution by its error text (the ledger keeps only the text)."""
    text = (error or "").casefold()
    if LOCKED_TEXT in text:
        return LossKind.LOCKED
    if any(refusal in text for refusal in REFUSAL_TEXTS):
        return LossKind.REFUSAL
    return LossKind.OTHER


def booked_ownership_lost(execution: Execution) -> bool:
    """Booked failed because the scheduler believed another owner took the claim."""
    error = (execution.error or "").casefold()
    return execution.status == "failed" and any(text in error for text in OWNERSHIP_LOST_TEXTS)


def text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None
