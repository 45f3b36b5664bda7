"""How the gateway starts a child that must survive its own restart."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class ChildDispatch:
    mode: str  # "in_process", "direct" or "scoped"
    argv: list[str]


def restart_safe_gateway_child_argv(
    command: list[str], *, unit_suffix: str, require_restart_safe_scope: bool = False
) -> ChildDispatch:
    """Where cron work runs: in the gateway itself unless it is a managed service.

    The practice upstream has no systemd scopes. A gateway counts as managed when
    HERMES_MANAGED_GATEWAY=1, and then starts workers as direct subprocesses.
    """
    del unit_suffix, require_restart_safe_scope
    if os.environ.get("HERMES_MANAGED_GATEWAY") == "1":
        return ChildDispatch("direct", list(command))
    return ChildDispatch("in_process", list(command))
