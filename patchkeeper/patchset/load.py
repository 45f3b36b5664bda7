"""The patch set on disk: `series`, patch files with DEP-3 style headers, variants.

A series entry names either a patch file (`fix.patch`) or a folder of variants (`fix/`), each
variant a patch file whose `Applies-To:` says which upstream versions it is for. Everything a
command needs is checked here once, so the engine only ever sees a well-formed patch set.
Problems are collected rather than raised, so `lint` can list them all.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path, PurePosixPath

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from patchkeeper.model.problems import Problem, raise_first
from patchkeeper.patchset.headers import HUNK_RE, Header, empty_patch, looks_like_diff, parse_header
from patchkeeper.patchset.userfiles import (
    MAX_SMALL_FILE_BYTES,
    SMOKE_NAME_RE,
    read_user_file,
    unsafe_file,
    unsafe_path,
)
from patchkeeper.patchset.variants import VariantChoice, bounds, overlap_problems
from patchkeeper.patchset.versions import PEP440, VersionScheme

SERIES_NAME = "series"
PATCH_SUFFIXES = (".patch", ".diff")
NOT_PATCHES = {"smoke"}  # folders of a patch set that hold no patches
# Files of a patch set are read whole; a FIFO would block and /dev/zero never end, so only
# regular files (or links to them) are read, and only up to a size no real patch comes near.
MAX_PATCH_BYTES = 16 << 20
SYMLINK_MODE = "120000"
_LINK_MAX = 4096  # a symlink's target, with its terminating NUL (PATH_MAX)

_DIFF_PATH_RE = re.compile(r"^(?:rename|copy) (?:from|to) (.+)$")
_SCOPE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


@dataclass(frozen=True)
class ContentCondition:
    """One `Upstream-Has:` condition: upstream's file PATH contains the literal TEXT, within
    SCOPE when one is given (`PATH::NAME: TEXT`, NAME a Python `def` or `class`, dotted for a
    method): a launcher's write then cannot be stood in for by the worker's read."""

    path: str
    text: str
    scope: str = ""

    def __str__(self) -> str:
        where = f"{self.path}::{self.scope}" if self.scope else self.path
        return f"{where} contains {self.text!r}"

    def found_in(self, blob: bytes) -> bool:
        if not self.scope:
            return self.text.encode() in blob
        lines = blob.decode("utf-8", errors="replace").splitlines()
        return any(self.text in body for body in python_bodies(lines, self.scope.split(".")))


def python_bodies(lines: list[str], names: list[str]) -> list[str]:
    """The text of every `def`/`class` NAMES[0] in LINES (its header line and the lines
    indented under it), and within each, recursively, of NAMES[1:]."""
    head = re.compile(rf"^(\s*)(?:async\s+def|def|class)\s+{re.escape(names[0])}\b")
    bodies = []
    for number, line in enumerate(lines):
        match = head.match(line)
        if match is None:
            continue
        indent = len(match[1])
        end = number + 1
        while end < len(lines):
            text = lines[end]
            inside = not text.strip() or len(text) - len(text.lstrip()) > indent
            if not inside and not text.lstrip().startswith((")", "]")):  # a signature's end
                break
            end += 1
        body = lines[number:end]
        bodies += python_bodies(body[1:], names[1:]) if names[1:] else ["\n".join(body)]
    return bodies


@dataclass(frozen=True)
class PatchFile:
    """One patch file: parsed header fields plus the diff bytes exactly as stored."""

    path: Path
    fields: dict[str, str]
    diff: bytes
    files: tuple[str, ...]
    applies_to: SpecifierSet | None
    upstream_fixed_in: SpecifierSet | None
    smoke: tuple[str, ...]
    sha256: str
    upstream_has: tuple[ContentCondition, ...] = ()  # all must hold upstream: it has the fix
    header: Header = field(default_factory=Header.none)  # every field, as written; free text
    warnings: tuple[Problem, ...] = ()  # header problems that leave the diff readable
    empty: bool = False  # no diff at all: applied as empty, as quilt does
    invalid: str | None = None  # why it cannot be read or is unsafe: `invalid`, never tried

    @property
    def description(self) -> str:
        return self.fields.get("description") or self.fields.get("subject") or ""

    @property
    def base(self) -> str | None:
        return self.fields.get("base")

    @property
    def upstream_has_reason(self) -> str:
        """What a result says when every `Upstream-Has:` condition holds (the engine writes
        it, the smoke run reads it back to find the variant that retired the patch)."""
        return f"upstream has it: {', '.join(map(str, self.upstream_has))}"


@dataclass(frozen=True)
class Patch:
    """One fix, as named in `series`: one patch file, or several variants for version ranges."""

    name: str
    entry: str
    variants: tuple[PatchFile, ...]
    # Set when VARIANTS were read without their diffs (`check`: `load_patch_set(deferred=
    # True)`): reads a variant's diff, the first time it is chosen; it may be `invalid` then.
    complete: Callable[[PatchFile], PatchFile] | None = field(default=None, compare=False)

    def select(self, version: Version | None) -> PatchFile | None:
        """The variant for VERSION: the first with no Applies-To or one that contains it;
        None when there is none. An unknown version only matches an unversioned variant.
        A variant that cannot be read is chosen first: its range is unknown, so it may be
        the one for VERSION, and the patch is `invalid` rather than quietly another variant.
        """
        if (unread := next((v for v in self.variants if v.invalid is not None), None)) is not None:
            return unread
        chosen = self._choice(version)
        if chosen is None or self.complete is None:
            return chosen
        if chosen.path not in self._completed:  # once: the same object for every version
            self._completed[chosen.path] = self.complete(chosen)
        return self._completed[chosen.path]

    @cached_property
    def _completed(self) -> dict[Path, PatchFile]:
        return {}

    @cached_property
    def _choice(self) -> VariantChoice:
        return VariantChoice(self.variants)


@dataclass(frozen=True)
class PatchSet:
    root: Path
    patches: tuple[Patch, ...]
    scheme: VersionScheme = PEP440  # `[install] version_scheme`: how Applies-To was read

    def by_name(self, name: str) -> Patch | None:
        return next((p for p in self.patches if p.name == name), None)

    @property
    def warnings(self) -> list[Problem]:
        """Header problems that leave every diff readable: shown, never a refusal."""
        return [w for patch in self.patches for v in patch.variants for w in v.warnings]


def spec_contains(spec: SpecifierSet | None, version: Version | None) -> bool:
    return spec is not None and version is not None and spec.contains(version, prereleases=True)


# ---------------------------------------------------------------- series


def read_series(
    root: Path, real: _RealPaths | None = None
) -> tuple[list[tuple[int, str]], list[Problem]]:
    """Entries of `series` as (line number, entry); quilt's `-p1` is accepted, nothing else.
    REAL: the real paths of this load (a fresh one by default)."""
    real = real or _RealPaths()
    path = root / SERIES_NAME
    problems: list[Problem] = []
    if not path.exists() and not path.is_symlink():
        return [], [Problem(path, 1, "missing series file")]
    data, unreadable = read_user_file(path, MAX_SMALL_FILE_BYTES)
    if unreadable:
        return [], [Problem(path, 1, unreadable)]
    text, problem = _decode(path, data)
    if problem:
        return [], [problem]
    entries: list[tuple[int, str]] = []
    seen: set[str] = set()
    names: dict[str, str] = {}  # patch name -> the entry that has it
    owners: dict[Path, str] = {}  # real path of a patch file -> the entry that has it
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


class _RealPaths:
    """Real paths (every symlink followed; None for a symlink loop) for one load of a set.

    A file that is no symlink is its folder's real path and its own name: one `lstat`, the
    folder resolved once per load, where `resolve` would `lstat` every folder above it for
    every one of a set's thousands of variants."""

    def __init__(self) -> None:
        self._folders: dict[Path, Path | None] = {}
        self._files: dict[Path, Path | None] = {}  # series, the load and its strays ask alike
        self._listings: dict[Path, list[Path]] = {}
        self._no_links: set[Path] = set()  # listed files the folder's listing says are no link

    def listing(self, folder: Path) -> list[Path]:
        """`_patch_files(FOLDER)`, listed once per load (an error is raised each time)."""
        if folder not in self._listings:
            found = _patch_files(folder)
            self._listings[folder] = [path for path, _ in found]
            self._no_links.update(path for path, link in found if not link)
        return self._listings[folder]

    def __call__(self, path: Path) -> Path | None:
        if path not in self._files:
            self._files[path] = self._real(path)
        return self._files[path]

    def _real(self, path: Path) -> Path | None:
        try:
            plain = path in self._no_links or (
                path.name not in ("", ".", "..") and not path.is_symlink()
            )
        except OSError:
            plain = False
        if not plain:
            return _resolved(path)
        if path.parent not in self._folders:
            self._folders[path.parent] = _resolved(path.parent)
        folder = self._folders[path.parent]
        return None if folder is None else folder / path.name

    def patch_files(self, root: Path, entry: str) -> set[Path]:
        """The real paths of the patch files series entry ENTRY names (one, or its variants)."""
        target = root / entry
        try:
            files = self.listing(target) if target.is_dir() else [target]
        except OSError:
            return set()  # an unreadable folder is reported where its variants are read
        return {real for file in files if (real := self(file)) is not None}


def _alias(
    root: Path, entry: str, owners: dict[Path, str], real: _RealPaths, files: set[Path]
) -> str | None:
    """Why ENTRY is no patch of its own, or None. It may be the patch set's own folder (`.`,
    or a symlink to it or to a folder above it), whose patch files are the other entries'; or
    it may name, through a symlink, a patch file an earlier entry has (OWNERS: real path ->
    entry). Either way it would be a second patch with the same diff, already-applied as soon
    as the first is in place. ROOT is the patch set's real path; FILES the real paths of the
    patch files ENTRY names."""
    where = real(root / entry)
    if where is not None and (where == root or where in root.parents):
        what = "the patch set's own folder" if where == root else "a folder above the patch set"
        return f"{entry!r} is {what}; a series entry names a patch file or a folder of variants"
    for file in sorted(files):
        if file in owners:
            return (
                f"{entry!r} is the same patch file as {owners[file]!r} ({file.name}); "
                "list each fix once"
            )
    return None


def _patch_files(folder: Path) -> list[tuple[Path, bool]]:
    """What in FOLDER is named like a patch and is not a folder (a FIFO or a link to a device
    is listed too, so that it is refused by name rather than passed over), each with whether
    it is a symlink."""
    with os.scandir(folder) as found:  # a DirEntry knows a plain file without a stat
        named = [
            (e.name, e.is_symlink())
            for e in found
            if _suffix(e.name) in PATCH_SUFFIXES and not e.is_dir()
        ]
    return [(folder / name, link) for name, link in sorted(named)]


def _suffix(name: str) -> str:
    """What `Path(name).suffix` is, without a Path."""
    dot = name.rfind(".")
    return name[dot:] if 0 < dot < len(name) - 1 else ""


def _patch_files_on_disk(root: Path, real: _RealPaths) -> set[Path]:
    found = set(real.listing(root))
    for folder in root.iterdir():
        if folder.is_dir() and folder.name not in NOT_PATCHES and not folder.name.startswith("."):
            found |= set(real.listing(folder))
    return found


def patch_name(entry: str) -> str:
    for suffix in PATCH_SUFFIXES:
        if entry.endswith(suffix):
            return entry[: -len(suffix)]
    return entry


# ---------------------------------------------------------------- one patch file


def _decode(path: Path, data: bytes) -> tuple[str, Problem | None]:
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return "", Problem(path, line, f"not valid UTF-8 (byte 0x{data[exc.start]:02x})")


_SIGNATURE_RE = re.compile(rb"(?<=\n)-- \r?\n[^\n]*\r?\n(?:\r?\n)*\Z")


def _without_signature(diff: bytes) -> bytes:
    """git format-patch ends with a signature, "-- " and the git version: not part of the diff."""
    return _SIGNATURE_RE.sub(b"", diff)


def _diff_paths(
    path: Path, body: list[str], where: Callable[[int], int]
) -> tuple[list[str], list[Problem]]:
    """Paths the diff touches, checked for safety, via unidiff (metadata only). WHERE maps a
    line of BODY to its line number in the file."""
    from unidiff import PatchSet as UniPatchSet
    from unidiff.errors import UnidiffParseError

    problems: list[Problem] = []
    for offset, line in enumerate(body):
        if line.startswith(("GIT binary patch", "Binary files ")):
            problems.append(Problem(path, where(offset), "binary patches are not supported"))
    if problems:
        return [], problems
    try:
        parsed = UniPatchSet("\n".join(body) + "\n")
    except UnidiffParseError as exc:
        return [], [Problem(path, where(0), f"diff does not parse: {str(exc).strip()}")]
    if not parsed:
        return [], [Problem(path, where(0), "no diff found")]
    paths: list[tuple[int, str]] = []
    in_header = False  # hunk lines can look like headers ("--- x" is a removed "-- x")
    for offset, line in enumerate(body):
        if line.startswith("diff --git "):
            in_header = True
            paths += [(offset, p) for p in git_line_paths(line[len("diff --git ") :])]
        elif line.startswith("@@"):
            in_header = False
        elif in_header and line.startswith(("--- ", "+++ ")):
            paths.append((offset, diff_path(line[4:].split("\t")[0])))
        elif in_header and (match := _DIFF_PATH_RE.match(line)):
            paths.append((offset, unquote(match.group(1))))
    touched: list[str] = []
    for offset, target in paths:
        unsafe = unsafe_path(target)
        if unsafe:
            problems.append(Problem(path, where(offset), f"{target!r}: {unsafe}"))
    for patched in parsed:
        for name in {patched.source_file, patched.target_file}:
            clean = diff_path(name)
            if clean != "/dev/null" and clean not in touched:
                touched.append(clean)
    return touched, problems


def diff_path(token: str) -> str:
    """A path as a diff header names it (maybe quoted, with an a/ or b/ prefix) -> the path."""
    token = unquote(token.strip())
    return token[2:] if token.startswith(("a/", "b/")) else token


_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def unquote(token: str) -> str:
    """A path as git quotes it (`"d\\303\\266cs"`: C escapes, octal UTF-8 bytes) -> the path."""
    if len(token) < 2 or token[0] != '"' or token[-1] != '"':
        return token
    body, raw, index = token[1:-1], bytearray(), 0
    while index < len(body):
        char = body[index]
        if char == "\\" and body[index + 1 : index + 4].isdigit():
            raw.append(int(body[index + 1 : index + 4], 8))
            index += 4
        elif char == "\\" and index + 1 < len(body) and body[index + 1] in _C_ESCAPES:
            raw.append(_C_ESCAPES[body[index + 1]])
            index += 2
        else:
            raw += char.encode()
            index += 1
    return raw.decode("utf-8", errors="surrogateescape")


def git_line_paths(rest: str) -> list[str]:
    """The two paths of a `diff --git` line; either may be quoted, and may hold spaces."""
    quoted = re.findall(r'"(?:[^"\\]|\\.)*"', rest)
    if len(quoted) == 2:
        return [diff_path(token) for token in quoted]
    half = (len(rest) - 1) // 2  # unquoted "a/X b/X": the same X twice, split in the middle
    if len(rest) % 2 == 1 and rest[half] == " " and rest[2:half] == rest[half + 3 :]:
        return [diff_path(rest[:half]), diff_path(rest[half + 1 :])]
    return [diff_path(token) for token in rest.split(" ")]


def _field_line(lines: list[str], key: str) -> int:
    """The line number of field KEY in the header (its first line, for a folded field)."""
    return next((i + 1 for i, text in enumerate(lines) if text.lower().startswith(key + ":")), 1)


def _specifier(
    path: Path, fields: dict[str, str], key: str, lines: list[str]
) -> tuple[SpecifierSet | None, Problem | None]:
    if key not in fields:
        return None, None
    try:
        spec = SpecifierSet(fields[key])
    except InvalidSpecifier:
        why = f"invalid PEP 440 specifier set {_shown(fields[key])}"
    else:
        if (bad := _uncomparable(spec)) is not None:
            why = f"{key.title()} {_shown(bad)}: a version number too long to compare"
        elif not len(spec):  # what str(spec) == "" says, without sorting and joining them
            why = f"empty specifier set in {key}"
        elif bounds(spec).empty:
            why = f"{key.title()} {_shown(fields[key])} admits no version"
        else:
            return spec, None
    return None, Problem(path, _field_line(lines, key), why)  # its line, only when it is wrong


def _in_pep440(
    path: Path, fields: dict[str, str], lines: list[str], scheme: VersionScheme
) -> tuple[dict[str, str], list[Problem]]:
    """FIELDS with the version ranges, written in SCHEME, as PEP 440 specifiers."""
    converted, problems = dict(fields), []
    for key in ("applies-to", "upstream-fixed-in"):
        if key in fields:
            converted[key], why = scheme.specifiers(fields[key])
            if why is not None:
                converted.pop(key)
                problems.append(Problem(path, _field_line(lines, key), f"{key.title()}: {why}"))
    return converted, problems


def _uncomparable(spec_set: SpecifierSet) -> str | None:
    """The specifier of SPEC_SET that no version can be compared with, or None.

    packaging parses a specifier's version only when it first compares one, and a number past
    Python's int-conversion limit (4300 digits) raises ValueError there: on every version, in
    every command, after an update moved HEAD as much as before. It is refused here instead.
    """
    for spec in spec_set:
        if spec.operator == "===":  # arbitrary equality compares strings, never numbers
            continue
        try:
            Version(spec.version.removesuffix(".*"))
        except (InvalidVersion, ValueError):
            return str(spec)
    return None


def _shown(text: str, limit: int = 60) -> str:
    """TEXT quoted for a one-line message, cut at LIMIT characters (with its length)."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} characters)"


def _condition(entry: str) -> tuple[ContentCondition | None, str | None]:
    """`PATH: TEXT` -> a condition, or why ENTRY is not one."""
    target, separator, text = entry.partition(": ")
    if not separator and entry.endswith(":"):
        target = entry[:-1]
    elif not separator:
        return None, f"Upstream-Has condition {entry!r} is not 'PATH: TEXT'"
    target, scoped, scope = target.partition("::")
    unsafe = unsafe_file(target)
    if unsafe:
        return None, f"Upstream-Has path {target!r}: {unsafe}"
    if scoped and not scope:
        return None, f"Upstream-Has scope after {target + '::'!r} is empty: name it, or drop '::'"
    if scope and not _SCOPE_RE.fullmatch(scope):
        return None, f"Upstream-Has scope {scope!r} is not a Python name (NAME or Class.method)"
    if not text.strip():
        return None, f"Upstream-Has condition for {target!r} has no text to look for"
    return ContentCondition(target, text.strip(), scope), None


def _upstream_has(
    path: Path, fields: dict[str, str], lines: list[str]
) -> tuple[tuple[ContentCondition, ...], list[Problem]]:
    """The `Upstream-Has:` conditions, one per line (folded continuation lines)."""
    if "upstream-has" not in fields:
        return (), []
    first = _field_line(lines, "upstream-has")
    conditions: list[ContentCondition] = []
    problems: list[Problem] = []
    # The header parser keeps one "\n"-separated entry per header line, in order.
    for offset, entry in enumerate(fields["upstream-has"].split("\n")):
        if not entry:
            continue  # `Upstream-Has:` alone on its line, conditions on the lines below
        condition, problem = _condition(entry)
        if problem:
            problems.append(Problem(path, first + offset, problem))
        elif condition:
            conditions.append(condition)
    if not conditions and not problems:
        problems.append(Problem(path, first, "Upstream-Has names no 'PATH: TEXT' condition"))
    return tuple(conditions), problems


def _crlf_mangled(raw_lines: list[str], start: int) -> int | None:
    """The first line showing that the whole patch was converted to CRLF line endings after
    git wrote it (by an editor, a mail client, `core.autocrlf`), or None.

    git never ends its own lines (`diff --git`, `@@`) with a CR: only the content lines of a
    file that has CRLF endings carry one, and those are kept as they are.
    """
    structural = [
        (index, raw_lines[index])
        for index in range(start, len(raw_lines))
        if raw_lines[index].startswith(("diff --git ", "@@ -"))
    ]
    if any(line.startswith("diff --git ") for _, line in structural):
        structural = [(i, line) for i, line in structural if line.startswith("diff --git ")]
        bad = [i for i, line in structural if line.endswith("\r")]
        return bad[0] if bad else None
    if structural and all(line.endswith("\r") for _, line in structural):
        return structural[0][0]
    return None


def _git_quoted(path: str) -> str:
    """PATH as git writes it in a diff header: C-quoted when it holds a quote, a backslash,
    a control character or a non-ASCII byte."""
    raw = path.encode("utf-8", errors="surrogateescape")
    if all(0x20 <= b < 0x7F and b not in b'"\\' for b in raw):
        return path
    escapes = {7: "a", 8: "b", 9: "t", 10: "n", 11: "v", 12: "f", 13: "r", 34: '"', 92: "\\"}
    body = "".join(
        f"\\{escapes[b]}" if b in escapes else chr(b) if 0x20 <= b < 0x7F else f"\\{b:03o}"
        for b in raw
    )
    return f'"{body}"'


def _plain_name(path: Path, line: str, number: int) -> tuple[str | None, Problem | None]:
    """The file a plain diff's `--- NAME` / `+++ NAME` line names, with quilt's -p1 (the first
    folder is dropped): `--- a/cron/x.py` and `--- hermes.orig/cron/x.py` name cron/x.py."""
    token = unquote(line[4:].split("\t")[0].strip())
    if token == "/dev/null":
        return "/dev/null", None
    parts = token.split("/", 1)
    if len(parts) < 2 or not parts[1]:
        why = f"{token!r}: a plain diff's file names need a leading folder to drop (-p1)"
        return None, Problem(path, number, why)
    return parts[1], None


def _plain_to_git(
    path: Path, diff: bytes, first_line: int
) -> tuple[bytes, list[int], list[Problem]]:
    """A plain unified diff (quilt, `diff -u`: no `diff --git` lines) as a git diff.

    Each file gets the `diff --git` line and, for a new or deleted file, the mode line git
    needs; the `---`/`+++` lines name the file the git way (a/, b/). Hunks are the file's own
    bytes; quilt's `Index:` and `====` lines between files are dropped. Returns the diff, the
    file's line number for each line of it (for problems), and the problems.
    """
    lines = diff.split(b"\n")
    out: list[bytes] = []
    numbers: list[int] = []
    problems: list[Problem] = []
    old_left = new_left = 0  # lines the current hunk still has to come
    index = 0
    while index < len(lines):
        raw = lines[index]
        text = raw.decode("utf-8", errors="surrogateescape").removesuffix("\r")
        number = first_line + index
        if old_left > 0 or new_left > 0:
            out.append(raw)
            numbers.append(number)
            if text.startswith("\\"):
                pass
            elif text.startswith("-"):
                old_left -= 1
            elif text.startswith("+"):
                new_left -= 1
            else:
                old_left, new_left = old_left - 1, new_left - 1
        elif (match := HUNK_RE.match(text)) is not None:
            out.append(raw)
            numbers.append(number)
            old_left = int(match.group(2) if match.group(2) is not None else 1)
            new_left = int(match.group(4) if match.group(4) is not None else 1)
        elif text.startswith("\\") and out:  # \ No newline at end of file
            out.append(raw)
            numbers.append(number)
        elif (
            text.startswith("--- ")
            and index + 1 < len(lines)
            and lines[index + 1].startswith(b"+++ ")
        ):
            following = lines[index + 1].decode("utf-8", errors="surrogateescape")
            old, p_old = _plain_name(path, text, number)
            new, p_new = _plain_name(path, following.removesuffix("\r"), number + 1)
            problems += [p for p in (p_old, p_new) if p]
            if old is not None and new is not None:
                a_name = _git_quoted("a/" + (old if old != "/dev/null" else new))
                b_name = _git_quoted("b/" + (new if new != "/dev/null" else old))
                header = [f"diff --git {a_name} {b_name}"]
                if old == "/dev/null":
                    header.append("new file mode 100644")
                if new == "/dev/null":
                    header.append("deleted file mode 100644")
                header.append(f"--- {'/dev/null' if old == '/dev/null' else a_name}")
                header.append(f"+++ {'/dev/null' if new == '/dev/null' else b_name}")
                out += [line.encode("utf-8", errors="surrogateescape") for line in header]
                numbers += [number] * (len(header) - 1) + [number + 1]
            index += 1
        # anything else between files (Index:, ====, `diff -u` command lines) is dropped
        index += 1
    if diff.endswith(b"\n") and out and out[-1] != b"":
        out.append(b"")
        numbers.append(numbers[-1])
    return b"\n".join(out), numbers, problems


def _links(body: list[str]) -> list[tuple[int, str, list[str]]]:
    """(line, path, content lines) for each symlink the diff writes (mode 120000): a link's
    content, the lines its hunks add, is its target."""
    link_modes = (f"new file mode {SYMLINK_MODE}", f"new mode {SYMLINK_MODE}")
    links: list[tuple[int, str, list[str]]] = []
    sections: list[list[tuple[int, str]]] = []
    for offset, line in enumerate(body):
        if line.startswith("diff --git "):
            sections.append([])
        if sections:
            sections[-1].append((offset, line))
    for section in sections:
        (first, head), rest = section[0], [text for _, text in section[1:]]
        hunk = next((i for i, text in enumerate(rest) if text.startswith("@@")), len(rest))
        if not any(
            text in link_modes or (text.startswith("index ") and text.endswith(SYMLINK_MODE))
            for text in rest[:hunk]
        ):
            continue
        paths = git_line_paths(head[len("diff --git ") :])
        added = [text[1:] for text in rest[hunk:] if text.startswith("+")]
        if paths:
            links.append((first, paths[-1], added))
    return links


def _link_problem(link: str, content: list[str], outside_ok: bool) -> str | None:
    """Why the symlink a patch writes at LINK with CONTENT is refused, or None."""
    if len(content) != 1 or not content[0]:
        return f"{link!r}: a symlink needs its target as one non-empty line of content"
    if len(content[0].encode(errors="surrogateescape")) >= _LINK_MAX:
        return f"{link!r}: a symlink target longer than {_LINK_MAX - 1} bytes"
    leaves = link_leaves(link, content[0])
    if leaves is not None and not outside_ok:
        return (
            f"{link!r}: a symlink that {leaves}; set [patches] allow_outside_symlinks = true "
            "in patchkeeper.toml to allow it"
        )
    return None


def link_leaves(link: str, target: str) -> str | None:
    """Why a symlink at LINK (relative to the top of the install) pointing at TARGET leads
    out of the install, or into its .git/; None when it stays inside."""
    if not target:
        return "has no target"
    if target.startswith("/"):
        return f"points outside the install ({target!r} is absolute)"
    depth = 0
    parts = [*PurePosixPath(link).parent.parts, *target.split("/")]
    for part in parts:
        if part == "..":
            depth -= 1
            if depth < 0:
                return f"points outside the install ({target!r})"
        elif part not in ("", "."):
            if depth == 0 and part.lower() == ".git":
                return f"points into .git/ ({target!r})"
            depth += 1
    return None


def _read_diff(
    path: Path, data: bytes, raw_lines: list[str], diff_start: int, outside_links: bool
) -> tuple[bytes | None, list[str], list[Problem]]:
    """The diff of a patch file from line DIFF_START (as a git diff), the files it touches,
    and its problems; no diff (None) when it cannot be read at all."""
    problems: list[Problem] = []
    if (mangled := _crlf_mangled(raw_lines, diff_start)) is not None:
        problems.append(
            Problem(
                path,
                mangled + 1,
                "invalid patch: its lines end in CRLF (\\r\\n), so something converted it "
                f"after git wrote it; convert it back with `dos2unix {path}` (a CRLF file's "
                "own lines keep their \\r)",
            )
        )
        return None, [], problems
    offset = len("\n".join(raw_lines[:diff_start]).encode()) + (1 if diff_start else 0)
    diff = _without_signature(data[offset:])
    numbers: list[int] | None = None
    if not re.search(rb"(?m)^diff --git ", diff):
        diff, numbers, plain_problems = _plain_to_git(path, diff, diff_start + 1)
        problems += plain_problems

    def where(line: int) -> int:
        if numbers is None:
            return diff_start + 1 + line
        return numbers[min(line, len(numbers) - 1)] if numbers else diff_start + 1

    body = [line.removesuffix("\r") for line in diff.decode(errors="surrogateescape").split("\n")]
    files, path_problems = _diff_paths(path, body, where)
    problems += path_problems
    for line, link, content in _links(body):
        if (why := _link_problem(link, content, outside_links)) is not None:
            problems.append(Problem(path, where(line), why))
    return diff, files, problems


def parse_patch_file(
    path: Path, *, outside_links: bool = False, scheme: VersionScheme = PEP440
) -> tuple[PatchFile | None, list[Problem]]:
    """One patch file. OUTSIDE_LINKS: the patch set allows symlinks that point out of the
    install (`[patches] allow_outside_symlinks`); otherwise a patch that writes one is refused.
    SCHEME: how `Applies-To` and `Upstream-Fixed-In` write versions (`[install]
    version_scheme`)."""
    data, unreadable = read_user_file(path, MAX_PATCH_BYTES)
    if unreadable:
        return None, [Problem(path, 1, unreadable)]
    return _parse_data(path, data, outside_links, scheme)


def _parse_data(
    path: Path, data: bytes, outside_links: bool, scheme: VersionScheme, *, diff: bool = True
) -> tuple[PatchFile | None, list[Problem]]:
    """`parse_patch_file` of DATA, PATH's bytes. Without DIFF, everything but the diff is read
    (its diff and files left empty: a variant not chosen yet, see `Patch.complete`)."""
    text, problem = _decode(path, data)
    if problem:
        return None, [problem]
    # Split on "\n" only: a diff's bytes (CRLF lines, form feeds) must survive as written.
    raw_lines = text.split("\n")
    lines = [line.removesuffix("\r") for line in raw_lines]
    header = parse_header(path, lines)
    fields, diff_start, problems = header.fields, header.diff_start, list(header.problems)
    warnings = list(header.warnings)
    if (header.fields or header.free_text) and not (
        fields.get("description") or fields.get("subject")
    ):
        warnings.append(Problem(path, 1, "the header has no Description (or Subject)"))
    empty = diff_start >= len(lines) and not looks_like_diff(lines)
    if empty and not empty_patch(header, lines):
        return None, [*problems, _truncated(path, lines)]
    if empty:
        warnings.append(Problem(path, 1, "no diff: an empty patch, applied as empty"))
        diff_bytes, files = b"", []
    elif diff_start >= len(lines):
        problems.append(
            Problem(
                path,
                len(lines) or 1,
                "no diff found (a 'diff --git' section, or '--- a/FILE', '+++ b/FILE' and a hunk)",
            )
        )
        return None, problems
    elif not diff:
        diff_bytes, files = b"", []
    else:
        read, files, diff_problems = _read_diff(path, data, raw_lines, diff_start, outside_links)
        if read is None:
            return None, problems + diff_problems
        diff_bytes = read
        problems += diff_problems
    in_pep440, scheme_problems = _in_pep440(path, fields, lines, scheme)
    problems += scheme_problems
    applies_to, p1 = _specifier(path, in_pep440, "applies-to", lines)
    fixed_in, p2 = _specifier(path, in_pep440, "upstream-fixed-in", lines)
    problems += [p for p in (p1, p2) if p]
    upstream_has, has_problems = _upstream_has(path, fields, lines)
    problems += has_problems
    smoke = tuple(s.strip() for s in fields.get("smoke", "").split(",") if s.strip())
    problems += [
        Problem(
            path,
            _field_line(lines, "smoke"),
            f"Smoke {name!r} is not a check name (a file in smoke/, without a path)",
        )
        for name in smoke
        if not SMOKE_NAME_RE.fullmatch(name.removesuffix(".py"))
    ]
    if problems:
        return None, problems
    return PatchFile(
        path=path,
        fields=fields,
        diff=diff_bytes,
        files=tuple(files),
        applies_to=applies_to,
        upstream_fixed_in=fixed_in,
        smoke=smoke,
        sha256=hashlib.sha256(data).hexdigest(),
        upstream_has=upstream_has,
        header=header,
        warnings=tuple(warnings),
        empty=empty,
    ), []


def _truncated(path: Path, lines: list[str]) -> Problem:
    """A file with a header that says a diff was meant, and none: cut short, not empty (as an
    empty patch it would count as already applied, its smoke check never run)."""
    last = max((i + 1 for i, line in enumerate(lines) if line.strip()), default=1)
    return Problem(path, last, "no diff after its header: truncated?")


# ---------------------------------------------------------------- the whole set


def _outside_links_allowed(root: Path) -> bool:
    """`[patches] allow_outside_symlinks` of the set's patchkeeper.toml; a config that does
    not load allows nothing (its own problem is reported where settings are read)."""
    from patchkeeper.model.errors import UserError
    from patchkeeper.patchset.settings import load_settings

    try:
        return load_settings(root).allow_outside_symlinks
    except UserError:
        return False


def _version_scheme(root: Path) -> VersionScheme:
    """`[install] version_scheme` of the set's patchkeeper.toml (PEP 440 when it does not load:
    its own problem is reported where settings are read)."""
    from patchkeeper.model.errors import UserError
    from patchkeeper.patchset.settings import load_settings

    try:
        return load_settings(root).version_scheme
    except UserError:
        return PEP440


def inspect_patch_set(root: Path, *, deferred: bool = False) -> tuple[PatchSet, list[Problem]]:
    """Load everything that loads and list every problem (the basis of `lint`).

    DEFERRED (`check`): a folder's variants are read without their diffs, each diff when the
    variant is first chosen (`Patch.complete`): a variant whose diff cannot be read is then
    `invalid` when it is chosen, not for every version. A folder with a variant that is
    `invalid` on its header, or whose ranges overlap, is read whole, as without DEFERRED."""
    root = root.resolve()
    if not root.is_dir():
        return PatchSet(root, ()), [Problem(root, 1, "patch set folder does not exist")]
    real = _RealPaths()
    entries, problems = read_series(root, real)
    outside_links = _outside_links_allowed(root)
    scheme = _version_scheme(root)
    listed: set[Path] = set()
    patches: list[Patch] = []
    for _, entry in entries:
        target = root / entry
        files = real.listing(target) if target.is_dir() else [target]
        if target.is_dir() and not files:
            problems.append(Problem(target, 1, "variant folder holds no .patch files"))
        listed |= set(files)
        reader = _VariantReader(outside_links, scheme)
        variants, file_problems = reader.read(files, deferred=deferred and len(files) > 1)
        overlaps = overlap_problems([v for v in variants if v.invalid is None])
        if reader.pending and (overlaps or any(v.invalid is not None for v in variants)):
            variants, file_problems = reader.read(files, deferred=False)
            overlaps = overlap_problems([v for v in variants if v.invalid is None])
        problems += file_problems + overlaps
        if variants:
            complete = reader.complete if reader.pending else None
            patches.append(Patch(patch_name(entry), entry, tuple(variants), complete))
    known = {real(file) for file in listed}  # one file seen through symlinks is one file,
    strays = _patch_files_on_disk(root, real) - listed  # named by its own path where it has one
    for stray in sorted(strays, key=lambda path: (real(path) != path, path)):
        if (where := real(stray)) is None or where not in known:
            known.add(where)
            problems.append(Problem(stray, 1, "patch file is not listed in series"))
    return PatchSet(root, tuple(patches), scheme), problems


class _VariantReader:
    """Reads the patch files of one series entry, maybe without their diffs (then `pending`
    keeps each such file's bytes, so that `complete` reads the very bytes its header came
    from)."""

    def __init__(self, outside_links: bool, scheme: VersionScheme) -> None:
        self.outside_links, self.scheme = outside_links, scheme
        self.pending: dict[Path, bytes] = {}

    def read(self, files: list[Path], *, deferred: bool) -> tuple[list[PatchFile], list[Problem]]:
        self.pending = {}
        variants, problems = [], []
        for file in files:
            data, unreadable = read_user_file(file, MAX_PATCH_BYTES)
            if unreadable:
                parsed, file_problems = None, [Problem(file, 1, unreadable)]
            else:
                parsed, file_problems = _parse_data(
                    file, data, self.outside_links, self.scheme, diff=not deferred
                )
                if deferred and file_problems:  # its answer, read whole, names its first problem
                    parsed, file_problems = _parse_data(file, data, self.outside_links, self.scheme)
                elif deferred and parsed is not None and not parsed.empty:
                    self.pending[file] = data
            problems += file_problems
            variants.append(parsed or _invalid(file, file_problems))
        return variants, problems

    def complete(self, variant: PatchFile) -> PatchFile:
        """VARIANT, read without its diff, read whole; `invalid` when its diff cannot be read."""
        if variant.path not in self.pending:
            return variant  # an empty patch: nothing was left to read
        parsed, problems = _parse_data(
            variant.path, self.pending[variant.path], self.outside_links, self.scheme
        )
        return parsed or _invalid(variant.path, problems)


def _invalid(path: Path, problems: list[Problem]) -> PatchFile:
    """A patch file that cannot be read, or is unsafe: it stays in the set, as `invalid`
    (its first problem says why), so one bad file does not stop the others."""
    return PatchFile(
        path=path, fields={}, diff=b"", files=(), applies_to=None, upstream_fixed_in=None,
        smoke=(), sha256="", invalid=str(problems[0]) if problems else "cannot be read",
    )  # fmt: skip


def dangling_smoke(patch_set: PatchSet) -> list[Problem]:
    """A `Smoke:` name with no smoke/NAME.py behind it: lint's error, never a silent pass.

    Not a load error: smoke, apply and update still run and say "could not check" for it.
    """
    problems = []
    for variant in (v for p in patch_set.patches for v in p.variants):
        for name in variant.smoke:
            stem = name.removesuffix(".py")
            if not (patch_set.root / "smoke" / f"{stem}.py").is_file():
                lines = variant.path.read_text(encoding="utf-8", errors="replace").splitlines()
                line = _field_line([text.lower() for text in lines], "smoke")
                why = f"Smoke {name!r}: no check named {stem} (smoke/{stem}.py is missing)"
                problems.append(Problem(variant.path, line, why))
    return problems


def load_patch_set(root: Path, *, deferred: bool = False) -> PatchSet:
    """The patch set, or a one-line error (exit 2) naming the first problem of the set as a
    whole (series, variants, stray files). A patch file that cannot be read or is unsafe is
    no such problem: it is `invalid` on its own (`lint` lists it). DEFERRED: variants' diffs
    are read when chosen (see `inspect_patch_set`)."""
    patch_set, problems = inspect_patch_set(root, deferred=deferred)
    invalid = {v.path for p in patch_set.patches for v in p.variants if v.invalid is not None}
    raise_first([problem for problem in problems if problem.path not in invalid])
    return patch_set
