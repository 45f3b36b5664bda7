"""The job store (practice: the cron folder and the profile switch only)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hermes_constants import reset_hermes_home_override, set_hermes_home_override


def _ensure_cron_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)


@contextmanager
def use_cron_store(profile_home: Path) -> Iterator[None]:
    """Run the body against PROFILE_HOME's cron store (jobs and ledger)."""
    token = set_hermes_home_override(profile_home)
    try:
        yield
    finally:
        reset_hermes_home_override(token)
