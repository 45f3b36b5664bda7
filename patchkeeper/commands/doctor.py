"""`patchkeeper doctor`: one screen that says whether the install is safe to update unattended."""

from __future__ import annotations

from pathlib import Path

import click

from patchkeeper.commands.common import (
    install_option,
    json_option,
    metrics_option,
    patches_option,
    write_metrics,
)
from patchkeeper.install.set_choice import choose_near
from patchkeeper.patchset.bundled import bundled_patches
from patchkeeper.proof.doctor.diagnose import diagnose
from patchkeeper.report.doctor import doctor_json, render_doctor
from patchkeeper.report.render import emit_json


@click.command("doctor")
@install_option
@patches_option
@json_option
@metrics_option
def command(
    install_path: Path | None, patches_dir: Path | None, as_json: bool, metrics_path: Path | None
) -> int:
    """Say whether the install is safe to update unattended; exit 0 only when all hold.

    The patch set is chosen as every command chooses it (--patches, PATCHKEEPER_PATCHES, the
    set the install was applied from, the bundled one) and the report says which.

    Checks: install and interpreter found; no merge in progress and no leftovers; the patch
    set lints; every patch in place; the timeout budget holds, judged by running the path
    (`--probe`); the last update ended well. A failure names its first cause: the
    interpreter, what the path raised (a name upstream does not define), the failing figures.

    It changes nothing in the install, but it runs things: [install] version_command (or a
    `command` version source, when set), the interpreter (to print its version), and every
    smoke check the patch set names with `--probe`, which runs the install's own launcher and
    worker path under its own interpreter (with a scratch HOME under .git/patchkeeper/smoke/,
    removed afterwards).

    \b
    Example:
      patchkeeper doctor --install ~/.hermes/hermes-agent
    """
    choice = choose_near(patches_dir, install_path)
    report = diagnose(install_path, (choice.path or bundled_patches()).expanduser(), choice.reason)
    document = doctor_json(report)
    if metrics_path is not None:
        write_metrics(metrics_path, "doctor", report.exit_code, document)
    if as_json:
        emit_json("doctor", report.exit_code, **document)
    else:
        render_doctor(report)
    return report.exit_code
