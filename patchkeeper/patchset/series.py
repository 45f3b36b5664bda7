"""`series`: the entries of a patch set, in order, each checked once per load (an unsafe name, an
entry listed twice, two entries that are one file through a symlink, or the set's own folder),
and the patch files that lie in the set's folders (the strays `series` does not list).

`RealPaths` keeps the real path of every file for one load, so that a set of thousands of
variants costs one `lstat` per file rather than one per folder above it.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path

from patchkeeper.model.problems import Problem
from patchkeeper.patchset.settings import CONFIG_NAME
from patchkeeper.patchset.userfiles import (
    MAX_SMALL_FILE_BYTES,
    read_user_file,
    unsafe_path,
    utf8_text,
)

SERIES_NAME = "series"
PATCH_SUFFIXES = (".patch", ".diff")
NOT_PATCHES = {"smoke"}  # folders of a patch set that hold no patches


def read_series(
    root: Path, real: RealPaths | None = None
) -> tuple[list[tuple[int, str]], list[Problem]]:
    """Entries of `series` as (line number, entry); quilt's `-p1` is accepted, nothing else.
    REAL: the real paths of this load (a fresh one by default)."""
    real = real or RealPaths()
    path = root / SERIES_NAME
    problems: list[Problem] = []
    if not path.exists() and not path.is_symlink():
        return [], [Problem(path, 1, "missing series file")]
    data, unreadable = read_user_file(path, MAX_SMALL_FILE_BYTES)
    if unreadable:
        return [], [Problem(path, 1, unreadable)]
    text, problem = utf8_text(path, data)
    if problem:
        return [], [problem]
    entries: list[tuple[int, str]] = []
    seen: set[str] = set()
    names: dict[str, str] = {}  # patch name -> the entry that has it
    owners: dict[str, str] = {}  # real path of a patch file -> the entry that has it
    for number, raw in enumerate(text.split("\n"), 1):
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if not line:
            continue
        name, *options = line.split()
        if options not in ([], ["-p1"]):
            problems.append(Problem(path, number, f"unsupported option {' '.join(options)!r}"))
        entry = name.rstrip("/")
        unsafe = unsafe_path(entry)
        if unsafe:
            problems.append(Problem(path, number, f"{entry!r}: {unsafe}"))
        elif entry in seen:
            problems.append(Problem(path, number, f"{entry!r} is listed twice"))
        elif patch_name(entry) in names:
            name = patch_name(entry)
            problems.append(
                Problem(
                    path,
                    number,
                    f"{names[name]!r} and {entry!r} are two patches named {name!r}; "
                    "rename one (a name is the entry without .patch)",
                )
            )
        elif not (root / entry).exists() and not (root / entry).is_symlink():
            problems.append(Problem(path, number, f"{entry!r} does not exist"))
        elif (
            alias := _alias(root, entry, owners, real, files := real.patch_files(root, entry))
        ) is not None:
            problems.append(Problem(path, number, alias))
        else:
            owners.update(dict.fromkeys(files, entry))
            seen.add(entry)
            names[patch_name(entry)] = entry
            entries.append((number, entry))
    return entries, problems


def _resolved(path: Path) -> Path | None:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # RuntimeError: Python 3.11's "Symlink loop"
        return None


class RealPaths:
    """Real paths (every symlink followed; None for a symlink loop) for one load of a set,
    as text: a Path made, hashed and turned back into text per variant is most of what a
    variant not chosen costs, so the files of a load are known by their text (a Path's
    text, made from a Path, so equal texts are equal paths) and only a few are made Paths.

    A file that is no symlink is its folder's real path and its own name: one `lstat`, the
    folder resolved once per load, where `resolve` would `lstat` every folder above it for
    every one of a set's thousands of variants."""

    def __init__(self) -> None:
        self._folders: dict[str, str | None] = {}
        self._files: dict[str, str | None] = {}  # series, the load and its strays ask alike
        self._listings: dict[str, list[str]] = {}

    def listing(self, folder: str) -> list[str]:
        """The paths of `_patch_files(FOLDER)`, listed once per load (an error is raised each
        time). The real path of each listed file that the listing says is no symlink is known
        then."""
        if folder not in self._listings:
            found = _patch_files(folder)
            inside = folder.rstrip("/") + "/"
            paths = self._listings[folder] = [inside + name for name, _ in found]
            if not all(link for _, link in found):
                real = self._folder(folder)
                real_inside = None if real is None else real.rstrip("/") + "/"
                if real == folder and not any(link for _, link in found):
                    self._files.update(zip(paths, paths, strict=True))  # the common case
                    return paths
                for path, (name, link) in zip(paths, found, strict=True):
                    if not link:  # its folder's real path and its own name
                        self._files[path] = (
                            None if real_inside is None else path if real == folder
                            else real_inside + name
                        )  # fmt: skip
        return self._listings[folder]

    def __call__(self, path: str) -> str | None:
        """The real path of PATH (a Path's text), as text."""
        if path not in self._files:
            self._files[path] = self._real(path)
        return self._files[path]

    def _folder(self, folder: str) -> str | None:
        if folder not in self._folders:
            self._folders[folder] = self._real_folder(folder)
        return self._folders[folder]

    def _real_folder(self, folder: str) -> str | None:
        """FOLDER's real path: its parent's and its own name when it is no symlink (one
        `lstat`: a set's folders of variants share their parent), else resolved whole."""
        parent, _, name = folder.rstrip("/").rpartition("/")
        if parent and name not in (".", ".."):
            try:
                plain = not stat.S_ISLNK(os.lstat(folder).st_mode)
            except OSError:
                plain = False
            if plain and (above := self._folder(parent)) is not None:
                return above.rstrip("/") + "/" + name
        real = _resolved(Path(folder))
        return None if real is None else str(real)

    def _real(self, text: str) -> str | None:
        path = Path(text)
        try:
            plain = path.name not in ("", ".", "..") and not path.is_symlink()
        except OSError:
            plain = False
        if not plain:
            real = _resolved(path)
            return None if real is None else str(real)
        folder = self._folder(str(path.parent))
        return None if folder is None else str(Path(folder) / path.name)

    def patch_files(self, root: Path, entry: str) -> set[str]:
        """The real paths of the patch files series entry ENTRY names (one, or its variants)."""
        target = root / entry
        try:
            files = self.listing(str(target)) if target.is_dir() else [str(target)]
        except OSError:
            return set()  # an unreadable folder is reported where its variants are read
        return self.reals(files)

    def reals(self, paths: Iterable[str]) -> set[str]:
        """The real paths of PATHS (paths as text), those of symlink loops left out."""
        known = self._files  # (most are, from their listing: no call to ask)
        return {
            real
            for path in paths
            if (real := known[path] if path in known else self(path)) is not None
        }


def _alias(
    root: Path, entry: str, owners: dict[str, str], real: RealPaths, files: set[str]
) -> str | None:
    """Why ENTRY is no patch of its own, or None. It may be the patch set's own folder (`.`,
    or a symlink to it or to a folder above it), whose patch files are the other entries'; or
    it may name, through a symlink, a patch file an earlier entry has (OWNERS: real path ->
    entry). Either way it would be a second patch with the same diff, already-applied as soon
    as the first is in place. ROOT is the patch set's real path; FILES the real paths of the
    patch files ENTRY names."""
    found = real(str(root / entry))
    where = None if found is None else Path(found)
    if (why := _set_file(root, entry, where, real)) is not None:
        return why
    if where is not None and (where == root or where in root.parents):
        what = "the patch set's own folder" if where == root else "a folder above the patch set"
        return f"{entry!r} is {what}; a series entry names a patch file or a folder of variants"
    if shared := files & owners.keys():  # the first of them by path, named
        file = min(shared, key=Path)
        return (
            f"{entry!r} is the same patch file as {owners[file]!r} ({Path(file).name}); "
            "list each fix once"
        )
    return None


def _set_file(root: Path, entry: str, where: Path | None, real: RealPaths) -> str | None:
    """Why ENTRY (real path WHERE) is a file of the set that is no patch: `series` itself,
    `patchkeeper.toml`, a smoke check, a README. Read as a patch it has no diff, so it would
    pass everywhere as an empty fix."""
    own = {real(str(root / name)): name for name in (SERIES_NAME, CONFIG_NAME)}
    if where is not None and str(where) in own:
        what = f"the set's own {own[str(where)]}"
    elif where is not None and any(
        (checks := real(str(root / folder))) is not None
        and (Path(checks) == where or Path(checks) in where.parents)
        for folder in NOT_PATCHES
    ):
        what = "a smoke check"
    elif Path(entry).name.upper().startswith("README"):
        what = "the set's README"
    else:
        return None
    return f"{entry!r} is {what}, not a patch; a series entry names a patch file or a folder"


def _patch_files(folder: str) -> list[tuple[str, bool]]:
    """The names in FOLDER of what is named like a patch and is not a folder (a FIFO or a
    link to a device is listed too, so that it is refused by name rather than passed over),
    in order, each with whether it is a symlink."""
    with os.scandir(folder) as found:  # a DirEntry knows a plain file without a stat
        named = [
            (name, e.is_symlink())
            for e in found
            # `Path(name).suffix` is one of them: the name ends so and is more than that
            if (name := e.name).endswith(PATCH_SUFFIXES)
            and name not in PATCH_SUFFIXES
            and not e.is_dir()
        ]
    named.sort()
    return named


def patch_files_on_disk(root: Path, real: RealPaths) -> set[str]:
    """The paths (as text) of the patch files in ROOT and in its folders but `smoke/`."""
    found = set(real.listing(str(root)))
    for folder in root.iterdir():
        if folder.is_dir() and folder.name not in NOT_PATCHES and not folder.name.startswith("."):
            found |= set(real.listing(str(folder)))
    return found


def patch_name(entry: str) -> str:
    for suffix in PATCH_SUFFIXES:
        if entry.endswith(suffix):
            return entry[: -len(suffix)]
    return entry
