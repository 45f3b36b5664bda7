"""The mode a mode change starts from, checked before `git apply --cached` (which does not).

A patch making a file executable "applies" under `--cached` to a file that is executable
already, changing nothing: a fix would be called written (or, in reverse, in place) while the
tree says otherwise. The scratch index (plumbing/scratch_index.py) asks here first: when its entries
hold another mode than a mode change starts from, the apply fails, in git's words.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

from patchkeeper.install.plumbing import git
from patchkeeper.patchset.modechanges import starting_modes


def index_modes(repo: Path, env: Mapping[str, str], paths: Iterable[str]) -> dict[str, str]:
    """The mode of each of PATHS' entries in the index ENV names (GIT_INDEX_FILE)."""
    listed = git.run(["ls-files", "-s", "-z", "--", *sorted(set(paths))], repo, env=env).stdout
    entries = (entry.split(b"\t", 1) for entry in listed.split(b"\0") if b"\t" in entry)
    return {
        name.decode(errors="surrogateescape"): info.split()[0].decode() for info, name in entries
    }


def mode_refusal(
    repo: Path, env: Mapping[str, str], diff: bytes, *, reverse: bool
) -> subprocess.CompletedProcess[bytes] | None:
    """A failed `git apply` run, in git's words, when the index holds another mode than a
    mode change of DIFF starts from (its end, in REVERSE); None when none does."""
    expected = starting_modes(diff, reverse=reverse)
    if not expected:
        return None
    found = index_modes(repo, env, expected)
    wrong = [path for path, mode in expected.items() if found.get(path, mode) != mode]
    if not wrong:
        return None
    said = "".join(
        f"error: {path} has mode {found[path]}, expected {expected[path]}\n"
        f"error: {path}: patch does not apply\n"
        for path in wrong
    )
    args = ["git", "apply", "--cached"]
    return subprocess.CompletedProcess(args, 1, b"", said.encode(errors="surrogateescape"))
