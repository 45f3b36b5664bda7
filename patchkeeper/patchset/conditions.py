"""An `Upstream-Has:` condition (`ContentCondition`): the literal text upstream's file holds
when it has a fix. Loaded by the first patch that names one (fields.py), not by every load.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


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
