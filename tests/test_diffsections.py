"""diffsections.py reads the plainest git diffs without unidiff (issue 30): wherever it
answers, unidiff gives the same file names and no parse error, over the bundled patches, diffs
git writes here (new, deleted, mode-changed, several files, no newline at the end) and
thousands of seeded mutations of them; what it does not read is left to unidiff."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from patchkeeper.patchset.diffsections import plain_sections
from tests.helpers import git, make_repo

ROOT = Path(__file__).resolve().parent.parent


def unidiff_names(body: list[str]) -> list[tuple[str, str]] | None:
    """What diff.py took from unidiff: each section's names, None for a parse error."""
    try:
        parsed = PatchSet("\n".join(body) + "\n")
    except UnidiffParseError:
        return None
    return [(patched.source_file, patched.target_file) for patched in parsed]


def body_of(text: str) -> list[str]:
    return text[text.index("diff --git ") :].split("\n")


def git_diffs(tmp_path: Path) -> list[str]:
    repo = make_repo(
        tmp_path / "repo",
        {"a.py": "".join(f"a {n}\n" for n in range(30)), "gone.txt": "old\n", "run.sh": "x\n"},
    )
    (repo / "a.py").write_text(
        "".join(f"a {n}{' fixed' if n in (3, 20) else ''}\n" for n in range(30))
    )
    (repo / "new.txt").write_text("one\ntwo")  # no newline at the end
    (repo / "gone.txt").unlink()
    (repo / "run.sh").chmod(0o755)
    (repo / "empty.txt").write_text("")
    git(repo, "add", "-A")
    whole = git(repo, "diff", "--cached", "--full-index") + "\n"
    one = git(repo, "diff", "--cached", "-U1", "--", "a.py") + "\n"
    return [whole, one]


def corpus(tmp_path: Path) -> list[list[str]]:
    texts = [p.read_text() for p in sorted((ROOT / "patches").rglob("*.patch"))]
    return [body_of(text) for text in texts + git_diffs(tmp_path)]


def test_real_diffs_are_read_as_unidiff_reads_them(tmp_path: Path) -> None:
    bodies = corpus(tmp_path)
    read = [body for body in bodies if plain_sections(body) is not None]
    assert len(read) == len(bodies)  # the plain shape is the common one: all of these
    for body in read:
        assert plain_sections(body) == unidiff_names(body)
    whole = plain_sections(bodies[-2])
    assert whole is not None and ("/dev/null", "b/new.txt") in whole
    assert ("a/gone.txt", "/dev/null") in whole and ("a/run.sh", "b/run.sh") in whole


MUTATIONS = (
    "drop",
    "double",
    "blank",
    "prefix",
    "count",
    "zero",
    "rename",
    "quote",
    "marker",
    "space",
)


def mutate(body: list[str], rng: random.Random) -> list[str]:
    body = list(body)
    at = rng.randrange(len(body))
    kind = rng.choice(MUTATIONS)
    if kind == "drop":
        del body[at]
    elif kind == "double":
        body.insert(at, body[at])
    elif kind == "blank":
        body.insert(at, "")
    elif kind == "prefix":
        body[at] = rng.choice("+- \\x@") + body[at][1:]
    elif kind == "count":
        body[at] = body[at].replace(",", f",{rng.randrange(3)}", 1)
    elif kind == "zero":
        body[at] = re.sub(r",\d+", ",0", body[at])
    elif kind == "rename":
        body[at] = body[at].replace("a.py", "b.py", 1)
    elif kind == "quote":
        body[at] = body[at].replace("a/", '"a/', 1)
    elif kind == "marker":
        body.insert(at, rng.choice(("\\ No newline at end of file", "\\ other")))
    else:
        body[at] = body[at].replace("/", "/ ", 1)
    return body


@pytest.mark.parametrize("seed", range(4))
def test_mutated_diffs_read_here_are_read_alike_by_unidiff(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    bodies = corpus(tmp_path)
    read = left = 0
    for _ in range(1500):
        body = rng.choice(bodies)
        for _ in range(rng.randrange(1, 3)):
            body = mutate(body, rng)
        sections = plain_sections(body)
        if sections is None:
            left += 1
            continue
        read += 1
        assert sections == unidiff_names(body), "\n".join(body)
    assert read and left  # both ways taken


def test_what_is_not_plain_is_left_to_unidiff() -> None:
    rename = ["diff --git a/x b/y", "similarity index 100%", "rename from x", "rename to y", ""]
    quoted = ['diff --git "a/d\\303\\266" "b/d\\303\\266"', "--- a/x", "+++ b/x", ""]
    short = ["diff --git a/x b/x", "--- a/x", "+++ b/x", "@@ -1,3 +1,3 @@", "-a", "+b", ""]
    empty = ["diff --git a/x b/x", "--- a/x", "+++ b/x", "@@ -1,0 +1,0 @@", ""]
    for body in (rename, quoted, short, empty):
        assert plain_sections(body) is None
    # unidiff's own words name these: "Hunk is shorter", "Hunk is longer than expected"
    assert unidiff_names(short) is None and unidiff_names(empty) is None
