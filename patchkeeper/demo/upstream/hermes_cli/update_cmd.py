"""`hermes update`: fetch, autostash, fast-forward, restore or park, write a receipt.

Local changes are stashed (untracked files too) before HEAD moves and restored after. When
the restore conflicts, the tree is reset to the new HEAD and the stash is kept ("parked"):
the update still reports success and exits 0, and only the receipt's `local_changes_stash`
step says that the local changes are gone from the tree.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hermes_constants import get_hermes_home

CHECKOUT = Path(__file__).resolve().parent.parent
AUTOSTASH_PREFIX = "hermes-update-autostash-"
STASH_STEP = "local_changes_stash"


class UpdateError(Exception):
    """A step that had to succeed did not: the update stops with exit 1."""


def _git(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["git", *args], cwd=CHECKOUT, capture_output=True, text=True)
    if check and proc.returncode != 0:
        reason = (proc.stderr or proc.stdout).strip().splitlines() or [f"exit {proc.returncode}"]
        raise UpdateError(f"git {' '.join(args)} failed: {reason[-1]}")
    return proc


def _head() -> str:
    return _git("rev-parse", "HEAD").stdout.strip()


def _stash_local_changes_if_needed(stamp: str) -> str | None:
    """Stash a dirty tree, untracked files included; the stash commit's sha, or None."""
    if not _git("status", "--porcelain").stdout.strip():
        return None
    name = AUTOSTASH_PREFIX + stamp
    _git("stash", "push", "--include-untracked", "-m", name)
    sha = _git("rev-parse", "refs/stash").stdout.strip()
    print(f"Local changes stashed as {name} ({sha[:12]})")
    return sha


def _move_head(branch: str, stamp: str) -> None:
    """Fast-forward; a diverged branch is reset, its old HEAD kept under a backup ref."""
    target = f"origin/{branch}"
    if _git("merge", "--ff-only", target, check=False).returncode == 0:
        return
    backup = f"refs/hermes-update-backups/{stamp}"
    _git("update-ref", backup, "HEAD")
    _git("reset", "--hard", target)
    print(f"Local branch had diverged from {target}; old HEAD saved as {backup}")


def _stash_selector(sha: str) -> str:
    """`stash@{n}` for a stash commit (`git stash drop <sha>` does not work)."""
    for line in _git("stash", "list", "--format=%gd %H").stdout.splitlines():
        selector, _, commit = line.partition(" ")
        if commit == sha:
            return selector
    raise UpdateError(f"stash {sha} is no longer in the stash list")


def _remove_restored_untracked(sha: str) -> None:
    """Undo untracked files a failed restore already wrote: restore is all or nothing."""
    if _git("rev-parse", "-q", "--verify", f"{sha}^3", check=False).returncode != 0:
        return
    listed = _git("ls-tree", "-r", "-z", "--name-only", f"{sha}^3").stdout.split("\0")
    _git("clean", "-f", "-q", "--", *[path for path in listed if path])


def _stash_step(outcome: str, sha: str, detail: str = "") -> dict[str, Any]:
    text = f"{outcome}: {sha}" + (f" ({detail})" if detail else "")
    return {"name": STASH_STEP, "ok": outcome != "parked", "detail": text}


def _restore_stashed_changes(sha: str, *, keep: bool) -> dict[str, Any]:
    if keep:
        print(f"parked: kept on request (--keep-stash); restore with: git stash apply {sha}")
        return _stash_step("parked", sha, "kept on request")
    if _git("stash", "apply", sha, check=False).returncode == 0:
        _git("stash", "drop", _stash_selector(sha))
        print("Local changes restored")
        return _stash_step("restored", sha)
    _git("reset", "--hard", "HEAD")
    _remove_restored_untracked(sha)
    print("parked: restore hit conflicts; your local changes are kept in the stash")
    print(f"  restore with: git stash apply {sha}")
    return _stash_step("parked", sha, "restore hit conflicts")


def _write_receipt(receipt: dict[str, Any], stamp: str) -> None:
    folder = get_hermes_home() / "logs" / "update_receipts"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"update_{stamp.replace('-', '_')}_{receipt['update_id'][:8]}.json"
    path.write_text(json.dumps(receipt, indent=2) + "\n", encoding="utf-8")


def run_update(*, branch: str = "main", keep_stash: bool = False) -> int:
    started = datetime.now(UTC)
    stamp = started.strftime("%Y%m%d-%H%M%S")
    receipt: dict[str, Any] = {
        "schema": 1,
        "update_id": uuid.uuid4().hex,
        "started_at": started.isoformat(),
        "branch": branch,
        "steps": [],
    }
    try:
        receipt["pre_update"] = _head()
        _git("fetch", "origin", branch)
        stash = _stash_local_changes_if_needed(stamp)
        _move_head(branch, stamp)
        receipt["post_update"] = _head()
        if stash:
            receipt["steps"].append(_restore_stashed_changes(stash, keep=keep_stash))
        receipt.update(outcome="success", exit_code=0)
    except UpdateError as exc:
        print(f"update failed: {exc}", file=sys.stderr)
        receipt.update(outcome="failed", exit_code=1, error=str(exc))
    receipt["finished_at"] = datetime.now(UTC).isoformat()
    _write_receipt(receipt, stamp)
    if receipt["exit_code"] == 0:
        print(f"Update complete: {receipt['pre_update'][:9]} -> {receipt['post_update'][:9]}")
    return int(receipt["exit_code"])
