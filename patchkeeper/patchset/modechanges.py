"""The mode changes of a git diff (`old mode` / `new mode` lines in a file's header), read
from its bytes: what the scratch index checks before `git apply --cached`, which does not."""

from __future__ import annotations

import re

from patchkeeper.patchset.diffpaths import git_line_paths

_MODE_LINE_RE = re.compile(rb"^(old|new) mode ([0-7]{6})$", re.MULTILINE)
_SECTION_START_RE = re.compile(rb"^(?=diff --git )", re.MULTILINE)


def starting_modes(diff: bytes, *, reverse: bool) -> dict[str, str]:
    """The mode each path DIFF changes the mode of starts from (its `old mode`; its `new
    mode` when the diff is applied in REVERSE)."""
    if b"old mode " not in diff:
        return {}
    expected = {}
    for section in _SECTION_START_RE.split(diff):
        head = section.split(b"\n@@", 1)[0]
        modes = dict(_MODE_LINE_RE.findall(head))
        if not section.startswith(b"diff --git ") or not {b"old", b"new"} <= modes.keys():
            continue
        first = head.split(b"\n", 1)[0].decode(errors="surrogateescape")
        paths = git_line_paths(first[len("diff --git ") :])
        if paths:
            path = paths[-1] if reverse else paths[0]
            expected[path] = modes[b"new" if reverse else b"old"].decode()
    return expected
