"""Options every command shares; `open_workspace` turns them into an install and a patch set."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from patchkeeper.workspace import open_workspace


def _patches(help_text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option(
        "--patches",
        "patches_dir",
        type=click.Path(path_type=Path, file_okay=False),
        default=None,
        help=help_text,
    )


def patches_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return _patches(
        "Patch set folder (default: PATCHKEEPER_PATCHES, else the set the install was last "
        "applied from, else the bundled Hermes patch set)."
    )(f)


def bundled_patches_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """For the commands whose default is the bundled set alone (lint reads no install; doctor
    does not look for the set the install was applied from)."""
    return _patches("Patch set folder (default: the bundled Hermes patch set).")(f)


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


class Seconds(click.ParamType):
    """A finite number of seconds (nan and inf would never time out, or crash a wait)."""

    name = "seconds"

    def __init__(self, *, zero_ok: bool) -> None:
        self.zero_ok = zero_ok

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not self.zero_ok):
            least = "0 or more" if self.zero_ok else "more than 0"
            self.fail(f"{value!r}: give a finite number of seconds, {least}", param, ctx)
        return seconds


def wait_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--wait",
        type=Seconds(zero_ok=True),
        default=0.0,
        show_default=True,
        help="Seconds to wait for another patchkeeper on this install before exiting 6.",
    )(f)


__all__ = [
    "Seconds",
    "bundled_patches_option",
    "install_option",
    "json_option",
    "open_workspace",
    "patches_option",
    "wait_option",
]
