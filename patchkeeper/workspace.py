"""What every command works on: the settings, the install and the patch set, opened together."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from patchkeeper import exitcodes
from patchkeeper import journal as jr
from patchkeeper.bundled import bundled_patches
from patchkeeper.config import Settings, load_settings
from patchkeeper.errors import PatchkeeperError
from patchkeeper.install import Install, open_install, refuse_if_busy_with_git
from patchkeeper.lock import InstallLock, install_lock
from patchkeeper.patchset import PatchSet, load_patch_set


@dataclass(frozen=True)
class Workspace:
    settings: Settings
    install: Install
    patch_set: PatchSet


def open_patch_set(patches_dir: Path | None) -> tuple[Settings, PatchSet]:
    """The patch set (default: the bundled one) and its settings; a one-line error if bad."""
    root = (patches_dir or bundled_patches()).expanduser()
    patch_set = load_patch_set(root)
    return load_settings(patch_set.root), patch_set


def open_workspace(install_path: Path | None, patches_dir: Path | None) -> Workspace:
    """INSTALL_PATH, else the patch set's `[install] path`, with the patch set."""
    settings, patch_set = open_patch_set(patches_dir)
    install = open_install(install_path or settings.install_path)
    return Workspace(settings, install, patch_set)


def refuse_if_unfinished(install: Install) -> None:
    """An update that stopped half-way is `recover`'s to finish; writing now would mix in."""
    journal = jr.load(install.state_dir)
    if journal is not None:
        raise PatchkeeperError(
            f"{install.path}: update {journal.id} (pid {journal.pid}) stopped in phase "
            f"{journal.phase_label}; run `patchkeeper recover` first",
            exitcodes.ATTENTION,
        )


@contextmanager
def locked_for_writing(workspace: Workspace, command: str, wait: float) -> Iterator[InstallLock]:
    """Every command that writes to the install starts here: the lock, then the refusals."""
    with install_lock(workspace.install.state_dir, command, wait) as lock:
        refuse_if_unfinished(workspace.install)  # first: it may explain a git operation too
        refuse_if_busy_with_git(workspace.install)
        yield lock
