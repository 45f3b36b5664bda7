"""The ported patch set, built in a folder beside the old one and put in its place with one
rename, so that a kill at any instant leaves the set as it was or fully ported.

The swap is `renameat2(RENAME_EXCHANGE)`: the old and the new folder trade names in one step,
and the old one is then removed. Where the kernel or the file system cannot exchange, the old
folder is renamed aside and the new one into place; the state (SWAPPING, the new folder's
inode) lets `port --continue` or `--abort` finish or undo that after a kill between the two.
"""

from __future__ import annotations

import ctypes
import datetime as dt
import errno
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from patchkeeper.install.records.update_journal import checkpoint
from patchkeeper.install.system.durable import sync_folder
from patchkeeper.model.errors import UserError
from patchkeeper.patchset.load import inspect_patch_set
from patchkeeper.patchset.series import patch_name
from patchkeeper.port.state import NEW_VARIANT, REFRESH, WIDEN, Decision, PortState, diff_file

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def fingerprint(root: Path) -> str:
    """A digest of every file of the set (paths, modes, bytes): whether it changed since.
    A `.git` inside is left out: git rewrites its index for a mere `git status`."""
    import hashlib

    digest = hashlib.sha256()
    skipped = ("__pycache__", ".git")  # a set at the top of its repository: git's own files
    for path in sorted(p for p in root.rglob("*") if not skipped_part(p, root, skipped)):
        relative = path.relative_to(root).as_posix()
        if path.is_file():
            digest.update(f"{relative}\0{path.stat().st_mode:o}\0".encode())
            digest.update(path.read_bytes())
        elif path.is_symlink():
            digest.update(f"{relative}\0-> {os.readlink(path)}\0".encode())
    return digest.hexdigest()


def skipped_part(path: Path, root: Path, names: tuple[str, ...]) -> bool:
    return any(part in names for part in path.relative_to(root).parts)


def with_fields(text: str, values: dict[str, str | None]) -> str:
    """The patch file TEXT with each field of VALUES set in its header (None: left out), the
    rest kept as written. A field not there yet goes after the last field."""
    cut = re.search(r"^(?:---\n|diff --git |Index: |--- a/)", text, re.MULTILINE)
    head, tail = (text[: cut.start()], text[cut.start() :]) if cut else (text, "")
    lines = head.splitlines(keepends=True)
    wanted = {name.lower(): value for name, value in values.items()}
    kept, done = [], set()
    skipping = False
    for line in lines:
        field = line.split(":", 1)[0].strip().lower() if ":" in line else None
        if skipping and line[:1] in (" ", "\t"):
            continue  # a folded continuation of a field being replaced
        skipping = False
        if field in wanted and not line[:1].isspace():
            skipping = True
            if wanted[field] is not None and field not in done:
                name = next(n for n in values if n.lower() == field)
                kept.append(f"{name}: {wanted[field]}\n")
            done.add(field)
            continue
        kept.append(line)
    fields = [i for i, line in enumerate(kept) if re.match(r"^[A-Za-z][\w-]*:", line)]
    last = max(fields, default=-1)
    while last + 1 < len(kept) and kept[last + 1][:1] in (" ", "\t"):
        last += 1
    extra = [f"{n}: {v}\n" for n, v in values.items() if n.lower() not in done and v is not None]
    kept[last + 1 : last + 1] = extra
    return "".join(kept) + tail


def _refreshed_text(old: str, diff: bytes, state: PortState, applies_to: str | None) -> bytes:
    """The old variant's header (Base, Last-Update, Applies-To renewed) over DIFF."""
    today = dt.date.today().isoformat()
    fields = {"Last-Update": today, "Base": state.commit, "Applies-To": applies_to}
    header = with_fields(old, fields)
    cut = re.search(r"^(?:---\n|diff --git |Index: |--- a/)", header, re.MULTILINE)
    head = header[: cut.start()] if cut else header
    return (head + "---\n").encode() + diff


def _as_folder(folder: Path, decision: Decision) -> Path:
    """The patch's folder of variants in the new set FOLDER: a plain patch file becomes one
    (the file moved into it, the series entry renamed). Returns the old variant's new path.
    A plain file's entry is the variant itself, also in a subfolder (`fixes/x.patch`, as
    quilt allows), whose patch name is `fixes/x`."""
    old = folder / decision.variant
    if patch_name(decision.variant) != decision.name:  # a variant in the patch's folder
        return old
    holder = folder / decision.name
    holder.mkdir()
    moved = holder / old.name
    os.replace(old, moved)
    series = folder / "series"
    lines = series.read_text(encoding="utf-8").splitlines(keepends=True)
    entry = re.compile(rf"^(\s*){re.escape(decision.variant)}(\s.*)?$", re.DOTALL)
    series.write_text(
        "".join(entry.sub(rf"\g<1>{decision.name}\g<2>", line) for line in lines),
        encoding="utf-8",
    )
    return moved


def _new_name(holder: Path, name: str, version: str) -> Path:
    stem = Path(name).name  # `fixes/x`'s variants are fixes/x/x-VERSION.patch
    candidate = holder / f"{stem}-{version}.patch"
    number = 2
    while candidate.exists():
        candidate = holder / f"{stem}-{version}-{number}.patch"
        number += 1
    return candidate


def build(state_dir: Path, state: PortState, folder: Path) -> None:
    """The ported set in FOLDER (new): a copy of the set with every decision written; then
    linted, and refused (FOLDER removed) when lint finds a problem."""
    root = Path(state.patches)
    shutil.rmtree(folder, ignore_errors=True)
    # A set at the top of its repository keeps its .git in place; a copy to --out does not.
    skipped = ("__pycache__",) if state.out is None else ("__pycache__", ".git")
    shutil.copytree(root, folder, symlinks=True, ignore=shutil.ignore_patterns(*skipped))
    checkpoint("port.building")
    try:
        for decision in state.decisions:
            _write_decision(state_dir, state, folder, decision)
        _, problems = inspect_patch_set(folder)
        if problems:
            raise UserError(f"the ported set does not lint: {problems[0]}; nothing was changed")
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _write_decision(state_dir: Path, state: PortState, folder: Path, decision: Decision) -> None:
    old = folder / decision.variant
    if decision.action == WIDEN:
        text = with_fields(old.read_text(encoding="utf-8"), {"Applies-To": decision.applies_to})
        old.write_text(text, encoding="utf-8")
        decision.written = decision.variant
    elif decision.action == REFRESH:
        diff = diff_file(state_dir, decision.name).read_bytes()
        old.write_bytes(_refreshed_text(old.read_text("utf-8"), diff, state, decision.applies_to))
        decision.written = decision.variant
    elif decision.action == NEW_VARIANT:
        diff = diff_file(state_dir, decision.name).read_bytes()
        moved = _as_folder(folder, decision)
        source = moved.read_text(encoding="utf-8")
        target = _new_name(moved.parent, decision.name, state.version)
        target.write_bytes(_refreshed_text(source, diff, state, decision.applies_to))
        if decision.old_applies_to != moved_range(source):
            kept = with_fields(source, {"Applies-To": decision.old_applies_to})
            moved.write_text(kept, encoding="utf-8")
        decision.written = str(target.relative_to(folder))
        decision.variant = str(moved.relative_to(folder))


def moved_range(text: str) -> str | None:
    match = re.search(r"^Applies-To:\s*(.*?)\s*$", text, re.MULTILINE | re.IGNORECASE)
    return match.group(1) if match else None


def exchange(one: Path, other: Path) -> bool:
    """Swap the names of ONE and OTHER in one step; False where the system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    done = renameat2(_AT_FDCWD, os.fsencode(one), _AT_FDCWD, os.fsencode(other), _RENAME_EXCHANGE)
    if done == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EPERM):
        return False
    raise OSError(code, os.strerror(code), str(other))


def draft_folder(target: Path) -> Path:
    """Where the ported set is built: beside TARGET (the set, or --out), hidden."""
    return target.with_name(f".{target.name}.port-new")


def put_in_place(
    new: Path,
    root: Path,
    checkpoint: Callable[[str], None],
    swap: Callable[[Path, Path], bool] = exchange,
) -> None:
    """NEW takes ROOT's place (SWAP: the one-step exchange, False where the system has
    none); the old set, left at NEW's name, is removed."""
    if not swap(new, root):
        aside = _aside(root)
        os.replace(root, aside)
        checkpoint("port.aside")
        os.replace(new, root)
        os.replace(aside, new)
    sync_folder(root.parent)
    checkpoint("port.swapped")
    shutil.rmtree(new, ignore_errors=True)


def swapped(state: PortState) -> bool:
    """Whether the set's folder is the new one already (a kill after the swap)."""
    try:
        return os.stat(state.out or state.patches).st_ino == state.new_inode
    except FileNotFoundError:
        return False


def _aside(target: Path) -> Path:
    return target.with_name(f".{target.name}.port-old")


def recover_swap(state: PortState) -> bool:
    """After a kill while the new set was being put in place: True when the swap can be
    finished (the new folder is there, or in place already), False when it must be built
    again. The fallback's two renames, cut between them, are completed here."""
    assert state.new_folder is not None
    new, target = Path(state.new_folder), Path(state.out or state.patches)
    if not target.exists() and _aside(target).exists():
        os.replace(new, target)
        os.replace(_aside(target), new)
        return True
    if swapped(state):
        return True
    return new.exists() and os.stat(new).st_ino == state.new_inode


def undo_swap(state: PortState) -> None:
    """After a kill while the new set was being put in place: the old set back in place,
    the new one removed."""
    assert state.new_folder is not None
    new, target = Path(state.new_folder), Path(state.out or state.patches)
    if not target.exists() and _aside(target).exists():
        os.replace(_aside(target), target)
    elif swapped(state):
        if state.out is not None:
            shutil.rmtree(target)
            return
        if not new.exists():
            raise UserError(f"{target}: the port had completed; nothing to undo")
        if not exchange(new, target):
            os.replace(target, _aside(target))
            os.replace(new, target)
            os.replace(_aside(target), new)
    if new.exists():
        shutil.rmtree(new)
