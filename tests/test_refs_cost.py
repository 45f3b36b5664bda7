"""What `check` spends per ref and per variant, counted (never timed; issue 30).

- A tag whose tree was judged already, with a version that chooses alike, costs no git
  process, no scratch folder and no work per patch: it shares the first ref's results, and
  only the fixes whose choice can depend on the version are asked about it.
- `check --format json` encodes with the C encoder, and the outcomes of refs that share
  their results are encoded once, a ref's written as one text; the bytes are
  `json.dumps(document, indent=2)`'s.
- `check --tags` takes each tag's commit and tree from the listing that chose it: no git
  process asks again.
- `check`'s text report, exit code, GitHub annotations, JUnit cases and metrics look at a
  results list that tags share once.
- A variant `check` does not choose is read up to where its diff starts, never whole.

Real git repositories and patch files in tmp_path; the counters wrap patchkeeper's own
functions (git still runs).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from patchkeeper.engine import checking
from patchkeeper.install.plumbing import git as git_module
from patchkeeper.patchset.load import load_patch_set
from patchkeeper.patchset.model import Patch
from tests.helpers import (
    GIT_ID,
    diff_of,
    git,
    make_repo,
    outcomes,
    patch_text,
    run_cli,
    run_json,
)

LINES = "".join(f"line {n}\n" for n in range(1, 31))
SAME_TAGS = 12


def _set(tmp_path: Path) -> tuple[Path, Path]:
    """An install tagged v1.0 and SAME_TAGS tags after it with the very same tree; three plain
    fixes and one with a variant for <1.0 and one for >=1.0."""
    files = {f"f{n}.py": LINES.replace("line", f"f{n}") for n in range(4)}
    repo = make_repo(tmp_path / "repo", files, tag="v1.0")
    for n in range(1, SAME_TAGS + 1):
        git(repo, "commit", "-q", "--allow-empty", "-m", f"release 1.{n}: no change")
        git(repo, "tag", f"v1.{n}")
    root = tmp_path / "ps"
    (root / "varied").mkdir(parents=True)
    names = []
    for n in range(3):
        edit = {f"f{n}.py": files[f"f{n}.py"].replace(f"f{n} 9\n", f"f{n} 9 fixed\n")}
        (root / f"fix{n}.patch").write_text(patch_text(diff_of(repo, edit)))
        names.append(f"fix{n}.patch")
    edit = {"f3.py": files["f3.py"].replace("f3 20\n", "f3 20 fixed\n")}
    for name, spec in (("old", "<1.0"), ("new", ">=1.0")):
        text = patch_text(diff_of(repo, edit), applies_to=spec)
        (root / "varied" / f"{name}.patch").write_text(text)
    (root / "series").write_text("\n".join([*names, "varied/"]) + "\n")
    return repo, root


def _counting(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    """Count the calls of OWNER.NAME (it still runs)."""
    calls = [0]
    real = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def _costs(monkeypatch: pytest.MonkeyPatch, repo: Path, root: Path, refs: list[str]) -> dict:
    """What checking REFS cost: git processes, folders made, patches asked for their variant
    choice, classifications; and the reports."""
    patch_set = load_patch_set(root, deferred=True)
    with monkeypatch.context() as patched:
        costs = {
            "git": _counting(patched, git_module, "run"),
            "folders": _counting(patched, os, "mkdir"),
            "choices": _counting(patched, Patch, "candidates"),
            "classify": _counting(patched, checking, "classify"),
        }
        reports = checking.check_refs(repo, patch_set, refs)
    return {name: calls[0] for name, calls in costs.items()} | {"reports": reports}


def test_a_tag_whose_tree_was_judged_costs_no_work_per_patch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, root = _set(tmp_path)
    one = _costs(monkeypatch, repo, root, ["v1.0"])
    tags = ["v1.0", *(f"v1.{n}" for n in range(1, SAME_TAGS + 1))]
    many = _costs(monkeypatch, repo, root, tags)
    assert (many["git"], many["folders"], many["classify"]) == (
        one["git"], one["folders"], one["classify"],
    )  # fmt: skip
    # The one fix with variants is asked twice per extra tag (its choice, the paths it
    # touches); the three plain fixes are not asked again.
    assert many["choices"] - one["choices"] <= 2 * SAME_TAGS
    first, *rest = many["reports"]
    assert all(report.results is first.results for report in rest)
    alone = checking.check_refs(repo, load_patch_set(root), tags, reuse=False, batch=False)
    assert [[(r.name, r.outcome, r.variant) for r in report.results] for report in alone] == [
        [(r.name, r.outcome, r.variant) for r in report.results] for report in many["reports"]
    ]


def test_tags_are_resolved_by_the_listing_that_chose_them(tmp_path: Path) -> None:
    """`--tags` lists the tags with their commits and trees (one `for-each-ref`), so checking
    every one of them starts no more git processes than checking one `--ref`: no `cat-file`
    asks again. A tag object counts too (its commit and tree are the peeled ones)."""
    repo, root = _set(tmp_path)
    git(repo, "commit", "-q", "--allow-empty", "-m", "release 1.99: no change")
    git(repo, "tag", "-a", "-m", "an annotated release", "v1.99")

    def traced(*refs: str) -> tuple[list[str], dict[str, Any]]:
        trace = tmp_path / "trace"
        trace.unlink(missing_ok=True)
        proc = subprocess.run(
            [sys.executable, "-m", "patchkeeper", "check", "--json", "--install", str(repo),
             "--patches", str(root), *refs],
            capture_output=True, text=True, check=False,
            env={**os.environ, **GIT_ID, "GIT_TRACE": str(trace)},
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
        started = re.findall(r"trace: built-in: git (\S+)", trace.read_text())
        return started, json.loads(proc.stdout)

    one, _ = traced("--ref", "v1.0")
    every, document = traced("--tags", "v1.*")
    assert len(document["targets"]) == SAME_TAGS + 2
    assert "cat-file" in one and "cat-file" not in every
    assert len(every) == len(one), (every, one)
    for target in document["targets"]:
        assert target["commit"] == git(repo, "rev-parse", f"{target['ref']}^{{commit}}")
    # A tag named as --ref as well is read as git reads the name (cat-file), as before.
    both, document = traced("--ref", "v1.99", "--tags", "v1.*")
    assert both.count("cat-file") == 1 and len(document["targets"]) == SAME_TAGS + 2


def test_a_listed_tag_is_judged_at_the_version_of_the_commit_the_listing_chose(
    tmp_path: Path,
) -> None:
    """A tag whose short name git reads as another ref (`tags/v1.0` is refs/tags/v1.0 to
    `git describe tags/v1.0`, not refs/tags/tags/v1.0) is judged on the commit --tags listed
    and at that commit's version: never one commit's tree at another commit's version."""
    before = "".join(f"line {n}\n" for n in range(30))
    repo = make_repo(tmp_path / "repo", {"f.txt": before}, tag="v1.0")
    old = diff_of(repo, {"f.txt": before.replace("line 5\n", "line 5 fixed\n")})
    after = before.replace("line 4\n", "line 4 in 2.0\n").replace("line 6\n", "line 6 in 2.0\n")
    (repo / "f.txt").write_text(after)
    git(repo, "commit", "-q", "-am", "2.0")
    git(repo, "tag", "-a", "-m", "2.0", "v2.0")
    git(repo, "tag", "tags/v1.0")  # on 2.0's commit
    new = diff_of(repo, {"f.txt": after.replace("line 5\n", "line 5 fixed\n")})
    root = tmp_path / "ps"
    (root / "fix").mkdir(parents=True)
    (root / "fix" / "old.patch").write_text(patch_text(old, applies_to="<2.0"))
    (root / "fix" / "new.patch").write_text(patch_text(new, applies_to=">=2.0"))
    (root / "series").write_text("fix\n")
    code, document = run_json("check", "--install", repo, "--patches", root, "--tags", "tags/*")
    [target] = document["targets"]
    assert target["commit"] == git(repo, "rev-parse", "refs/tags/tags/v1.0")
    assert target["version"] == "2.0"  # git describe of that commit: v2.0 (was 1.0: v1.0's)
    assert [(p["outcome"], p["variant"]) for p in target["patches"]] == [
        ("applied", "fix/new.patch")
    ]
    assert code == 0  # was 3: the <2.0 variant tried on 2.0's tree, a conflict


def test_a_tag_of_a_tag_is_checked_at_its_commit_not_left_out(tmp_path: Path) -> None:
    """`git tag -a v3.0 v2.0` on an annotated v2.0 names a tag object, whose own target
    for-each-ref's one level of peeling does not reach: such a release is checked at the
    commit it ends at (it was quietly left out of --tags), a tag ending at a tree is not."""
    before = "".join(f"line {n}\n" for n in range(30))
    repo = make_repo(tmp_path / "repo", {"f.txt": before}, tag="v1.0")
    fix = diff_of(repo, {"f.txt": before.replace("line 5\n", "line 5 fixed\n")})
    git(repo, "tag", "-a", "-m", "2.0", "v2.0")
    git(repo, "tag", "-a", "-m", "again", "v3.0", "v2.0")  # a tag of a tag of a commit
    git(repo, "tag", "-a", "-m", "deeper", "v4.0", "v3.0")
    git(repo, "tag", "-a", "-m", "a tree", "v5.0", "HEAD^{tree}")
    git(repo, "tag", "-a", "-m", "of a tree", "v6.0", "v5.0")
    root = tmp_path / "ps"
    root.mkdir()
    (root / "fix.patch").write_text(patch_text(fix))
    (root / "series").write_text("fix.patch\n")
    code, document = run_json("check", "--install", repo, "--patches", root, "--tags", "v*")
    commit = git(repo, "rev-parse", "HEAD")
    assert [(t["ref"], t["commit"]) for t in document["targets"]] == [
        (name, commit) for name in ("v1.0", "v2.0", "v3.0", "v4.0")
    ]
    assert {p["outcome"] for t in document["targets"] for p in t["patches"]} == {"applied"}
    assert code == 0


def test_check_json_is_made_by_the_c_encoder_and_each_shared_result_list_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """In process, so the pure-Python encoder's maker and the patch renderer can be counted;
    the document must be the one the CLI prints as a subprocess."""
    import json.encoder

    from patchkeeper.commands import check
    from patchkeeper.report import render

    repo, root = _set(tmp_path)
    args = ["--install", str(repo), "--patches", str(root), "--tags", "v1.*", "--json"]
    slow = _counting(monkeypatch, json.encoder, "_make_iterencode")
    rendered = _counting(monkeypatch, render, "patch_json")
    pieces = _counting(monkeypatch, render._Chunks, "write")
    code = check.command.main(args, standalone_mode=False)
    monkeypatch.undo()
    printed = capsys.readouterr().out
    patches_rendered = rendered[0]  # (check_document.py holds the counter once imported)
    one_tag = _counting(monkeypatch, render._Chunks, "write")
    check.command.main([*args[:-2], "v1.0", "--json"], standalone_mode=False)
    monkeypatch.undo()
    capsys.readouterr()
    # A tag more is two pieces of text more (its target, its outcomes), not one per patch.
    assert pieces[0] - one_tag[0] <= 2 * SAME_TAGS
    cli_code, document = run_json("check", *args[:-1])
    assert code == cli_code == 0
    assert printed == json.dumps(document, indent=2) + "\n"
    assert len(document["targets"]) == SAME_TAGS + 1
    assert outcomes(document) == {f"fix{n}": "applied" for n in range(3)} | {"varied": "applied"}
    assert slow[0] == 0  # no value went through the pure-Python encoder
    assert patches_rendered == 4  # the four fixes, once: every tag shares the first one's results


def test_check_text_report_and_exit_code_read_each_shared_result_list_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The compact table's counts, changes, widths and needs-work list, and the exit code, are
    made per results list: tags that share the first one's cost nothing per patch. In
    process, to count; the text must be the one the CLI prints as a subprocess."""
    from patchkeeper.commands import check
    from patchkeeper.model.outcomes import PatchResult
    from patchkeeper.report import check_table

    repo, root = _set(tmp_path)
    args = ["--install", str(repo), "--patches", str(root), "--tags", "v1.*"]
    asked = [0]
    judged = PatchResult.needs_a_person.fget
    assert judged is not None

    def counted(result: PatchResult) -> bool:
        asked[0] += 1
        return judged(result)

    monkeypatch.setattr(PatchResult, "needs_a_person", property(counted))
    said = _counting(monkeypatch, check_table, "word")
    summed = _counting(monkeypatch, check_table, "counts")
    code = check.command.main(args, standalone_mode=False)
    monkeypatch.undo()
    printed = capsys.readouterr().out
    cli = run_cli("check", *args)
    assert code == cli.returncode == 0
    assert printed == cli.stdout
    assert f"{SAME_TAGS + 1} refs x 4 patches" in printed  # the compact table
    assert f"... {SAME_TAGS} more with the same outcomes" in printed
    # Four fixes: once for the exit code and once for the needs-work list, whatever the tags.
    assert asked[0] <= 2 * 4
    assert said[0] <= 2 * 4  # the changes and the widths
    assert summed[0] == 1


def test_github_annotations_read_the_patch_file_once_for_tags_that_share_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An annotation points at the failing hunk's line in the patch file (a read of it): made
    once for the tags that share one results list, not once per tag."""
    from patchkeeper.commands import check
    from patchkeeper.report import annotations

    repo, root = _set(tmp_path)
    fixed = {"f0.py": LINES.replace("line", "f0").replace("f0 20\n", "f0 20 fixed\n")}
    diff = diff_of(repo, fixed).replace(" f0 18\n", " f0 eighteen\n")  # context upstream lacks
    (root / "broken.patch").write_text(patch_text(diff))
    (root / "series").write_text((root / "series").read_text() + "broken.patch\n")
    args = ["--install", str(repo), "--patches", str(root), "--tags", "v1.*", "--format", "github"]
    reads = _counting(monkeypatch, annotations, "hunk_line")
    monkeypatch.chdir(tmp_path)  # annotations name the patch file relative to it
    code = check.command.main(args, standalone_mode=False)
    monkeypatch.undo()
    printed = capsys.readouterr().out
    cli = run_cli("check", *args, cwd=tmp_path)
    assert code == cli.returncode == 3
    assert printed == cli.stdout
    [error] = [line for line in printed.splitlines() if line.startswith("::error ")]
    assert f"on {SAME_TAGS + 1} ref(s)" in error and "line=" in error
    assert reads[0] == 1


def test_junit_says_each_shared_result_once_however_many_tags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """A test case per patch on every ref (JUnit has a suite per ref), its text made once for
    the tags that share one results list. The XML must be the CLI's, times aside."""
    from patchkeeper.commands import check
    from patchkeeper.report import junit

    repo, root = _set(tmp_path)
    args = ["--install", str(repo), "--patches", str(root), "--tags", "v1.*", "--format", "junit"]
    said = _counting(monkeypatch, junit, "patch_lines")
    code = check.command.main(args, standalone_mode=False)
    monkeypatch.undo()
    printed = capsysbinary.readouterr().out
    cli = subprocess.run(
        [sys.executable, "-m", "patchkeeper", "check", *args], capture_output=True, check=False
    )
    assert code == cli.returncode == 0

    def timeless(xml: bytes) -> bytes:
        return re.sub(rb' time="[0-9.]+"', b"", xml)

    assert timeless(printed) == timeless(cli.stdout)
    assert printed.count(b"<testcase ") == 4 * (SAME_TAGS + 1)
    assert said[0] == 4


def test_check_metrics_say_each_shared_result_once_however_many_tags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--metrics` has a sample per outcome for every ref; the outcomes of the tags that share
    one results list are made into values once. The file must be the CLI's, its time aside."""
    from patchkeeper.commands import check
    from patchkeeper.report import check_document

    repo, root = _set(tmp_path)
    args = ["--install", str(repo), "--patches", str(root), "--tags", "v1.*", "--json"]
    made = _counting(monkeypatch, check_document, "patch_json")
    check.command.main([*args, "--metrics", str(tmp_path / "in.prom")], standalone_mode=False)
    monkeypatch.undo()
    said = made[0]
    run_cli("check", *args, "--metrics", tmp_path / "cli.prom")

    def timeless(path: Path) -> list[str]:
        return [line for line in path.read_text().splitlines() if "timestamp_seconds{" not in line]

    metrics = timeless(tmp_path / "in.prom")
    assert metrics == timeless(tmp_path / "cli.prom")
    applied = [line for line in metrics if 'outcome="applied"' in line]
    assert len(applied) == SAME_TAGS + 1 and all(line.endswith(" 4") for line in applied)
    assert said == 4 + 4  # the four fixes for --metrics, and for the JSON document


def test_a_variant_not_chosen_is_read_up_to_its_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", {"app.py": LINES}, tag="v1.5")
    big = {"app.py": LINES + "".join(f"added line {n} {'x' * 60}\n" for n in range(4000))}
    diff = diff_of(repo, big)
    assert len(diff) > 256_000
    root = tmp_path / "ps"
    (root / "fix").mkdir(parents=True)
    for k in range(10):
        spec = f">={k}.0,<{k + 1}.0"
        (root / "fix" / f"v{k}.patch").write_text(patch_text(diff, applies_to=spec))
    (root / "series").write_text("fix/\n")
    header = len(patch_text(diff, applies_to=">=1.0,<2.0").split("diff --git")[0])
    read: dict[str, int] = {}
    real_open, real_read, names = os.open, os.read, {}

    def opened(path: Any, *args: Any, **kwargs: Any) -> int:
        fd = real_open(path, *args, **kwargs)
        names[fd] = os.path.basename(os.fspath(path))
        return fd

    def counted(fd: int, size: int) -> bytes:
        data = real_read(fd, size)
        read[names.get(fd, "?")] = read.get(names.get(fd, "?"), 0) + len(data)
        return data

    monkeypatch.setattr(os, "open", opened)
    monkeypatch.setattr(os, "read", counted)
    patch_set = load_patch_set(root, deferred=True)
    [chosen] = patch_set.patches[0].candidates(checking.Version("1.5"))
    monkeypatch.undo()
    assert chosen.path.name == "v1.patch" and chosen.diff and chosen.files == ("app.py",)
    unchosen = {
        name: size for name, size in read.items() if name.startswith("v") and name != "v1.patch"
    }
    assert len(unchosen) == 9
    assert all(size <= max(header, 4096) for size in unchosen.values()), unchosen
    assert read["v1.patch"] > len(diff)  # chosen: its header, then the whole file
    code, document = run_json("check", "--install", repo, "--patches", root, "--ref", "v1.5")
    assert (code, outcomes(document)) == (0, {"fix": "applied"})


def test_the_c_made_text_is_the_standard_indented_text_for_every_kind_of_value() -> None:
    from patchkeeper.report.json_text import Encoded, indented

    inner = {"a": [1, 2.5, None, True], "b": {}, "c": [], "d": 'é\n"x"\t', "e": (1, "t")}
    values: list[Any] = [
        {}, [], "plain", 7, -0.0, float("nan"), float("inf"), None, False, Path("/a b"),
        inner, [inner, [inner, []], {"k": [{}], "p": Path("x")}],
        {1: "int key", None: "none key", 2.5: [1], False: {"x": 1}},
        {"nested": {3: [1, {"y": 2}]}, "list": [[[]], [[1]], {"z": ()}]},
    ]  # fmt: skip
    for value in values:
        standard = json.dumps(value, indent=2, default=str)
        assert indented(value) == standard
        assert indented(value, 3) == standard.replace("\n", "\n" + "  " * 3)
    shared = Encoded([inner, {"q": [inner]}])
    document = {"one": shared, "two": [shared, {"three": shared}]}
    plain = {"one": [inner, {"q": [inner]}]}
    plain["two"] = [plain["one"], {"three": plain["one"]}]
    assert indented(document) == json.dumps(plain, indent=2)
