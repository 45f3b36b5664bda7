"""What `git apply -v` says, read back: offsets, the files that failed, its words per file.

git's messages are the engine's only source for where a patch failed and by how much it
moved; every pattern of them lives here, so a new git wording is mended in one place.
"""

from __future__ import annotations

import re

from patchkeeper.model.outcomes import HunkOffset
from patchkeeper.patchset.diffpaths import unquote

_CHECKING_RE = re.compile(r"^Checking patch (.+)\.\.\.$")
_OFFSET_RE = re.compile(r"^Hunk #(\d+) succeeded at (\d+) \(offset (-?\d+) lines?\)\.$")
_FAILED_FILE_RES = (
    re.compile(r"^error: patch failed: (.+):\d+$"),
    re.compile(r"^error: (.+): (?:patch does not apply|(?:does not|already) exists? in index)$"),
)
GIT_FATAL = 128  # git apply could not even read the patch


def output_lines(output: bytes) -> list[str]:
    return output.decode(errors="replace").splitlines()


def parse_offsets(stderr: bytes) -> list[HunkOffset]:
    offsets, current = [], ""
    for line in output_lines(stderr):
        if match := _CHECKING_RE.match(line):
            current = match.group(1)
        elif (match := _OFFSET_RE.match(line)) and int(match.group(3)) != 0:
            offsets.append(HunkOffset(current, int(match[1]), int(match[2]), int(match[3])))
    return offsets


def failed_files(stderr: bytes) -> list[str]:
    files: list[str] = []
    for line in output_lines(stderr):
        for pattern in _FAILED_FILE_RES:
            if (match := pattern.match(line)) and match.group(1) not in files:
                files.append(match.group(1))
    return files


def stderr_blocks(stderr: bytes) -> dict[str, list[str]]:
    """`git apply -v` output split per file section: path -> the lines from its `Checking
    patch` line to the next one. A path with more than one section is left out."""
    blocks: dict[str, list[str]] = {}
    twice: set[str] = set()
    current: list[str] | None = None
    for line in output_lines(stderr):
        if match := _CHECKING_RE.match(line):
            path = unquote(match.group(1))
            if path in blocks:
                twice.add(path)
            current = blocks[path] = [line]
        elif current is not None:
            current.append(line)
    return {path: lines for path, lines in blocks.items() if path not in twice}


def section_offsets(stderr: bytes) -> list[list[HunkOffset]]:
    """Per `Checking patch` line of `git apply -v` (one per file section, in order), the
    offsets git reported for it."""
    sections: list[list[HunkOffset]] = []
    current = ""
    for line in output_lines(stderr):
        if match := _CHECKING_RE.match(line):
            current = match.group(1)
            sections.append([])
        elif (match := _OFFSET_RE.match(line)) and int(match.group(3)) != 0 and sections:
            sections[-1].append(HunkOffset(current, int(match[1]), int(match[2]), int(match[3])))
    return sections


def section_blocks(stderr: bytes) -> list[list[str]]:
    """`git apply -v` output split per file section, in the stream's order: for each
    `Checking patch` line, the lines from it to the next one (what is said before the first
    belongs to none)."""
    blocks: list[list[str]] = []
    for line in output_lines(stderr):
        if _CHECKING_RE.match(line):
            blocks.append([line])
        elif blocks:
            blocks[-1].append(line)
    return blocks


def block_offsets(block: list[str]) -> bool:
    """Whether git applied a hunk of this section (`section_blocks`) at an offset."""
    return any((m := _OFFSET_RE.match(line)) and int(m.group(3)) != 0 for line in block)
