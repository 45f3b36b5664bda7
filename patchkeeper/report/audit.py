"""Show an AuditResult: as text for a person, or as the JSON document scripts rely on."""

from __future__ import annotations

from datetime import datetime, timedelta, tzinfo
from typing import Any

from patchkeeper.proof.audit.findings import (
    AuditResult,
    Check,
    DeliveredButLost,
    GreenButFailing,
    NeverStartedGroup,
    StuckClaim,
    Unchecked,
)
from patchkeeper.proof.audit.records import LossKind
from patchkeeper.report.render import SCHEMA

_KIND_TITLES = {
    LossKind.LOCKED: 'lost to "database is locked" (upstream #135487)',
    LossKind.OTHER: "unexplained (no known refusal text)",
    LossKind.REFUSAL: "designed refusals (claim rejected/lost; not anomalies)",
}
_ERROR_WIDTH = 100
_DAY_COLUMNS = ("executions", "failed", "never started", "of which locked")


# --- JSON -----------------------------------------------------------------------------------


def to_dict(result: AuditResult) -> dict[str, Any]:
    """The `--json` document; stamps keep the offset the ledger recorded them with."""
    return {
        "schema": SCHEMA,
        "command": "audit",
        "exit_code": result.exit_code,
        "home": str(result.home),
        "ledger": str(result.ledger),
        "jobs_file": str(result.jobs_file),
        "now": result.now.isoformat(),
        "stuck_after_seconds": result.stuck_after.total_seconds(),
        "days": result.days,
        "day_zone": zone_label(result.day_zone, result.now),
        "executions_read": result.executions_read,
        "jobs_read": result.jobs_read,
        "checked": [str(check) for check in result.checked],
        "unchecked": [_unchecked_dict(item) for item in result.unchecked],
        "anomalies": result.anomalies,
        "never_started": [_never_started_dict(group) for group in result.never_started],
        "green_but_failing": [_green_dict(item) for item in result.green_but_failing],
        "stuck": [_stuck_dict(claim) for claim in result.stuck],
        "deliveries": None if result.deliveries is None else str(result.deliveries),
        "ownership_lost": result.ownership_lost,
        "delivered_but_booked_lost": [_delivered_dict(item) for item in result.delivered_but_lost],
        "per_day": [
            {
                "day": count.day.isoformat(),
                "executions": count.executions,
                "failed": count.failed,
                "never_started": count.never_started,
                "locked": count.locked,
            }
            for count in result.per_day
        ],
    }


def _unchecked_dict(item: Unchecked) -> dict[str, Any]:
    return {"check": str(item.check) if item.check else None, "reason": item.reason}


def _never_started_dict(group: NeverStartedGroup) -> dict[str, Any]:
    return {
        "job_id": group.job_id,
        "job_name": group.job_name,
        "status": group.status,
        "kind": str(group.kind),
        "anomaly": group.is_anomaly,
        "count": group.count,
        "first": group.first.isoformat(),
        "last": group.last.isoformat(),
        "sample_error": group.sample_error,
    }


def _green_dict(item: GreenButFailing) -> dict[str, Any]:
    return {
        "job_id": item.job_id,
        "job_name": item.job_name,
        "last_status": item.last_status,
        "failure_streak": item.failure_streak,
        "execution_id": item.execution_id,
        "execution_status": item.execution_status,
        "claimed_at": item.claimed_at.isoformat(),
        "started": item.started,
        "error": item.error,
    }


def _delivered_dict(item: DeliveredButLost) -> dict[str, Any]:
    return {
        "execution_id": item.execution_id,
        "job_id": item.job_id,
        "job_name": item.job_name,
        "claimed_at": item.claimed_at.isoformat(),
        "error": item.error,
        "evidence": list(item.evidence),
    }


def _stuck_dict(claim: StuckClaim) -> dict[str, Any]:
    return {
        "execution_id": claim.execution_id,
        "job_id": claim.job_id,
        "job_name": claim.job_name,
        "status": claim.status,
        "since": claim.since.isoformat(),
        "age_seconds": claim.age.total_seconds(),
        "pid": claim.pid,
    }


# --- text -----------------------------------------------------------------------------------


def render_text(result: AuditResult) -> str:
    """The report a person reads, every section present so "none" is visible, not implied."""
    sections = [
        _header(result),
        _never_started_text(result),
        _green_text(result),
        _stuck_text(result),
        _delivered_text(result),
        _per_day_text(result),
        _unchecked_text(result),
        _verdict(result),
    ]
    return "\n\n".join(section for section in sections if section) + "\n"


def _header(result: AuditResult) -> str:
    if result.jobs_read is not None:
        jobs = f"{result.jobs_read} jobs"
    else:
        jobs = "could not be read" if result.jobs_unreadable else "missing"
    read = "not read" if result.executions_read is None else f"{result.executions_read} executions"
    return "\n".join(
        [
            f"Audit of {result.home}",
            f"  ledger  {result.ledger} ({read})",
            f"  jobs    {result.jobs_file} ({jobs})",
            f"  times in {zone_label(result.day_zone, result.now)}; "
            f"stuck = claimed/running for more than {human_duration(result.stuck_after)}",
        ]
    )


def _never_started_text(result: AuditResult) -> str:
    title = "Never started (no started_at)"
    if Check.NEVER_STARTED not in result.checked:
        return f"{title}: not checked"
    if not result.never_started:
        return f"{title}: none"
    lines = [f"{title}: {sum(group.count for group in result.never_started)}"]
    for kind in LossKind:
        groups = [group for group in result.never_started if group.kind is kind]
        if groups:
            lines.append(f"  {_KIND_TITLES[kind]}: {sum(group.count for group in groups)}")
            lines.extend(_group_line(group, result.day_zone) for group in groups)
    return "\n".join(lines)


def _group_line(group: NeverStartedGroup, zone: tzinfo) -> str:
    when = _when(group.first, zone)
    if group.count > 1:
        when = f"{when} .. {_when(group.last, zone)}"
    line = f"    {_job(group.job_id, group.job_name)}  {group.status} x{group.count}  {when}"
    return f"{line}\n      error: {_short(group.sample_error)}"


def _green_text(result: AuditResult) -> str:
    title = "Green but failing (dashboard ok, ledger says otherwise)"
    if Check.GREEN_BUT_FAILING not in result.checked:
        return f"{title}: not checked"
    if not result.green_but_failing:
        return f"{title}: none"
    lines = [f"{title}: {len(result.green_but_failing)}"]
    for item in result.green_but_failing:
        streak = "absent" if item.failure_streak is None else item.failure_streak
        outcome = "failed" if item.started else f"{item.execution_status} before start"
        lines.append(
            f"  {_job(item.job_id, item.job_name)}: "
            f"jobs.json has last_status={item.last_status}, failure_streak {streak}"
        )
        lines.append(
            f"      latest execution {item.execution_id[:12]} "
            f"({_when(item.claimed_at, result.day_zone)}): {outcome}"
        )
        lines.append(f"      error: {_short(item.error)}")
    return "\n".join(lines)


def _stuck_text(result: AuditResult) -> str:
    title = f"Stuck claims (older than {human_duration(result.stuck_after)})"
    if Check.STUCK not in result.checked:
        return f"{title}: not checked"
    if not result.stuck:
        return f"{title}: none"
    lines = [f"{title}: {len(result.stuck)} (owner not checked: it may be alive and slow)"]
    for claim in result.stuck:
        pid = "?" if claim.pid is None else claim.pid
        lines.append(
            f"  {_job(claim.job_id, claim.job_name)}: {claim.status} since "
            f"{_when(claim.since, result.day_zone)} ({human_duration(claim.age)}), "
            f"execution {claim.execution_id[:12]}, pid {pid}"
        )
    return "\n".join(lines)


def _delivered_text(result: AuditResult) -> str:
    title = "Delivered but booked failed as a lost fire claim (upstream #100401, #105861)"
    if Check.DELIVERED_BUT_LOST not in result.checked:
        return f"{title}: not checked"
    where = "the ledger" if result.deliveries is None else f"the ledger and {result.deliveries}"
    if not result.delivered_but_lost:
        if not result.ownership_lost:
            return f"{title}: none"
        return (
            f"{title}: none ({result.ownership_lost} booked so, none of them "
            f"recorded as delivered in {where})"
        )
    lines = [f"{title}: {len(result.delivered_but_lost)} of {result.ownership_lost} booked lost"]
    for item in result.delivered_but_lost:
        lines.append(
            f"  {_job(item.job_id, item.job_name)}: execution {item.execution_id[:12]} "
            f"({_when(item.claimed_at, result.day_zone)}) booked failed, but "
            f"{' and '.join(item.evidence)}"
        )
        lines.append(f"      error: {_short(item.error)}")
    lines.append(
        "  A delivered run booked as a takeover: the signature of a heartbeat that waited on the "
        "fire fence its own run held (fixed upstream by PR #109310; patch heartbeat-fence)."
    )
    return "\n".join(lines)


def _per_day_text(result: AuditResult) -> str:
    zone = zone_label(result.day_zone, result.now)
    title = f"Per day, last {result.days} days (by claim time, {zone})"
    if Check.PER_DAY not in result.checked:
        return f"{title}: not checked"
    lines = [title, f"  {'day':<10}" + "".join(f"  {name}" for name in _DAY_COLUMNS)]
    for count in result.per_day:
        cells = (count.executions, count.failed, count.never_started, count.locked)
        row = "".join(
            f"  {cell:>{len(name)}}" for cell, name in zip(cells, _DAY_COLUMNS, strict=True)
        )
        lines.append(f"  {count.day.isoformat():<10}{row}")
    return "\n".join(lines)


def _unchecked_text(result: AuditResult) -> str:
    if not result.unchecked:
        return ""
    lines = ["Could not check (this is not a clean result):"]
    lines.extend(f"  - {item.check or 'all checks'}: {item.reason}" for item in result.unchecked)
    return "\n".join(lines)


def _verdict(result: AuditResult) -> str:
    parts = [f"{result.anomalies} anomal{'y' if result.anomalies == 1 else 'ies'}"]
    if result.unchecked:
        parts.append(f"{len(result.unchecked)} thing(s) could not be checked")
    return f"Result: {', '.join(parts)} (exit {result.exit_code})"


# --- helpers --------------------------------------------------------------------------------


def _job(job_id: str, name: str | None) -> str:
    return f"{name} [{job_id}]" if name else f"[{job_id}]"


def _when(moment: datetime, zone: tzinfo) -> str:
    return moment.astimezone(zone).strftime("%Y-%m-%d %H:%M:%S")


def _short(text: str | None) -> str:
    if not text:
        return "(none)"
    line = " ".join(text.split())
    return line if len(line) <= _ERROR_WIDTH else line[: _ERROR_WIDTH - 3] + "..."


def zone_label(zone: tzinfo, at: datetime) -> str:
    """`UTC`, `UTC+01:00`, `UTC-05:00`: the offset of ZONE at the moment AT."""
    offset = at.astimezone(zone).utcoffset() or timedelta()
    if not offset:
        return "UTC"
    sign = "-" if offset < timedelta() else "+"
    minutes = abs(int(offset.total_seconds())) // 60
    return f"UTC{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def human_duration(span: timedelta) -> str:
    """`45s`, `1h 30m`, `3d 4h`: the two largest units, enough to judge an age."""
    seconds = int(span.total_seconds())
    units = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))
    parts: list[str] = []
    for name, size in units:
        amount, seconds = divmod(seconds, size)
        if amount:
            parts.append(f"{amount}{name}")
    return " ".join(parts[:2]) or "0s"
