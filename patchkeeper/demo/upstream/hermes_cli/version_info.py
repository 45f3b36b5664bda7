"""The version of this checkout: `<base>+<distance>.g<sha7>[.dirty]` (PEP 440), e.g.
`0.21.5+3.g1a2b3c4`; at a release itself just `<base>`.

BASE and DISTANCE come from the install stamp (install_stamp.py), trusted while its commit is
HEAD; `.dirty` is the work tree now (tracked files only). Without a stamp that holds for HEAD:
`hermes_cli.__version__` where the source still states one (up to 0.21.4), else `0.0.0`.
Tags are never read: a release tag names a date (`v2026.9.24`), not a version.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from hermes_cli.install_stamp import read_stamp

CHECKOUT = Path(__file__).resolve().parent.parent


def _git(*args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=CHECKOUT, capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def _stamp_of_head() -> dict:
    """The install stamp while it describes HEAD; {} once HEAD moved without a new one."""
    stamp = read_stamp(CHECKOUT)
    return stamp if stamp.get("commit") == _git("rev-parse", "HEAD") else {}


def base_and_distance() -> tuple[str, int | None]:
    """(the release this checkout is at or past, commits past it; None: not known)."""
    stamp = _stamp_of_head()
    base = stamp.get("baseVersion")
    if isinstance(base, str) and base:
        distance = stamp.get("distance")
        return base, distance if isinstance(distance, int) and distance >= 0 else None
    import hermes_cli

    stated = hermes_cli.__dict__.get("__version__")  # a literal, never the stamp again
    return (stated, 0) if isinstance(stated, str) else ("0.0.0", None)


def version_string() -> str:
    base, distance = base_and_distance()
    if not distance:
        return base
    local = [str(distance), "g" + _git("rev-parse", "--short=7", "HEAD")]
    if _git("status", "--porcelain", "-uno"):
        local.append("dirty")
    return f"{base}+{'.'.join(local)}"


def release_date() -> str:
    """`YYYY.M.D` (UTC) of the stamp's `commitDate`: the release's date at a release."""
    from datetime import UTC, datetime

    when = _stamp_of_head().get("commitDate")
    if not isinstance(when, int):
        return "unknown"
    day = datetime.fromtimestamp(when, UTC)
    return f"{day.year}.{day.month}.{day.day}"


if __name__ == "__main__":
    print(version_string())
