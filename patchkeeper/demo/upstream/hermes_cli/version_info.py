"""The version of this checkout: `<base>+<distance>.g<sha7>[.dirty]` (PEP 440).

BASE is the nearest `vX.Y.Z` tag reachable from HEAD; at the tag itself the local part is
left out. Without a reachable tag (a shallow clone) the answer is `git.<sha7>`.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent
_DESCRIBED = re.compile(r"^v(?P<base>\d+\.\d+\.\d+)-(?P<distance>\d+)-g(?P<sha>[0-9a-f]+)")


def _git(*args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=CHECKOUT, capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def version_string() -> str:
    described = _git("describe", "--tags", "--long", "--dirty", "--match", "v[0-9]*")
    match = _DESCRIBED.match(described)
    if not match:
        return f"git.{_git('rev-parse', '--short=7', 'HEAD') or 'unknown'}"
    local = [] if match["distance"] == "0" else [match["distance"], "g" + match["sha"][:7]]
    if described.endswith("-dirty"):
        local.append("dirty")
    return match["base"] + ("+" + ".".join(local) if local else "")


if __name__ == "__main__":
    print(version_string())
