"""A plain unified diff (quilt, `diff -u`: no `diff --git` lines) rewritten as the git diff the
engine applies, keeping the patch file's line number of each line for the problems."""

from __future__ import annotations

from pathlib import Path

from patchkeeper.model.problems import Problem
from patchkeeper.patchset.diffpaths import git_quoted
from patchkeeper.patchset.headers import HUNK_RE
from patchkeeper.patchset.plainnames import (
    DEV_NULL,
    at_epoch,
    has_folder,
    name_line,
    one_name,
    strip_names,
)


def _pair_names(
    path: Path, old_line: str, new_line: str, number: int, strip: int
) -> tuple[str | None, str | None, list[Problem]]:
    """(old, new) the way git reads a plain diff's `---` / `+++` pair (plainnames.py):
    /dev/null for the side a creation or a deletion lacks, else one name for both sides."""
    old, new = name_line(old_line), name_line(new_line)
    absolute = [
        Problem(path, at, f"{named.name!r}: absolute path; write it relative to the top of "
                "the tree (a/FILE)")
        for at, named in ((number, old), (number + 1, new))
        if named.name.startswith("/") and named.name != DEV_NULL
    ]  # fmt: skip
    if absolute:  # -p1 would quietly make it relative: a file the author never named
        return None, None, absolute
    old_name, new_name = strip_names(old.name, strip), strip_names(new.name, strip)
    if old_name is None and new_name not in (None, DEV_NULL):
        old_name = new_name  # git takes the name that has a folder to drop
    if new_name is None and old_name not in (None, DEV_NULL):
        new_name = old_name
    if old_name is None or new_name is None:
        why = "a plain diff's file names need a leading folder to drop (-p1)"
        missing = [
            Problem(path, at, f"{named.name!r}: {why}")
            for at, named in ((number, old), (number + 1, new))
            if strip_names(named.name, strip) is None
        ]
        return None, None, missing
    if old_name == DEV_NULL or new_name == DEV_NULL:
        return old_name, new_name, []
    name = one_name(old_name, new_name)
    if at_epoch(old.stamp):
        return DEV_NULL, name, []
    if at_epoch(new.stamp):
        return name, DEV_NULL, []
    return name, name, []


def plain_to_git(
    path: Path, diff: bytes, first_line: int
) -> tuple[bytes, list[int], list[Problem]]:
    """A plain unified diff (quilt, `diff -u`: no `diff --git` lines) as a git diff.

    Each file gets the `diff --git` line and, for a new or deleted file, the mode line git
    needs; the `---`/`+++` lines name the file the git way (a/, b/), read as git reads a
    plain diff (plainnames.py: one file, never a rename). Hunks are the file's own
    bytes; quilt's `Index:` and `====` lines between files are dropped. Returns the diff, the
    file's line number for each line of it (for problems), and the problems.
    """
    lines = diff.split(b"\n")
    if diff.endswith(b"\n"):
        lines.pop()  # the end of the last line, not a line: a blank context line is b""
    strip_known: int | None = None
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
            if strip_known is None:  # git guesses -p0 from a pair that names no folder
                names = [name_line(text).name, name_line(following).name]
                if not any(has_folder(name) for name in names):
                    strip_known = 0 if any(name != DEV_NULL for name in names) else None
            strip = 1 if strip_known is None else strip_known
            old, new, found = _pair_names(path, text, following, number, strip)
            problems += found
            if old is not None and new is not None:
                a_name = git_quoted("a/" + (old if old != "/dev/null" else new))
                b_name = git_quoted("b/" + (new if new != "/dev/null" else old))
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
    if diff.endswith(b"\n") and out:
        out.append(b"")
        numbers.append(numbers[-1])
    return b"\n".join(out), numbers, problems
