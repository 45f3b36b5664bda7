"""A plain unified diff (quilt, `diff -u`: no `diff --git` lines) rewritten as the git diff the
engine applies, keeping the patch file's line number of each line for the problems."""

from __future__ import annotations

from pathlib import Path

from patchkeeper.model.problems import Problem
from patchkeeper.patchset.diffpaths import git_quoted, unquote
from patchkeeper.patchset.headers import HUNK_RE


def _plain_name(path: Path, line: str, number: int) -> tuple[str | None, Problem | None]:
    """The file a plain diff's `--- NAME` / `+++ NAME` line names, with quilt's -p1 (the first
    folder is dropped): `--- a/cron/x.py` and `--- hermes.orig/cron/x.py` name cron/x.py."""
    token = unquote(line[4:].split("\t")[0].strip())
    if token == "/dev/null":
        return "/dev/null", None
    if token.startswith("/"):  # -p1 would quietly make it relative: a file the author never named
        why = f"{token!r}: absolute path; write it relative to the top of the tree (a/FILE)"
        return None, Problem(path, number, why)
    parts = token.split("/", 1)
    if len(parts) < 2 or not parts[1]:
        why = f"{token!r}: a plain diff's file names need a leading folder to drop (-p1)"
        return None, Problem(path, number, why)
    return parts[1], None


def plain_to_git(
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
    if diff.endswith(b"\n") and out and out[-1] != b"":
        out.append(b"")
        numbers.append(numbers[-1])
    return b"\n".join(out), numbers, problems
