"""`install-stamp.json`: what this checkout is, written by the installer and by `hermes update`.

The stamp sits at the checkout's root. It is ignored by git (.gitignore) and never committed,
so `git stash --include-untracked` leaves it alone; from 0.21.5 on it is the only place the
version is written down. Its keys are upstream's: `schemaVersion`, `commit`, `commitDate`
(epoch seconds), `branch` (null when detached), `builtAt`, `dirty`, `source` (`git`: trusted
only while `commit` is HEAD), `distribution`, `baseVersion` (the release HEAD is at or past),
`displayVersion` (`<base>` or `<base>+<distance>`), `distance` (commits past that release),
`payload`, `tag` and `updateMechanism` (`self`: `hermes update` updates this checkout).

    python -m hermes_cli.install_stamp --base-version 0.21.3 [--distance N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

STAMP_NAME = "install-stamp.json"
SCHEMA_VERSION = 2
CHECKOUT = Path(__file__).resolve().parent.parent


def stamp_path(root: Path = CHECKOUT) -> Path:
    return root / STAMP_NAME


def read_stamp(root: Path = CHECKOUT) -> dict[str, Any]:
    """The stamp of ROOT, or {} when there is none or it cannot be read."""
    try:
        data = json.loads(stamp_path(root).read_text(encoding="utf-8-sig"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _git(root: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def build_stamp(base_version: str, distance: int | None, root: Path = CHECKOUT) -> dict[str, Any]:
    """The stamp for ROOT's HEAD, BASE_VERSION plus DISTANCE commits."""
    date = _git(root, "log", "-1", "--format=%ct", "HEAD")
    display = f"{base_version}+{distance}" if distance else base_version
    return {
        "schemaVersion": SCHEMA_VERSION,
        "commit": _git(root, "rev-parse", "HEAD") or None,
        "commitDate": int(date) if date.isdigit() else None,
        "branch": _git(root, "branch", "--show-current") or None,
        "builtAt": datetime.now(UTC).isoformat(),
        "dirty": bool(_git(root, "status", "--porcelain", "-uno")),
        "source": "git",
        "distribution": None,
        "baseVersion": base_version,
        "displayVersion": display,
        "distance": distance,
        "payload": False,
        "tag": None,
        "updateMechanism": "self",
    }


def write_stamp(stamp: dict[str, Any], root: Path = CHECKOUT) -> Path:
    """Write STAMP whole, then rename it into place: a reader never sees half a stamp."""
    path = stamp_path(root)
    partial = path.with_name(f".{STAMP_NAME}.{os.getpid()}.tmp")
    partial.write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
    os.replace(partial, path)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hermes_cli.install_stamp")
    parser.add_argument("--base-version", required=True)
    parser.add_argument("--distance", type=int, default=0)
    args = parser.parse_args(argv)
    print(write_stamp(build_stamp(args.base_version, args.distance)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
