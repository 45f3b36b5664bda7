"""Patch set parsing: header styles, variants, versions; against files on disk."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from patchkeeper.patchset.load import inspect_patch_set, load_patch_set
from patchkeeper.patchset.parse import parse_patch_file
from patchkeeper.patchset.version_sources import TagNames
from patchkeeper.patchset.versions import tag_to_version
from tests.helpers import diff_of, git, make_repo, patch_text, run_cli, run_json, write_patch_set

ROOT = Path(__file__).resolve().parent.parent
LINES = "".join(f"line {n}\n" for n in range(1, 21))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "up", {"app.py": LINES}, tag="v1.0.0")


def test_format_patch_file_is_accepted(repo: Path, tmp_path: Path) -> None:
    (repo / "app.py").write_text(LINES.replace("line 5\n", "line 5 fixed\n"))
    git(repo, "commit", "-qam", "Fix line five\n\nApplies-To: >=1.0\nSmoke: ledger_adoption")
    out = tmp_path / "mail"
    git(repo, "format-patch", "-1", "-o", str(out))
    (mail,) = out.iterdir()
    parsed, problems = parse_patch_file(mail)
    assert problems == [] and parsed is not None
    assert parsed.description == "Fix line five"
    assert str(parsed.applies_to) == ">=1.0"
    assert parsed.smoke == ("ledger_adoption",)
    assert parsed.files == ("app.py",)
    assert not parsed.diff.rstrip().endswith(b"-- ")  # the mail signature is not diff


def test_a_renamed_file_s_paths_come_in_the_diff_s_order_whatever_the_hash_seed(
    repo: Path, tmp_path: Path
) -> None:
    """A rename section touches its old path, then its new one, in every process: the order
    once followed the hash seed (a set), so two runs of one command could differ."""
    git(repo, "mv", "app.py", "main.py")
    git(repo, "commit", "-qm", "rename")
    diff = git(repo, "diff", "-M", "HEAD~1", "HEAD")
    patch = tmp_path / "rename.patch"
    patch.write_text("Description: rename\n---\n" + diff)
    read = "from pathlib import Path; from patchkeeper.patchset.parse import parse_patch_file; "
    read += f"print(parse_patch_file(Path({str(patch)!r}))[0].files)"
    for seed in range(4):  # seeds 0 to 2 put the new path first in a set of the two
        env = {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": str(ROOT)}
        proc = subprocess.run([sys.executable, "-c", read], env=env, capture_output=True, text=True)
        assert proc.stdout.strip() == "('app.py', 'main.py')", (seed, proc.stderr[-300:])


def test_dep3_continuation_lines_and_free_text(repo: Path, tmp_path: Path) -> None:
    diff = diff_of(repo, {"app.py": LINES.replace("line 5\n", "line 5 fixed\n")})
    text = (
        "Description: Fix line five\n more about it\n .\n and more\n"
        "Origin: vendor\nX-Ticket: OPS-1\n\nFree text a person wrote.\n---\n" + diff
    )
    path = tmp_path / "fix.patch"
    path.write_text(text)
    parsed, problems = parse_patch_file(path)
    assert problems == [] and parsed is not None
    assert parsed.description.startswith("Fix line five\nmore about it")


def test_series_comments_p1_and_name(repo: Path, tmp_path: Path) -> None:
    diff = diff_of(repo, {"app.py": LINES.replace("line 5\n", "line 5 fixed\n")})
    root = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(diff)})
    (root / "series").write_text("# the fixes\n\nfix.patch -p1  # trailing comment\n")
    patch_set = load_patch_set(root)
    assert [p.name for p in patch_set.patches] == ["fix"]


def test_unsupported_series_option(repo: Path, tmp_path: Path) -> None:
    diff = diff_of(repo, {"app.py": LINES.replace("line 5\n", "line 5 fixed\n")})
    root = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(diff)})
    (root / "series").write_text("fix.patch -p0\n")
    _, problems = inspect_patch_set(root)
    assert [str(p).split(": ", 1)[1] for p in problems] == ["unsupported option '-p0'"]


@pytest.mark.parametrize(
    ("first", "second", "overlap"),
    [
        (">=0.21,<0.23", ">=0.23", False),
        (">=0.21,<0.23", ">=0.22.9", True),
        ("==0.22.*", ">=0.23", False),
        ("==0.22.*", ">0.22.4", True),
        ("~=0.22.1", ">=0.23", False),
        ("~=0.22.1", "<0.22.1", False),
        ("<1", ">=1", False),
        ("<=1", ">=1", True),
        ("!=0.22.2", "==0.22.2", False),
    ],
)
def test_variant_overlap(
    first: str, second: str, overlap: bool, repo: Path, tmp_path: Path
) -> None:
    diff = diff_of(repo, {"app.py": LINES.replace("line 5\n", "line 5 fixed\n")})
    root = write_patch_set(
        tmp_path / "ps",
        {
            "fix/a.patch": patch_text(diff, applies_to=first),
            "fix/b.patch": patch_text(diff, applies_to=second),
        },
    )
    _, problems = inspect_patch_set(root)
    assert any("overlaps" in p.message for p in problems) is overlap


@pytest.mark.parametrize(
    ("described", "version"),
    [
        ("v0.21.5", "0.21.5"),
        ("v0.21.5-3698-g6f7a799", "0.21.5+3698.g6f7a799"),
        ("v2026.6.19", "2026.6.19"),
        ("v2026.6.19-2-gabcdef0", "2026.6.19+2.gabcdef0"),
        ("v0.22.0-canary.20261001120000", "0.22.0.dev20261001120000"),
        ("v0.22.0-canary.20261001120000-5-g1234567", "0.22.0.dev20261001120000+5.g1234567"),
    ],
)
def test_describe_to_pep440(described: str, version: str) -> None:
    assert TagNames().described(described) == Version(version)


def test_canary_sorts_before_its_release() -> None:
    canary = tag_to_version("v0.22.0-canary.20261001120000")
    assert canary is not None and canary < Version("0.22.0") and canary > Version("0.21.9")


def test_unknown_version_only_unversioned_patches_apply(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "up", {"app.py": LINES})  # no tag at all
    ranged = diff_of(repo, {"app.py": LINES.replace("line 5\n", "line 5 x\n")})
    plain = diff_of(repo, {"app.py": LINES.replace("line 15\n", "line 15 x\n")})
    root = write_patch_set(
        tmp_path / "ps",
        {"ranged.patch": patch_text(ranged, applies_to=">=1.0"), "plain.patch": patch_text(plain)},
    )
    assert run_cli("apply", "--install", repo, "--patches", root).returncode == 5
    code, doc = run_json("status", "--install", repo, "--patches", root)
    assert code == 5  # never green: the ranged fix may be missing and nobody can tell
    assert doc["install"]["version"] is None
    assert {p["name"]: p["outcome"] for p in doc["patches"]} == {
        "ranged": "not-applicable",
        "plain": "already-applied",
    }
    assert doc["patches"][0]["undecided"] is True
    assert "unknown" in doc["patches"][0]["detail"]


def test_shallow_clone_reads_its_version(tmp_path: Path) -> None:
    upstream = make_repo(tmp_path / "up", {"app.py": LINES}, tag="v0.21.5")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{upstream}", str(clone))
    assert git(clone, "rev-parse", "--is-shallow-repository") == "true"
    root = write_patch_set(
        tmp_path / "ps",
        {
            "fix.patch": patch_text(
                diff_of(upstream, {"app.py": LINES + "x\n"}), applies_to="~=0.21.0"
            )
        },
    )
    _, doc = run_json("status", "--install", clone, "--patches", root)
    assert doc["install"]["version"] == "0.21.5"
    assert doc["patches"][0]["outcome"] == "pending"
    assert doc["patches"][0]["would"] == "applied"


def test_remote_tags_are_adopted_only_for_commits_already_here(tmp_path: Path) -> None:
    from patchkeeper.install.checkout.version_probes import adopt_remote_tags

    upstream = make_repo(tmp_path / "up", {"app.py": LINES}, tag="v1.0.0")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{upstream}", str(clone))
    (upstream / "app.py").write_text(LINES + "two\n")
    git(upstream, "commit", "-qam", "two")
    git(upstream, "tag", "-a", "-m", "release", "v2.0.0")
    git(upstream, "checkout", "-q", "-b", "side", "v1.0.0")
    (upstream / "side.py").write_text("side\n")
    git(upstream, "add", "side.py")
    git(upstream, "commit", "-qm", "side")
    git(upstream, "tag", "v1.5.0")  # a commit the clone never fetches
    git(clone, "fetch", "-q", "origin", "main")
    git(clone, "merge", "-q", "--ff-only", "origin/main")
    assert git(clone, "tag", "--list") == "v1.0.0"

    shallow_before = (clone / ".git/shallow").read_text()
    assert adopt_remote_tags(clone) == ["v2.0.0"]
    assert git(clone, "describe", "--tags") == "v2.0.0"
    assert git(clone, "tag", "--list").split() == ["v1.0.0", "v2.0.0"]
    assert git(clone, "cat-file", "-t", "v2.0.0") == "tag"  # the annotated tag, as upstream
    assert (clone / ".git/shallow").read_text() == shallow_before  # no history came along
    assert adopt_remote_tags(clone) == []
    git(clone, "fetch", "-q", "--tags", "origin")  # the operator's own fetch still agrees
