"""Options every command shares; `open_workspace` turns them into an install and a patch set."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click


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


def _metrics_folder_exists(
    ctx: click.Context, param: click.Parameter, value: Path | None
) -> Path | None:
    """Refused before the command runs (exit 2, nothing done): a metrics file whose folder is
    not there would otherwise be found out only after an update."""
    if value is not None and not value.name:
        raise click.BadParameter("no file name given", ctx, param)
    if value is not None and not value.parent.is_dir():
        raise click.BadParameter(f"{value.parent}: no such folder", ctx, param)
    if value is not None and value.exists() and not value.is_file():
        # The file is replaced by a rename: over /dev/null (as root) that would put a plain
        # file where the device was, for every program on the machine.
        raise click.BadParameter(f"{value}: not a regular file (it would be replaced)", ctx, param)
    return value


def metrics_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--metrics",
        "metrics_path",
        type=click.Path(path_type=Path, dir_okay=False),
        default=None,
        callback=_metrics_folder_exists,
        help="Also write the result as Prometheus metrics to this file (for node_exporter's "
        "textfile collector; replaced atomically).",
    )(f)


def write_metrics(
    path: Path, command: str, code: int, document: dict[str, Any], state_dir: Path | None = None
) -> None:
    """`--metrics PATH`: the run's JSON DOCUMENT as Prometheus metrics (report/metrics.py,
    loaded only when asked for)."""
    from patchkeeper.report.metrics import write_metrics as write

    write(path, command, code, document, state_dir=state_dir)


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


def wait_option(
    f: Callable[..., Any], waits_for: str = "another patchkeeper on this install"
) -> Callable[..., Any]:
    return click.option(
        "--wait",
        type=Seconds(zero_ok=True),
        default=0.0,
        show_default=True,
        help=f"Seconds to wait for {waits_for} before exiting 6.",
    )(f)


def recover_wait_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """`recover --wait` waits for the lock and then for the interrupted run's updater, each
    up to the seconds given: its help says both."""
    return wait_option(f, "another patchkeeper, then for a live updater of the run")


class WholeSummaries(click.Group):
    """A command group whose --help lists each subcommand's whole first line: click's short
    help cuts it at the terminal's width ("Write out the Ansible playbook that rolls...")."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            sub = self.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                rows.append((name, sub.get_short_help_str(limit=10_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def __getattr__(name: str) -> Any:
    """`open_workspace`, loaded when a command asks for it: the options alone (lint's, for
    one) need none of what opening an install and its patch set imports."""
    if name == "open_workspace":
        from patchkeeper.install.workspace import open_workspace

        return open_workspace
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Seconds",
    "WholeSummaries",
    "install_option",
    "json_option",
    "metrics_option",
    "patches_option",
    "recover_wait_option",
    "wait_option",
    "write_metrics",
]
