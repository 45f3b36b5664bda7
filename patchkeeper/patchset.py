"""The patch set on disk: `series`, patch files with DEP-3 style headers, variants.

A series entry names either a patch file (`fix.patch`) or a folder of variants (`fix/`), each
variant a patch file whose `Applies-To:` says which upstream versions it is for. Everything a
command needs is checked here once, so the engine only ever sees a well-formed patch set.
Problems are collected rather than raised, so `lint` can list them all.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from patchkeeper.problems import Problem, raise_first

SERIES_NAME = "series"
PATCH_SUFFIXES = (".patch", ".diff")
NOT_PATCHES = {"smoke"}  # folders of a patch set that hold no patches

DEP3_FIELDS = {
    "description", "subject", "origin", "bug", "forwarded", "author", "from", "reviewed-by",
    "acked-by", "last-update", "applied-upstream",
}  # fmt: skip
OUR_FIELDS = {"applies-to", "upstream-fixed-in", "upstream-has", "base", "smoke"}
MAIL_FIELDS = {
    "from", "date", "subject", "mime-version", "content-type", "content-transfer-encoding",
    "message-id", "in-reply-to", "references",
}  # fmt: skip
_FIELD_RE = re.compile(r"^([A-Za-z][A-Za-z0-9-]*):[ \t]?(.*)$")
_MBOX_RE = re.compile(r"^From [0-9a-f]{40} ")
_SUBJECT_TAG_RE = re.compile(r"^\[[^]]*PATCH[^]]*\]\s*")
_DIFF_PATH_RE = re.compile(r"^(?:rename|copy) (?:from|to) (.+)$")


@dataclass(frozen=True)
class ContentCondition:
    """One `Upstream-Has:` condition: upstream's file PATH contains the literal TEXT."""

    path: str
    text: str

    def __str__(self) -> str:
        return f"{self.path} contains {self.text!r}"


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

    @property
    def description(self) -> str:
        return self.fields.get("description") or self.fields.get("subject") or ""

    @property
    def base(self) -> str | None:
        return self.fields.get("base")


@dataclass(frozen=True)
class Patch:
    """One fix, as named in `series`: one patch file, or several variants for version ranges."""

    name: str
    entry: str
    variants: tuple[PatchFile, ...]

    def select(self, version: Version | None) -> PatchFile | None:
        """The variant for VERSION; None when no variant's range contains it.

        An unknown version only matches an unversioned variant (one without Applies-To).
        """
        for variant in self.variants:
            if variant.applies_to is None:
                return variant
            if version is not None and variant.applies_to.contains(version, prereleases=True):
                return variant
        return None


@dataclass(frozen=True)
class PatchSet:
    root: Path
    patches: tuple[Patch, ...]

    def by_name(self, name: str) -> Patch | None:
        return next((p for p in self.patches if p.name == name), None)


def spec_contains(spec: SpecifierSet | None, version: Version | None) -> bool:
    return spec is not None and version is not None and spec.contains(version, prereleases=True)


# ---------------------------------------------------------------- series


def read_series(root: Path) -> tuple[list[tuple[int, str]], list[Problem]]:
    """Entries of `series` as (line number, entry); quilt's `-p1` is accepted, nothing else."""
    path = root / SERIES_NAME
    problems: list[Problem] = []
    if not path.is_file():
        return [], [Problem(path, 1, "missing series file")]
    try:
        data = path.read_bytes()
    except OSError as exc:
        return [], [Problem(path, 1, f"cannot read ({exc.strerror or exc})")]
    text, problem = _decode(path, data)
    if problem:
        return [], [problem]
    entries: list[tuple[int, str]] = []
    seen: set[str] = set()
    for number, raw in enumerate(text.splitlines(), 1):
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
        elif not (root / entry).exists():
            problems.append(Problem(path, number, f"{entry!r} does not exist"))
        else:
            seen.add(entry)
            entries.append((number, entry))
    return entries, problems


def _patch_files_on_disk(root: Path) -> set[Path]:
    found = {p for p in root.iterdir() if p.is_file() and p.suffix in PATCH_SUFFIXES}
    for folder in root.iterdir():
        if folder.is_dir() and folder.name not in NOT_PATCHES and not folder.name.startswith("."):
            found |= {p for p in folder.iterdir() if p.is_file() and p.suffix in PATCH_SUFFIXES}
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


def unsafe_path(path: str) -> str | None:
    """Why PATH may not be written by a patch, or None when it is a safe relative path."""
    if not path or path == "/dev/null":
        return None if path == "/dev/null" else "empty path"
    if path.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", path):
        return "absolute path"
    parts = PurePosixPath(path.replace("\\", "/")).parts
    if ".." in parts:
        return "path leaves the tree ('..')"
    if any(part.lower() == ".git" for part in parts):
        return "path inside .git/"
    return None


def unsafe_file(path: str) -> str | None:
    """Why PATH may not name a file of the repository; unlike in a diff, /dev/null is none."""
    return "absolute path" if path.startswith("/") else unsafe_path(path)


def _split_header(path: Path, lines: list[str]) -> tuple[dict[str, str], int, list[Problem]]:
    """Parse the header; return fields, index of the first diff line, problems."""
    problems: list[Problem] = []
    fields: dict[str, str] = {}
    allowed = DEP3_FIELDS | OUR_FIELDS
    mail = bool(lines) and _MBOX_RE.match(lines[0]) is not None
    if mail:
        allowed |= MAIL_FIELDS
    index = 1 if mail else 0
    last: str | None = None
    in_header = True
    while index < len(lines):
        line = lines[index]
        if line.startswith("diff --git ") or (line == "---" and not mail):
            break
        if mail and line == "---":
            break
        if in_header and line[:1] in (" ", "\t") and last is not None and line.strip():
            fields[last] += "\n" + line.strip()
        elif in_header and line.strip() == "":
            in_header = mail  # DEP-3: free text follows; mail: body (may hold trailers)
            last = None
        elif match := _FIELD_RE.match(line):
            key, value = match.group(1).lower(), match.group(2).strip()
            if key not in allowed and not key.startswith(("x-", "bug-")):
                if in_header and not mail:
                    problems.append(Problem(path, index + 1, f"unknown header {match.group(1)!r}"))
            elif key in fields:
                problems.append(Problem(path, index + 1, f"duplicate header {match.group(1)!r}"))
            else:
                fields[key] = value
                last = key
        elif in_header and not mail:
            problems.append(Problem(path, index + 1, f"not a 'Field: value' header line: {line!r}"))
            last = None
        index += 1
    while index < len(lines) and not lines[index].startswith("diff --git "):
        index += 1  # a `---` separator and an optional diffstat
    if "subject" in fields and mail:
        fields["subject"] = _SUBJECT_TAG_RE.sub("", fields["subject"])
    return fields, index, problems


_SIGNATURE_RE = re.compile(rb"(?<=\n)-- \r?\n[^\n]*\r?\n(?:\r?\n)*\Z")


def _without_signature(diff: bytes) -> bytes:
    """git format-patch ends with a signature, "-- " and the git version: not part of the diff."""
    return _SIGNATURE_RE.sub(b"", diff)


def _diff_paths(path: Path, body: list[str], first_line: int) -> tuple[list[str], list[Problem]]:
    """Paths the diff touches, checked for safety, via unidiff (metadata only)."""
    from unidiff import PatchSet as UniPatchSet
    from unidiff.errors import UnidiffParseError

    problems: list[Problem] = []
    for offset, line in enumerate(body):
        if line.startswith(("GIT binary patch", "Binary files ")):
            problems.append(Problem(path, first_line + offset, "binary patches are not supported"))
    if problems:
        return [], problems
    try:
        parsed = UniPatchSet("\n".join(body) + "\n")
    except UnidiffParseError as exc:
        return [], [Problem(path, first_line, f"diff does not parse: {exc}")]
    if not parsed:
        return [], [Problem(path, first_line, "no diff found")]
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
            problems.append(Problem(path, first_line + offset, f"{target!r}: {unsafe}"))
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
    line = _field_line(lines, key)
    try:
        spec = SpecifierSet(fields[key])
    except InvalidSpecifier:
        return None, Problem(path, line, f"invalid PEP 440 specifier set {fields[key]!r}")
    if not str(spec):
        return None, Problem(path, line, f"empty specifier set in {key}")
    return spec, None


def _condition(entry: str) -> tuple[ContentCondition | None, str | None]:
    """`PATH: TEXT` -> a condition, or why ENTRY is not one."""
    target, separator, text = entry.partition(": ")
    if not separator and entry.endswith(":"):
        target = entry[:-1]
    elif not separator:
        return None, f"Upstream-Has condition {entry!r} is not 'PATH: TEXT'"
    unsafe = unsafe_file(target)
    if unsafe:
        return None, f"Upstream-Has path {target!r}: {unsafe}"
    if not text.strip():
        return None, f"Upstream-Has condition for {target!r} has no text to look for"
    return ContentCondition(target, text.strip()), None


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


def parse_patch_file(path: Path) -> tuple[PatchFile | None, list[Problem]]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        return None, [Problem(path, 1, f"cannot read ({exc.strerror or exc})")]
    text, problem = _decode(path, data)
    if problem:
        return None, [problem]
    # Split on "\n" only: a diff's bytes (CRLF lines, form feeds) must survive as written.
    raw_lines = text.split("\n")
    lines = [line.removesuffix("\r") for line in raw_lines]
    fields, diff_start, problems = _split_header(path, lines)
    if not (fields.get("description") or fields.get("subject")):
        problems.append(Problem(path, 1, "header needs a Description (or Subject)"))
    if diff_start >= len(lines):
        problems.append(Problem(path, len(lines) or 1, "no 'diff --git' section found"))
        return None, problems
    offset = len("\n".join(raw_lines[:diff_start]).encode()) + (1 if diff_start else 0)
    diff = _without_signature(data[offset:])
    body = [line.removesuffix("\r") for line in diff.decode().split("\n")]
    files, path_problems = _diff_paths(path, body, diff_start + 1)
    problems += path_problems
    applies_to, p1 = _specifier(path, fields, "applies-to", lines)
    fixed_in, p2 = _specifier(path, fields, "upstream-fixed-in", lines)
    problems += [p for p in (p1, p2) if p]
    upstream_has, has_problems = _upstream_has(path, fields, lines)
    problems += has_problems
    if problems:
        return None, problems
    smoke = tuple(s.strip() for s in fields.get("smoke", "").split(",") if s.strip())
    return PatchFile(
        path=path,
        fields=fields,
        diff=diff,
        files=tuple(files),
        applies_to=applies_to,
        upstream_fixed_in=fixed_in,
        smoke=smoke,
        sha256=hashlib.sha256(data).hexdigest(),
        upstream_has=upstream_has,
    ), []


# ---------------------------------------------------------------- variants


def _probe_versions(specs: Iterable[SpecifierSet]) -> list[Version]:
    """Versions on and around every boundary the specifiers name: enough to find an overlap."""
    probes: set[Version] = {Version("0"), Version("99999")}
    for spec_set in specs:
        for spec in spec_set:
            release = [int(x) for x in re.findall(r"\d+", spec.version.split("+")[0])][:6]
            if not release:
                continue
            for length in range(1, len(release) + 1):
                head = release[:length]
                bumped = [*head[:-1], head[-1] + 1]
                for point in (head, bumped):
                    probes.add(Version(".".join(map(str, point))))
                    probes.add(Version(".".join(map(str, [*point, 0, 1]))))
                    if any(point):
                        last = max(i for i, v in enumerate(point) if v)
                        below = [*point[:last], point[last] - 1, 999999]
                        probes.add(Version(".".join(map(str, below))))
    return sorted(probes)


def _overlap(a: PatchFile, b: PatchFile) -> Version | None:
    if a.applies_to is None or b.applies_to is None:
        return Version("0")
    for probe in _probe_versions([a.applies_to, b.applies_to]):
        if spec_contains(a.applies_to, probe) and spec_contains(b.applies_to, probe):
            return probe
    return None


def _variant_problems(variants: list[PatchFile]) -> list[Problem]:
    problems = []
    for i, first in enumerate(variants):
        for second in variants[i + 1 :]:
            both = _overlap(first, second)
            if both is not None:
                problems.append(
                    Problem(
                        second.path,
                        1,
                        f"Applies-To overlaps variant {first.path.name} (both contain {both}); "
                        "every variant in a folder needs its own range",
                    )
                )
    return problems


# ---------------------------------------------------------------- the whole set


def inspect_patch_set(root: Path) -> tuple[PatchSet, list[Problem]]:
    """Load everything that loads and list every problem (the basis of `lint`)."""
    root = root.resolve()
    if not root.is_dir():
        return PatchSet(root, ()), [Problem(root, 1, "patch set folder does not exist")]
    entries, problems = read_series(root)
    listed: set[Path] = set()
    patches: list[Patch] = []
    for _, entry in entries:
        target = root / entry
        files = (
            sorted(p for p in target.iterdir() if p.is_file() and p.suffix in PATCH_SUFFIXES)
            if target.is_dir()
            else [target]
        )
        if target.is_dir() and not files:
            problems.append(Problem(target, 1, "variant folder holds no .patch files"))
        listed |= set(files)
        variants = []
        for file in files:
            parsed, file_problems = parse_patch_file(file)
            problems += file_problems
            if parsed:
                variants.append(parsed)
        problems += _variant_problems(variants)
        if variants and len(variants) == len(files):
            patches.append(Patch(name=patch_name(entry), entry=entry, variants=tuple(variants)))
    for stray in sorted(_patch_files_on_disk(root) - listed):
        problems.append(Problem(stray, 1, "patch file is not listed in series"))
    return PatchSet(root, tuple(patches)), problems


def load_patch_set(root: Path) -> PatchSet:
    """The patch set, or a one-line error (exit 2) naming the first problem."""
    patch_set, problems = inspect_patch_set(root)
    raise_first(problems)
    return patch_set
