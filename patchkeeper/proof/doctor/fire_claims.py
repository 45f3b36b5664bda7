"""The doctor's fire-claim question: runs delivered yet booked as a lost fire claim, read from
the cron ledger by the audit's own check (the audit is loaded only when there is a ledger)."""

from __future__ import annotations

import os
from pathlib import Path

from patchkeeper.install.checkout.install import Install
from patchkeeper.proof.doctor.finding import Finding


def cron_home(install: Install) -> Path:
    """The Hermes home whose cron ledger the install writes: HERMES_HOME, else the install's
    parent (the installer puts the checkout at ~/.hermes/hermes-agent)."""
    configured = os.environ.get("HERMES_HOME", "").strip()
    return Path(configured).expanduser() if configured else install.path.parent


def fire_claim_finding(install: Install) -> Finding:
    """Runs booked failed as "fire claim ownership lost" whose delivery succeeded: the symptom
    heartbeat-fence fixes. Read only, by audit's own check (`delivered_but_booked_lost`)."""
    from patchkeeper.proof.audit.findings import Check
    from patchkeeper.proof.audit.ledger_file import LEDGER_PATH
    from patchkeeper.proof.audit.reconcile import audit

    home = cron_home(install)
    if not (home / LEDGER_PATH).is_file():
        return Finding("fire claims", True, f"no cron ledger in {home}: nothing to read")
    found = audit(home)
    if Check.DELIVERED_BUT_LOST not in found.checked:
        why = [
            u.reason for u in found.unchecked if u.check in (None, Check.DELIVERED_BUT_LOST)
        ]
        summary = f"not checked in {home}: {'; '.join(why) or 'no delivery record to compare'}"
        return Finding("fire claims", True, summary)
    lost = found.delivered_but_lost
    if not lost:
        summary = (
            f"no delivered run booked as a lost fire claim ({found.ownership_lost} booked lost)"
        )
        return Finding("fire claims", True, summary)
    summary = (
        f'{len(lost)} run(s) delivered yet booked failed as "fire claim ownership lost": the '
        "heartbeat waited on the fence its own run held; patch heartbeat-fence fixes it "
        "(`patchkeeper audit` lists them)"
    )
    details = [
        f"{item.execution_id} (job {item.job_name or item.job_id}): {item.error}" for item in lost
    ]
    return Finding("fire claims", False, summary, details[:5])
