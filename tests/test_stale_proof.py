"""A fix's smoke verdict proves it on the code it ran on: once HEAD moves without patchkeeper
(an operator's `git pull`, `hermes update` run alone, its stash restored), the fix is still in
the tree but never checked on the new code, and `status` is not green until `apply` proves it.
"""

from __future__ import annotations

from tests.helpers import git
from tests.test_exit_zero import World, pk, pk_json, release_2, world
from tests.test_retired_fixes import fix_with_check

__all__ = ["world"]  # the fixture, used by name


def test_status_after_head_moved_under_a_proven_fix_is_not_green(world: World) -> None:
    w = world
    fix_with_check(w)
    assert pk(w, "apply").returncode == 0
    assert pk(w, "status").returncode == 0  # proven on this HEAD
    release_2(w)
    git(w.install, "pull", "-q", "--ff-only")  # not through patchkeeper; app.py stays fixed
    assert "line 10 fixed" in (w.install / "app.py").read_text()
    code, doc = pk_json(w, "status")
    assert doc["patches"][0]["outcome"] == "already-applied"
    assert code == 5, doc
    line = next(n for n in doc["notes"] if n.startswith("fix is in place but not proven"))
    assert "HEAD moved" in line and "patchkeeper apply" in line
    assert pk(w, "apply").returncode == 0  # runs its check on the new code
    assert pk(w, "status").returncode == 0
