"""A git diff's file headers put in the one shape the rest of patchkeeper reads: `a/`, `b/`.

`git apply` drops one leading folder of every name (-p1), whatever it is: git's mnemonic
prefixes (`i/`, `w/`, `c/`, `o/`, from `diff.mnemonicPrefix`) and any `--src-prefix` /
`--dst-prefix` pair read as `a/` and `b/` do. And where a section's `diff --git` line names
other paths than its `---` / `+++` lines, git patches the files the `---` / `+++` lines
name (GNU patch does too). So each such header is rewritten to say exactly that, line for
line (the patch file's line numbers stay right): the reader of paths, the engine and git
then agree on the files. A header already in that shape is left as written.
"""

from __future__ import annotations

import re

from patchkeeper.patchset.diffpaths import git_quoted, unquote
from patchkeeper.patchset.plainnames import DEV_NULL, name_line, strip_names

_GIT = b"diff --git "


def _side(prefix: str, name: str) -> str:
    return DEV_NULL if name == DEV_NULL else git_quoted(prefix + name)


def _line_names(rest: str) -> tuple[str, str] | None:
    """The two names of a `diff --git` line, one folder dropped from each: quoted ones, or
    the split where both sides name the same path (git's own reading), or the one space."""
    if rest.startswith('"') or rest.endswith('"'):
        quoted = re.findall(r'"(?:[^"\\]|\\.)*"|[^ "]+', rest)
        if len(quoted) == 2:
            old, new = (strip_names(unquote(token), 1) for token in quoted)
            return (old, new) if old and new else None
    spaces = [at for at, char in enumerate(rest) if char == " "]
    for at in spaces:
        old, new = strip_names(rest[:at], 1), strip_names(rest[at + 1 :], 1)
        if old is not None and old == new:
            return old, new
    if len(spaces) == 1:
        old, new = strip_names(rest[: spaces[0]], 1), strip_names(rest[spaces[0] + 1 :], 1)
        return (old, new) if old and new else None
    return None


def _header_end(lines: list[bytes], start: int) -> int:
    end = start + 1
    while end < len(lines) and not lines[end].startswith((b"@@", _GIT)):
        end += 1
    return end


def normal_git_headers(diff: bytes) -> bytes:
    """DIFF (a git diff) with each file header in the `a/` `b/` shape naming the files git
    patches; the same bytes when every header has it already."""
    lines = diff.split(b"\n")
    changed = False
    at = 0
    while at < len(lines):
        if not lines[at].startswith(_GIT):
            at += 1
            continue
        end = _header_end(lines, at)
        if _rewrite(lines, at, end):
            changed = True
        at = end
    return b"\n".join(lines) if changed else diff


def _rewrite(lines: list[bytes], start: int, end: int) -> bool:
    """Rewrite the header LINES[START:END] in place when it is not in the shape; whether it was."""

    def text(line: bytes) -> str:
        return line.decode("utf-8", errors="surrogateescape").removesuffix("\r")

    old_at = next((i for i in range(start, end) if lines[i].startswith(b"--- ")), None)
    new_at = next((i for i in range(start, end) if lines[i].startswith(b"+++ ")), None)
    if old_at is not None and new_at is not None:
        raw = [name_line(text(lines[at])).name for at in (old_at, new_at)]
        if any(name.startswith("/") and name != DEV_NULL for name in raw):
            return False  # an absolute name stays as written: the reader refuses it
        old, new = (strip_names(name, 1) for name in raw)
        if old is None or new is None:
            return False  # no folder to drop: left for git to judge
        named = (old if old != DEV_NULL else new, new if new != DEV_NULL else old)
    else:
        found = _line_names(text(lines[start])[len("diff --git ") :])
        if found is None:
            return False
        named, old_at, new_at = found, None, None
        old = new = ""
    wanted = {start: f"diff --git {_side('a/', named[0])} {_side('b/', named[1])}"}
    if old_at is not None and new_at is not None:
        wanted[old_at] = f"--- {_side('a/', old)}"
        wanted[new_at] = f"+++ {_side('b/', new)}"
    done = False
    for at, line in wanted.items():
        current = text(lines[at])
        keep_stamp = at != start and name_line(current).stamp and "\t" in current
        if keep_stamp:
            line += "\t" + current.split("\t", 1)[1]
        if current != line:
            ending = b"\r" if lines[at].endswith(b"\r") else b""
            lines[at] = line.encode("utf-8", errors="surrogateescape") + ending
            done = True
    return done
