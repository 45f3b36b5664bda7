"""`patchkeeper port` on patch sets shaped as operators keep them: a quilt series entry in a
subfolder, DEP-3 headers with folded fields and fields patchkeeper does not know. Real git
repositories in tmp_path, the CLI as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import GIT_ID, commit_files, diff_of, make_repo, run_cli, run_json

LINES = "".join(f"line {n}\n" for n in range(1, 31))
HEADER = """Description: a fix
 that says why over two folded lines,
 and keeps saying it.
Bug-Vendor: https://example.invalid/bugs/7
X-Reviewed-By: someone
Applies-To: >=1.0
Forwarded: no
---
"""


def moved_upstream(tmp_path: Path) -> Path:
    """app.py at v1.0.0; at v2.0.0 four lines are added at its top (the fix moves down)."""
    repo = make_repo(tmp_path / "up", {"app.py": LINES}, tag="v1.0.0")
    commit_files(repo, {"app.py": "new\n" * 4 + LINES}, "two", tag="v2.0.0")
    return repo


def outcomes(repo: Path, patches: Path, newer: str = "v2.0.0") -> list[tuple[str, str]]:
    code, doc = run_json("check", "--ref", "v1.0.0", "--ref", newer,
                         "--install", repo, "--patches", patches)  # fmt: skip
    assert code == 0, doc
    return [(t["ref"], t["patches"][0]["outcome"]) for t in doc["targets"]]


def test_a_series_entry_in_a_subfolder_gets_its_folder_of_variants_there(tmp_path: Path) -> None:
    """quilt allows `fixes/fix.patch` in series; the port made the new variant at
    fixes/fix/fixes/fix-2.0.0.patch, whose folder is not there: an internal error, exit 1."""
    repo = moved_upstream(tmp_path)
    subprocess.run(["git", "checkout", "-q", "v1.0.0"], cwd=repo, check=True)
    fix = diff_of(repo, {"app.py": LINES.replace("line 10\n", "line 10 fixed\n")})
    patches = tmp_path / "ps"
    (patches / "fixes").mkdir(parents=True)
    (patches / "fixes" / "fix.patch").write_text(HEADER + fix)
    (patches / "series").write_text("# ours\nfixes/fix.patch -p1  # the one fix\n")
    assert outcomes(repo, patches) == [("v1.0.0", "applied"), ("v2.0.0", "applied-offset")]

    code, doc = run_json("port", "--onto", "v2.0.0", "--install", repo, "--patches", patches)
    assert code == 0, doc
    [ported] = doc["patches"]
    assert (ported["action"], ported["written"]) == ("new-variant", "fixes/fix/fix-2.0.0.patch")
    assert (patches / "series").read_text() == "# ours\nfixes/fix -p1  # the one fix\n"
    old = (patches / "fixes" / "fix" / "fix.patch").read_text()
    new = (patches / ported["written"]).read_text()
    assert old == HEADER.replace(">=1.0", ">=1.0, <2.0.0") + fix
    # The header kept as written: folded lines, unknown fields, their order.
    assert new.startswith(
        "Description: a fix\n that says why over two folded lines,\n and keeps saying it.\n"
        "Bug-Vendor: https://example.invalid/bugs/7\nX-Reviewed-By: someone\n"
        "Applies-To: >=2.0.0\nForwarded: no\n"
    )
    code, linted = run_json("lint", "--patches", patches)
    assert code == 0 and linted["problems"] == [], linted
    assert outcomes(repo, patches) == [("v1.0.0", "applied"), ("v2.0.0", "applied")]



def test_a_port_onto_an_older_release_keeps_the_variant_for_the_release_it_was_made_on(
    tmp_path: Path,
) -> None:
    """The variant made on v3.0.0 (Base) is ported back onto v1.0.0, where it applies at an
    offset: the new variant takes the range below v3.0.0. It took `>=1.0.0` and left the old
    one `<1.0.0`, a range of releases it was never made for: v3.0.0, where it applied as it
    is, was then judged with v1.0.0's diff (applied-offset)."""
    repo = make_repo(tmp_path / "up", {"app.py": LINES}, tag="v1.0.0")
    commit_files(repo, {"app.py": "new\n" * 4 + LINES}, "three", tag="v3.0.0")
    fix = diff_of(repo, {"app.py": ("new\n" * 4 + LINES).replace("line 10\n", "line 10 fixed\n")})
    base = subprocess.run(["git", "rev-parse", "v3.0.0"], cwd=repo, capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip
    patches = tmp_path / "ps"
    patches.mkdir()
    (patches / "fix.patch").write_text(f"Description: a fix\nBase: {base}\n---\n{fix}")
    (patches / "series").write_text("fix.patch\n")
    assert outcomes(repo, patches, "v3.0.0") == [("v1.0.0", "applied-offset"),
                                                  ("v3.0.0", "applied")]  # fmt: skip

    code, doc = run_json("port", "--onto", "v1.0.0", "--install", repo, "--patches", patches)
    assert code == 0, doc
    [ported] = doc["patches"]
    assert (ported["action"], ported["applies_to"], ported["old_applies_to"]) == (
        "new-variant", "<3.0.0", ">=3.0.0",
    )  # fmt: skip
    code, linted = run_json("lint", "--patches", patches)
    assert code == 0 and linted["problems"] == [], linted
    code, checked = run_json("check", "--ref", "v1.0.0", "--ref", "v3.0.0",
                             "--install", repo, "--patches", patches)  # fmt: skip
    judged = [t["patches"][0] for t in checked["targets"]]
    assert [(p["outcome"], p["variant"]) for p in judged] == [
        ("applied", "fix/fix-1.0.0.patch"), ("applied", "fix/fix.patch"),
    ]  # fmt: skip


def test_a_plain_patch_whose_folder_name_is_taken_is_a_one_line_refusal(tmp_path: Path) -> None:
    """`smoke.patch` needs a new variant, so it becomes the folder `smoke/`, which the set
    has already (its smoke checks): it was an internal error (FileExistsError, exit 1)."""
    repo = moved_upstream(tmp_path)
    subprocess.run(["git", "checkout", "-q", "v1.0.0"], cwd=repo, check=True)
    fix = diff_of(repo, {"app.py": LINES.replace("line 10\n", "line 10 fixed\n")})
    patches = tmp_path / "ps"
    (patches / "smoke").mkdir(parents=True)
    (patches / "smoke.patch").write_text(HEADER + fix)
    (patches / "series").write_text("smoke.patch\n")
    before = {p: p.read_bytes() for p in patches.rglob("*") if p.is_file()}

    proc = run_cli("port", "--onto", "v2.0.0", "--install", repo, "--patches", patches)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        f"patchkeeper: error: {patches / 'smoke'}: smoke.patch needs a folder of variants by "
        "that name, and the set has one already; rename the patch (and its series entry), "
        "then run patchkeeper port --abort and port again"
    ]
    assert run_cli("port", "--abort", "--install", repo).returncode == 0
    assert {p: p.read_bytes() for p in patches.rglob("*") if p.is_file()} == before
    assert not list(tmp_path.glob(".ps.port-*"))


def test_a_stopped_port_does_not_say_it_wrote_the_variants_it_has_not_written(
    tmp_path: Path,
) -> None:
    """Nothing is written before the port completes; the report of a port stopped at a
    conflict (or aborted) said `wrote (a new variant)` of the patches before it."""
    repo = make_repo(tmp_path / "up", {"app.py": LINES}, tag="v1.0.0")
    moved = "new\n" * 4 + LINES.replace("line 20\n", "line 20 upstream\n")
    commit_files(repo, {"app.py": moved}, "two", tag="v2.0.0")
    subprocess.run(["git", "checkout", "-q", "v1.0.0"], cwd=repo, check=True)
    first = diff_of(repo, {"app.py": LINES.replace("line 10\n", "line 10 fixed\n")})
    second = diff_of(repo, {"app.py": LINES.replace("line 20\n", "line 20 ours\n")})
    patches = tmp_path / "ps"
    patches.mkdir()
    (patches / "a.patch").write_text(HEADER + first)
    (patches / "b.patch").write_text(HEADER + second)
    (patches / "series").write_text("a.patch\nb.patch\n")
    # On v2.0.0 a applies at an offset (a new variant), and b conflicts (line 20 changed).
    proc = run_cli("port", "--onto", "v2.0.0", "--install", repo, "--patches", patches)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "a.patch" in proc.stdout and "new variant" in proc.stdout
    assert "wrote" not in proc.stdout
    aborted = run_cli("port", "--abort", "--install", repo)
    assert aborted.returncode == 0 and "wrote" not in aborted.stdout, aborted.stdout
    assert sorted(p.name for p in patches.iterdir()) == ["a.patch", "b.patch", "series"]


def test_a_port_with_no_set_named_does_not_write_into_the_bundled_set(tmp_path: Path) -> None:
    """With no --patches, no PATCHKEEPER_PATCHES and none remembered, the set is the bundled
    one, inside patchkeeper's installation (site-packages for a wheel): a port in place would
    write there, and the next upgrade would delete it. Refused; --out is the way."""
    from patchkeeper.patchset.bundled import bundled_patches

    repo = moved_upstream(tmp_path)
    bundled = bundled_patches()
    before = {p: p.read_bytes() for p in bundled.rglob("*") if p.is_file()}
    env = {k: v for k, v in os.environ.items() if k != "PATCHKEEPER_PATCHES"}
    proc = subprocess.run(
        [sys.executable, "-m", "patchkeeper", "port", "--onto", "v2.0.0", "--install", repo],
        capture_output=True, text=True, env={**env, **GIT_ID}, check=False,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith(f"patchkeeper: error: {bundled}: port will not write into the bundled")
    assert not (repo / ".git" / "patchkeeper" / "port").exists()
    assert {p: p.read_bytes() for p in bundled.rglob("*") if p.is_file()} == before


def test_a_port_run_inside_the_set_says_the_shells_folder_was_replaced(tmp_path: Path) -> None:
    """`cd my-set && patchkeeper port --onto REF --patches .`: the set's folder is swapped
    for the ported one, and the shell is left in the removed old one, where `git status`
    says 'Unable to read current working directory' and `ls` shows nothing."""
    repo = moved_upstream(tmp_path)
    subprocess.run(["git", "checkout", "-q", "v1.0.0"], cwd=repo, check=True)
    fix = diff_of(repo, {"app.py": LINES.replace("line 10\n", "line 10 fixed\n")})
    patches = tmp_path / "ps"
    patches.mkdir()
    (patches / "fix.patch").write_text(HEADER + fix)
    (patches / "series").write_text("fix.patch\n")
    proc = run_cli("port", "--onto", "v2.0.0", "--install", repo, "--patches", ".", cwd=patches)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"note: your shell's folder was replaced: run `cd {patches}` to see it" in proc.stdout
    elsewhere = run_cli("port", "--onto", "v2.0.0", "--install", repo, "--patches", patches)
    assert elsewhere.returncode == 0 and "shell's folder" not in elsewhere.stdout


def test_a_range_is_not_widened_over_a_release_it_left_out(tmp_path: Path) -> None:
    """`<2.0` applies as it is on v3.0.0; widened to `<=3.0.0` it took in v2.0.0, which
    rewrote the line it fixes: v2.0.0 went from not-applicable to conflict (check exit 3).
    A new variant for v3.0.0 leaves v2.0.0 judged as before."""
    repo = make_repo(tmp_path / "up", {"app.py": LINES}, tag="v1.0.0")
    fix = diff_of(repo, {"app.py": LINES.replace("line 5\n", "line 5 fixed\n")})
    commit_files(repo, {"app.py": LINES.replace("line 5\n", "line 5 upstream\n")}, "2",
                 tag="v2.0.0")  # fmt: skip
    commit_files(repo, {"app.py": LINES}, "3: upstream went back", tag="v3.0.0")
    patches = tmp_path / "ps"
    patches.mkdir()
    (patches / "fix.patch").write_text(HEADER.replace(">=1.0", "<2.0") + fix)
    (patches / "series").write_text("fix.patch\n")

    def judged() -> list[tuple[str, str]]:
        _, doc = run_json("check", "--ref", "v1.0.0", "--ref", "v2.0.0", "--ref", "v3.0.0",
                             "--install", repo, "--patches", patches)  # fmt: skip
        return [(t["ref"], t["patches"][0]["outcome"]) for t in doc["targets"]]

    before = judged()
    assert before[1] == ("v2.0.0", "not-applicable")
    code, doc = run_json("port", "--onto", "v3.0.0", "--install", repo, "--patches", patches)
    assert code == 0, doc
    [ported] = doc["patches"]
    assert (ported["action"], ported["applies_to"]) == ("new-variant", ">=3.0.0")
    assert "would take in 2.0.0" in ported["evidence"]
    assert judged() == [*before[:2], ("v3.0.0", "applied")]
