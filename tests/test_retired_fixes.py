"""A fix retired because upstream is said to have it is still proven by its own smoke check.

`Upstream-Fixed-In` is the patch author's word that a release carries the fix; the release
may not. Whether or not a variant is chosen for the new version, the retired fix's check runs
on upstream's code (as for a fix retired by its `Upstream-Has:` probe), so an update is never
green while the check shows the fixed path broken.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diff_of, patch_text, write_patch_set
from tests.test_exit_zero import FIXED, World, pk, pk_json, release_2, world

__all__ = ["world"]  # the fixture, used by name

CHECK = """\
import json, pathlib
fixed = "line 10 fixed" in pathlib.Path("app.py").read_text()
print(json.dumps({"check": "line10", "verdict": "pass" if fixed else "fail", "steps": []}))
"""


def fix_with_check(w: World, **fields: str) -> Path:
    """The world's fix, with FIELDS and a smoke check that passes only where line 10 is fixed."""
    diff = diff_of(w.install, {"app.py": FIXED})
    text = patch_text(diff, "Fix line 10", smoke="line10", **fields)
    write_patch_set(w.patches, {"fix.patch": text})
    (w.patches / "smoke").mkdir(exist_ok=True)
    (w.patches / "smoke" / "line10.py").write_text(CHECK)
    return w.patches / "fix.patch"


def test_a_fix_past_its_range_that_upstream_is_said_to_have_runs_its_check(world: World) -> None:
    """`Applies-To: <2.0` with `Upstream-Fixed-In: >=2.0`: release 2 is said to have the fix,
    yet it does not. The update retired it and, with no variant chosen for 2.0.0, ran no check:
    "smoke: not configured", exit 0, while line 10 was broken again."""
    fix_with_check(world, applies_to="<2.0", upstream_fixed_in=">=2.0")
    assert pk(world, "apply").returncode == 0
    release_2(world)
    code, doc = pk_json(world, "update")
    assert doc["patches"][0]["outcome"] == "upstream-has-it"
    assert "line 10 fixed" not in (world.install / "app.py").read_text()
    assert [(c["name"], c["verdict"]) for c in doc["smoke"]["checks"]] == [("line10", "fail")]
    assert code == 4, doc


def test_a_fix_upstream_is_said_to_have_within_its_range_runs_its_check(world: World) -> None:
    """The same fix with no Applies-To (its variant is chosen on 2.0.0) was already checked:
    both shapes of one header say the same."""
    fix_with_check(world, upstream_fixed_in=">=2.0")
    assert pk(world, "apply").returncode == 0
    release_2(world)
    code, doc = pk_json(world, "update")
    assert doc["patches"][0]["outcome"] == "upstream-has-it"
    assert [(c["name"], c["verdict"]) for c in doc["smoke"]["checks"]] == [("line10", "fail")]
    assert code == 4, doc
