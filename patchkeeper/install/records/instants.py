"""Timestamps as Hermes writes them: timezone-aware ISO strings, offsets possibly mixed."""

from __future__ import annotations

from datetime import datetime


def parse_instant(value: object) -> datetime | None:
    """A timezone-aware instant from an ISO stamp; None when it is not one (naive included).

    Compare these, never the text: `+02:00` and `Z` stamps do not sort as strings do.
    """
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return moment if moment.utcoffset() is not None else None
