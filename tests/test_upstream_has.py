"""`Upstream-Has:` content conditions: upstream has the fix when its committed files say so."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.helpers import (
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

LINES = "".join(f"line {n}\n" for n in range(1, 41))
OUR_CALL = LINES.replace("line 10\n", "line 10 adopt_with_retry(job)\n")
RETRY = "def adopt_with_retry(job):\n    return job\n"
# Upstream's fix is there once it has the retry AND calls it (two conditions, folded lines).
CONDITIONS = "\n retry.py: def adopt_with_retry(\n app.py: adopt_with_retry(job)"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """v1: no retry; v1.5: the retry exists but nothing calls it; v2: the retry, called."""
    repo = make_repo(tmp_path / "up", {"app.py": LINES}, tag="v1")
    commit_files(repo, {"retry.py": RETRY}, "add the retry", tag="v1.5")
    called = LINES.replace("line 30\n", "line 30 adopt_with_retry(job)\n")
    commit_files(repo, {"app.py": called}, "call the retry", tag="v2")
    git(repo, "checkout", "-q", "v1")
    return repo


def retry_patch(repo: Path, conditions: str = CONDITIONS) -> str:
    return patch_text(diff_of(repo, {"app.py": OUR_CALL}), upstream_has=conditions)


def test_check_judges_each_ref_by_its_content(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"retry.patch": retry_patch(repo)})
    code, doc = run_json(
        "check", "--install", repo, "--patches", patches, "--ref", "v1", "--ref", "v1.5",
        "--ref", "v2",
    )  # fmt: skip
    assert code == 0
    by_ref = {t["ref"]: t["patches"][0] for t in doc["targets"]}
    # v1.5 has the retry but does not call it: one condition of two, classified normally.
    assert {ref: p["outcome"] for ref, p in by_ref.items()} == {
        "v1": "applied",
        "v1.5": "applied",
        "v2": "upstream-has-it",  # although the patch would still apply there
    }
    assert by_ref["v2"]["detail"] == (
        "upstream has it: retry.py contains 'def adopt_with_retry(', "
        "app.py contains 'adopt_with_retry(job)'"
    )


def test_an_install_at_the_fixed_release_writes_nothing(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"retry.patch": retry_patch(repo)})
    git(repo, "checkout", "-q", "v2")
    code, doc = run_json("status", "--install", repo, "--patches", patches)
    assert (code, outcomes(doc)) == (0, {"retry": "upstream-has-it"})
    before = tree_snapshot(repo)
    code, doc = run_json("apply", "--install", repo, "--patches", patches)
    assert (code, outcomes(doc)) == (0, {"retry": "upstream-has-it"})
    assert tree_snapshot(repo) == before


def test_our_own_uncommitted_content_is_not_upstream(repo: Path, tmp_path: Path) -> None:
    """The work tree carries our patch: only HEAD's committed blobs speak for upstream."""
    patches = write_patch_set(tmp_path / "ps", {"retry.patch": retry_patch(repo)})
    code, doc = run_json("apply", "--install", repo, "--patches", patches)
    assert (code, outcomes(doc)) == (0, {"retry": "applied"})
    (repo / "retry.py").write_text(RETRY)  # the other condition too, but uncommitted
    code, doc = run_json("status", "--install", repo, "--patches", patches)
    assert (code, outcomes(doc)) == (0, {"retry": "already-applied"})


def test_content_already_in_the_ref_is_still_upstream_has_it(repo: Path, tmp_path: Path) -> None:
    """Conditions that do not hold leave the normal judgement: a reverse that applies wins."""
    patches = write_patch_set(tmp_path / "ps", {"retry.patch": retry_patch(repo)})
    commit_files(repo, {"app.py": OUR_CALL}, "upstream merged our patch", tag="v1.1")
    code, doc = run_json("check", "--install", repo, "--patches", patches, "--ref", "v1.1")
    assert (code, outcomes(doc)) == (0, {"retry": "upstream-has-it"})
    assert doc["targets"][0]["patches"][0]["detail"].startswith("its changes are already")


def test_one_cat_file_for_every_condition_and_none_without(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = diff_of(repo, {"other.py": "new\n"})
    judged = write_patch_set(
        tmp_path / "judged",
        {
            "retry.patch": retry_patch(repo),
            "other.patch": patch_text(other, upstream_has="other.py: new\n gone.py: x"),
        },
    )
    plain = write_patch_set(tmp_path / "plain", {"retry.patch": patch_text(other)})
    counts = []
    for number, patches in enumerate((judged, plain)):
        trace = tmp_path / f"trace-{number}"
        monkeypatch.setenv("GIT_TRACE", str(trace))
        proc = run_cli("check", "--install", repo, "--patches", patches, "--ref", "v2")
        assert proc.returncode == 0, proc.stderr
        counts.append(len(re.findall(r"git cat-file --batch\n", trace.read_text())))
    assert counts == [1, 0]


@pytest.mark.parametrize(
    ("value", "line", "words"),
    [
        ("../x: y", 2, "'../x': path leaves the tree"),
        ("/etc/passwd: root", 2, "'/etc/passwd': absolute path"),
        (".git/config: url", 2, "path inside .git/"),
        ("foo", 2, "'foo' is not 'PATH: TEXT'"),
        ("app.py:x", 2, "is not 'PATH: TEXT'"),
        ("app.py:", 2, "for 'app.py' has no text to look for"),
        ("\n app.py: fine\n app.py", 4, "'app.py' is not 'PATH: TEXT'"),
        ("", 2, "Upstream-Has names no 'PATH: TEXT' condition"),
        ("app.py::9lives: x", 2, "scope '9lives' is not a Python name"),
        ("app.py::a b: x", 2, "scope 'a b' is not a Python name"),
    ],
)
def test_lint_rejects_a_bad_condition_at_its_line(
    repo: Path, tmp_path: Path, value: str, line: int, words: str
) -> None:
    patches = write_patch_set(tmp_path / "ps", {"retry.patch": retry_patch(repo, value)})
    proc = run_cli("lint", "--patches", patches)
    assert proc.returncode == 2
    [problem] = proc.stdout.strip().splitlines()
    assert problem.startswith(f"{patches / 'retry.patch'}:{line}: ") and words in problem
    # The patch's own problem: that patch is invalid (issue 17), the command says why.
    status = run_cli("status", "--install", repo, "--patches", patches)
    assert status.returncode == 3 and "Traceback" not in status.stderr
    assert any("invalid" in text and words in text for text in status.stdout.splitlines())


def test_lint_accepts_folded_conditions(repo: Path, tmp_path: Path) -> None:
    patches = write_patch_set(tmp_path / "ps", {"retry.patch": retry_patch(repo)})
    proc = run_cli("lint", "--patches", patches)
    assert proc.returncode == 0, proc.stdout


# ---------------------------------------------------------------- scoped conditions (issue 14)

HALF_WIRED = """\
def launch(job):
    payload = {"job": job}
    return payload


def run_worker(
    payload,
) -> bool:
    deadline = payload.get("adoption_deadline")
    return adopt_with_retry(payload["job"], deadline)
"""
FULLY_WIRED = HALF_WIRED.replace(
    '    payload = {"job": job}\n',
    '    payload = {"job": job, "adoption_deadline": now() + GRACE}\n',
)
# The probes scheduler-0.21.patch had: the worker's own read matches the launcher's probe.
WHOLE_FILE = (
    "\n retry.py: def adopt_with_retry("
    "\n worker.py: adopt_with_retry("
    '\n worker.py: "adoption_deadline"'
)
SCOPED = (
    "\n retry.py: def adopt_with_retry("
    "\n worker.py::run_worker: adopt_with_retry("
    '\n worker.py::launch: "adoption_deadline":'
)


@pytest.mark.parametrize(
    ("conditions", "half_wired"),
    [(WHOLE_FILE, "upstream-has-it"), (SCOPED, "applied")],
    ids=["whole-file probe: fooled", "scoped probe"],
)  # fmt: skip
def test_a_worker_wired_without_its_launcher_is_not_upstream_has_it(
    tmp_path: Path, conditions: str, half_wired: str
) -> None:
    """The worker reads `adoption_deadline` and calls the retry, the launcher writes no
    deadline: upstream's retry never runs. Only a probe scoped to the launcher can tell."""
    repo = make_repo(tmp_path / "up", {"worker.py": HALF_WIRED, "retry.py": RETRY}, tag="v1")
    commit_files(repo, {"worker.py": FULLY_WIRED}, "the launcher passes it", tag="v2")
    git(repo, "checkout", "-q", "v1")
    ours = patch_text(diff_of(repo, {"notes.py": "ours\n"}), upstream_has=conditions)
    patches = write_patch_set(tmp_path / "ps", {"retry.patch": ours})
    assert run_cli("lint", "--patches", patches).returncode == 0
    code, doc = run_json(
        "check", "--install", repo, "--patches", patches, "--ref", "v1", "--ref", "v2"
    )
    assert code == 0, doc
    by_ref = {t["ref"]: t["patches"][0] for t in doc["targets"]}
    assert {ref: p["outcome"] for ref, p in by_ref.items()} == {
        "v1": half_wired,
        "v2": "upstream-has-it",
    }
    if conditions == SCOPED:
        assert "worker.py::launch contains '\"adoption_deadline\":'" in by_ref["v2"]["detail"]


def test_a_condition_on_a_file_gone_from_the_work_tree_is_not_upstream_has_it(
    repo: Path, tmp_path: Path
) -> None:
    """Issue 26 item 9: an updater deleted app.py (tracked, still in HEAD): status said
    "upstream-has-it (app.py contains ...)", exit 0, while app.py was gone. What runs is the
    work tree: the condition does not hold, the patch is tried and cannot apply (3)."""
    patches = write_patch_set(tmp_path / "ps", {"retry.patch": retry_patch(repo)})
    git(repo, "checkout", "-q", "v2")
    (repo / "app.py").unlink()
    for command in ("status", "apply"):
        code, doc = run_json(command, "--install", repo, "--patches", patches)
        assert (code, outcomes(doc)) == (3, {"retry": "conflict"}), doc
        assert "contains" not in doc["patches"][0]["detail"]
    assert not (repo / "app.py").exists()


def test_a_condition_whose_text_the_work_tree_lost_is_not_upstream_has_it(
    repo: Path, tmp_path: Path
) -> None:
    """The same when the file is there but no longer holds the text HEAD has."""
    patches = write_patch_set(tmp_path / "ps", {"retry.patch": retry_patch(repo)})
    git(repo, "checkout", "-q", "v2")
    (repo / "retry.py").write_text("# emptied by hand\n")
    code, doc = run_json("status", "--install", repo, "--patches", patches)
    assert outcomes(doc) != {"retry": "upstream-has-it"} and code != 0, doc


def test_an_update_whose_updater_deletes_the_file_a_condition_reads_is_not_0(
    tmp_path: Path,
) -> None:
    """Issue 26 item 9, as met: release 2 adopts the fix (the patch's Upstream-Has holds in
    its commit), and the updater deletes app.py from the work tree after moving HEAD. update
    and status said "upstream-has-it (app.py contains ...)", exit 0; app.py was gone."""
    from tests.test_exit_zero import FIXED, pk_json, release_2, world

    w = world.__wrapped__(tmp_path)  # the fixture's builder, called directly
    (w.patches / "fix.patch").write_text(
        patch_text(diff_of(w.install, {"app.py": FIXED}), upstream_has="app.py: line 10 fixed")
    )
    assert pk_json(w, "apply")[0] == 0
    commit_files(w.upstream, {"app.py": FIXED}, "adopt the fix")
    release_2(w)
    w.set_updater(
        'git("fetch", "-q", "origin")\ngit("merge", "-q", "--ff-only", "origin/main")\n'
        'os.remove("app.py")\n'
    )
    for verb in ("update", "status"):
        code, doc = pk_json(w, verb)
        patches = doc["patches"]
        assert code == 3 and "contains" not in json.dumps(patches), (verb, code, doc)
        assert [(p["outcome"], p["detail"]) for p in patches] == [
            ("conflict", "does not apply to app.py")
        ]
    assert not (w.install / "app.py").exists()
