"""Options every command shares; `open_workspace` turns them into an install and a patch set."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from patchkeeper.workspace import open_workspace


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


def wait_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--wait",
        type=click.FloatRange(min=0),
        default=0.0,
        show_default=True,
        help="Seconds to wait for another patchkeeper on this install before exiting 6.",
    )(f)


__all__ = ["install_option", "json_option", "open_workspace", "patches_option", "wait_option"]
