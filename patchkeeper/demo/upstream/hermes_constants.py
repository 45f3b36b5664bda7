"""Where Hermes keeps its state (HERMES_HOME), with a per-context override for profiles."""

from __future__ import annotations

import os
from contextvars import ContextVar, Token
from pathlib import Path

_home_override: ContextVar[Path | None] = ContextVar("hermes_home_override", default=None)


def get_hermes_home() -> Path:
    """The override when a profile is entered, else HERMES_HOME, else `home/` by this checkout.

    Real Hermes falls back to ~/.hermes. This practice upstream (patchkeeper's sandbox)
    falls back to its own folder instead, so a demo never touches the operator's state.
    """
    override = _home_override.get()
    if override is not None:
        return override
    configured = os.environ.get("HERMES_HOME", "").strip()
    if configured:
        return Path(configured).expanduser()
    return Path(__file__).resolve().parent / "home"


def set_hermes_home_override(home: Path) -> Token[Path | None]:
    return _home_override.set(Path(home))


def reset_hermes_home_override(token: Token[Path | None]) -> None:
    _home_override.reset(token)
