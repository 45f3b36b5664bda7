"""Does git itself read each patch? Asked by `lint`, with no install.

The header parser and unidiff accept some diffs that git refuses, or on which git 2.39 even
aborts (a mangled `new file mode` line). Each variant is given to `git apply --cached
--check` against an empty index in a throw-away repository: "does not exist in index" is
expected there and fine; git's "cannot read" answer (exit 128, or a crash) is a problem.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from patchkeeper import git
from patchkeeper.patchset import PatchSet
from patchkeeper.problems import Problem
from patchkeeper.scratch import GIT_CANNOT_READ, scratch_index


def unreadable_by_git(patch_set: PatchSet) -> list[Problem]:
    variants = [v for patch in patch_set.patches for v in patch.variants if v.diff]
    if not variants:
        return []
    problems = []
    with tempfile.TemporaryDirectory(prefix="patchkeeper-lint-") as empty:
        git.run(["init", "-q", empty], Path(empty))
        with scratch_index(Path(empty), private_objects=True) as index:
            for variant in variants:
                proc = index.apply(variant.diff, "--check")
                if proc.returncode == GIT_CANNOT_READ:
                    said = proc.stderr.decode(errors="replace").strip().splitlines()
                    reason = said[-1] if said else "no reason given"
                    problems.append(Problem(variant.path, 1, f"git cannot read the diff: {reason}"))
    return problems
