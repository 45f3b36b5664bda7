"""The update journal: what an update has done so far, written before each phase starts.

`.git/patchkeeper/journal.json` exists exactly while an update is unfinished. It holds the
facts `recover` needs to bring the install to a consistent state after a crash at any point:
the HEAD and stash top before the run, the names of the refs holding the snapshot of the work
tree and the user's own edits, where the state backup is, and the upstream command's process
group with its leader's start time (so a reused pid is not taken for the updater). A finished
run's journal is moved into its run folder (`updates/<id>/journal.json`) as history, so "is
there an unfinished update?" is one `exists()`.

For tests, PATCHKEEPER_STOP_AT_PHASE=N kills the process (SIGKILL, no clean-up) right after
the journal records that phase N starts: a crash at every phase boundary can be reproduced.
`N.k` names a point inside phase N (see the `checkpoint` calls under update/; `4.0.3`, the
updater let go, is in processes/process_groups.py), and `write.K` the instant after a tree write put
its Kth path in place (writer/put_paths.py).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from patchkeeper.install.system.durable import atomic_write
from patchkeeper.model.errors import PatchkeeperError

JOURNAL_FILE = "journal.json"
RUNS_DIR = "updates"
REF_PREFIX = "refs/patchkeeper/updates"
STOP_ENV = "PATCHKEEPER_STOP_AT_PHASE"

PHASES = (
    "preflight",
    "preview",
    "set-aside",
    "upstream",
    "leftovers",
    "apply",
    "restore",
    "smoke",
    "post",
    "report",
)
UPSTREAM_PHASE = PHASES.index("upstream") + 1


def phase_name(number: int) -> str:
    return PHASES[number - 1] if 1 <= number <= len(PHASES) else f"phase {number}"


@dataclass
class Journal:
    """One update's journal: where it started, the phase it reached, the refs it made."""

    id: str
    pid: int
    started_at: str
    old_head: str
    old_version: str
    stash_top: str | None
    phase: int = 0
    before_ref: str | None = None  # snapshot of the whole work tree (patches + edits)
    edits_ref: str | None = None  # the user's own edits, without patchkeeper's patches
    upstream_pgid: int | None = None  # the upstream command's pid, leader of its own group
    upstream_start_time: str | None = None  # that pid's start time: tells it from a reused pid
    upstream_exit: int | None = None  # None: never finished (or never started)
    upstream_ok: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def phase_label(self) -> str:
        return f"{self.phase} ({phase_name(self.phase)})"

    def ref(self, what: str) -> str:
        return f"{REF_PREFIX}/{self.id}/{what}"

    def run_dir(self, state_dir: Path) -> Path:
        return state_dir / RUNS_DIR / self.id


def new_run_id() -> str:
    """A sortable, unique id: UTC time plus pid (two runs in one second differ by pid)."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{os.getpid()}"


def save(state_dir: Path, journal: Journal, *, then_sync_folder: bool = True) -> None:
    data = json.dumps(asdict(journal), indent=2) + "\n"
    atomic_write(state_dir / JOURNAL_FILE, data.encode(), then_sync_folder=then_sync_folder)


def load(state_dir: Path) -> Journal | None:
    """The unfinished update's journal, or None. An unreadable one is an error, never ignored."""
    path = state_dir / JOURNAL_FILE
    try:
        journal = Journal(**json.loads(path.read_text(encoding="utf-8")))
        datetime.fromisoformat(journal.started_at)  # recover computes with it
        if not isinstance(journal.phase, int) or not isinstance(journal.old_head, str):
            raise TypeError("phase or old_head has the wrong type")
        return journal
    except FileNotFoundError:
        return None
    except (ValueError, TypeError) as exc:
        raise PatchkeeperError(
            f"{path}: the update journal is unreadable ({exc}); inspect it, keep the refs "
            f"under {REF_PREFIX}/, then remove it"
        ) from None


# From here on `recover` runs phases 5-10 again whichever of them the journal names, so a
# power cut that loses the rename of a later phase's record changes nothing: no folder sync.
RERUN_FROM = PHASES.index("leftovers") + 2


def begin_phase(
    state_dir: Path, journal: Journal, number: int, *, then_sync_folder: bool | None = None
) -> None:
    """Record that phase NUMBER starts (before it touches anything); THEN_SYNC_FOLDER False:
    the caller knows that losing the record's rename to a power cut loses no fact."""
    journal.phase = number
    sync = number < RERUN_FROM if then_sync_folder is None else then_sync_folder
    save(state_dir, journal, then_sync_folder=sync)
    checkpoint(str(number))


def checkpoint(point: str) -> None:
    """Die here, like a power cut, when the fault-injection variable names POINT."""
    if os.environ.get(STOP_ENV) == point:
        os.kill(os.getpid(), signal.SIGKILL)


def finish(state_dir: Path, journal: Journal) -> None:
    """Close the run: the journal becomes history in the run's folder."""
    target = journal.run_dir(state_dir) / JOURNAL_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(state_dir / JOURNAL_FILE, target)
