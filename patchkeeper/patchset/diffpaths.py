"""Paths as a git diff header writes them: an `a/` or `b/` prefix, C-quoted names
(`"d\\303\\266cs"`), the two paths of a `diff --git` line. The patch file reader, the engine
(which reads git's own diffs) and the annotations all read them alike.
"""

from __future__ import annotations

import re


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


def git_quoted(path: str) -> str:
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
