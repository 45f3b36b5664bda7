"""What every command works on: the settings, the install and the patch set, opened together."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from patchkeeper.bundled import bundled_patches
from patchkeeper.config import Settings, load_settings
from patchkeeper.install import Install, open_install
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
