"""`patchkeeper port --onto REF` (issue 29) on the practice upstream and on small repositories:
a release where the patches moved (new variants, ranges split, lint and check agree, on REF
and on the old release), one where upstream has them (retirement proposed) and one where a
patch conflicts (stop, fix, --continue); --abort; a kill at points of a port; --out; the
refusals. Real git, real subprocesses; the smoke checks are small stand-ins (the real ones
hold the ledger lock for seconds on purpose) that read the ported tree they run on."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from patchkeeper.demo.sandbox import INSTALL_TAG, TAGS, Sandbox, open_copied_sandbox
from tests.helpers import (
    GIT_ID,
    commit_files,
    diff_of,
    make_repo,
    patch_text,
    run_json,
    write_patch_set,
)

NEWEST = TAGS[-1]  # upstream has adoption-retry and heartbeat-fence; schema-once conflicts
MOVED = TAGS[3]  # the code both patches touch moved down (0.22.0 today): offsets only

# A stand-in smoke check: passes when the tree it runs on (its cwd) holds the fix's text.
STAND_IN = """import json, pathlib
ok = {needle!r} in pathlib.Path({path!r}).read_text()
print(json.dumps({{"check": {name!r}, "verdict": "pass" if ok else "fail", "steps": []}}))
"""


def stand_in_checks(sandbox: Sandbox, adoption_needle: str = "adopt_while_busy") -> None:
    smoke = sandbox.patches / "smoke"
    checks = {
        "ledger_adoption": (adoption_needle, "cron/scheduler.py"),
        "ledger_schema": ("once_per_database(", "cron/executions.py"),
    }
    for name, (needle, path) in checks.items():
        (smoke / f"{name}.py").write_text(STAND_IN.format(needle=needle, path=path, name=name))


@pytest.fixture
def practice(sandbox: Sandbox) -> Sandbox:
    sandbox.fetch_tags()
    stand_in_checks(sandbox)
    return sandbox


def port(
    sandbox: Sandbox, *args: str | Path, env: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    where = ["--install", sandbox.install, "--patches", sandbox.patches]
    if env is None:
        return run_json("port", *args, *where)
    proc = subprocess.run(
        [sys.executable, "-m", "patchkeeper", "port", *map(str, args), *map(str, where), "--json"],
        capture_output=True, text=True, env={**os.environ, **GIT_ID, **env}, check=False,
    )  # fmt: skip
    return proc.returncode, {"stderr": proc.stderr}


def files_of(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def fixes(root: Path) -> dict[str, bytes]:
    """The set's files but its patchkeeper.toml (which names its own sandbox's paths)."""
    files = files_of(root)
    files.pop("patchkeeper.toml")
    return files


def install_files(sandbox: Sandbox) -> dict[str, bytes]:
    """Every file of the install, .git included (the lock file aside)."""
    files = files_of(sandbox.install)
    files.pop(".git/patchkeeper/lock", None)
    return files


def actions(document: dict[str, Any]) -> dict[str, str]:
    return {p["name"]: p["action"] for p in document["patches"]}


def check(sandbox: Sandbox, ref: str) -> dict[str, str]:
    code, doc = run_json(
        "check", "--ref", ref, "--install", sandbox.install, "--patches", sandbox.patches
    )
    assert code in (0, 3), doc
    return {p["name"]: p["outcome"] for p in doc["targets"][0]["patches"]}


def lint_ok(root: Path) -> None:
    code, doc = run_json("lint", "--patches", root)
    assert code == 0 and doc["problems"] == [], doc


def port_state(sandbox: Sandbox) -> Path:
    return sandbox.install / ".git" / "patchkeeper" / "port"


def resolve_schema_once(worktree: Path) -> None:
    """The hand fix: upstream's reformatted call, wrapped as the patch wraps it."""
    target = worktree / "cron" / "executions.py"
    text = target.read_text()
    fixed = re.sub(
        r"<<<<<<< .*?\n(.*?)\|\|\|\|\|\|\| .*?>>>>>>> schema-once\n",
        lambda m: m.group(1).replace(
            "initialize=_initialize_schema,", "initialize=once_per_database(_initialize_schema),"
        ),
        text,
        flags=re.DOTALL,
    )
    assert fixed != text
    target.write_text(fixed)


def test_a_release_where_patches_moved_gets_new_variants_with_split_ranges(
    practice: Sandbox,
) -> None:
    before = check(practice, INSTALL_TAG)
    tree_before = install_files(practice)
    code, doc = port(practice, "--onto", MOVED)
    assert code == 0, doc
    assert doc["status"] == "ported" and doc["onto"] == MOVED
    assert actions(doc) == {
        "adoption-retry": "new-variant", "schema-once": "new-variant", "heartbeat-fence": "retire",
    }  # fmt: skip
    moved = {p["name"]: p for p in doc["patches"]}
    version = doc["version"]
    assert moved["schema-once"]["written"] == f"schema-once/schema-once-{version}.patch"
    assert moved["schema-once"]["applies_to"] == f">={version}"
    assert moved["schema-once"]["old_applies_to"] == f">=0.21.2, <{version}"
    assert "offset" in moved["adoption-retry"]["evidence"]
    assert "upstream has it" in moved["heartbeat-fence"]["evidence"]
    assert moved["adoption-retry"]["proof"] == moved["schema-once"]["proof"] == "proven"
    # A plain patch file became a folder of variants; the series names the folder.
    patches = practice.patches
    assert not (patches / "schema-once.patch").exists()
    assert (patches / "schema-once" / "schema-once.patch").is_file()
    assert "schema-once\n" in (patches / "series").read_text().splitlines(keepends=True)
    new = (patches / moved["schema-once"]["written"]).read_text()
    assert f"Base: {doc['commit']}" in new and "Smoke: ledger_schema" in new
    assert "Last-Update: 2026-12-01" not in new and "Forwarded: no" in new
    assert (patches / "heartbeat-fence.patch").is_file()  # retired is proposed, never dropped
    lint_ok(patches)
    assert check(practice, MOVED) == {
        "adoption-retry": "applied", "schema-once": "applied", "heartbeat-fence": "upstream-has-it",
    }  # fmt: skip
    assert check(practice, INSTALL_TAG) == before  # the old release is judged as before
    assert not port_state(practice).exists()
    assert install_files(practice) == tree_before  # work tree, objects, refs: untouched

    # A second port onto the same release has nothing to do and changes nothing.
    ported, inode = files_of(patches), patches.stat().st_ino
    code, again = port(practice, "--onto", MOVED)
    assert code == 0, again
    assert actions(again) == {
        "adoption-retry": "keep", "schema-once": "keep", "heartbeat-fence": "retire",
    }  # fmt: skip
    assert files_of(patches) == ported and patches.stat().st_ino == inode
    assert any("nothing to write" in note for note in again["notes"])


def test_a_patch_that_applies_as_it_is_gets_its_range_widened(tmp_path: Path) -> None:
    lines = "".join(f"line {n}\n" for n in range(1, 30))
    repo = make_repo(tmp_path / "up", {"app.py": lines}, tag="v1.0.0")
    fix = diff_of(repo, {"app.py": lines.replace("line 5\n", "line 5 fixed\n")})
    (repo / "other.py").write_text("new\n")
    subprocess.run(["git", "add", "other.py"], cwd=repo, check=True)
    subprocess.run(
        ["git", "commit", "-qm", "two"], cwd=repo, check=True, env={**os.environ, **GIT_ID}
    )
    subprocess.run(["git", "tag", "v2.0.0"], cwd=repo, check=True)
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(fix, applies_to="<2.0")})
    code, doc = run_json("port", "--onto", "v2.0.0", "--install", repo, "--patches", patches)
    assert code == 0, doc
    assert actions(doc) == {"fix": "widen"}
    assert doc["patches"][0]["applies_to"] == "<=2.0.0"
    assert "Applies-To: <=2.0.0" in (patches / "fix.patch").read_text()
    lint_ok(patches)
    code, checked = run_json("check", "--ref", "v2.0.0", "--ref", "v1.0.0",
                             "--install", repo, "--patches", patches)  # fmt: skip
    assert code == 0 and [t["patches"][0]["outcome"] for t in checked["targets"]] == [
        "applied", "applied",
    ]  # fmt: skip


def test_a_conflict_stops_the_port_until_it_is_fixed_and_continued(practice: Sandbox) -> None:
    before = check(practice, INSTALL_TAG)
    original = files_of(practice.patches)
    code, doc = port(practice, "--onto", NEWEST)
    assert code == 3 and doc["status"] == "stopped", doc
    assert actions(doc) == {"adoption-retry": "retire"}
    assert "upstream has it" in doc["patches"][0]["evidence"]
    conflict = doc["conflict"]
    assert conflict["name"] == "schema-once" and conflict["marked"] == ["cron/executions.py"]
    worktree = Path(conflict["worktree"])
    text = (worktree / "cron" / "executions.py").read_text()
    assert "<<<<<<< " in text and "||||||| " in text and ">>>>>>> schema-once" in text
    assert "once_per_database(_initialize_schema)" in text  # the patch's intent is shown
    assert "--continue" in doc["next_step"]
    assert files_of(practice.patches) == original

    code, refused = port(practice, "--continue")
    assert code == 2 and "conflict markers remain" in refused["error"]
    assert files_of(practice.patches) == original

    resolve_schema_once(worktree)
    code, done = port(practice, "--continue")
    assert code == 0 and done["status"] == "ported", done
    assert actions(done) == {
        "adoption-retry": "retire", "schema-once": "new-variant", "heartbeat-fence": "retire",
    }  # fmt: skip
    assert {p["name"]: p["proof"] for p in done["patches"]}["schema-once"] == "proven"
    lint_ok(practice.patches)
    assert check(practice, NEWEST) == {
        "adoption-retry": "upstream-has-it", "schema-once": "applied",
        "heartbeat-fence": "upstream-has-it",
    }  # fmt: skip
    assert check(practice, INSTALL_TAG) == before
    assert not port_state(practice).exists()


def test_abort_leaves_the_set_as_it_was(practice: Sandbox) -> None:
    original = files_of(practice.patches)
    code, doc = port(practice, "--onto", NEWEST)
    assert code == 3, doc
    code, aborted = port(practice, "--abort")
    assert code == 0 and aborted["status"] == "aborted", aborted
    assert files_of(practice.patches) == original
    assert not port_state(practice).exists()
    code, doc = port(practice, "--abort")
    assert code == 2 and "no port is in progress" in doc["error"]


@pytest.fixture(scope="module")
def ported_reference(
    sandbox_template: Sandbox, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, bytes]:
    """The set as a port onto MOVED that nobody interrupted writes it."""
    root = tmp_path_factory.mktemp("reference") / "sandbox"
    reference = open_copied_sandbox(shutil.copytree(sandbox_template.root, root, symlinks=True))
    reference.fetch_tags()
    stand_in_checks(reference)
    assert port(reference, "--onto", MOVED)[0] == 0
    return fixes(reference.patches)


@pytest.mark.parametrize(
    "point", ["port.adoption-retry", "port.building", "port.built", "port.swapped"]
)
def test_a_kill_leaves_the_set_as_it_was_or_fully_ported(
    practice: Sandbox, ported_reference: dict[str, bytes], point: str
) -> None:
    ported, original = ported_reference, fixes(practice.patches)

    code, _ = port(practice, "--onto", MOVED, env={"PATCHKEEPER_STOP_AT_PHASE": point})
    assert code == -9
    assert fixes(practice.patches) == (ported if point == "port.swapped" else original)
    code, doc = port(practice, "--onto", MOVED)
    assert code == 2 and "--continue" in doc["error"]  # the state survived the kill
    code, doc = port(practice, "--continue")
    assert code == 0 and doc["status"] == "ported", doc
    assert fixes(practice.patches) == ported
    assert not port_state(practice).exists()
    leftovers = [p.name for p in practice.patches.parent.iterdir() if "port" in p.name]
    assert leftovers == []


@pytest.mark.parametrize("point", ["port.building", "port.swapped"])
def test_abort_after_a_kill_puts_the_old_set_back_and_leaves_nothing(
    practice: Sandbox, point: str
) -> None:
    original = files_of(practice.patches)
    code, _ = port(practice, "--onto", MOVED, env={"PATCHKEEPER_STOP_AT_PHASE": point})
    assert code == -9
    assert (files_of(practice.patches) != original) == (point == "port.swapped")
    code, doc = port(practice, "--abort")
    assert code == 0, doc
    assert files_of(practice.patches) == original
    assert [p.name for p in practice.patches.parent.iterdir() if "port" in p.name] == []


def test_out_writes_the_ported_set_elsewhere(practice: Sandbox, tmp_path: Path) -> None:
    original = files_of(practice.patches)
    out = tmp_path / "ported"
    code, doc = port(practice, "--onto", MOVED, "--out", out)
    assert code == 0 and doc["out"] == str(out), doc
    assert files_of(practice.patches) == original
    assert (out / "schema-once" / f"schema-once-{doc['version']}.patch").is_file()
    lint_ok(out)


def test_a_fix_whose_smoke_check_fails_on_the_ported_tree_is_not_proven(
    practice: Sandbox,
) -> None:
    stand_in_checks(practice, adoption_needle="text no ported tree holds")
    code, doc = port(practice, "--onto", MOVED)
    assert code == 4, doc
    proofs = {p["name"]: p["proof"] for p in doc["patches"]}
    assert proofs["adoption-retry"] == "failed" and proofs["schema-once"] == "proven"


def test_bad_requests_are_one_line_errors_that_change_nothing(practice: Sandbox) -> None:
    original = files_of(practice.patches)
    for args, said in [
        (["--onto", "no-such-tag"], "names no commit"),
        (["--continue"], "no port is in progress"),
        (["--onto", MOVED, "--abort"], "exactly one of"),
    ]:
        code, doc = port(practice, *args)
        assert code == 2 and said in doc["error"], (args, doc)
    assert files_of(practice.patches) == original and not port_state(practice).exists()


@pytest.mark.parametrize(
    ("old", "version", "others", "split"),
    [
        (">=0.21.3", "0.22.0", [], (">=0.21.3, <0.22.0", ">=0.22.0")),
        (None, "0.22.0", [], ("<0.22.0", ">=0.22.0")),
        (">=0.21.3, <0.23", "0.22.0", [">=0.23"], (">=0.21.3, <0.22.0", ">=0.22.0, <0.23")),
        (">=0.21.3, <=0.22.0", "0.22.0", [], (">=0.21.3, <0.22.0", ">=0.22.0, <=0.22.0")),
        (">=0.23", "0.22.1", [], (">=0.23", ">=0.22.1, <0.23")),  # the nearest was above
    ],
)
def test_ranges_split_at_the_release_never_overlap(
    old: str | None, version: str, others: list[str | None], split: tuple[str, str]
) -> None:
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    from patchkeeper.patchset.variants import overlap_at
    from patchkeeper.port import ranges

    assert ranges.split(old, Version(version), others) == split
    every = [SpecifierSet(text) for text in [*split, *filter(None, others)]]
    for i, one in enumerate(every):
        for other in every[i + 1 :]:
            assert overlap_at(one, other) is None, (one, other)
    assert SpecifierSet(split[1]).contains(version) and not SpecifierSet(split[0]).contains(version)


def test_ranges_widen_to_the_release() -> None:
    from packaging.version import Version

    from patchkeeper.port import ranges

    assert ranges.widen("<2.0", Version("2.0.0"), []) == "<=2.0.0"
    assert ranges.widen(">=0.21.3", Version("0.21.2"), []) == ">=0.21.2"
    assert ranges.widen("<0.22", Version("0.22.1"), [">=0.23"]) == "<=0.22.1, <0.23"
    assert ranges.widen(">=1.0", Version("1.2"), []) == ">=1.0"  # holds it already


def test_the_ci_recipe_turns_a_new_tag_into_a_ported_branch(
    practice: Sandbox, tmp_path: Path
) -> None:
    """docs/ci.md's port job, its shell steps run as written (a local clone stands in for the
    upstream clone, a local bare repository for the patch set's origin)."""
    yaml = pytest.importorskip("yaml")
    page = (Path(__file__).resolve().parent.parent / "docs" / "ci.md").read_text()
    blocks = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", page, re.DOTALL)]
    job = next(b["port"] for b in blocks if isinstance(b, dict) and "port" in b)
    steps = {step.get("name"): step for step in job["steps"]}
    runner = tmp_path / "runner"
    runner.mkdir()
    install = runner / "hermes-agent"
    shutil.copytree(practice.install, install, symlinks=True)
    for tag in TAGS[TAGS.index(MOVED) + 1 :]:  # the newest tag is MOVED here
        subprocess.run(["git", "tag", "-d", tag], cwd=install, check=True, capture_output=True)
    origin, checkout = tmp_path / "set.git", tmp_path / "set"
    shutil.copytree(practice.patches, checkout)
    for args in (["init", "-q", "--bare", str(origin)], ["init", "-q", str(checkout)]):
        subprocess.run(["git", *args], cwd=tmp_path, check=True)
    for args in (
        ["add", "-A"],
        ["commit", "-qm", "the set"],
        ["remote", "add", "origin", str(origin)],
    ):
        subprocess.run(["git", *args], cwd=checkout, check=True, env={**os.environ, **GIT_ID})
    shim = tmp_path / "bin" / "patchkeeper"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m patchkeeper "$@"\n')
    shim.chmod(0o755)
    outputs = runner / "github-output"
    env = {
        **os.environ, **GIT_ID, "RUNNER_TEMP": str(runner), "GITHUB_OUTPUT": str(outputs),
        "PATH": f"{shim.parent}{os.pathsep}{os.environ['PATH']}",
    }  # fmt: skip

    def run_step(name: str) -> dict[str, str]:
        said = (
            dict(line.split("=", 1) for line in outputs.read_text().splitlines())
            if outputs.exists()
            else {}
        )
        script = steps[name]["run"].replace("${{ steps.port.outputs.tag }}", said.get("tag", ""))
        proc = subprocess.run(["bash", "-e", "-c", script], cwd=checkout, env=env,
                              capture_output=True, text=True, check=False)  # fmt: skip
        assert proc.returncode == 0, (name, proc.stdout, proc.stderr)
        return dict(line.split("=", 1) for line in outputs.read_text().splitlines())

    said = run_step("port the set onto the newest release tag")
    assert said == {"tag": MOVED, "code": "0"}, (runner / "port.json").read_text()
    run_step(next(name for name in steps if name and name.startswith("the ported set")))
    branch = f"port/{MOVED}"
    listed = subprocess.run(["git", "ls-tree", "-r", "--name-only", branch], cwd=origin,
                            capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    version = json.loads((runner / "port.json").read_text())["version"]
    assert f"schema-once/schema-once-{version}.patch" in listed
    assert "schema-once.patch" not in listed and "series" in listed

    # The next scheduled run starts again from the set's own branch, and the review branch is
    # already there: the job must port afresh and push again, not fail on the branch.
    subprocess.run(["git", "switch", "-q", "-"], cwd=checkout, check=True)
    subprocess.run(["git", "reset", "-q", "--hard"], cwd=checkout, check=True)
    shutil.rmtree(runner / "ported")
    outputs.unlink()
    assert run_step("port the set onto the newest release tag") == {"tag": MOVED, "code": "0"}
    run_step(next(name for name in steps if name and name.startswith("the ported set")))


LINES = "".join(f"line {n}\n" for n in range(1, 31))


def small_upstream(tmp_path: Path, releases: list[dict[str, str]]) -> Path:
    """A repository whose app.py is LINES at v1.0.0 and each of RELEASES' edits after."""
    repo = make_repo(tmp_path / "up", {"app.py": LINES}, tag="v1.0.0")
    text = LINES
    for number, edits in enumerate(releases, start=2):
        for old, new in edits.items():
            text = text.replace(old, new)
        commit_files(repo, {"app.py": text}, f"release {number}", tag=f"v{number}.0.0")
    return repo


def test_a_clean_3way_merge_gets_a_new_variant(tmp_path: Path) -> None:
    repo = small_upstream(tmp_path, [{"line 8\n": "line 8 upstream\n"}])
    subprocess.run(["git", "checkout", "-q", "v1.0.0"], cwd=repo, check=True)
    fix = diff_of(repo, {"app.py": LINES.replace("line 10\n", "line 10 fixed\n")})
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(fix, applies_to=">=1.0")})
    code, doc = run_json("port", "--onto", "v2.0.0", "--install", repo, "--patches", patches)
    assert code == 0, doc
    assert actions(doc) == {"fix": "new-variant"} and doc["patches"][0]["outcome"] == "merged-3way"
    written = (patches / doc["patches"][0]["written"]).read_text()
    assert "+line 10 fixed" in written and " line 8 upstream" in written
    lint_ok(patches)
    code, checked = run_json("check", "--ref", "v2.0.0", "--ref", "v1.0.0",
                             "--install", repo, "--patches", patches)  # fmt: skip
    assert [t["patches"][0]["outcome"] for t in checked["targets"]] == ["applied", "applied"]


def test_a_conflict_with_no_known_preimage_shows_each_hunk_and_a_fix_to_refs_content_retires(
    tmp_path: Path,
) -> None:
    """Neither the install's HEAD nor a Base has the patch's preimage: each failed hunk is a
    conflict block of its own at the end of the file; a fix that leaves REF as it is says
    upstream has it."""
    repo = small_upstream(
        tmp_path, [{"line 10\n": "line 10 v2\n"}, {"line 10 v2\n": "line 10 v3\n"}]
    )
    subprocess.run(["git", "checkout", "-q", "v1.0.0"], cwd=repo, check=True)
    fix = diff_of(repo, {"app.py": LINES.replace("line 10\n", "line 10 fixed\n")})
    subprocess.run(["git", "checkout", "-q", "v2.0.0"], cwd=repo, check=True)
    patches = write_patch_set(tmp_path / "ps", {"fix.patch": patch_text(fix)})
    where = ["--install", repo, "--patches", patches]
    code, doc = run_json("port", "--onto", "v3.0.0", *where)
    assert code == 3 and doc["conflict"]["marked"] == ["app.py"], doc
    folder = Path(doc["conflict"]["worktree"])
    text = (folder / "app.py").read_text()
    assert text.startswith(LINES.replace("line 10\n", "line 10 v3\n"))
    block = text[len(LINES) + 3 :]
    assert block.startswith("<<<<<<< REF: hunk #1 of fix")
    expected, writes = block.split("||||||| what fix expected\n")[1].split("=======\n")
    assert (
        "line 10\n" in expected and "line 10 fixed\n" in writes and writes.endswith(">>>>>>> fix\n")
    )
    (folder / "app.py").write_text(LINES.replace("line 10\n", "line 10 v3\n"))
    code, done = run_json("port", "--continue", "--install", repo)
    assert code == 0 and actions(done) == {"fix": "retire"}, done
    assert "resolved by hand" in done["patches"][0]["evidence"]


def test_without_an_exchange_the_two_renames_are_finished_or_undone_after_a_kill(
    tmp_path: Path,
) -> None:
    """Where renameat2 cannot exchange two folders, the old set goes aside and the new one
    into place; a kill between the two leaves no set at its path, and the port's state lets
    --continue finish the swap or --abort undo it."""
    from patchkeeper.port import newset
    from patchkeeper.port.state import SWAPPING, PortState

    def folders() -> tuple[Path, Path]:
        root, new = tmp_path / "patches", tmp_path / ".patches.port-new"
        for folder, text in ((root, "old\n"), (new, "new\n")):
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            (folder / "series").write_text(text)
        return root, new

    root, new = folders()
    newset.put_in_place(new, root, lambda _point: None, swap=lambda _a, _b: False)
    assert (root / "series").read_text() == "new\n" and not new.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["patches"]

    for finish in (True, False):
        root, new = folders()
        state = PortState(
            install="", patches=str(root), out=None, onto="v2", commit="", version="2",
            fingerprint="", base_tree="", phase=SWAPPING, new_folder=str(new),
            new_inode=new.stat().st_ino,
        )  # fmt: skip
        os.replace(root, tmp_path / ".patches.port-old")  # killed after the first rename
        if finish:
            assert newset.recover_swap(state) and newset.swapped(state)
            shutil.rmtree(new)  # what --continue does next: the old set, at the new's name
            assert (root / "series").read_text() == "new\n"
        else:
            newset.undo_swap(state)
            assert (root / "series").read_text() == "old\n"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["patches"]
