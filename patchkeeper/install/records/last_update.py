"""The last update: the newest finished run's journal (`updates/<id>/journal.json`) read into
one typed record, by one reader, for `status`, the doctor and `--metrics` alike; and the one
writer of what a run says about its end (in the journal's `extra` keys `exit_code`,
`not_done`, `rolled_back`, `head_after` and `retry`, so the file is what it always was).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from patchkeeper.install.records import update_journal as jr
from patchkeeper.install.records.instants import parse_instant


@dataclass(frozen=True)
class LastUpdate:
    """The newest finished update run, as its journal keeps it. A journal that is not a JSON
    object is still the last update: UNREADABLE says why, and every fact is None."""

    path: Path  # its journal
    ended: datetime  # when it ended (the journal's last write); unreadable: datetime.max
    unreadable: str | None = None
    id: str | None = None
    started_at: str | None = None
    old_head: str | None = None
    upstream_ok: bool | None = None  # None: the upstream command never ran (or never ended)
    upstream_exit: int | None = None
    exit_code: int | None = None  # the run's own; None: it recorded none
    not_done: str | None = None  # why the update asked for did not happen or finish
    rolled_back: bool = False
    head_after: str | None = None
    retry: str | None = None  # the command that runs the same update again

    @property
    def happened(self) -> bool:
        """Whether the update asked for happened: the updater succeeded, nothing undone."""
        return bool(self.upstream_ok) and not self.not_done

    @property
    def missed(self) -> str:
        """What it did not do when NOT_DONE is set: "happen" when the install was left (or
        put back) where it started, "finish" when it moved."""
        unmoved = self.old_head == self.head_after
        return "happen" if self.rolled_back or unmoved else "finish"

    @property
    def started(self) -> float | None:
        """When it started, in Unix seconds, or None when the journal does not say."""
        try:
            return datetime.fromisoformat(self.started_at).timestamp()  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None


def last_update(state_dir: Path) -> LastUpdate | None:
    """The last finished update of the install whose state folder is STATE_DIR (run ids sort
    by time), or None when it has none."""
    runs = sorted((state_dir / jr.RUNS_DIR).glob(f"*/{jr.JOURNAL_FILE}"))
    return _read(runs[-1]) if runs else None


def _read(path: Path) -> LastUpdate:
    try:
        mtime = path.stat().st_mtime
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return LastUpdate(path, datetime.max.replace(tzinfo=UTC), f"unreadable ({exc})")
    if not isinstance(data, dict):
        return LastUpdate(path, datetime.max.replace(tzinfo=UTC), "unreadable (not an object)")
    extra = data.get("extra") if isinstance(data.get("extra"), dict) else {}
    return LastUpdate(
        path,
        _ended(data, mtime),
        id=_typed(data.get("id"), str),
        started_at=_typed(data.get("started_at"), str),
        old_head=_typed(data.get("old_head"), str),
        upstream_ok=_typed(data.get("upstream_ok"), bool),
        upstream_exit=_typed(data.get("upstream_exit"), int),
        exit_code=_typed(extra.get("exit_code"), int),
        not_done=_typed(extra.get("not_done"), str),
        rolled_back=bool(extra.get("rolled_back")),
        head_after=_typed(extra.get("head_after"), str),
        retry=_typed(extra.get("retry"), str),
    )


def _ended(data: dict[str, Any], mtime: float) -> datetime:
    """The journal is last written as the run finishes, so its modification time is the end
    (never earlier than the start it records)."""
    if "started_at" not in data:
        return datetime.max.replace(tzinfo=UTC)
    ended = datetime.fromtimestamp(mtime, UTC)
    started = parse_instant(data["started_at"])
    return max(ended, started or ended)


def _typed(value: object, kind: type) -> Any:
    return value if isinstance(value, kind) else None


def record_end(
    journal: jr.Journal,
    *,
    exit_code: int,
    not_done: str | None,
    rolled_back: bool,
    head_after: str | None,
    retry: str | None = None,
) -> None:
    """Write into JOURNAL what `last_update` reads back once the run is finished (the caller
    saves it): its exit code, whether the update asked for happened, where HEAD ended."""
    journal.extra["exit_code"] = exit_code
    journal.extra["not_done"] = not_done
    journal.extra["rolled_back"] = rolled_back
    journal.extra["head_after"] = head_after
    if retry is not None:
        journal.extra["retry"] = retry
