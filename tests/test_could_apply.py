"""The questions git is no longer asked (engine/could_apply.py): a "no" must be git's answer.

Random files, random patches, random targets (the patch's own result, upstream edits, blanks
changed, CRLF line ends): wherever the reader says a reverse check or a fuzz check cannot
succeed, a real `git apply --check` fails too; and it does say so for most conflicts.
"""

from __future__ import annotations

import difflib
import random
import subprocess
from pathlib import Path

from patchkeeper.engine.could_apply import fuzz_could_apply, reverse_could_apply

WORDS = ["int x = 0;", "return x;", "}", "", "if (x) {", "x++;", "  free(p);", "/* note */"]


def _edit(lines: list[str], rng: random.Random) -> list[str]:
    out = list(lines)
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(out))
        roll = rng.random()
        if roll < 0.4:
            out[at] = f"{out[at]} changed {rng.randint(0, 9)}"
        elif roll < 0.7:
            out.insert(at, f"added {rng.randint(0, 99)}")
        else:
            del out[at]
    return out


def _diff(old: list[str], new: list[str]) -> bytes:
    body = difflib.unified_diff([f"{x}\n" for x in old], [f"{x}\n" for x in new], n=3)
    hunks = "".join(line for n, line in enumerate(body) if n >= 2)
    return f"diff --git a/f.c b/f.c\n--- a/f.c\n+++ b/f.c\n{hunks}".encode()


def _target(base: list[str], patched: list[str], rng: random.Random) -> bytes:
    kind = rng.randrange(5)
    lines = {0: base, 1: patched, 2: _edit(base, rng), 3: _edit(patched, rng)}.get(kind)
    if lines is None:  # blanks changed, CRLF
        lines = [f" {line}  " if rng.random() < 0.3 else line for line in patched]
        return "".join(f"{line}\r\n" for line in lines).encode()
    return "".join(f"{line}\n" for line in lines).encode()


def _git_says(folder: Path, diff: bytes, *flags: str) -> bool:
    proc = subprocess.run(
        ["git", "apply", "--check", *flags], cwd=folder, input=diff, capture_output=True
    )
    return proc.returncode == 0


def test_a_no_is_always_gits_answer_too(tmp_path: Path) -> None:
    rng = random.Random(30)
    refused = {"reverse": 0, "fuzz": 0}
    for _ in range(150):
        base = [rng.choice(WORDS) + (f" {n}" if rng.random() < 0.6 else "") for n in range(30)]
        patched = _edit(base, rng)
        diff = _diff(base, patched)
        if b"@@" not in diff:
            continue
        content = _target(base, patched, rng)
        (tmp_path / "f.c").write_bytes(content)
        contents = {"f.c": content}
        if not reverse_could_apply(diff, contents):
            refused["reverse"] += 1
            assert not _git_says(tmp_path, diff, "--reverse"), (diff, content)
        if not fuzz_could_apply(diff, contents):
            refused["fuzz"] += 1
            assert not _git_says(tmp_path, diff, "-C1"), (diff, content)
    assert refused["reverse"] > 30 and refused["fuzz"] > 10, refused


def test_what_it_cannot_read_is_left_to_git() -> None:
    renamed = (
        b"diff --git a/a b/b\nsimilarity index 90%\nrename from a\nrename to b\n"
        b"@@ -1 +1 @@\n-x\n+y\n"
    )
    assert reverse_could_apply(renamed, {"b": b"nothing alike\n"})
    plain = b"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-old line\n+new line\n"
    assert reverse_could_apply(plain, {})  # the file was not read
    assert not reverse_could_apply(plain, {"f": b"other\n"})
    assert reverse_could_apply(plain, {"f": b"other\n  new   line \r\n"})  # blanks aside
    odd = b"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-old line\n?what\n+new line\n"
    assert reverse_could_apply(odd, {"f": b"other\n"})
