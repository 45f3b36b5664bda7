"""How the gateway starts a child that must survive its own restart."""

from __future__ import annotations

import os


def restart_safe_gateway_child_argv(
    command: list[str], *, unit_suffix: str, require_restart_safe_scope: bool = False
) -> list[str]:
    """The argv to start COMMAND with: COMMAND itself when the gateway runs cron work
    in-process, else COMMAND wrapped so that it outlives a gateway restart.

    The practice upstream has no systemd scopes. A gateway counts as managed when
    HERMES_MANAGED_GATEWAY=1, and then wraps workers in `env` (a direct subprocess).
    """
    del unit_suffix, require_restart_safe_scope
    if os.environ.get("HERMES_MANAGED_GATEWAY") == "1":
        return ["env", *command]
    return list(command)
