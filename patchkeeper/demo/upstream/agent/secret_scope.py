"""Which secrets a process may see. The practice upstream keeps no secrets: scopes are labels."""

from __future__ import annotations

from contextvars import ContextVar, Token
from pathlib import Path

_scope: ContextVar[str | None] = ContextVar("secret_scope", default=None)
_multiplex: ContextVar[bool] = ContextVar("multiplex_active", default=False)


def build_profile_secret_scope(profile_home: Path) -> str:
    return f"profile:{profile_home}"


def set_secret_scope(scope: str) -> Token[str | None]:
    return _scope.set(scope)


def reset_secret_scope(token: Token[str | None]) -> None:
    _scope.reset(token)


def is_multiplex_active() -> bool:
    return _multiplex.get()


def set_multiplex_active(active: bool) -> None:
    _multiplex.set(bool(active))
