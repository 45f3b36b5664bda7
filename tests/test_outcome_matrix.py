"""The exit code of `patchkeeper update` over every combination (issue 8's outcome matrix).

patch outcome at the new release  x  leftover before the update  x  smoke verdict  x  updater
    applied, upstream-has-it,          none, a parked stash of         pass, fail,      ok, fails
    conflict, expired                  the user's content              error

Each cell is a real run: a generic upstream (v1.0.0 -> v1.1.0), a clone as the install with
the patch applied, a real stash, a real smoke check and a real updater command. The expected
code is the README's contract, written out here independently of the code: the most serious
(3 > 4 > 5) of
- 3 when a patch conflicts at the new release;
- 4 when the smoke check fails or cannot check (it runs on the tree the install ends with,
  rolled back or not);
- 5 when the update did not happen (the updater failed: the tree is rolled back, and nothing
  is judged against a release that never came), a fix expired, or a stash of the user's is
  parked;
and exit 0 only when none of those holds.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import GIT_ID, commit_files, diff_of, git, make_repo, patch_text, write_patch_set

LINES = "".join(f"line {n}\n" for n in range(1, 31))
FIX = ("line 10\n", "line 10 fixed\n")

RELEASES = {  # what v1.1.0 does to app.py, so the patch has that outcome there
    "applied": LINES.replace("line 25\n", "line 25 upstream\n"),
    "upstream-has-it": LINES.replace(*FIX),
    "conflict": LINES.replace("line 10\n", "line 10 reworded upstream\n"),
    "expired": LINES.replace("line 25\n", "line 25 upstream\n"),
}
SMOKE = {
    "pass": 'print(json.dumps({"check": "probe", "verdict": "pass", "steps": []}))',
    "fail": 'print(json.dumps({"check": "probe", "verdict": "fail", "steps": []}))',
    "error": "raise SystemExit(3)",
}
UPDATERS = {"ok": ["git", "merge", "-q", "--ff-only", "v1.1.0"], "fails": ["false"]}
CELLS = list(itertools.product(RELEASES, ("none", "parked"), SMOKE, UPDATERS))


def expected(outcome: str, leftover: str, smoke: str, updater: str) -> int:
    codes = []
    if smoke != "pass":  # run on whatever tree the install ends with, rolled back or not
        codes.append(4)
    if updater == "fails":
        codes.append(5)  # nothing was judged against a new release: it never came
    else:
        codes += [3] if outcome == "conflict" else []
        codes += [5] if outcome == "expired" or leftover == "parked" else []
    return min(codes) if codes else 0  # 3 > 4 > 5 in seriousness: the smallest wins


@pytest.fixture(scope="module")
def upstreams(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One upstream per patch outcome, built once: v1.0.0, then v1.1.0."""
    root = tmp_path_factory.mktemp("upstreams")
    built = {}
    for outcome, app in RELEASES.items():
        repo = make_repo(root / outcome, {"app.py": LINES, "notes.txt": "notes\n"}, "v1.0.0")
        commit_files(repo, {"app.py": app}, "release 1.1.0", tag="v1.1.0")
        git(repo, "checkout", "-q", "v1.0.0")
        built[outcome] = repo
    return built


def build_cell(tmp_path: Path, upstream: Path, outcome: str, smoke: str, updater: str) -> Path:
    install = tmp_path / "install"
    shutil.copytree(upstream, install)
    git(install, "checkout", "-q", "-B", "main", "v1.0.0")
    applies_to = ">=1.0,<1.1" if outcome == "expired" else ">=1.0"
    text = patch_text(diff_of(install, {"app.py": LINES.replace(*FIX)}), applies_to=applies_to)
    config = (
        f"[install]\npython = {json.dumps(sys.executable)}\n"
        f"[update]\ncommand = {json.dumps(UPDATERS[updater])}\ntimeout = 60\n"
        '[smoke]\nchecks = ["probe"]\ntimeout = 30\n'
    )
    patches = write_patch_set(tmp_path / "patches", {"fix.patch": text}, config)
    (patches / "smoke").mkdir()
    (patches / "smoke" / "probe.py").write_text(f"import json\n{SMOKE[smoke]}\n")
    return patches


def pk(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "patchkeeper", *map(str, args)],
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ID, "NO_COLOR": "1"},
        check=False,
    )


@pytest.mark.parametrize(("outcome", "leftover", "smoke", "updater"), CELLS)
def test_exit_code_of_every_cell(
    upstreams: dict[str, Path],
    tmp_path: Path,
    outcome: str,
    leftover: str,
    smoke: str,
    updater: str,
) -> None:
    patches = build_cell(tmp_path, upstreams[outcome], outcome, smoke, updater)
    install = tmp_path / "install"
    where = ("--install", install, "--patches", patches)
    assert pk("apply", "--no-smoke", *where).returncode == 5  # setup (written, not proven)
    if leftover == "parked":  # what a `hermes update` that could not restore leaves
        (install / "notes.txt").write_text("the operator's own notes\n")
        git(install, "stash", "push", "-q", "-m", "hermes-update-autostash-20261201-120000")

    proc = pk("update", "--json", *where)
    document = json.loads(proc.stdout)
    want = expected(outcome, leftover, smoke, updater)
    assert proc.returncode == document["exit_code"] == want, (
        f"{outcome} x {leftover} x {smoke} x {updater}: exit {proc.returncode}, want {want}\n"
        + json.dumps(
            {k: document.get(k) for k in ("patches", "attention", "notes", "not_done", "error")},
            indent=1,
        )[:3000]
    )
    if updater == "fails":  # rolled back: the old release, and said so
        assert document["update_done"] is False and document["not_done"]
        assert git(install, "describe", "--tags") == "v1.0.0"
    if want == 0:  # the sentence itself: the fix in place, the update done, nothing parked
        assert document["update_done"] is True
        assert git(install, "describe", "--tags") == "v1.1.0"
        assert FIX[1] in (install / "app.py").read_text()
        assert git(install, "stash", "list") == ""
