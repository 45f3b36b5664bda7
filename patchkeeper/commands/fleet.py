"""`patchkeeper fleet playbook|report|ready`: rollouts on Ansible, and one table for the fleet.

`playbook` and `report` run on the controller; `ready` is what the shipped playbook runs on
each host of a batch before any host of it is updated.
"""

from __future__ import annotations

from pathlib import Path

import click

from patchkeeper.commands.common import (
    WholeSummaries,
    install_option,
    json_option,
    metrics_option,
    open_workspace,
    patches_option,
    wait_option,
    write_metrics,
)
from patchkeeper.model.errors import UserError
from patchkeeper.report.render import emit_json


@click.group("fleet", cls=WholeSummaries)
def command() -> None:
    """Roll an upstream update out to many installs with Ansible, and report on it.

    \b
    Example:
      patchkeeper fleet playbook --out rollout/
      ansible-playbook -i hosts.ini rollout/patchkeeper-rollout.yml \\
          -e patchkeeper_preview=origin/main -e patchkeeper_reports_dir=reports
      patchkeeper fleet report reports
    """


@command.command("playbook")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Write patchkeeper-rollout.yml into this folder (default, or `-`: print it on stdout).",
)
def playbook(out_dir: Path | None) -> int:
    """Write out the Ansible playbook that rolls `patchkeeper update` out to a fleet.

    A canary host first, then 25 % of the hosts, then the rest; the first host that does
    not end in exit 0 halts the rollout. Its variables are listed at the top of the file.
    An existing file that differs is never overwritten.

    \b
    Example:
      patchkeeper fleet playbook --out rollout/
      patchkeeper fleet playbook > patchkeeper-rollout.yml
    """
    from patchkeeper.fleet import PLAYBOOK_NAME, playbook_text

    text = playbook_text()
    if out_dir is None or str(out_dir) == "-":
        click.echo(text, nl=False)
        return 0
    target = out_dir / PLAYBOOK_NAME
    if target.exists() and (not target.is_file() or target.read_text(encoding="utf-8") != text):
        raise UserError(f"{target}: exists and differs from this version's playbook; move it away")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UserError(f"{target}: cannot write: {exc.strerror or exc}") from exc
    click.echo(f"wrote {target}")
    click.echo(
        f"run: ansible-playbook -i INVENTORY {target} -e patchkeeper_preview=REF "
        "-e patchkeeper_reports_dir=DIR; then: patchkeeper fleet report DIR"
    )
    return 0


@command.command("report")
@click.argument("reports_dir", type=click.Path(path_type=Path, file_okay=False))
@json_option
@metrics_option
def report(reports_dir: Path, as_json: bool, metrics_path: Path | None) -> int:
    """One row per host of a rollout: versions, each patch's outcome, smoke, leftovers, exit.

    REPORTS_DIR is the playbook's `patchkeeper_reports_dir`. A host that never ran, or whose
    report is torn, is its own row ("no report"). Exit 0 when every host ended in exit 0;
    else 3, 4 or 5 by the most serious host (a host without a report counts as 5).

    \b
    Example:
      patchkeeper fleet report reports/2026-11-29 --json
    """
    from patchkeeper.fleet.report import fleet_json, read_fleet, render_fleet

    fleet = read_fleet(reports_dir)
    code = fleet.exit_code()
    if metrics_path is not None:  # one file for the fleet, a `host` label on each host's lines
        write_metrics(metrics_path, "fleet report", code, fleet_json(fleet))
    if as_json:
        emit_json("fleet report", code, **fleet_json(fleet))
    else:
        for line in render_fleet(fleet):
            click.echo(line)
    return code


@command.command("ready")
@install_option
@patches_option
@wait_option
@json_option
def ready(install_path: Path | None, patches_dir: Path | None, wait: float, as_json: bool) -> int:
    """Exit 0 when an update could start on the install now; changes nothing.

    Takes the install lock and lets it go at once, as `update` would take it: waits up to
    --wait for another patchkeeper, then exits 6; refuses (5) while an update is unfinished
    or the patch set lacks a patch recorded as applied, and (2) during a git merge or rebase.
    The rollout playbook runs it on every host of a batch before it updates any of them.

    \b
    Example:
      patchkeeper fleet ready --install ~/.hermes/hermes-agent --wait 60 --json
    """
    from patchkeeper.install import set_choice as remembered
    from patchkeeper.install.checkout.install import refuse_if_busy_with_git
    from patchkeeper.install.locks.install_lock import install_lock
    from patchkeeper.install.workspace import refuse_if_unfinished
    from patchkeeper.patchset.load import refuse_overlapping_variants

    workspace = open_workspace(install_path, patches_dir)
    refuse_overlapping_variants(workspace.patch_set)  # what update refuses, before it runs
    with install_lock(workspace.install.state_dir, "fleet ready", wait):
        refuse_if_unfinished(workspace.install)
        refuse_if_busy_with_git(workspace.install)
        remembered.refuse_foreign(workspace.install, workspace.patch_set)
    if as_json:
        emit_json(
            "fleet ready",
            0,
            install={"path": str(workspace.install.path)},
            patch_set=workspace.patch_set_label,
            patches=[],
        )
    else:
        click.echo(f"{workspace.install.path}: ready for an update")
    return 0
