"""A git diff's file sections, raw bytes kept: the unit every engine step reads a patch in.

Records, batches, conflicts and merges all ask "which files does this diff touch, with which
hunks"; `split_hunks` answers it once, the same way for each (a lone "\\r" is content).
"""

from __future__ import annotations

import functools

from patchkeeper.patchset.diffpaths import diff_path, git_line_paths


def _lines_with_ends(data: bytes) -> list[bytes]:
    """Lines split on "\\n" only: a lone "\\r" (or CRLF) is content, not a break."""
    parts = data.split(b"\n")
    return [part + b"\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


@functools.lru_cache(maxsize=256)
def split_hunks(diff: bytes) -> list[tuple[str, bytes, list[bytes]]]:
    """(path, file header, hunks) per file section of a git diff, raw bytes kept. Asked of the
    same patch by every step that judges it, so answered once per diff: the answer is shared,
    read only (no caller changes it)."""
    sections: list[tuple[str, bytes, list[bytes]]] = []
    header: list[bytes] = []
    hunks: list[list[bytes]] = []
    path = ""

    def flush() -> None:
        if header:
            sections.append((path, b"".join(header), [b"".join(h) for h in hunks]))

    for line in _lines_with_ends(diff):
        if line.startswith(b"diff --git "):
            flush()
            header, hunks = [line], []
            text = line.decode(errors="surrogateescape").rstrip("\r\n")
            path = git_line_paths(text[len("diff --git ") :])[-1]
        elif line.startswith(b"@@"):
            hunks.append([line])
        elif hunks:
            hunks[-1].append(line)  # a hunk's line: kept as it is, never read here
        else:
            header.append(line)
            text = line.decode(errors="surrogateescape").rstrip("\r\n")
            named = diff_path(text[4:].split("\t")[0]) if text[:4] in ("+++ ", "--- ") else ""
            if named and named != "/dev/null" and (text.startswith("+++") or not path):
                path = named
    flush()
    return sections
