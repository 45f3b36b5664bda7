"""Command-line entry point.

Commands live one per module under `patchkeeper/commands/` and are imported only when named,
so `patchkeeper --help` and every command start without loading git or SQLite code they do not
use. Every user-facing failure is a PatchkeeperError: printed as one line, mapped to its exit code.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import NoReturn

import click

from patchkeeper import __version__, exitcodes
from patchkeeper.errors import PatchkeeperError

# name -> module under patchkeeper.commands that defines `command`
COMMANDS: dict[str, str] = {
    "status": "status",
    "apply": "apply",
    "unapply": "unapply",
    "check": "check",
    "lint": "lint",
    "record": "record",
    "refresh": "refresh",
    "demo": "demo",
    "audit": "audit",
    "update": "update",
    "leftovers": "leftovers",
    "recover": "recover",
    "smoke": "smoke",
    "doctor": "doctor",
    "fleet": "fleet",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module_name = COMMANDS.get(cmd_name)
        if module_name is None:
            return None
        qualified = f"patchkeeper.commands.{module_name}"
        try:
            module = importlib.import_module(qualified)
        except ModuleNotFoundError as exc:
            if exc.name == qualified:  # a command not shipped in this build
                return None
            raise
        return module.command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="patchkeeper")
def cli() -> None:
    """Keep local fixes alive across upstream updates of a git-installed project.

    \b
    Example:
      patchkeeper status --install ~/.hermes/hermes-agent
    """


def _fail(message: str, code: int) -> NoReturn:
    """One line on stderr; for --json callers also one document on stdout."""
    click.echo(f"patchkeeper: {message}", err=True)
    if "--json" in sys.argv:
        from patchkeeper.report import emit_json

        command = next((a for a in sys.argv[1:] if a in COMMANDS), "")
        emit_json(command, code, error=message, patches=[])
    sys.exit(code)


def main() -> None:
    try:
        code = cli.main(standalone_mode=False)
    except PatchkeeperError as exc:
        _fail(f"error: {exc}", exc.exit_code)
    except click.exceptions.Abort:
        _fail("aborted", exitcodes.INTERNAL)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exitcodes.USAGE)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except Exception as exc:  # a bug: still one line and exit 1, unless asked for the traceback
        if os.environ.get("PATCHKEEPER_DEBUG"):
            raise
        _fail(
            f"internal error: {type(exc).__name__}: {exc} "
            "(a bug; PATCHKEEPER_DEBUG=1 shows the traceback)",
            exitcodes.INTERNAL,
        )
    sys.exit(code if isinstance(code, int) else exitcodes.OK)
