"""The audit's five checks: pure functions from the executions and the jobs to findings."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta, tzinfo

from patchkeeper.proof.audit.findings import (
    DayCount,
    DeliveredButLost,
    GreenButFailing,
    NeverStartedGroup,
    StuckClaim,
)
from patchkeeper.proof.audit.ledger_file import DELIVERIES_PATH
from patchkeeper.proof.audit.records import Execution, Job, LossKind, booked_ownership_lost

IN_FLIGHT = ("claimed", "running")
DELIVERED = "delivered"


def find_never_started(
    executions: Iterable[Execution], jobs: Mapping[str, Job]
) -> list[NeverStartedGroup]:
    groups: dict[tuple[str, str, LossKind], list[Execution]] = defaultdict(list)
    for execution in executions:
        if execution.loss is not None:
            groups[(execution.job_id, execution.status, execution.loss)].append(execution)
    found = [_group(key, members, jobs) for key, members in groups.items()]
    return sorted(found, key=lambda group: (group.kind, -group.count, group.job_id, group.status))


def _group(
    key: tuple[str, str, LossKind], members: list[Execution], jobs: Mapping[str, Job]
) -> NeverStartedGroup:
    job_id, status, kind = key
    members.sort(key=lambda execution: execution.claimed_at)
    return NeverStartedGroup(
        job_id=job_id,
        job_name=_job_name(jobs, job_id),
        status=status,
        kind=kind,
        count=len(members),
        first=members[0].claimed_at,
        last=members[-1].claimed_at,
        sample_error=members[-1].error,
    )


def _job_name(jobs: Mapping[str, Job], job_id: str) -> str | None:
    job = jobs.get(job_id)
    return job.name if job else None


def latest_by_job(executions: Iterable[Execution]) -> dict[str, Execution]:
    """The newest execution of each job by claimed instant (not by text: offsets may differ)."""
    latest: dict[str, Execution] = {}
    for execution in executions:
        current = latest.get(execution.job_id)
        if current is None or (execution.claimed_at, execution.id) > (
            current.claimed_at,
            current.id,
        ):
            latest[execution.job_id] = execution
    return latest


def find_green_but_failing(
    executions: Iterable[Execution], jobs: Mapping[str, Job]
) -> list[GreenButFailing]:
    """Healthy-looking jobs whose latest attempt failed or never started.

    Designed refusals are not attempts of the job (another owner had the occurrence), so they
    neither count as the latest execution nor hide a real failure before them.
    """
    attempts = (execution for execution in executions if execution.loss is not LossKind.REFUSAL)
    found: list[GreenButFailing] = []
    for job_id, execution in sorted(latest_by_job(attempts).items()):
        job = jobs.get(job_id)
        failing = execution.status == "failed" or execution.never_started
        if job is None or not job.dashboard_healthy or not failing:
            continue
        found.append(
            GreenButFailing(
                job_id=job_id,
                job_name=job.name,
                last_status=job.last_status or "",
                failure_streak=None if job.failure_streak is None else 0,
                execution_id=execution.id,
                execution_status=execution.status,
                claimed_at=execution.claimed_at,
                started=execution.started,
                error=execution.error,
            )
        )
    return found


def find_stuck(
    executions: Iterable[Execution],
    jobs: Mapping[str, Job],
    now: datetime,
    stuck_after: timedelta,
) -> list[StuckClaim]:
    """Claims in claimed/running whose age (since start, else since claim) exceeds stuck_after."""
    found: list[StuckClaim] = []
    for execution in executions:
        if execution.status not in IN_FLIGHT:
            continue
        since = execution.started_at or execution.claimed_at
        age = now - since
        if age > stuck_after:
            found.append(
                StuckClaim(
                    execution_id=execution.id,
                    job_id=execution.job_id,
                    job_name=_job_name(jobs, execution.job_id),
                    status=execution.status,
                    since=since,
                    age=age,
                    pid=execution.pid,
                )
            )
    return sorted(found, key=lambda claim: claim.since)


def find_delivered_but_lost(
    executions: Iterable[Execution],
    deliveries: Mapping[str, str] | None,
    jobs: Mapping[str, Job],
) -> list[DeliveredButLost]:
    """Executions booked failed as a lost fire claim whose delivery is recorded as delivered:
    in the ledger's own delivery_outcome, or in the delivery queue under the same execution id."""
    found: list[DeliveredButLost] = []
    for execution in executions:
        if not booked_ownership_lost(execution):
            continue
        evidence = []
        if (execution.delivery_outcome or "").casefold() == DELIVERED:
            evidence.append("executions.delivery_outcome is delivered")
        if deliveries is not None and deliveries.get(execution.id) == DELIVERED:
            evidence.append(f"{DELIVERIES_PATH.name} says delivered")
        if evidence:
            found.append(
                DeliveredButLost(
                    execution_id=execution.id,
                    job_id=execution.job_id,
                    job_name=_job_name(jobs, execution.job_id),
                    claimed_at=execution.claimed_at,
                    error=execution.error or "",
                    evidence=tuple(evidence),
                )
            )
    return sorted(found, key=lambda item: (item.claimed_at, item.execution_id))


def count_per_day(
    executions: Iterable[Execution], now: datetime, days: int, zone: tzinfo
) -> list[DayCount]:
    """Counts for the last `days` days (today included) in `zone`, oldest first."""
    today = now.astimezone(zone).date()
    window = [today - timedelta(days=offset) for offset in range(days - 1, -1, -1)]
    totals = {day: [0, 0, 0, 0] for day in window}
    for execution in executions:
        counts = totals.get(execution.claimed_at.astimezone(zone).date())
        if counts is None:
            continue
        counts[0] += 1
        counts[1] += execution.status == "failed"
        counts[2] += execution.never_started
        counts[3] += execution.loss is LossKind.LOCKED
    return [DayCount(day, *totals[day]) for day in window]
