"""The diff of one patch file, from where its header ends: read as a git diff (a plain one
converted), the files it touches, and what makes it unreadable or unsafe (CRLF mangling, a
binary patch, a path out of the tree, a symlink out of the install), each a Problem at its
line of the patch file.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from patchkeeper.model.problems import Problem
from patchkeeper.patchset.diffpaths import diff_path, git_line_paths, unquote
from patchkeeper.patchset.diffsections import plain_sections
from patchkeeper.patchset.githeaders import normal_git_headers
from patchkeeper.patchset.userfiles import unsafe_path

SYMLINK_MODE = "120000"
_LINK_MAX = 4096  # a symlink's target, with its terminating NUL (PATH_MAX)
_DIFF_PATH_RE = re.compile(r"^(?:rename|copy) (?:from|to) (.+)$")
_SIGNATURE_RE = re.compile(rb"(?<=\n)-- \r?\n[^\n]*\r?\n(?:\r?\n)*\Z")
_MODE_RE = re.compile(r"^(?:(?:old|new|new file|deleted file) mode|index \S+) ([0-7]{6})$")
_MODES = ("100644", "100755", SYMLINK_MODE)  # what git keeps for a file, and what it writes
_GITLINK_MODE = "160000"


def _without_signature(diff: bytes) -> bytes:
    """git format-patch ends with a signature, "-- " and the git version: not part of the diff."""
    return _SIGNATURE_RE.sub(b"", diff)


def _diff_paths(
    path: Path, body: list[str], where: Callable[[int], int]
) -> tuple[list[str], list[Problem]]:
    """Paths the diff touches, checked for safety: read by diffsections.py, or by unidiff
    when it is not in the plainest shape. WHERE maps a line of BODY to its line number."""
    problems: list[Problem] = []
    for offset, line in enumerate(body):
        if line.startswith(("GIT binary patch", "Binary files ")):
            problems.append(Problem(path, where(offset), "binary patches are not supported"))
    if problems:
        return [], problems
    sections = plain_sections(body)
    if sections is None:
        from unidiff import PatchSet as UniPatchSet
        from unidiff.errors import UnidiffParseError

        try:
            parsed = UniPatchSet("\n".join(body) + "\n")
        except UnidiffParseError as exc:
            return [], [Problem(path, where(0), f"diff does not parse: {str(exc).strip()}")]
        if not parsed:
            return [], [Problem(path, where(0), "no diff found")]
        sections = [(patched.source_file, patched.target_file) for patched in parsed]
    paths: list[tuple[int, str]] = []
    for first, header in _headers(body):  # hunk lines can look like headers ("--- x")
        paths += [(first, p) for p in git_line_paths(body[first][len("diff --git ") :])]
        for offset, line in header:
            if line.startswith(("--- ", "+++ ")):
                paths.append((offset, diff_path(line[4:].split("\t")[0])))
            elif match := _DIFF_PATH_RE.match(line):
                paths.append((offset, unquote(match.group(1))))
    touched: list[str] = []
    for offset, target in paths:
        unsafe = unsafe_path(target)
        if unsafe:
            problems.append(Problem(path, where(offset), f"{target!r}: {unsafe}"))
    for source, target in sections:
        for name in (source, target):  # in the diff's order (a set's follows PYTHONHASHSEED)
            clean = diff_path(name)
            if clean != "/dev/null" and clean not in touched:
                touched.append(clean)
    return touched, problems


def _mode_problem(mode: str) -> str | None:
    """Why a diff line giving a path MODE is refused: a submodule commit (gitlink) is not a
    file the writer can put in place, and a mode git never keeps (100777, a setuid 104755)
    would be written as a plain 100755, claiming what was not done."""
    if mode in _MODES:
        return None
    if mode == _GITLINK_MODE:
        return "a submodule (gitlink, mode 160000) is not a file patchkeeper can write"
    return f"mode {mode} is not one git keeps for a file (100644, 100755 or 120000)"


def _modes(path: Path, body: list[str], where: Callable[[int], int]) -> list[Problem]:
    """A Problem for each header line of BODY that gives a mode the writer cannot keep."""
    problems = []
    for _, header in _headers(body):
        for offset, line in header:
            match = _MODE_RE.match(line)
            if match is not None and (why := _mode_problem(match.group(1))) is not None:
                problems.append(Problem(path, where(offset), why))
    return problems


def _sections(body: list[str]) -> list[tuple[int, int]]:
    """Where each file section of BODY starts (its `diff --git` line) and ends (the next)."""
    starts = [offset for offset, line in enumerate(body) if line.startswith("diff --git ")]
    return list(zip(starts, [*starts[1:], len(body)][: len(starts)], strict=True))


def _headers(body: list[str]) -> list[tuple[int, list[tuple[int, str]]]]:
    """Each file section of BODY: the line of its `diff --git`, and its header lines after it
    (up to its first `@@`) with their lines. The hunks' lines, most of a diff, are passed
    over: only `diff --git` is looked for in them."""
    found = []
    for first, end in _sections(body):
        header = []
        for offset in range(first + 1, end):
            if body[offset].startswith("@@"):
                break
            header.append((offset, body[offset]))
        found.append((first, header))
    return found


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


def _links(body: list[str]) -> list[tuple[int, str, list[str]]]:
    """(line, path, content lines) for each symlink the diff writes (mode 120000): a link's
    content, the lines its hunks add, is its target."""
    link_modes = (f"new file mode {SYMLINK_MODE}", f"new mode {SYMLINK_MODE}")
    links: list[tuple[int, str, list[str]]] = []
    for first, end in _sections(body):
        rest = body[first + 1 : end]
        hunk = next((i for i, text in enumerate(rest) if text.startswith("@@")), len(rest))
        if not any(
            text in link_modes or (text.startswith("index ") and text.endswith(SYMLINK_MODE))
            for text in rest[:hunk]
        ):
            continue
        paths = git_line_paths(body[first][len("diff --git ") :])
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


def read_diff(
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
    head = "\n".join(raw_lines[:diff_start]).encode(errors="surrogateescape")
    offset = len(head) + (1 if diff_start else 0)
    diff = _without_signature(data[offset:])
    numbers: list[int] | None = None
    if not re.search(rb"(?m)^diff --git ", diff):
        from patchkeeper.patchset.plaindiff import plain_to_git  # a quilt or `diff -u` patch

        diff, numbers, plain_problems = plain_to_git(path, diff, diff_start + 1)
        problems += plain_problems
    else:
        diff = normal_git_headers(diff)  # i/ w/ prefixes, a diff --git line naming others

    def where(line: int) -> int:
        if numbers is None:
            return diff_start + 1 + line
        return numbers[min(line, len(numbers) - 1)] if numbers else diff_start + 1

    body = [line.removesuffix("\r") for line in diff.decode(errors="surrogateescape").split("\n")]
    files, path_problems = _diff_paths(path, body, where)
    problems += path_problems + _modes(path, body, where)
    for line, link, content in _links(body):
        if (why := _link_problem(link, content, outside_links)) is not None:
            problems.append(Problem(path, where(line), why))
    return diff, files, problems
