"""Where Hermes keeps its state (HERMES_HOME)."""

from __future__ import annotations

import os
from pathlib import Path


def get_hermes_home() -> Path:
    """HERMES_HOME when set, else the `home/` folder next to this checkout.

    Real Hermes falls back to ~/.hermes. This practice upstream (patchkeeper's sandbox)
    falls back to its own folder instead, so a demo never touches the operator's state.
    """
    configured = os.environ.get("HERMES_HOME", "").strip()
    if configured:
        return Path(configured).expanduser()
    return Path(__file__).resolve().parent.parent / "home"
