"""The fast paths at the edges give the answers the slow ones gave.

- Variants: overlap is found from each range's bounds, and a version picks its variant by
  bisection; both are compared here with pairwise probing and with asking every variant,
  over many generated ranges (the slow ways are kept below as the oracle).
- Many refs: each ref's entries come from a diff with the tree before it, and a ref whose tree
  was judged already takes that answer; compared with `git ls-tree` itself, and with checking
  every ref afresh, on real repositories whose files move, vanish, turn into folders, change
  mode, and whose tags share trees.
"""

from __future__ import annotations

import random
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace

import pytest
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from patchkeeper.engine.checking import check_refs
from patchkeeper.install.plumbing.scratch_index import TreeListings
from patchkeeper.patchset.load import load_patch_set
from patchkeeper.patchset.variants import (
    AmbiguousVariant,
    VariantChoice,
    bounds,
    meeting_pairs,
    overlap_at,
    release_point,
)
from tests.helpers import commit_files, diff_of, git, make_repo, patch_text, write_patch_set

# ---------------------------------------------------------------- variants


def _claims(specs: list[SpecifierSet | None], version: Version | None) -> list[int]:
    """Every variant that is for VERSION, in folder order: no range, or one that contains it."""
    return [
        i
        for i, spec in enumerate(specs)
        if spec is None or (version is not None and spec.contains(version, prereleases=True))
    ]


def _random_version(rng: random.Random) -> str:
    text = ".".join(str(rng.randrange(3)) for _ in range(rng.randrange(1, 4)))
    return text + rng.choice(["", "", "", "", "rc1", ".post1", ".dev0"])


def _random_spec(rng: random.Random) -> SpecifierSet:
    parts = []
    for _ in range(rng.randrange(1, 3)):
        operator = rng.choice(["==", "!=", "<", "<=", ">", ">=", "~="])
        version = _random_version(rng)
        if operator in ("==", "!=") and version[-1].isdigit() and rng.random() < 0.3:
            version += ".*"
        if operator == "~=" and "." not in version:
            version += ".0"
        parts.append(operator + version)
    try:
        return SpecifierSet(",".join(parts))
    except InvalidSpecifier:
        return SpecifierSet(">=1")


VERSIONS = sorted(
    {
        Version(f"{a}.{b}.{c}{suffix}")
        for a in range(3)
        for b in range(3)
        for c in range(3)
        for suffix in ("", "rc1", ".post1", ".dev0", "+local")
    }
)


@pytest.mark.parametrize("seed", range(4))
def test_bounds_hold_every_version_a_range_contains(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(300):
        spec = _random_spec(rng)
        found = bounds(spec)
        for version in VERSIONS:
            if spec.contains(version, prereleases=True):
                assert found.holds(release_point(version)), (str(spec), str(version), found)


@pytest.mark.parametrize("seed", range(4))
def test_overlap_by_bounds_finds_what_probing_every_pair_found(seed: int) -> None:
    rng = random.Random(100 + seed)
    for _ in range(100):
        specs = [_random_spec(rng) for _ in range(rng.randrange(2, 7))]
        old = [  # every pair probed, as before
            (i, j, both)
            for i in range(len(specs))
            for j in range(i + 1, len(specs))
            if (both := overlap_at(specs[i], specs[j])) is not None
        ]
        pairs = meeting_pairs([bounds(spec) for spec in specs])
        new = [(i, j, both) for i, j in pairs if (both := overlap_at(specs[i], specs[j]))]
        assert new == old, [str(s) for s in specs]


@pytest.mark.parametrize("seed", range(4))
def test_a_version_picks_the_one_variant_that_claims_it_and_refuses_two(seed: int) -> None:
    """Checked against every variant asked one by one; two that claim a version are refused,
    naming both (issue 20: the load no longer refuses an overlap, the choice does)."""
    rng = random.Random(200 + seed)
    refused = 0
    for _ in range(150):
        specs: list[SpecifierSet | None] = [
            None if rng.random() < 0.05 else _random_spec(rng) for _ in range(rng.randrange(1, 8))
        ]
        variants = [
            SimpleNamespace(applies_to=spec, path=Path(f"fix/v{i}.patch"), by_content=False)
            for i, spec in enumerate(specs)
        ]
        choose = VariantChoice(variants)  # type: ignore[arg-type]
        for version in [*VERSIONS[::2], None]:
            claims = _claims(specs, version)
            if len(claims) > 1:
                first, second = claims[:2]
                named = rf"^fix/v{second}\.patch: .* variant v{first}\.patch"
                with pytest.raises(AmbiguousVariant, match=named):
                    choose(version)
                refused += 1
            else:
                assert choose(version) == ((variants[claims[0]],) if claims else ())
    assert refused  # random ranges overlap often: the refusal is tested too


def test_thirty_disjoint_variants_meet_in_no_pair() -> None:
    specs = [SpecifierSet(f">=0.{k},<0.{k + 1}") for k in range(29)] + [SpecifierSet(">=1.0")]
    assert meeting_pairs([bounds(spec) for spec in specs]) == []
    choose = VariantChoice([SimpleNamespace(applies_to=spec, by_content=False) for spec in specs])  # type: ignore[arg-type]
    [at_073] = choose(Version("0.7.3"))  # variants chosen by content aside, one or none
    assert at_073.applies_to == specs[7]
    [at_14] = choose(Version("1.4"))
    assert at_14.applies_to == specs[29]
    assert choose(Version("0.29.1")) == ()


# ---------------------------------------------------------------- refs by difference


def _ls_tree(repo: Path, tree: str, paths: list[str]) -> list[bytes]:
    import subprocess

    out = subprocess.run(
        ["git", "ls-tree", "-r", "-z", tree, "--", *sorted(paths)],
        cwd=repo, capture_output=True, check=True,
    ).stdout  # fmt: skip
    return sorted(entry + b"\0" for entry in out.split(b"\0") if entry)


def _split(listing: bytes) -> list[bytes]:
    return sorted(entry + b"\0" for entry in listing.split(b"\0") if entry)


def test_listings_by_difference_are_what_ls_tree_lists(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "up", {"a.py": "a\n", "b.py": "b\n", "keep/c.py": "c\n"})
    trees = [git(repo, "rev-parse", "HEAD^{tree}")]

    def step(change) -> None:  # type: ignore[no-untyped-def]
        change()
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", "step")
        trees.append(git(repo, "rev-parse", "HEAD^{tree}"))

    step(lambda: (repo / "a.py").write_text("a 2\n"))
    step(lambda: (repo / "b.py").unlink())  # gone
    step(lambda: (repo / "b.py").mkdir() or (repo / "b.py" / "inner.py").write_text("x\n"))
    step(lambda: (repo / "a.py").chmod(0o755))
    step(lambda: (repo / "link").symlink_to("a.py"))
    step(lambda: None)  # the same tree again
    step(lambda: (repo / "keep" / "c.py").write_text("c 2\n"))
    paths = ["a.py", "b.py", "link", "new/d.py"]
    order = [*trees, trees[0], trees[3], trees[-1]]  # backwards too, and trees seen before
    listings = TreeListings(repo, paths, order)
    for tree in order:
        assert _split(listings.listing(tree, paths)) == _ls_tree(repo, tree, paths)
        assert _split(listings.listing(tree, ["b.py"])) == _ls_tree(repo, tree, ["b.py"])


def test_tags_that_share_a_tree_are_judged_as_every_ref_afresh(tmp_path: Path) -> None:
    lines = "".join(f"line {n}\n" for n in range(1, 31))
    repo = make_repo(tmp_path / "up", {"app.py": lines, "lib.py": lines}, tag="v1.0.0")
    fix = diff_of(repo, {"app.py": lines.replace("line 5\n", "line 5 fixed\n")})
    other = diff_of(repo, {"lib.py": lines.replace("line 9\n", "line 9 fixed\n")})
    git(repo, "tag", "v1.1.0", git(repo, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "same"))
    commit_files(repo, {"lib.py": lines.replace("line 9\n", "line 9 changed\n")}, "c", "v2.0.0")
    head = git(repo, "rev-parse", "HEAD")
    for tag in ("v2.1.0", "v3.0.0"):  # v2.0.0's tree again, then a version of other variants
        head = git(repo, "commit-tree", "HEAD^{tree}", "-p", head, "-m", "same")
        git(repo, "tag", tag, head)
    root = write_patch_set(
        tmp_path / "ps",
        {
            "fix/old.patch": patch_text(fix, applies_to="<2.1"),
            "fix/new.patch": patch_text(fix, applies_to=">=2.1", upstream_fixed_in=">=3"),
            "other.patch": patch_text(other, upstream_fixed_in="==1.1.0"),
        },
    )
    patch_set = load_patch_set(root)
    tags = ["v1.0.0", "v1.1.0", "v2.0.0", "v2.1.0", "v3.0.0", "v1.1.0"]
    fast = check_refs(repo, patch_set, tags)
    slow = check_refs(repo, patch_set, tags, reuse=False, batch=False)
    assert [[asdict(r) for r in report.results] for report in fast] == [
        [asdict(r) for r in report.results] for report in slow
    ]
    outcomes = [[r.outcome for r in report.results] for report in fast]
    assert outcomes[1] == ["applied", "upstream-has-it"]  # same tree as v1.0.0, other version
    assert outcomes[4][0] == "upstream-has-it"


# ---------------------------------------------------------------- JSON, streamed


def test_a_streamed_document_is_the_bytes_of_the_whole_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    from patchkeeper.report.render import SCHEMA, emit_json

    targets = [
        {"ref": "v1", "patches": [{"name": "a\u00e9\x1b", "offsets": [], "notes": ["x\ny"]}]},
        {"ref": "v2", "patches": [], "nested": {"deep": [1, 2.5, None, True]}},
    ]
    flat = [{"name": f"p{n}", "ref": "v1"} for n in range(3)]
    emit_json("check", 3, patch_set="ps", targets=iter(targets), patches=iter(flat))
    streamed = capsys.readouterr().out
    emit_json("check", 3, patch_set="ps", targets=iter(()), patches=[])
    empty = capsys.readouterr().out
    whole = {"schema": SCHEMA, "command": "check", "exit_code": 3, "patch_set": "ps",
             "selection": None, "targets": targets, "patches": flat}  # fmt: skip
    assert streamed == json.dumps(whole, indent=2) + "\n"
    assert empty == json.dumps({**whole, "targets": [], "patches": []}, indent=2) + "\n"
