"""The doctor's question about the last update: patchkeeper's own runs (their journals) and the
Hermes update receipts, whichever ran last."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from patchkeeper.install import journal as jr
from patchkeeper.install.checkout import Install
from patchkeeper.install.instants import parse_instant
from patchkeeper.leftovers.receipts import STASH_STEP, Receipts, install_receipts
from patchkeeper.model.errors import PatchkeeperError
from patchkeeper.proof.doctor.finding import Finding


def _unfinished_finding(install: Install) -> Finding | None:
    """An update patchkeeper started and never finished: it needs `recover`, whatever else."""
    try:
        unfinished = jr.load(install.state_dir)
    except PatchkeeperError as exc:
        return Finding("last update", False, str(exc))
    if unfinished is None:
        return None
    run = f"patchkeeper update {unfinished.id} (started {unfinished.started_at})"
    stopped = f"stopped in phase {unfinished.phase_label}; run `patchkeeper recover`"
    return Finding("last update", False, f"{run} {stopped}")


def _last_run(install: Install) -> tuple[Path, datetime] | None:
    """patchkeeper's newest finished run: its journal and when it ended.

    The journal is last written as the run finishes, so its modification time is the end
    (never earlier than the start it records).
    """
    runs = sorted((install.state_dir / jr.RUNS_DIR).glob(f"*/{jr.JOURNAL_FILE}"))
    if not runs:
        return None
    try:
        ended = datetime.fromtimestamp(runs[-1].stat().st_mtime, UTC)
        started = parse_instant(json.loads(runs[-1].read_text(encoding="utf-8"))["started_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return runs[-1], datetime.max.replace(tzinfo=UTC)  # unreadable: the finding says so
    return runs[-1], max(ended, started or ended)


def _journal_finding(path: Path) -> Finding:
    """From one finished patchkeeper run's journal."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return Finding("last update", False, f"{path}: unreadable ({exc})")
    run = f"patchkeeper update {data.get('id')} at {data.get('started_at')}"
    code = data.get("extra", {}).get("exit_code", 0)
    if not_done := data.get("extra", {}).get("not_done"):  # e.g. rolled back after a failure
        unmoved = data.get("old_head") == data["extra"].get("head_after")
        verb = "happen" if data["extra"].get("rolled_back") or unmoved else "finish"
        return Finding("last update", False, f"{run}: the update did not {verb}: {not_done}")
    if data.get("upstream_ok") is None:  # e.g. a --preview that found a conflict
        return Finding("last update", False, f"{run}: stopped before the upstream command ran "
                       f"(exit {code})")  # fmt: skip
    if not data["upstream_ok"]:
        failed = f"finished, but the upstream command failed (exit {data.get('upstream_exit')})"
        return Finding("last update", False, f"{run}: {failed}")
    if code != 0:
        return Finding("last update", False, f"{run}: finished with exit {code}")
    return Finding("last update", True, f"{run}: finished")


def receipt_finding(install: Install, receipts: Receipts | None = None) -> Finding:
    """From the newest Hermes update receipt: its outcome and what happened to local changes.

    Receipts from every home and profile home count; the newest is the one that ran last by
    its own instants. A receipt that could not be read is named in the details; when it may
    be the newest one, the last update could not be checked, and that is not ok.
    """
    if receipts is None:
        receipts = install_receipts(install.path)
    latest = receipts.newest
    unreadable = receipts.skipped_after(latest)
    notes = [skipped.note for skipped in receipts.skipped]
    if unreadable:
        newest = unreadable[-1]
        summary = f"could not check: receipt {newest.path.name} is unreadable ({newest.reason})"
        return Finding("last update", False, summary, notes)
    if latest is None:
        return Finding("last update", True, "no update recorded (no patchkeeper run, no receipt)")
    stash = latest.stash_step
    ok = latest.outcome == "success" and (stash is None or stash.get("ok") is True)
    where = f" (profile {latest.profile})" if latest.profile else ""
    summary = f"hermes update{where} at {latest.started_at or '?'}: outcome {latest.outcome}"
    details = [f"receipt {latest.path}"]
    if stash is not None:
        summary += f", local changes {latest.stash_outcome}"
        details.append(f"{STASH_STEP}: {latest.stash_detail}")
    return Finding("last update", ok, summary, details + notes)


def last_update_finding(install: Install) -> Finding:
    """The update that ran last: patchkeeper's own run, or a Hermes update after it.

    An unfinished patchkeeper run always answers. Otherwise the receipts a run's own
    `hermes update` wrote belong to that run (its journal already judged them), and a receipt
    from after the run ended (someone ran `hermes update` by hand, a timer did) is newer news:
    it answers, so a later `parked` is never hidden behind an older "finished".
    """
    unfinished = _unfinished_finding(install)
    if unfinished is not None:
        return unfinished
    receipts = install_receipts(install.path)
    last_run = _last_run(install)
    if last_run is None or receipts.newer_than(last_run[1]):
        return receipt_finding(install, receipts)
    return _journal_finding(last_run[0])
