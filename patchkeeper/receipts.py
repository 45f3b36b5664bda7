"""Hermes update receipts: where they are, reading them tolerantly, what the newest one says.

`hermes update` writes one JSON file per run, `update_<YYYYMMDD_HHMMSS>_<id>.json` under
`HERMES_HOME/logs/update_receipts/`, shaped like

    {"schema": 1, "update_id": "...", "started_at": ISO, "outcome": "success",
     "steps": [{"name": "local_changes_stash", "ok": false,
                "detail": "parked: <sha> (restore hit conflicts)"}], ...}

The `local_changes_stash` step says what happened to the local changes: `restored`, `parked`
(the stash is kept, the tree no longer has them) or `discarded`. Hermes writes these files; a
torn or odd one is skipped with a note naming it, never a traceback. This is the only reader:
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

from patchkeeper.instants import parse_instant

RECEIPTS_DIR = Path("logs") / "update_receipts"
RECEIPT_GLOB = "update_*.json"
STASH_STEP = "local_changes_stash"
PARKED = "parked"

_NAME_STAMP_RE = re.compile(r"^update_(\d{8})_(\d{6})")
_SHA_RE = re.compile(r"\b[0-9a-f]{7,40}\b")
_OLDEST = datetime.min.replace(tzinfo=UTC)


def receipt_dirs(install_path: Path) -> list[Path]:
    """Where Hermes writes update receipts: HERMES_HOME, the install's parent, ~/.hermes."""
    homes = [Path(os.environ["HERMES_HOME"])] if os.environ.get("HERMES_HOME") else []
    homes += [install_path.parent, Path("~/.hermes").expanduser()]
    return list(dict.fromkeys(home.resolve() / RECEIPTS_DIR for home in homes))


def _stamp_of_name(path: Path) -> datetime | None:
    """The UTC time in the file name (`update_20261001_120000_<id>.json`), if it has one."""
    match = _NAME_STAMP_RE.match(path.name)
    if not match:
        return None
    try:
        return datetime.strptime("".join(match.groups()), "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        return None


@dataclass(frozen=True)
class Receipt:
    path: Path
    data: dict[str, Any]

    @property
    def started_at(self) -> str | None:
        value = self.data.get("started_at")
        return value if isinstance(value, str) else None

    @property
    def outcome(self) -> object:
        return self.data.get("outcome")

    @property
    def when(self) -> datetime:
        """When it started: `started_at` as an instant, else the file name's stamp."""
        return parse_instant(self.started_at) or _stamp_of_name(self.path) or _OLDEST

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
    found: list[Receipt] = field(default_factory=list)  # oldest first
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def newest(self) -> Receipt | None:
        return self.found[-1] if self.found else None

    def parked(self) -> list[Receipt]:
        return [receipt for receipt in self.found if receipt.parked]

    def skipped_after(self, receipt: Receipt | None) -> list[Skipped]:
        """Unreadable receipts that may be newer than RECEIPT (by their file name's stamp)."""
        if receipt is None:
            return list(self.skipped)
        return [s for s in self.skipped if (_stamp_of_name(s.path) or _OLDEST) >= receipt.when]


def read_receipts(folders: Iterable[Path]) -> Receipts:
    """Every `update_*.json` in FOLDERS, oldest first; unreadable ones listed as skipped."""
    result = Receipts()
    seen: set[Path] = set()
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob(RECEIPT_GLOB)):
            if path in seen or not path.is_file():
                continue
            seen.add(path)
            try:
                result.found.append(read_receipt(path))
            except ReceiptUnreadable as exc:
                result.skipped.append(Skipped(path, str(exc)))
    result.found.sort(key=lambda receipt: (receipt.when, receipt.path.name))
    return result


def install_receipts(install_path: Path) -> Receipts:
    """The receipts of the Hermes install at INSTALL_PATH."""
    return read_receipts(receipt_dirs(install_path))
