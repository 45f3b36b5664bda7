"""Options every command shares and the one place they are turned into an install + patch set."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from patchkeeper.bundled import bundled_patches
from patchkeeper.config import Settings, load_settings
from patchkeeper.install import Install, open_install
from patchkeeper.patchset import PatchSet, load_patch_set


def patches_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--patches",
        "patches_dir",
        type=click.Path(path_type=Path, file_okay=False),
        default=None,
        help="Patch set folder (default: the bundled Hermes patch set).",
    )(f)


def install_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--install",
        "install_path",
        type=click.Path(path_type=Path, file_okay=False),
        default=None,
        help="The upstream checkout (default: [install] path, else ~/.hermes/hermes-agent).",
    )(f)


def json_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")(f)


@dataclass(frozen=True)
class Workspace:
    settings: Settings
    install: Install
    patch_set: PatchSet


def open_patch_set(patches_dir: Path | None) -> tuple[Settings, PatchSet]:
    root = (patches_dir or bundled_patches()).expanduser()
    patch_set = load_patch_set(root)
    return load_settings(patch_set.root), patch_set


def open_workspace(install_path: Path | None, patches_dir: Path | None) -> Workspace:
    settings, patch_set = open_patch_set(patches_dir)
    install = open_install(install_path or settings.install_path)
    return Workspace(settings, install, patch_set)
