"""The journal of one tree write: `tree-write.json` in the state folder, there exactly while a
write of the work tree is unfinished.

The work tree writer (writer/write.py) saves it, synced, BEFORE the first path changes and
removes it once every path is in place; `settle` (writer/settle.py) reads it back after a kill to
undo the write. It holds every path's old and new mode and content (base64), the write's id (which
names its temporary files) and the command that was writing. Kept apart as the one place
that knows the file's format, for the writer that saves it and for `settle` that reads it.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

from patchkeeper.install.system.durable import atomic_write, sync_folder
from patchkeeper.install.writer.changes import Change
from patchkeeper.model.errors import EnvironmentProblem

JOURNAL_FILE = "tree-write.json"


def _encode(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def _decode(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def save_journal(state_dir: Path, command: str, write_id: str, changes: list[Change]) -> None:
    entries = [
        {
            "path": c.path,
            "old_mode": c.old_mode,
            "old": _encode(c.old),
            "new_mode": c.new_mode,
            "new": _encode(c.new),
        }
        for c in changes
    ]
    document = {"id": write_id, "command": command, "pid": os.getpid(), "paths": entries}
    atomic_write(state_dir / JOURNAL_FILE, json.dumps(document).encode())


def load_journal(state_dir: Path) -> tuple[str, str, list[Change]] | None:
    """The interrupted write's id, command and changes, or None when there was none."""
    path = state_dir / JOURNAL_FILE
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        write_id, command = str(document["id"]), str(document["command"])
        changes = [
            Change(e["path"], e["old_mode"], _decode(e["old"]), e["new_mode"], _decode(e["new"]))
            for e in document["paths"]
        ]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EnvironmentProblem(
            f"{path}: the journal of an interrupted write is unreadable ({exc}); look at the "
            "files it names, then remove it",
            undone=False,
        ) from None
    return write_id, command, changes


def clear_journal(state_dir: Path) -> None:
    (state_dir / JOURNAL_FILE).unlink(missing_ok=True)
    sync_folder(state_dir)


def interrupted(state_dir: Path) -> str | None:
    """The command whose tree write was interrupted (its journal is there), or None."""
    path = state_dir / JOURNAL_FILE
    try:
        return str(json.loads(path.read_text(encoding="utf-8")).get("command", "?"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, AttributeError):
        return "?"


def interrupted_note(command: str) -> str:
    return (
        f"a write of `{command}` to the work tree was interrupted: some files may be its old "
        "version and some its new; run `patchkeeper recover`"
    )
