"""What a port has decided so far, kept in `.git/patchkeeper/port/state.json` so that it
survives a new shell and a kill, as `git rebase` keeps its own: written atomically (the
durable writer) after every step, read back by `--continue` and `--abort`.

The new diffs are files beside it (`diffs/NAME.diff`), each written before the state that
names it; the folder of a stopped port's conflict is `worktree/`.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path

from patchkeeper.install.system.durable import atomic_write
from patchkeeper.model.errors import UserError

PORT_DIR = "port"
STATE_FILE = "state.json"
FORMAT = 1

# What a port does with one patch.
KEEP = "keep"  # applies as it is, its range holds the release
WIDEN = "widen"  # applies as it is; its range is widened to take the release in
NEW_VARIANT = "new-variant"  # a refreshed variant for the release, ranges split there
REFRESH = "refresh"  # the variant rewritten in place (its range starts at the release)
RETIRE = "retire"  # upstream has it: proposed for retirement, the file stays
ACTIONS = (KEEP, WIDEN, NEW_VARIANT, REFRESH, RETIRE)

# Where a port stands.
PORTING = "porting"  # judging patches (a kill here: --continue goes on)
STOPPED = "stopped"  # at a conflict, waiting for the hand fix
SWAPPING = "swapping"  # the new set is built; it is being put in place


@dataclass
class Decision:
    """What the port does with one patch, and why."""

    name: str
    action: str
    variant: str  # the variant judged, relative to the patch set
    outcome: str  # how it fared on the release (the engine's word, or `resolved`)
    evidence: str = ""  # why: the offsets, the merge, upstream's proof, the hand fix
    applies_to: str | None = None  # the new variant's range (new-variant), the widened one
    old_applies_to: str | None = None  # the judged variant's range after the split
    written: str | None = None  # the file written, relative to the patch set (at the end)
    smoke: list[str] = field(default_factory=list)  # the checks that prove it


@dataclass
class Conflict:
    """Where a stopped port waits: the patch, its files, which of them hold markers."""

    name: str
    variant: str
    files: list[str]
    marked: list[str]
    source: str  # what the markers' middle part is (the preimage's origin)


@dataclass
class PortState:
    """A port in progress (see the module docstring)."""

    install: str
    patches: str
    out: str | None
    onto: str  # REF as given
    commit: str
    version: str  # REF's release, as the port writes it in Applies-To
    fingerprint: str  # of the patch set's files when the port began
    base_tree: str  # REF plus every patch ported so far
    position: int = 0  # the next patch to judge, in series order
    phase: str = PORTING
    decisions: list[Decision] = field(default_factory=list)
    conflict: Conflict | None = None
    new_folder: str | None = None  # SWAPPING: the new set, built beside the old
    new_inode: int | None = None  # its inode: after a kill, whether the swap happened
    proofs: dict[str, str] = field(default_factory=dict)  # name -> proven, failed, ...
    proof_note: str = ""  # which interpreter ran the checks, or why none ran
    made_for: dict[str, str] = field(default_factory=dict)  # name -> its Base's later release
    not_widened: dict[str, str] = field(default_factory=dict)  # name -> a release widening
    # its range would take in besides REF's (judged as before: a new variant instead)
    format: int = FORMAT


def port_dir(state_dir: Path) -> Path:
    return state_dir / PORT_DIR


def diff_file(state_dir: Path, name: str) -> Path:
    return port_dir(state_dir) / "diffs" / f"{name}.diff"


def worktree(state_dir: Path) -> Path:
    return port_dir(state_dir) / "worktree"


def save(state_dir: Path, state: PortState) -> None:
    data = json.dumps(asdict(state), indent=2, sort_keys=True).encode()
    atomic_write(port_dir(state_dir) / STATE_FILE, data)


def load(state_dir: Path) -> PortState | None:
    """The port in progress, or None; a state file that cannot be read is a one-line error
    (`--abort` removes it)."""
    path = port_dir(state_dir) / STATE_FILE
    try:
        raw = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: cannot read the port's state ({exc}); run port --abort") from None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise UserError(f"{path}: a port state this patchkeeper does not know; run port --abort")
    try:
        decisions = [Decision(**d) for d in raw.pop("decisions")]
        conflict = raw.pop("conflict")
        return PortState(
            **raw, decisions=decisions, conflict=Conflict(**conflict) if conflict else None
        )
    except (TypeError, KeyError) as exc:
        raise UserError(f"{path}: cannot read the port's state ({exc}); run port --abort") from None


def remove(state_dir: Path) -> None:
    """The port's state gone: the state file first (no port is in progress from then on),
    then its diffs and worktree."""
    folder = port_dir(state_dir)
    (folder / STATE_FILE).unlink(missing_ok=True)
    shutil.rmtree(folder, ignore_errors=True)
