"""Variants chosen by content (`Choose: by-content`): when the version cannot tell two code
shapes apart, their ranges overlap and the engine keeps the one variant that applies, says
which and why (text and JSON), writes never two, and never guesses: none applies is a
conflict naming each variant's failure, more than one applies is refused as ambiguous, an
unknown version tries every variant and says so. Real git repositories, the CLI as a
subprocess.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers import commit_files, diff_of, git, make_repo, outcomes, patch_text, run_cli, run_json

# Two shapes of one worker: the same call, under a `try:` (old) or after a new line (new).
OLD = """def work(store, adopt, run):
    try:
        with store():
            if adopt() is None:
                return False
            return run()
    finally:
        pass
"""
NEW = """def work(store, adopt, run, scope):
    try:
        token = scope()
        with store():
            if adopt() is None:
                return False
            return run()
    finally:
        pass
"""
OTHER = """def work(store, adopt, run):
    with store():
        if adopt() is None:
            return False
        return run()
"""
RETRY = "adopt_while_busy(adopt)"


def _variant(tmp_path: Path, name: str, shape: str, *, context: int = 3) -> str:
    """A diff for SHAPE that wraps the adoption in the retry (made in a repo of its own, so
    the install has no preimage blob for the other shape's variant)."""
    scratch = make_repo(tmp_path / f"made-{name}", {"worker.py": shape})
    diff = diff_of(scratch, {"worker.py": shape.replace("adopt() is None", f"{RETRY} is None")})
    if context != 3:  # fewer context lines: both shapes match
        (scratch / "worker.py").write_text(shape.replace("adopt() is None", f"{RETRY} is None"))
        diff = git(scratch, "diff", f"-U{context}") + "\n"
        git(scratch, "checkout", "-q", "--", "worker.py")
    return diff


def _set(
    tmp_path: Path, *, choose_a: bool = True, choose_b: bool = True, narrow: bool = False
) -> Path:
    """A patch set with one fix, `adopt`, in two variants for >=1.0 (old.patch, new.patch).
    NARROW: both variants carry only the changed line's context (both shapes match)."""
    root = tmp_path / "ps"
    (root / "adopt").mkdir(parents=True)
    for name, shape, choose in (("old", OLD, choose_a), ("new", NEW, choose_b)):
        diff = _variant(tmp_path, name, shape, context=1 if narrow else 3)
        fields: dict[str, str] = {"applies_to": ">=1.0"}
        if choose:
            fields["choose"] = "by-content"
        (root / "adopt" / f"{name}.patch").write_text(patch_text(diff, **fields))
    (root / "series").write_text("adopt/\n")
    return root


def _install(tmp_path: Path, shape: str, tag: str | None = "v1.5") -> Path:
    return make_repo(tmp_path / "install", {"worker.py": shape}, tag=tag)


def _patch(document: dict[str, Any]) -> dict[str, Any]:
    [patch] = document["targets"][0]["patches"] if "targets" in document else document["patches"]
    return patch


def test_lint_accepts_overlapping_variants_chosen_by_content_and_refuses_other_overlaps(
    tmp_path: Path,
) -> None:
    assert run_cli("lint", "--patches", _set(tmp_path / "both")).returncode == 0
    one = run_cli("lint", "--patches", _set(tmp_path / "one", choose_a=False))
    assert one.returncode == 2
    assert "Applies-To overlaps variant" in one.stdout + one.stderr
    assert "Choose: by-content' in both" in one.stdout + one.stderr
    bad = _set(tmp_path / "bad")
    text = (bad / "adopt" / "new.patch").read_text().replace("by-content", "by-version")
    (bad / "adopt" / "new.patch").write_text(text)
    linted = run_cli("lint", "--patches", bad)
    assert linted.returncode == 2 and "Choose 'by-version'" in linted.stdout + linted.stderr


def test_the_variant_that_applies_is_chosen_said_written_and_recorded(tmp_path: Path) -> None:
    root, repo = _set(tmp_path), _install(tmp_path, NEW)
    code, status = run_json("status", "--install", repo, "--patches", root)
    patch = _patch(status)
    assert (code, patch["outcome"], patch["variant"]) == (5, "pending", "adopt/new.patch")
    choice = patch["variant_choice"]
    assert choice["by"] == "content" and choice["chosen"] == "adopt/new.patch"
    assert choice["reason"].startswith("variant new.patch chosen by content: old.patch ")
    assert "does not apply to worker.py" in choice["reason"] and choice["version_known"]
    assert {t["variant"]: t["outcome"] for t in choice["tried"]} == {
        "adopt/old.patch": "conflict",
        "adopt/new.patch": "applied",
    }
    applied = run_cli("apply", "--install", repo, "--patches", root)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "note: variant new.patch chosen by content: old.patch does not apply" in applied.stdout
    assert (repo / "worker.py").read_text() == NEW.replace("adopt() is None", f"{RETRY} is None")
    code, after = run_json("status", "--install", repo, "--patches", root)
    patch = _patch(after)
    assert (code, patch["outcome"], patch["variant"]) == (0, "already-applied", "adopt/new.patch")
    assert patch["variant_choice"]["reason"] == (
        "variant new.patch chosen: patchkeeper wrote it earlier"
    )


def test_check_chooses_per_ref_and_carries_the_choice(tmp_path: Path) -> None:
    root, repo = _set(tmp_path), _install(tmp_path, OLD, tag="v1.5")
    commit_files(repo, {"worker.py": NEW}, "restructure", tag="v1.6")
    code, document = run_json("check", "--install", repo, "--patches", root, "--tags", "v1.*")
    assert code == 0, document
    chosen = {t["ref"]: _patch({"patches": t["patches"]})["variant"] for t in document["targets"]}
    assert chosen == {"v1.5": "adopt/old.patch", "v1.6": "adopt/new.patch"}
    for target in document["targets"]:
        assert target["patches"][0]["variant_choice"]["by"] == "content"


def test_none_applies_is_a_conflict_naming_each_variant_and_writes_nothing(tmp_path: Path) -> None:
    root, repo = _set(tmp_path), _install(tmp_path, OTHER)
    code, document = run_json("apply", "--install", repo, "--patches", root)
    patch = _patch(document)
    assert (code, patch["outcome"], patch["variant"]) == (3, "conflict", None)
    assert patch["detail"].startswith("no variant applies: ")
    assert "old.patch does not apply to worker.py" in patch["detail"]
    assert "new.patch does not apply to worker.py" in patch["detail"]
    assert patch["conflicts"] and patch["variant_choice"]["chosen"] is None
    assert (repo / "worker.py").read_text() == OTHER


def test_more_than_one_applying_is_refused_as_ambiguous(tmp_path: Path) -> None:
    root, repo = _set(tmp_path, narrow=True), _install(tmp_path, NEW)
    code, document = run_json("apply", "--install", repo, "--patches", root)
    patch = _patch(document)
    assert (code, patch["outcome"]) == (3, "conflict")
    assert patch["detail"].startswith("ambiguous: variants new.patch, old.patch all apply")
    assert (repo / "worker.py").read_text() == NEW  # nothing written, not one of them guessed
    assert run_cli("lint", "--patches", root).returncode == 0


def test_an_unknown_version_tries_every_variant_and_says_so(tmp_path: Path) -> None:
    root, repo = _set(tmp_path), _install(tmp_path, OLD, tag=None)
    code, document = run_json("apply", "--install", repo, "--patches", root)
    patch = _patch(document)
    assert document["install"]["version"] is None
    assert (code, patch["outcome"], patch["variant"]) == (0, "applied", "adopt/old.patch")
    choice = patch["variant_choice"]
    assert not choice["version_known"] and not patch["undecided"]
    assert "the version is unknown, so every variant was tried" in choice["reason"]
    code, document = run_json("apply", "--install", _install(tmp_path / "c", OTHER, tag=None),
                              "--patches", root)  # fmt: skip
    assert (code, outcomes(document)) == (3, {"adopt": "conflict"})


def test_the_documents_that_carry_a_choice_match_their_schemas(tmp_path: Path) -> None:
    from test_schemas import validate

    root, repo = _set(tmp_path), _install(tmp_path, NEW)
    documents = [run_json(*args, "--install", repo, "--patches", root)[1] for args in (
        ("status",), ("check", "--ref", "v1.5"), ("apply",), ("status",),
    )]  # fmt: skip
    for document in documents:
        validate(document)
    assert all(_patch(d)["variant_choice"] is not None for d in documents)


def test_variants_that_all_find_the_fix_upstream_agree(tmp_path: Path) -> None:
    root, repo = _set(tmp_path), _install(tmp_path, OLD)
    (repo / "retry.py").write_text("def adopt_while_busy(adopt):\n    return adopt()\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "upstream's own retry")
    for variant in (root / "adopt").glob("*.patch"):
        text = variant.read_text().replace(
            "---\n", "Upstream-Has: retry.py: def adopt_while_busy(\n---\n", 1
        )
        variant.write_text(text)
    code, document = run_json("status", "--install", repo, "--patches", root)
    patch = _patch(document)
    assert (code, patch["outcome"]) == (0, "upstream-has-it")
    assert patch["variant_choice"]["reason"] == (
        "variant new.patch chosen by content: every variant that applies finds the fix there "
        "(upstream-has-it)"
    )
