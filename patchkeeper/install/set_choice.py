"""Which patch set an install was last applied from, and which set a run uses (and why).

A timer or an Ansible task that leaves out `--patches` must not run with another set than
the one the install's fixes came from: that set's patches would be taken out and nothing put
in their place. So an install remembers its set (path and content digest) under
.git/patchkeeper/, and a run picks its set in this order: `--patches`, then
PATCHKEEPER_PATCHES, then the set the install remembers, then the bundled one. A set that
lacks a patch recorded as applied is refused by the writing commands (`refuse_foreign`):
retiring a fix is always explicit (`patchkeeper unapply NAME`).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from patchkeeper.install.checkout.install import Install, open_install
from patchkeeper.install.system.durable import atomic_write
from patchkeeper.model import exitcodes, nextstep
from patchkeeper.model.errors import PatchkeeperError, UserError
from patchkeeper.patchset.model import PatchSet
from patchkeeper.patchset.series import SERIES_NAME

REMEMBERED_FILE = "patch-set.json"
ENV_VAR = "PATCHKEEPER_PATCHES"

FROM_OPTION = "--patches"
FROM_ENV = ENV_VAR
FROM_INSTALL = "the set this install was last applied from"
BUNDLED = "bundled: no --patches, no PATCHKEEPER_PATCHES, none remembered"


@dataclass(frozen=True)
class Choice:
    """The patch set folder a run uses, and why that one."""

    path: Path | None  # None: the bundled set
    reason: str


def digest(patch_set: PatchSet) -> str:
    """A content digest of the set: its series and every patch file, in series order."""
    import hashlib

    sha = hashlib.sha256((patch_set.root / SERIES_NAME).read_bytes())
    for patch in patch_set.patches:
        for variant in patch.variants:
            sha.update(f"\0{variant.path.relative_to(patch_set.root)}\0{variant.sha256}".encode())
    return sha.hexdigest()


def remember(state_dir: Path, patch_set: PatchSet) -> None:
    import json

    document = {"path": str(patch_set.root), "digest": digest(patch_set)}
    data = json.dumps(document, indent=2).encode() + b"\n"
    with contextlib.suppress(OSError):
        if (state_dir / REMEMBERED_FILE).read_bytes() == data:
            return  # the same set again: the file that says so is there already
    atomic_write(state_dir / REMEMBERED_FILE, data)


def recall(state_dir: Path) -> tuple[Path, str] | None:
    """(path, digest) of the set the install was last applied from, or None."""
    path = state_dir / REMEMBERED_FILE
    if not path.is_file():
        return None
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Path(data["path"]), str(data["digest"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UserError(f"{path}: patchkeeper state is unreadable ({exc})") from None


def choose(patches_dir: Path | None, state_dir: Path | None) -> Choice:
    """The set to use: --patches, PATCHKEEPER_PATCHES, the install's remembered set, bundled.

    STATE_DIR is the install's state folder when the install is known before the set is.
    """
    if patches_dir is not None:
        return Choice(patches_dir, FROM_OPTION)
    if value := os.environ.get(ENV_VAR, "").strip():
        return Choice(Path(value), FROM_ENV)
    remembered = recall(state_dir) if state_dir is not None else None
    if remembered is not None:
        path, _ = remembered
        if not path.is_dir():
            raise UserError(
                f"{state_dir / REMEMBERED_FILE}: this install was last applied from {path}, "
                "which is gone; pass --patches (or set PATCHKEEPER_PATCHES)"
            )
        return Choice(path, FROM_INSTALL)
    return Choice(None, BUNDLED)


def choose_near(patches_dir: Path | None, install_path: Path | None) -> Choice:
    """`choose` for commands that need no install (lint) or judge a broken one (doctor): the
    set remembered by the install at INSTALL_PATH (else the bundled set's `[install] path`)
    when there is one there, with no error when there is none."""
    state_dir = None
    if patches_dir is None and not os.environ.get(ENV_VAR, "").strip():
        from patchkeeper.patchset.bundled import bundled_patches
        from patchkeeper.patchset.settings import load_settings

        where = install_path or load_settings(bundled_patches()).install_path
        try:
            state_dir = open_install(where.expanduser()).state_dir
        except UserError:
            state_dir = None
    return choose(patches_dir, state_dir)


def foreign_records(install: Install, patch_set: PatchSet) -> list[str]:
    """Patches recorded as applied in the install that PATCH_SET does not hold."""
    from patchkeeper.install.records.applied import load_applied

    held = {patch.name for patch in patch_set.patches}
    return sorted(set(load_applied(install.state_dir)) - held)


def foreign_problem(install: Install, patch_set: PatchSet) -> str | None:
    """One line naming applied patches PATCH_SET lacks, with the commands that settle it."""
    missing = foreign_records(install, patch_set)
    if not missing:
        return None
    remembered = recall(install.state_dir)
    source = f" from {remembered[0]}" if remembered else ""
    retire = nextstep.command("unapply", missing[0], install=install.path, patches=patch_set.root)
    use = (
        "use that set: " + nextstep.command("status", install=install.path, patches=remembered[0])
        if remembered
        else "pass the --patches they came from"
    )
    return (
        f"{patch_set.root} does not hold {', '.join(missing)}, applied{source}: it would take "
        f"them out; {use}; or retire one explicitly: {retire}"
    )


def refuse_foreign(install: Install, patch_set: PatchSet) -> None:
    """Stop (exit 5) before a set that lacks applied patches could take them out."""
    problem = foreign_problem(install, patch_set)
    if problem is not None:
        raise PatchkeeperError(problem, exitcodes.ATTENTION)
