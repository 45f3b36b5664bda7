"""A fix that was in place is never dropped quietly (issue 8, cases 3 and 7).

- Its Applies-To no longer covers the version: `expired`, exit 5, with the command that
  retires it; unless the patch set says upstream has it (then `upstream-has-it`, exit 0).
- The version cannot be told: `undecided`, exit 5, and nothing already written is taken out.

Real git repositories; the version comes from the upstream's tags (`git describe`).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from helpers import (
    commit_files,
    diff_of,
    git,
    make_repo,
    outcomes,
    patch_text,
    run_cli,
    run_json,
    tree_snapshot,
    write_patch_set,
)

LINES = "".join(f"line {n}\n" for n in range(1, 21))
FIXED = LINES.replace("line 5\n", "line 5 fixed\n")


def world(tmp_path: Path, **fields: str) -> tuple[Path, Path, Path]:
    """Upstream v0.21.0 and v0.22.0 (app.py unchanged), an install at v0.21.0, one patch."""
    upstream = make_repo(tmp_path / "upstream", {"app.py": LINES}, tag="v0.21.0")
    commit_files(upstream, {"other.py": "x = 1\n"}, "0.22", tag="v0.22.0")
    install = tmp_path / "install"
    git(tmp_path, "clone", "-q", str(upstream), str(install))
    git(install, "checkout", "-q", "v0.21.0")
    text = patch_text(diff_of(install, {"app.py": FIXED}), "Fix line 5", **fields)
    patches = write_patch_set(tmp_path / "patches", {"fix.patch": text})
    return upstream, install, patches


def where(install: Path, patches: Path) -> tuple[str, ...]:
    return ("--install", str(install), "--patches", str(patches))


def test_a_fix_past_its_range_is_expired_not_quietly_dropped(tmp_path: Path) -> None:
    _, install, patches = world(tmp_path, applies_to=">=0.21,<0.22")
    assert run_cli("apply", *where(install, patches)).returncode == 0
    git(install, "stash", "-q")  # what `hermes update` does to local edits
    git(install, "checkout", "-q", "v0.22.0")

    code, document = run_json("status", *where(install, patches))
    assert code == 5, document
    assert outcomes(document) == {"fix": "expired"}
    [fix] = document["patches"]
    assert "0.22.0" in fix["detail"]

    text = run_cli("apply", *where(install, patches))
    assert text.returncode == 5, text.stdout
    [line] = [line for line in text.stdout.splitlines() if line.startswith("note: fix expired")]
    assert "`patchkeeper unapply fix --install " in line
    before = tree_snapshot(install)
    assert run_cli("apply", *where(install, patches)).returncode == 5, "still not green"
    assert tree_snapshot(install) == before, "an expired fix is never written nor removed"

    # Retiring it, as the line says, is what makes the install green again.
    command = shlex.split(line.split("`")[1])
    assert command == ["patchkeeper", "unapply", "fix", *where(install, patches)]
    retired = run_cli(*command[1:])
    assert retired.returncode == 0, retired.stdout + retired.stderr
    code, document = run_json("status", *where(install, patches))
    assert (code, outcomes(document)) == (0, {"fix": "not-applicable"})


def test_upstream_having_it_by_content_is_not_expiry(tmp_path: Path) -> None:
    _, install, patches = world(
        tmp_path, applies_to=">=0.21,<0.22", upstream_has="other.py: x = 1"
    )
    assert run_cli("apply", *where(install, patches)).returncode == 0
    git(install, "stash", "-q")
    git(install, "checkout", "-q", "v0.22.0")
    code, document = run_json("status", *where(install, patches))
    assert (code, outcomes(document)) == (0, {"fix": "upstream-has-it"}), document


def test_a_patch_never_in_place_outside_its_range_is_not_applicable(tmp_path: Path) -> None:
    _, install, patches = world(tmp_path, applies_to=">=0.22")
    code, document = run_json("status", *where(install, patches))
    assert (code, outcomes(document)) == (0, {"fix": "not-applicable"})


def test_an_unknown_version_takes_nothing_out(tmp_path: Path) -> None:
    _, install, patches = world(tmp_path, applies_to=">=0.21,<0.22")
    assert run_cli("apply", *where(install, patches)).returncode == 0
    for tag in ("v0.21.0", "v0.22.0"):
        git(install, "tag", "-d", tag)
    before = tree_snapshot(install)

    code, document = run_json("apply", *where(install, patches))
    assert code == 5, document
    [fix] = document["patches"]
    assert fix["outcome"] == "not-applicable" and fix["undecided"] is True
    assert (install / "app.py").read_text() == FIXED, "the fix written before stays"
    assert tree_snapshot(install) == before
    code, document = run_json("status", *where(install, patches))
    assert code == 5 and document["patches"][0]["undecided"] is True


def test_a_fix_the_operator_committed_is_not_taken_for_upstream(tmp_path: Path) -> None:
    """After `git commit -a` of the patched tree the fix is in HEAD, but HEAD is the
    operator's own commit, on no upstream branch or tag: never `upstream-has-it`."""
    _, install, patches = world(tmp_path, applies_to=">=0.21")
    git(install, "switch", "-q", "-c", "local")
    assert run_cli("apply", *where(install, patches)).returncode == 0
    git(install, "commit", "-q", "-am", "keep the fix")
    code, document = run_json("status", *where(install, patches))
    assert (code, outcomes(document)) == (0, {"fix": "already-applied"}), document
    assert "retire" not in document["patches"][0]["detail"]

    # The same content on an upstream tag is upstream's.
    git(install, "tag", "v0.21.1")
    code, document = run_json("status", *where(install, patches))
    assert outcomes(document) == {"fix": "upstream-has-it"}


def test_update_past_a_fix_range_is_exit_5_and_names_the_retire_command(tmp_path: Path) -> None:
    _, install, patches = world(tmp_path, applies_to=">=0.21,<0.22")
    (patches / "patchkeeper.toml").write_text(
        '[update]\ncommand = ["git", "checkout", "-q", "v0.22.0"]\n'
    )
    assert run_cli("apply", *where(install, patches)).returncode == 0
    code, document = run_json("update", *where(install, patches))
    assert code == 5, document
    assert document["install"]["version_after"] == "0.22.0"
    assert outcomes(document) == {"fix": "expired"}
    [line] = [item for item in document["attention"] if item.startswith("fix expired")]
    retire = shlex.split(line.split("`")[1])
    assert retire == ["patchkeeper", "unapply", "fix", *where(install, patches)]
    assert run_cli(*retire[1:]).returncode == 0
    code, document = run_json("status", *where(install, patches))
    assert (code, outcomes(document)) == (0, {"fix": "not-applicable"})
