"""What every command works on: the settings, the install and the patch set, opened together."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from patchkeeper.install import set_choice as remembered
from patchkeeper.install.checkout.install import Install, open_install, refuse_if_busy_with_git
from patchkeeper.model import exitcodes
from patchkeeper.model.errors import PatchkeeperError, UserError
from patchkeeper.patchset.bundled import bundled_patches, is_packaged
from patchkeeper.patchset.load import load_patch_set
from patchkeeper.patchset.model import PatchSet
from patchkeeper.patchset.settings import Settings, load_settings

if TYPE_CHECKING:  # the journal, the lock and the tree writer are for writers: loaded on demand
    from patchkeeper.install.locks.install_lock import InstallLock


@dataclass(frozen=True)
class Workspace:
    """What a command works on: the install, the patch set chosen for it, its settings."""

    settings: Settings
    install: Install
    patch_set: PatchSet
    patch_set_reason: str = remembered.FROM_OPTION  # why this set (see remembered.choose)

    @property
    def patch_set_label(self) -> str:
        return f"{self.patch_set.root} ({self.patch_set_reason})"


def open_patch_set(
    patches_dir: Path | None, *, deferred: bool = False
) -> tuple[Settings, PatchSet]:
    """The patch set (default: the bundled one) and its settings; a one-line error if bad.
    DEFERRED: variants' diffs are read when chosen (`check`; see `load_patch_set`)."""
    root = (patches_dir or bundled_patches()).expanduser()
    patch_set = load_patch_set(root, deferred=deferred)
    return load_settings(patch_set.root), patch_set


def open_workspace(
    install_path: Path | None, patches_dir: Path | None, *, deferred: bool = False
) -> Workspace:
    """INSTALL_PATH (else the set's `[install] path`) with the set `remembered.choose` picks.

    With no --patches and no PATCHKEEPER_PATCHES the install is opened first, at INSTALL_PATH
    or the bundled set's install path, since it may remember the set its fixes came from.
    """
    install = None
    state_dir = None
    if patches_dir is None and not os.environ.get(remembered.ENV_VAR, "").strip():
        default = load_settings(bundled_patches()).install_path
        install = open_install(install_path or default)
        state_dir = install.state_dir
    choice = remembered.choose(patches_dir, state_dir)
    settings, patch_set = open_patch_set(choice.path, deferred=deferred)
    install = install or open_install(install_path or settings.install_path)
    return Workspace(settings, install, patch_set, choice.reason)


INIT_HINT = "patchkeeper init ~/patchkeeper-patches"


def refuse_bundled_set(workspace: Workspace, command: str) -> None:
    """`record`, `refresh` and `port` (in place) write the patch set: never the bundled one
    with no set named (it is patchkeeper's, not the operator's), and never the copy inside
    the installed package, however named (the next upgrade or reinstall would delete what
    was written). An install last applied with no set named remembers the bundled set: in a
    source checkout that is its `patches/`, which is the bundled set too unless named on
    purpose."""
    root = workspace.patch_set.root
    reason = workspace.patch_set_reason
    unnamed_bundled = reason == remembered.FROM_INSTALL and _same_folder(root, bundled_patches())
    if reason == remembered.BUNDLED or unnamed_bundled or is_packaged(root):
        raise UserError(
            f"{root}: {command} will not write into the bundled patch set (an upgrade replaces "
            f"it); start a set of your own with `{INIT_HINT}`, then pass --patches "
            "~/patchkeeper-patches (or set PATCHKEEPER_PATCHES)"
        )


def _same_folder(one: Path, other: Path) -> bool:
    try:
        return one.expanduser().resolve() == other.expanduser().resolve()
    except OSError:
        return False


def refuse_if_unfinished(install: Install) -> None:
    """An update that stopped half-way is `recover`'s to finish; writing now would mix in."""
    from patchkeeper.install.records import update_journal as jr

    journal = jr.load(install.state_dir)
    if journal is not None:
        raise PatchkeeperError(
            f"{install.path}: update {journal.id} (pid {journal.pid}) stopped in phase "
            f"{journal.phase_label}; run `patchkeeper recover` first",
            exitcodes.ATTENTION,
        )


# Writers that apply a whole set, and so would take out an applied patch the set lacks.
_WHOLE_SET_WRITERS = frozenset({"apply", "update"})


@contextmanager
def locked_for_writing(
    workspace: Workspace, command: str, wait: float, *, unmerged_later: bool = False
) -> Iterator[InstallLock]:
    """Every command that writes to the install starts here: the lock, then the refusals.
    UNMERGED_LATER: the command refuses unmerged paths itself, from a listing it makes
    anyway before it changes anything (`update`'s snapshot), so git is not asked here."""
    from patchkeeper.install.locks.install_lock import install_lock
    from patchkeeper.install.writer.settle import settle

    with install_lock(workspace.install.state_dir, command, wait) as lock:
        lock.settled = settle(workspace.install.path, workspace.install.state_dir)
        refuse_if_unfinished(workspace.install)  # first: it may explain a git operation too
        refuse_if_busy_with_git(workspace.install, [] if unmerged_later else None)
        if command in _WHOLE_SET_WRITERS:
            remembered.refuse_foreign(workspace.install, workspace.patch_set)
        yield lock
