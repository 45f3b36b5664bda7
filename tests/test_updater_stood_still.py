"""An updater that exits 0 but leaves HEAD where it was, behind the branch it follows, did not
update: the update asked for did not happen (exit 5, rolled back, the retry command), never
exit 0 with "version 1.0.0 -> 1.0.0". One that finds nothing new upstream is still exit 0.
"""

from __future__ import annotations

from tests.test_exit_zero import (
    GOOD_UPDATER,
    World,
    applied_with_edits,
    command_in,
    one_line,
    paste,
    pk,
    pk_json,
    release_2,
    work_tree,
    world,
)

__all__ = ["world"]  # the fixture, used by name

# Fetches the new release, then takes nothing of it (a merge step skipped, a `--check` run,
# an error swallowed), and says all is well.
FETCH_ONLY = 'git("fetch", "-q", "origin")\nprint("Already up to date.")\n'


def test_an_updater_that_exits_0_behind_its_branch_did_not_update(world: World) -> None:
    w = world
    applied_with_edits(w)
    release_2(w)
    old, before = w.head(), work_tree(w)
    w.set_updater(FETCH_ONLY)
    code, doc = pk_json(w, "update")
    assert w.head() == old  # the release was fetched, HEAD did not move
    assert code == 5, doc
    assert doc["update_done"] is False and "behind origin/main" in doc["not_done"]
    assert work_tree(w) == before  # patches and edits as they were
    retry = command_in(one_line(doc["attention"], "did not happen", "behind origin/main"))
    code, status = pk_json(w, "status")
    assert code == 5 and command_in(one_line(status["notes"], "did not happen")) == retry
    w.set_updater(GOOD_UPDATER)
    assert paste(w, retry).returncode == 0 and w.head() == w.tip()
    assert pk(w, "status").returncode == 0


def test_an_updater_with_nothing_new_to_take_is_exit_0(world: World) -> None:
    w = world
    applied_with_edits(w)
    w.set_updater(FETCH_ONLY)
    code, doc = pk_json(w, "update")
    assert code == 0, doc
    assert doc["update_done"] is True and w.head() == w.tip()
