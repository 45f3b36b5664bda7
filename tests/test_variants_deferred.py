"""`check` reads a variant's diff only when it chooses the variant; `lint` asks git about every
variant in a few batched processes (issue 20, item 1).

What stays: a chosen variant that cannot be read is `invalid` with the reason a full read
gives; a variant whose header cannot be read makes its fix `invalid` whatever the version;
`apply` and `status` read every variant, as before; `lint` names every unreadable variant
with git's own reason. What changes, by design: `check` no longer reads the diffs of
variants it does not choose (lint does). Real git repositories, the CLI as a subprocess.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from helpers import GIT_ID, diff_of, make_repo, outcomes, patch_text, run_cli, run_json

LINES = "".join(f"line {n}\n" for n in range(1, 21))


def _variants(tmp_path: Path, broken: str) -> tuple[Path, Path]:
    """An install at v1.5 and a fix with variants for <1.0, 1.x and >=2.0; BROKEN names the
    one ("old", "current", "header" or "none") whose text is spoilt."""
    repo = make_repo(tmp_path / "repo", {"app.py": LINES}, tag="v1.5")
    diff = diff_of(repo, {"app.py": LINES.replace("line 3\n", "fixed\n")})
    spoilt = diff.replace("@@ -1,6 +1,6 @@", "@@ -1,60 +1,6 @@")
    assert spoilt != diff
    ranges = {"old": "<1.0", "current": ">=1.0,<2.0", "new": ">=2.0"}
    root = tmp_path / "ps"
    (root / "fix").mkdir(parents=True)
    for name, spec in ranges.items():
        text = patch_text(spoilt if name == broken else diff, applies_to=spec)
        if broken == "header" and name == "old":
            text = text.replace(f"Applies-To: {spec}", "Applies-To: not a range")
        (root / "fix" / f"{name}.patch").write_text(text)
    (root / "series").write_text("fix/\n")
    return repo, root


def _check(repo: Path, root: Path) -> tuple[int, dict]:
    return run_json("check", "--install", repo, "--patches", root, "--ref", "v1.5")


def _detail(document: dict) -> str:
    [patch] = document["targets"][0]["patches"] if "targets" in document else document["patches"]
    return patch.get("detail") or ""


def test_a_chosen_variant_that_cannot_be_read_is_invalid_with_its_reason(tmp_path: Path) -> None:
    repo, root = _variants(tmp_path, "current")
    code, document = _check(repo, root)
    assert (code, outcomes(document)) == (3, {"fix": "invalid"})
    assert "current.patch" in _detail(document) and "does not parse" in _detail(document)
    _, status = run_json("status", "--install", repo, "--patches", root)
    assert outcomes(status) == {"fix": "invalid"} and _detail(status) == _detail(document)


def test_a_variant_whose_header_cannot_be_read_stays_invalid_for_every_version(
    tmp_path: Path,
) -> None:
    repo, root = _variants(tmp_path, "header")
    code, document = _check(repo, root)
    assert (code, outcomes(document)) == (3, {"fix": "invalid"})
    assert "old.patch" in _detail(document)


def test_check_judges_the_chosen_variant_and_lint_and_apply_see_the_unchosen_one(
    tmp_path: Path,
) -> None:
    repo, root = _variants(tmp_path, "old")
    code, document = _check(repo, root)
    assert (code, outcomes(document)) == (0, {"fix": "applied"}), document
    linted = run_cli("lint", "--patches", root)
    assert linted.returncode == 2 and "old.patch" in linted.stdout
    _, status = run_json("status", "--install", repo, "--patches", root)
    assert outcomes(status) == {"fix": "invalid"}
    applied = run_cli("apply", "--install", repo, "--patches", root)
    assert applied.returncode == 3 and "fixed" not in (repo / "app.py").read_text()


def _git_counter(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose `git` is the real one, logging each run to a file."""
    real = subprocess.run(["which", "git"], capture_output=True, text=True, check=True)
    shim, log = tmp_path / "shim", tmp_path / "git.log"
    shim.mkdir()
    script = shim / "git"
    script.write_text(f'#!/bin/sh\necho "$1" >> "{log}"\nexec "{real.stdout.strip()}" "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return {**os.environ, **GIT_ID, "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}"}, log


def test_lint_asks_git_about_many_variants_in_a_few_processes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {f"m{n}.py": LINES for n in range(8)})
    root = tmp_path / "ps"
    series, unreadable = [], []
    for n in range(8):
        diff = diff_of(repo, {f"m{n}.py": LINES.replace("line 3\n", f"fix {n}\n")})
        for k in range(6):
            text = patch_text(diff, applies_to=f">={k},<{k + 1}")
            if (n, k) in ((1, 2), (6, 5)):  # git aborts on this mangled header (2.39)
                new_file = diff_of(repo, {f"m{n}.py": LINES, f"new{n}.py": "print()\n"})
                mangled = new_file.replace("new file mode", "lew file mode")
                text = patch_text(mangled, applies_to=f">={k},<{k + 1}")
                unreadable.append(f"fix{n}/v{k}.patch")
            (root / f"fix{n}").mkdir(parents=True, exist_ok=True)
            (root / f"fix{n}" / f"v{k}.patch").write_text(text)
        series.append(f"fix{n}/")
    (root / "series").write_text("\n".join(series) + "\n")
    env, log = _git_counter(tmp_path)
    linted = subprocess.run(
        [sys.executable, "-m", "patchkeeper", "lint", "--patches", str(root)],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    named = [line for line in linted.stdout.splitlines() if "git cannot read the diff" in line]
    assert [line.split(":")[0].removeprefix(f"{root}/") for line in named] == unreadable
    applies = log.read_text().split().count("apply")
    assert linted.returncode == 2 and applies <= 20, (applies, linted.stdout)
