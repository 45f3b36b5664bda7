"""Upstream took it, by content (issue 27): a patch that neither applies nor reverses is
measured against the target, and one whose lines upstream holds says so, in every format.

The patch is a plain diff (as quilt and the distributions write them: no blob for a 3-way
merge). Upstream reworded the context line next to each block, so neither the forward nor the
reverse apply is exact; the outcome stays `conflict` (exit 3): evidence, never proof.
"""

from __future__ import annotations

import difflib
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.helpers import commit_files, make_repo, run_cli, run_json, write_patch_set

BASE = [f"\tstep_{n}(request, {n});" for n in range(1, 41)]
GUARD_1 = ["\tif (request->length > LIMIT_ONE)", "\t\treturn reject(request, 1);"]
GUARD_2 = ["\tif (request->flags & FLAG_UNSAFE)", "\t\treturn reject(request, 2);"]


def _text(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def _fixed(lines: list[str]) -> list[str]:
    """LINES with both guards: after step 10 and after step 30."""
    return lines[:10] + GUARD_1 + lines[10:30] + GUARD_2 + lines[30:]


def _reworded(lines: list[str], *numbers: int) -> list[str]:
    return [line.replace("request", "req") if n in numbers else line for n, line in
            enumerate(lines, 1)]  # fmt: skip


def _world(tmp_path: Path) -> tuple[Path, Path]:
    repo = make_repo(tmp_path / "up", {"src/req.c": _text(BASE)}, tag="v1")
    plain = "".join(
        difflib.unified_diff(
            _text(BASE).splitlines(keepends=True),
            _text(_fixed(BASE)).splitlines(keepends=True),
            "pkg.orig/src/req.c",
            "pkg/src/req.c",
        )
    )
    patches = write_patch_set(tmp_path / "ps", {"guards.patch": f"Description: x\n---\n{plain}"})
    # v2: upstream took both guards, and reworded the line just before each.
    commit_files(repo, {"src/req.c": _text(_reworded(_fixed(BASE), 10, 32))}, "took", tag="v2")
    # v3: the same lines reworded, no guard: a port is needed.
    commit_files(repo, {"src/req.c": _text(_reworded(BASE, 10, 30))}, "reword", tag="v3")
    # v4: only the outermost context line of each hunk reworded: quilt's fuzz would apply it.
    commit_files(repo, {"src/req.c": _text(_reworded(BASE, 8, 28))}, "reword", tag="v4")
    return repo, patches


def _patch_on(doc: dict, ref: str) -> dict:
    return next(t["patches"][0] for t in doc["targets"] if t["ref"] == ref)


def test_upstream_appears_to_have_it_in_json_and_text(tmp_path: Path) -> None:
    repo, patches = _world(tmp_path)
    where = ("--install", repo, "--patches", patches)
    code, doc = run_json("check", *where, "--ref", "v2", "--ref", "v3", "--ref", "v4")
    assert code == 3
    took, port, fuzz = (_patch_on(doc, ref) for ref in ("v2", "v3", "v4"))
    assert [p["outcome"] for p in (took, port, fuzz)] == ["conflict"] * 3
    measured = took["upstream_took"]
    assert measured["appears"] and measured["qualifier"] == (
        "upstream appears to have this (2 of 2 hunks)"
    )
    assert [(h["hunk"], h["added"], h["added_present"], h["held"]) for h in
            measured["per_hunk"]] == [(1, 2, 2, True), (2, 2, 2, True)]  # fmt: skip
    assert took["detail"].endswith("; upstream appears to have this (2 of 2 hunks)")
    assert not measured["fuzz_applies"]  # the reworded line is next to each block
    assert not port["upstream_took"]["appears"] and "appears" not in port["detail"]
    assert port["upstream_took"]["hunks_held"] == 0
    assert fuzz["upstream_took"]["fuzz_applies"] and not fuzz["upstream_took"]["appears"]
    text = run_cli("check", *where, "--ref", "v2", "--ref", "v4").stdout
    assert "upstream appears to have this (2 of 2 hunks): 4 of 4 added line(s) present" in text
    assert "src/req.c: hunk #2 held (2/2 added present" in text
    assert text.count("hint: quilt's fuzz (GNU patch --fuzz=2) would apply it") == 1


def test_junit_and_annotations_carry_the_qualifier(tmp_path: Path) -> None:
    repo, patches = _world(tmp_path)
    where = ("--install", repo, "--patches", patches, "--ref", "v2")
    out = tmp_path / "junit.xml"
    assert run_cli("check", *where, "--junit", out).returncode == 3
    [failure] = ET.parse(out).getroot().iter("failure")
    assert failure.get("message", "").endswith("upstream appears to have this (2 of 2 hunks)")
    assert "hunk #1 held" in (failure.text or "")
    github = run_cli("check", *where, "--format", "github").stdout
    assert "does not apply (upstream appears to have this (2 of 2 hunks))" in github


@pytest.mark.skipif(shutil.which("patch") is None, reason="GNU patch is not installed")
def test_the_fuzz_hint_is_gnu_patchs_own_answer(tmp_path: Path) -> None:
    """`git apply -C1`, which the hint asks, agrees with GNU patch --fuzz=2 on each ref."""
    repo, patches = _world(tmp_path)
    diff = (patches / "guards.patch").read_bytes()
    _, doc = run_json(
        "check", "--install", repo, "--patches", patches, "--ref", "v2", "--ref", "v3",
        "--ref", "v4",
    )  # fmt: skip
    for ref in ("v2", "v3", "v4"):
        subprocess.run(["git", "checkout", "-q", ref], cwd=repo, check=True)
        gnu = [
            subprocess.run(
                ["patch", "--dry-run", "-p1", "--batch", f"--fuzz={fuzz}"],
                cwd=repo, input=diff, capture_output=True,
            ).returncode == 0
            for fuzz in (0, 2)
        ]  # fmt: skip
        assert gnu == [False, _patch_on(doc, ref)["upstream_took"]["fuzz_applies"]], ref


def test_a_hunk_upstream_holds_but_for_one_line_counts_as_held(tmp_path: Path) -> None:
    """Upstream took both blocks, each with one of its ten lines written its own way: 18 of 20
    lines, so upstream appears to have it, and each hunk is held by the same measure (the
    qualifier said `0 of 2 hunks` while saying upstream appears to have it)."""
    blocks = [[f"\tguard_{k}_{n}(request, LIMIT_{k}_{n});" for n in range(10)] for k in (1, 2)]
    fixed = BASE[:10] + blocks[0] + BASE[10:30] + blocks[1] + BASE[30:]
    repo = make_repo(tmp_path / "up", {"src/req.c": _text(BASE)}, tag="v1")
    diff = "".join(
        difflib.unified_diff(
            _text(BASE).splitlines(keepends=True), _text(fixed).splitlines(keepends=True),
            "pkg.orig/src/req.c", "pkg/src/req.c",
        )
    )  # fmt: skip
    patches = write_patch_set(tmp_path / "ps", {"guards.patch": f"Description: x\n---\n{diff}"})
    own_way = [line.replace("_4(", "_4_v2(") for line in fixed]  # one line of each block
    commit_files(repo, {"src/req.c": _text(own_way)}, "took", tag="v2")
    code, doc = run_json("check", "--install", repo, "--patches", patches, "--ref", "v2")
    assert code == 3
    measured = _patch_on(doc, "v2")["upstream_took"]
    assert [(h["added"], h["added_present"], h["held"]) for h in measured["per_hunk"]] == [
        (10, 9, True), (10, 9, True)
    ]
    assert measured["qualifier"] == "upstream appears to have this (2 of 2 hunks)"
