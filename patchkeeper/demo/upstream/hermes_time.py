"""Timestamps in the configured zone (the practice upstream uses the machine's zone)."""

from __future__ import annotations

from datetime import datetime


def now() -> datetime:
    return datetime.now().astimezone()
