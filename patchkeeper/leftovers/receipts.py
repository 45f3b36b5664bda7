"""Hermes update receipts: where they are, reading them tolerantly, what the newest one says.

`hermes update` (0.21.3) writes one JSON file per run under
`<home>/logs/update_receipts/`, named `update_<YYYYmmdd_HHMMSS>_<pid>_<32 hex>.json` with the
stamp in LOCAL time, and copies the same bytes to `latest.json`; it keeps the newest 20. Every
profile home (`<home>/profiles/<name>/`) has its own folder. Older writers used
`update_<YYYYmmdd_HHMMSS>_<id>.json`; both are read. A receipt looks like

    {"schema": 1, "update_id": "<32 hex>", "started_at": ISO, "finished_at": ISO,
     "outcome": "success", "exit_code": 0, "pre_update": ..., "post_update": ...,
     "steps": [{"name": "local_changes_stash", "ok": false,
                "detail": "parked: <sha> (restore hit conflicts)", "at": ISO}], ...}

(outcome: running, success, partial, failed or refused). The `local_changes_stash` step says
what happened to the local changes: `restored`, `parked` (the stash is kept, the tree no longer
has them) or `discarded`.

Order comes from the receipts' own instants (`started_at`, else `finished_at`), never from file
names: a name's stamp is local time with no zone, so it is only the last resort (then the
file's modification time). `latest.json` is a copy of one stamped receipt; it is read only
when the receipt it copies is not there, so no update counts twice. Hermes writes these files;
a torn or odd one is skipped with a note naming it, never a traceback. This is the only reader:
leftovers and doctor both ask it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from patchkeeper.install.records.instants import parse_instant

RECEIPTS_DIR = Path("logs") / "update_receipts"
PROFILES_DIR = "profiles"
RECEIPT_GLOB = "update_*.json"
LATEST = "latest.json"
STASH_STEP = "local_changes_stash"
PARKED = "parked"

_NAME_STAMP_RE = re.compile(r"^update_(\d{8})_(\d{6})")
_SHA_RE = re.compile(r"\b[0-9a-f]{7,40}\b")
_OLDEST = datetime.min.replace(tzinfo=UTC)


def receipt_dirs(install_path: Path) -> list[Path]:
    """Where Hermes writes update receipts: each home's folder, then its profiles' folders.

    The homes: HERMES_HOME, the install's parent, ~/.hermes.
    """
    homes = [Path(os.environ["HERMES_HOME"])] if os.environ.get("HERMES_HOME") else []
    homes += [install_path.parent, Path("~/.hermes").expanduser()]
    folders: list[Path] = []
    for home in dict.fromkeys(home.resolve() for home in homes):
        folders.append(home / RECEIPTS_DIR)
        profiles = home / PROFILES_DIR
        if profiles.is_dir():
            folders += sorted(p / RECEIPTS_DIR for p in profiles.iterdir() if p.is_dir())
    return list(dict.fromkeys(folders))


def _stamp_of_name(path: Path) -> datetime | None:
    """The time in the file name (`update_20261001_120000_...json`), read as local time."""
    match = _NAME_STAMP_RE.match(path.name)
    if not match:
        return None
    try:
        return datetime.strptime("".join(match.groups()), "%Y%m%d%H%M%S").astimezone()
    except (ValueError, OverflowError, OSError):
        return None


def _modified(path: Path) -> datetime | None:
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except (OSError, ValueError, OverflowError):
        return None


def _file_time(path: Path) -> datetime:
    """When a file with no readable instant was written: its name's stamp, else its mtime."""
    return _stamp_of_name(path) or _modified(path) or _OLDEST


@dataclass(frozen=True)
class Receipt:
    """One receipt `hermes update` wrote, as read."""

    path: Path
    data: dict[str, Any]

    @property
    def started_at(self) -> str | None:
        value = self.data.get("started_at")
        return value if isinstance(value, str) else None

    @property
    def finished_at(self) -> str | None:
        value = self.data.get("finished_at")
        return value if isinstance(value, str) else None

    @property
    def outcome(self) -> object:
        return self.data.get("outcome")

    @property
    def update_id(self) -> str | None:
        value = self.data.get("update_id")
        return value if isinstance(value, str) and value else None

    @property
    def profile(self) -> str | None:
        """The profile whose home holds this receipt (`<home>/profiles/NAME/...`), if any."""
        home = self.path.parent.parent.parent
        return home.name if home.parent.name == PROFILES_DIR else None

    @property
    def when(self) -> datetime:
        """When it ran: `started_at`, else `finished_at`, else the file's name stamp or mtime."""
        return (
            parse_instant(self.started_at)
            or parse_instant(self.finished_at)
            or _file_time(self.path)
        )

    @property
    def order(self) -> tuple[datetime, datetime, str]:
        ended = parse_instant(self.finished_at) or self.when
        return (self.when, ended, self.path.name)

    @property
    def steps(self) -> list[dict[str, Any]]:
        steps = self.data.get("steps")
        return [s for s in steps if isinstance(s, dict)] if isinstance(steps, list) else []

    @property
    def stash_step(self) -> dict[str, Any] | None:
        """The last `local_changes_stash` step; None when the update stashed nothing."""
        return next((s for s in reversed(self.steps) if s.get("name") == STASH_STEP), None)

    @property
    def stash_detail(self) -> str:
        step = self.stash_step
        detail = step.get("detail") if step else None
        return detail if isinstance(detail, str) else ""

    @property
    def stash_outcome(self) -> str | None:
        """`restored`, `parked`, `discarded` (or whatever word a newer Hermes writes)."""
        if self.stash_step is None:
            return None
        return self.stash_detail.split(":")[0].strip() or "?"

    @property
    def parked(self) -> bool:
        return self.stash_outcome == PARKED

    @property
    def stash_sha(self) -> str | None:
        """The stash commit the stash step names (`parked: <sha> (...)`), if any."""
        found = _SHA_RE.search(self.stash_detail.partition(":")[2])
        return found.group(0) if found else None

    def names_commit(self, sha: str) -> bool:
        """Whether the stash step names commit SHA (full or abbreviated in the receipt)."""
        named = self.stash_sha
        return bool(named and sha.startswith(named))


@dataclass(frozen=True)
class Skipped:
    """A receipt that could not be read, and why."""

    path: Path
    reason: str

    @property
    def note(self) -> str:
        return f"hermes update receipt {self.path} could not be read ({self.reason}); skipped"


class ReceiptUnreadable(Exception):
    """A receipt file that cannot be used; the message says why, in words for a report."""


def read_receipt(path: Path) -> Receipt:
    """One receipt (a leading BOM is fine); ReceiptUnreadable when torn, not JSON or no object."""
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise ReceiptUnreadable(f"cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ReceiptUnreadable("not UTF-8 text") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReceiptUnreadable(f"not JSON: {exc.msg}, line {exc.lineno}") from exc
    if not isinstance(data, dict):
        raise ReceiptUnreadable(f"not a receipt (a JSON {type(data).__name__}, not an object)")
    return Receipt(path, data)


@dataclass
class Receipts:
    """Every receipt in the install's folder of them, and those skipped."""

    found: list[Receipt] = field(default_factory=list)  # oldest first
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def newest(self) -> Receipt | None:
        return self.found[-1] if self.found else None

    def parked(self) -> list[Receipt]:
        return [receipt for receipt in self.found if receipt.parked]

    def skipped_after(self, receipt: Receipt | None) -> list[Skipped]:
        """Unreadable receipts that may be newer than RECEIPT (by their name's stamp or mtime)."""
        if receipt is None:
            return list(self.skipped)
        return [s for s in self.skipped if _file_time(s.path) >= receipt.when]

    def newer_than(self, instant: datetime) -> bool:
        """Whether any receipt, readable or not, may be from after INSTANT."""
        newest = self.newest
        return (newest is not None and newest.when > instant) or any(
            _file_time(s.path) > instant for s in self.skipped
        )


def _read_folder(folder: Path, result: Receipts) -> None:
    stamped = sorted(p for p in folder.glob(RECEIPT_GLOB) if p.is_file())
    found: list[Receipt] = []
    for path in stamped:
        try:
            found.append(read_receipt(path))
        except ReceiptUnreadable as exc:
            result.skipped.append(Skipped(path, str(exc)))
    latest = folder / LATEST
    if latest.is_file():
        try:
            copy = read_receipt(latest)
        except ReceiptUnreadable as exc:
            if not stamped:  # otherwise the stamped receipts tell the same story
                result.skipped.append(Skipped(latest, str(exc)))
        else:
            if not any(_same_update(copy, receipt) for receipt in found):
                found.append(copy)  # the receipt it copies is gone (pruned, or never written)
    result.found += found


def _same_update(copy: Receipt, receipt: Receipt) -> bool:
    if copy.update_id or receipt.update_id:
        return copy.update_id == receipt.update_id
    return copy.data == receipt.data


def read_receipts(folders: Iterable[Path]) -> Receipts:
    """Every receipt in FOLDERS, oldest first; unreadable ones listed as skipped."""
    result = Receipts()
    for folder in dict.fromkeys(folders):
        if folder.is_dir():
            _read_folder(folder, result)
    result.found.sort(key=lambda receipt: receipt.order)
    return result


def install_receipts(install_path: Path) -> Receipts:
    """The receipts of the Hermes install at INSTALL_PATH."""
    return read_receipts(receipt_dirs(install_path))
