"""The doctor's question about the last update: patchkeeper's own runs (their journals) and the
Hermes update receipts, whichever ran last."""

from __future__ import annotations

from patchkeeper.install.checkout.install import Install
from patchkeeper.install.records import update_journal as jr
from patchkeeper.install.records.last_update import LastUpdate, last_update
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


def _journal_finding(last: LastUpdate) -> Finding:
    """From patchkeeper's last finished run."""
    if last.unreadable:
        return Finding("last update", False, f"{last.path}: {last.unreadable}")
    run = f"patchkeeper update {last.id} at {last.started_at}"
    code = last.exit_code or 0
    if last.not_done:  # e.g. rolled back after a failure
        return Finding(
            "last update", False, f"{run}: the update did not {last.missed}: {last.not_done}"
        )
    if last.upstream_ok is None:  # e.g. a --preview that found a conflict
        return Finding("last update", False, f"{run}: stopped before the upstream command ran "
                       f"(exit {code})")  # fmt: skip
    if not last.upstream_ok:
        failed = f"finished, but the upstream command failed (exit {last.upstream_exit})"
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
    last = last_update(install.state_dir)
    if last is None or receipts.newer_than(last.ended):
        return receipt_finding(install, receipts)
    return _journal_finding(last)
