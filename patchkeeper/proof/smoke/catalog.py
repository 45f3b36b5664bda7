"""Where a patch set's smoke checks are (`smoke/NAME.py`) and which of them a run asks for.

A check is a Python script in the patch set's `smoke/` folder; a patch's `Smoke:` header names
the checks that prove it, and a named check whose file is missing is still asked for (it runs
as "could not check", never skipped).
"""

from __future__ import annotations

from pathlib import Path

from patchkeeper.model.errors import UserError
from patchkeeper.patchset.model import PatchSet
from patchkeeper.patchset.userfiles import SMOKE_NAME_RE

SMOKE_DIR = "smoke"


def available_checks(patch_set: PatchSet) -> list[str]:
    folder = patch_set.root / SMOKE_DIR
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob("*.py") if not p.name.startswith("_"))


def check_file(patch_set: PatchSet, name: str) -> Path | None:
    """smoke/NAME.py; None when NAME is not a plain file name (it may not leave smoke/)."""
    stem = name.removesuffix(".py")
    return patch_set.root / SMOKE_DIR / f"{stem}.py" if SMOKE_NAME_RE.fullmatch(stem) else None


def named_checks(patch_set: PatchSet) -> list[str]:
    """Every check a patch's `Smoke:` header names, whether its file is there or not."""
    named = [n for p in patch_set.patches for v in p.variants for n in v.smoke]
    return list(dict.fromkeys(n.removesuffix(".py") for n in named))


def select_checks(patch_set: PatchSet, wanted: str | None) -> list[str]:
    """`--check NAME` (which must exist), else every check in the patch set's smoke/ folder
    and every check a `Smoke:` header names (a missing one is run as "could not check")."""
    if wanted is None:
        return list(dict.fromkeys([*available_checks(patch_set), *named_checks(patch_set)]))
    path = check_file(patch_set, wanted)
    if path is None or not path.is_file():
        known = ", ".join(available_checks(patch_set)) or "none"
        where = path or repr(wanted)
        raise UserError(f"{where}: no such smoke check (known: {known})")
    return [wanted.removesuffix(".py")]
