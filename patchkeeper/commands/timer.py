"""`patchkeeper timer install|cron`: run `patchkeeper update` on a timer, the way Linux runs
things: the systemd service and timer shipped in patchkeeper/systemd/ (user and system
variants), or a cron line for a host without systemd.

The units log to the journal and keep the last JSON report in the unit's StateDirectory=
(~/.local/state/patchkeeper for a user, /var/lib/patchkeeper for the system): both work for
root and non-root alike, unlike a folder under /var/log that only root may make."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import click

from patchkeeper.commands.common import WholeSummaries

UNITS = ("patchkeeper-update.service", "patchkeeper-update.timer")
SHIPPED = Path(__file__).resolve().parent.parent / "systemd"
_DEFAULT_EXEC = " sh patchkeeper\n"  # the end of the shipped ExecStart: the command to run


def own_command() -> list[str]:
    """How this patchkeeper was started: its console script (pipx's ~/.local/bin/patchkeeper,
    kept as the link, so an upgrade keeps it), else this interpreter with `-m patchkeeper`."""
    script = Path(sys.argv[0])
    if script.name == "patchkeeper":
        return [os.path.abspath(script)]
    return [sys.executable, "-m", "patchkeeper"]


def _systemd_word(word: str) -> str:
    """WORD quoted for an ExecStart= line: systemd's own `%` and `$` expansions undone."""
    escaped = word.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("%", "%%").replace("$", "$$") + '"'


def rendered(variant: str) -> dict[str, str]:
    """The units of VARIANT (user or system), ExecStart naming this patchkeeper."""
    texts = {name: (SHIPPED / variant / name).read_text(encoding="utf-8") for name in UNITS}
    words = " ".join(_systemd_word(w) for w in own_command())
    service = texts[UNITS[0]]
    assert _DEFAULT_EXEC in service, "the shipped ExecStart ends in `sh patchkeeper`"
    texts[UNITS[0]] = service.replace(_DEFAULT_EXEC, f" sh {words}\n")
    return texts


def unit_dir(variant: str) -> Path:
    if variant == "system":
        return Path("/etc/systemd/system")
    config = os.environ.get("XDG_CONFIG_HOME", "").strip() or str(Path.home() / ".config")
    return Path(config) / "systemd" / "user"


@click.group("timer", cls=WholeSummaries)
def command() -> None:
    """Run `patchkeeper update` daily: install the systemd timer, or print a cron line.

    \b
    Example:
      patchkeeper timer install --user
    """


@command.command("install")
@click.option("--user", "variant", flag_value="user", help="A unit of your user's own manager.")
@click.option("--system", "variant", flag_value="system", help="A unit of the system manager.")
@click.option("--print", "just_print", is_flag=True, help="Print the units; write nothing.")
def install(variant: str | None, just_print: bool) -> None:
    """Write patchkeeper-update.service and .timer (default: --system as root, else --user).

    --user writes to ~/.config/systemd/user/ ($XDG_CONFIG_HOME), --system to
    /etc/systemd/system/. The report goes to the journal and to last-update.json in the
    unit's state folder.
    """
    variant = variant or ("system" if os.geteuid() == 0 else "user")
    texts = rendered(variant)
    target = unit_dir(variant)
    if just_print:
        for name, text in texts.items():
            click.echo(f"# {target / name}\n{text}", nl=False)
        return
    target.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (target / name).write_text(text, encoding="utf-8")
        click.echo(f"wrote {target / name}")
    ctl = "systemctl --user" if variant == "user" else "systemctl"
    click.echo(f"next: {ctl} daemon-reload && {ctl} enable --now patchkeeper-update.timer")
    if variant == "user":
        click.echo("note: to run while you are logged out: sudo loginctl enable-linger $USER")


STATE = '"${XDG_STATE_HOME:-$HOME/.local/state}/patchkeeper"'


def cron_line() -> str:
    """A crontab line that runs the update daily at 04:17 and keeps the report where the user
    unit does; no `%` in it (cron would cut the line there)."""
    run = " ".join(shlex.quote(w) for w in own_command())
    return (f"17 4 * * * d={STATE}; mkdir -p \"$d\" && {run} update --json "
            '> "$d/last-update.json" 2>> "$d/update.log"')  # fmt: skip


@command.command("cron")
def cron() -> None:
    """Print a crontab line for a host without systemd (`crontab -e`, then paste it)."""
    click.echo(cron_line())
