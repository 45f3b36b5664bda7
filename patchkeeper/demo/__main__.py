"""`python -m patchkeeper.demo publish DIR [TAG]`: release the next practice version upstream.

DIR is a sandbox (what `patchkeeper demo --dir DIR` built). TAG is a release tag
(`v2026.9.24`) or its version (`0.21.5`); without it, the release after the one origin's main
is at now. A later `patchkeeper update` (or `./hermes update`) then gets it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from patchkeeper.model.errors import UserError

USAGE = "usage: python -m patchkeeper.demo publish DIR [TAG]"


def main(argv: list[str]) -> int:
    from patchkeeper.demo.sandbox import open_copied_sandbox

    if len(argv) not in (2, 3) or argv[0] != "publish":
        print(USAGE, file=sys.stderr)
        return 2
    try:
        sandbox = open_copied_sandbox(Path(argv[1]))
        tag = sandbox.publish(argv[2] if len(argv) == 3 else sandbox.next_release())
    except UserError as exc:
        print(f"patchkeeper demo: error: {exc}", file=sys.stderr)
        return 2
    print(f"published {tag}: origin's main is at it; run `patchkeeper update` to get it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
