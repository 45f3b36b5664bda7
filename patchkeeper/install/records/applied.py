"""What patchkeeper wrote into an install, kept under .git/patchkeeper/ so it can be reversed.

Per patch: the variant file and its content hash, the HEAD it was applied on, the outcome, the
exact diff written (a file beside the index), which is what `unapply` reverses, and the verdict
of its smoke checks since it was written (`proven`): "" until they have run (written with
`--no-smoke`, or a run killed before its checks ended), then `pass`, `fail` or `error`.
A record written before `proven` existed reads as "" (not proven): the next `apply` proves it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from patchkeeper.install.system.durable import atomic_write, atomic_write_all, sync_folder
from patchkeeper.model.errors import UserError

APPLIED_FILE = "applied.json"
WRITTEN_DIR = "written"
SCHEMA = 1


@dataclass(frozen=True)
class AppliedRecord:
    """What patchkeeper's state says it wrote for one patch."""

    name: str
    variant: str
    sha256: str
    base: str
    outcome: str
    applied_at: str
    proven: str = ""  # its smoke checks' verdict since it was written; "" = not run yet

    @property
    def diff_file(self) -> str:
        return f"{WRITTEN_DIR}/{self.name}.diff"


def load_applied(state_dir: Path) -> dict[str, AppliedRecord]:
    path = state_dir / APPLIED_FILE
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {name: AppliedRecord(**fields) for name, fields in data["patches"].items()}
    except (ValueError, KeyError, TypeError) as exc:
        raise UserError(f"{path}: patchkeeper state is unreadable ({exc})") from None


def written_diff(state_dir: Path, record: AppliedRecord) -> bytes:
    path = state_dir / record.diff_file
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise UserError(f"{path}: recorded diff of {record.name!r} is missing") from None


def record_proof(state_dir: Path, verdicts: dict[str, str]) -> None:
    """Keep each named patch's smoke verdict (VERDICTS: name -> pass, fail or error) in its
    record; a patch with no record, or whose record says so already, is left as it is."""
    records = load_applied(state_dir)
    changed = {
        name: replace(record, proven=verdict)
        for name, verdict in verdicts.items()
        if (record := records.get(name)) is not None and record.proven != verdict
    }
    if changed:
        save_applied(state_dir, {**records, **changed}, {})


def save_applied(
    state_dir: Path, records: dict[str, AppliedRecord], new_diffs: dict[str, bytes]
) -> None:
    """Write new diffs first, then the index atomically, then remove diffs no record uses."""
    atomic_write_all({state_dir / records[n].diff_file: diff for n, diff in new_diffs.items()})
    if new_diffs:
        sync_folder(state_dir / WRITTEN_DIR)  # once for all of them, before the index names them
    document = {"schema": SCHEMA, "patches": {n: asdict(r) for n, r in sorted(records.items())}}
    atomic_write(state_dir / APPLIED_FILE, json.dumps(document, indent=2).encode() + b"\n")
    keep = {state_dir / r.diff_file for r in records.values()}
    for stale in (state_dir / WRITTEN_DIR).glob("*.diff"):
        if stale not in keep:
            stale.unlink()
