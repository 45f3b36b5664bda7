"""Loading a profile's environment. The practice upstream has nothing to load."""

from __future__ import annotations

from pathlib import Path


def hydrate_profile_secret_sources(profile_home: Path) -> None:
    """Real Hermes reads the profile's .env files here; practice profiles have none."""
    del profile_home
