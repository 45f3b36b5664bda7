"""Write patch files: `record` a new fix, `refresh` one after a manual fix, each from the diff
the work tree gives (engine/work_tree_diff.py). A patch file is written only once it parses,
and the patch is then recorded as applied: the work tree already holds it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from patchkeeper.engine.own_hunks import own_hunks
from patchkeeper.engine.work_tree_diff import work_tree_diff
from patchkeeper.install.checkout.install import Install
from patchkeeper.install.records.applied import (
    AppliedRecord,
    load_applied,
    save_applied,
    written_diff,
)
from patchkeeper.model.errors import UserError
from patchkeeper.patchset.model import PatchSet
from patchkeeper.patchset.parse import parse_patch_file
from patchkeeper.patchset.userfiles import unsafe_path
from patchkeeper.patchset.versions import VersionInfo

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def from_this_minor(version: VersionInfo) -> str | None:
    """`>=0.21` for 0.21.5: the default Applies-To of a new patch.

    Open-ended: a fix is kept until upstream has it or someone narrows its range; an upper
    bound guessed now would make the fix `expired` at the next minor release for no reason.
    """
    if version.version is None:
        return None
    major, minor = (*version.version.release, 0)[:2]
    return f">={major}.{minor}"


def _record_applied(install: Install, name: str, variant: str, text: bytes, diff: bytes) -> None:
    records = load_applied(install.state_dir)
    records[name] = AppliedRecord(
        name=name,
        variant=variant,
        sha256=hashlib.sha256(text).hexdigest(),
        base=install.head() or "",
        outcome="recorded",
        applied_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
    )
    save_applied(install.state_dir, records, {name: diff})


def record_patch(
    install: Install,
    patch_set: PatchSet,
    version: VersionInfo,
    name: str,
    paths: tuple[str, ...],
    description: str,
) -> Path:
    if not _NAME_RE.match(name) or name.endswith((".patch", ".diff")):
        raise UserError(f"{name!r}: a patch name is letters, digits, '.', '_' or '-', no suffix")
    target = patch_set.root / f"{name}.patch"
    if patch_set.by_name(name) or target.exists():
        raise UserError(f"{target}: a patch named {name!r} exists already (use refresh)")
    if not description.strip() or any(c in description for c in "\r\n"):
        raise UserError(f"{description!r}: the message (-m) must be one non-empty line")
    for path in paths:
        if reason := unsafe_path(path):
            raise UserError(f"{path!r}: {reason}")
        if (install.path / path).is_dir():
            raise UserError(f"{install.path / path}: a directory; name the files to record")
    diff = work_tree_diff(install, patch_set, name, list(paths)).diff
    if not diff:
        raise UserError(f"{install.path}: no changes to {', '.join(paths)} against HEAD")
    header = [
        f"Description: {description}",
        "Origin: vendor",
        "Forwarded: no",
        f"Last-Update: {dt.date.today().isoformat()}",
        f"Base: {install.head()}",
    ]
    if applies := from_this_minor(version):
        header.append(f"Applies-To: {applies}")
    text = ("\n".join(header) + "\n---\n").encode() + diff
    _write_checked(target, text)
    series = patch_set.root / "series"
    existing = series.read_bytes()
    separator = b"" if existing.endswith(b"\n") or not existing else b"\n"
    series.write_bytes(existing + separator + f"{name}.patch\n".encode())
    _record_applied(install, name, target.name, text, diff)
    return target


def _write_checked(target: Path, text: bytes) -> None:
    """Write a patch file only once it parses: a bad one would stop every later command."""
    draft = target.with_name(f".{target.name}.draft")
    draft.write_bytes(text)
    parsed, problems = parse_patch_file(draft)
    if problems or parsed is None:
        draft.unlink()
        raise UserError(f"{target}: not written: {problems[0].message if problems else 'empty'}")
    os.replace(draft, target)


def _updated_header(text: str, head: str) -> str:
    """The header with Base and Last-Update set anew; everything else kept as written."""
    lines = [
        line for line in text.splitlines() if not line.lower().startswith(("base:", "last-update:"))
    ]
    today = dt.date.today().isoformat()
    return "\n".join([*lines, f"Last-Update: {today}", f"Base: {head}"]) + "\n"


@dataclass(frozen=True)
class Refreshed:
    """A patch file `refresh` rewrote from the work tree."""

    path: Path  # the patch file written
    kept: tuple[str, ...]  # files kept from the patch as written, and written to the work tree
    left_out: tuple[str, ...] = ()  # FILE:LINE of each edit in its files that is not the patch's


def refresh_patch(
    install: Install,
    patch_set: PatchSet,
    version: VersionInfo,
    name: str,
    *,
    whole_files: bool = False,
) -> Refreshed:
    """Rewrite patch NAME from the work tree: only its own hunks (own_hunks.py), or with
    WHOLE_FILES every change in its files (a fix rewritten away from where it stood)."""
    patch = patch_set.by_name(name)
    if patch is None:
        raise UserError(f"{patch_set.root / 'series'}: no patch named {name!r}")
    records = load_applied(install.state_dir)
    in_place = name in records
    candidates = patch.candidates(version.version)
    if len(candidates) > 1 and in_place:  # chosen by content: the one written
        variant = patch.variant_at(records[name].variant, patch_set.root)
    else:
        variant = patch.select(version.version)
    if variant is None:
        raise UserError(f"{patch_set.root / patch.entry}: no variant for version {version}")
    keep_from = None if in_place else variant
    taken = work_tree_diff(install, patch_set, name, list(variant.files), keep_from)
    # Only the patch's own hunks: an edit of the operator's elsewhere in its files stays theirs.
    recorded = written_diff(install.state_dir, records[name]) if in_place else b""
    diff, left_out = (
        (taken.diff, []) if whole_files else own_hunks(taken.diff, recorded + variant.diff)
    )
    if not diff:
        raise UserError(f"{variant.path}: the work tree holds none of this patch's changes")
    original = variant.path.read_bytes().decode("utf-8")  # no newline translation
    start = original.find("\ndiff --git ")
    header = original[: start + 1] if start >= 0 else ""
    header = re.sub(r"\n---\n(?:.*\n)*$", "\n", header) if "\n---\n" in header else header
    text = (_updated_header(header, install.head() or "") + "---\n").encode() + diff
    _write_checked(variant.path, text)
    relative = str(variant.path.relative_to(patch_set.root))
    _record_applied(install, name, relative, text, diff)
    return Refreshed(variant.path, taken.kept, tuple(left_out))
