"""A variant `check` has not chosen is read from its head's bytes alone (`head_only.quick_read`,
issue 30) only where that reading is the strict reading's: held here head by head.

- The differential: for a corpus of heads (the repo's own patch files, and heads written here
  from scratch: DEP-3, git format-patch, quilt, the benchmark's variants) and their mutations
  (our own fields misspelt, odd-cased, spaced, indented, repeated, folded, after `---` or
  quilt's `Index:`, with a URL, an invalid, empty or impossible range, a bad Smoke or Choose;
  CRLF lines, bytes that are not UTF-8, an mbox line, a Description missing or repeated, no
  diff in the first bytes), whenever `quick_read` accepts a head, the strict reading of the
  same bytes (what `check` read of such a variant before) has no problem and every field of
  the variant is its: range, fixed-in, smoke, its reason, choice, Upstream-Has, fields,
  Header, warnings, path, source. And it does accept the heads `port` and the benchmark write.
- The guard: under `check`, a fix of 30 variants makes one Header (its chosen variant's) and
  no Path for a variant it does not choose.

Real files in tmp_path, a real git repository for the check.
"""

from __future__ import annotations

import dataclasses
import io
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from packaging.version import Version

from patchkeeper.commands import check_run
from patchkeeper.patchset import head_only, parse
from patchkeeper.patchset.head_only import HEAD, HeadOnly, quick_read
from patchkeeper.patchset.headers import header_end
from patchkeeper.patchset.load import load_patch_set
from patchkeeper.patchset.model import PatchFile
from patchkeeper.patchset.parse import MAX_PATCH_BYTES, parse_data
from patchkeeper.patchset.userfiles import read_user_file_head
from patchkeeper.patchset.versions import PEP440, SCHEMES
from tests.helpers import diff_of, make_repo, patch_text

REPO = Path(__file__).resolve().parent.parent
GIT_DIFF = (
    "diff --git a/app.py b/app.py\nindex 1111111..2222222 100644\n--- a/app.py\n+++ b/app.py\n"
    "@@ -1,3 +1,3 @@\n line 1\n-line 2\n+fixed\n line 3\n"
)
PLAIN_DIFF = "--- a/app.py\n+++ b/app.py\n@@ -2 +2 @@\n-line 2\n+fixed\n"
MBOX = "From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001\n"

# Heads written here, each with {own} where a field of ours goes (before the header's end)
# and {after} where one would stand after it.
BASES = {
    "bench": "{own}Applies-To: >=0.5,<0.6\nLast-Update: 2026-01-01\nDescription: synthetic fix"
    " fix-000\nSmoke: none (synthetic)\n---\n{after}",
    "dep3": "Description: the fix\n folded on, with: a colon\n .\n more\nAuthor: A <a@example>\n"
    "Bug: https://example.invalid/1\nBug: https://example.invalid/2\n{own}Forwarded: no\n"
    "Applies-To: ~=1.4\nSmoke: check_fix\n\nFree text after the fields.\n{after}",
    "format-patch": "From: A <a@example>\nDate: Mon, 1 Jan "
    "2026 00:00:00 +0000\nSubject: [PATCH 2/3] the fix\n\nThe body.\n{own}Smoke: none (body)\n"
    "Signed-off-by: A <a@example>\n---\n{after} app.py | 2 +-\n 1 file changed, 1 insertion(+)\n\n",
    "quilt": "Description: quilt's\nUpstream-Fixed-In: >=3.0\n{own}\nIndex: app/app.py\n"
    "===================================================================\n{after}",
    "by-content": "Description: chosen by content\nChoose: by-content\n{own}Applies-To: >=1\n"
    "Smoke: none (by content)\n---\n{after}",
    "none": "{own}{after}",
    # As `port` writes a variant (newset._refreshed_text): its date, the commit it was made on
    # and its range among the old header's fields.
    "port": "Description: ported fix\nLast-Update: 2026-12-03\n"
    "Base: 0123456789abcdef0123456789abcdef01234567\n{own}Applies-To: >=2.0\n"
    "Smoke: check_fix\n---\n{after}",
}
OWN_LINES = [
    "Applies-To: >=1.0", "applies-to: >=1.0", "APPLIES-TO: <2", "Applies To: >=1.0",
    "Applies_To: >=1.0", "Applies-To : >=1.0", "AppliesTo: >=1.0", "Applies--To: 1",
    " Applies-To: >=1.0", "\tApplies-To: >=1.0", "\x1cApplies-To: >=1.0", "Applies-\x1fTo: 1",
    "Applies-To\x0b: >=1.0", "Applies-To:>=1.0", "Applies-To:\t>=1.0 \t", "Applies-To: //x",
    "Applies-To: https://example.invalid", "Applies-To:", "Applies-To: not a range",
    "Applies-To: >=2,<1", "Applies-To: ==1.*", "Applies-To: ===1.0", "Applies-To: >=1.0;",
    "Smoke: none (why)", "Smoke: none", "Smoke: none ()", "Smoke: ../evil", "Smoke: a, b.py",
    "smoke: check_x", "SMOKE : check_x", "Smoke: //x", "Smoke:", "Choose: by-content",
    "Choose: By-Content ", "Choose: maybe", "choose:by-content", "Upstream-Has: app.py: fixed",
    "Upstream-Has: /etc/x: y", "Base: 1.0", "base: 1.0", "BASE:\tabc", "Base:", "Base: //x",
    "Base : x", "Base:x\n   ", "Base: x\n\n", "Upstream-Fixed-In: >=2.0",
    "Upstream-Fixed-In: nope", "Upstream Fixed In: >=2", "upstream_fixed_in: >=2",
    "X-Applies-To: 1", "Applies-To >=1", "Not-Smoke: x", "Smoked: x", "Description: again",
    "Last-Update: 2026-02-02",
]  # fmt: skip
NON_ASCII = ["\u017fmoke: x", "\xa0Smoke: x", "Smoke\u2002: x", "Description: caf\xe9"]


def _repo_heads() -> list[bytes]:
    """The patch files of this repository (its own fixes, the demo's releases, any a test
    keeps): real heads of real fixes."""
    found = []
    for folder in ("patches", "tests", "patchkeeper/demo"):
        for path in sorted((REPO / folder).rglob("*")):
            if path.suffix in (".patch", ".diff") and path.is_file():
                found.append(path.read_bytes())
    assert found, "the repository's own patch files"
    return found


def _mutations(text: str) -> list[str]:
    """TEXT (a head and its diff) as people and tools spoil it."""
    head, sep, diff = text.partition(GIT_DIFF) if GIT_DIFF in text else (text, "", "")
    return [
        text,
        head.replace("\n", "\r\n") + sep + diff,  # CRLF in the header
        text.replace("\n", "\r\n"),
        head.replace("\n", "\n\r", 1) + sep + diff,
        MBOX + text,
        "From nobody\n" + text,
        head.replace("Description", "X-Description") + sep + diff,  # no Description: a warning
        "Description: once\n" + text,  # may repeat it: a warning
        head + "-- \n" + sep + diff,
        head + "Index: app.py\n" + sep + diff,  # Index without its rule: not quilt's
        ("Description: long\n" + " more\n" * 900) + text,  # no diff in the first HEAD bytes
        head.replace("\n", "\n\n", 2) + sep + diff,
    ]


def _corpus() -> list[bytes]:
    texts: list[str] = []
    for base in BASES.values():
        for diff in (GIT_DIFF, PLAIN_DIFF):
            texts += _mutations(base.format(own="", after="") + diff)
            for line in [*OWN_LINES, *NON_ASCII]:
                for own, after in ((line + "\n", ""), ("", line + "\n")):
                    texts.append(base.format(own=own, after=after) + diff)
                texts.append(base.format(own=line + "\n" + line + "\n", after="") + diff)
                texts.append(base.format(own=line + "\n folded on\n", after="") + diff)
                texts.append(base.format(own=line + "\n\tfolded on\n", after="") + diff)
                texts.append(base.format(own=line + "\n", after="") + diff.replace("\n", "\r\n"))
                crlf = (base.format(own="", after=line + "\n") + diff).replace("\n", "\r\n")
                texts += [crlf, crlf.replace("\r\n", "\n", 1)]
            texts.append(base.format(own="---\nApplies-To: >=1\n", after="") + diff)
    corpus = [text.encode("utf-8") for text in texts]
    corpus += [b"Description: bytes \xff\xfe here\nApplies-To: >=1\n---\n" + GIT_DIFF.encode()]
    corpus += [b"Applies-To: >=1\n---\n" + GIT_DIFF.encode().replace(b"line 2", b"\xff")]
    corpus += [b"", b"Applies-To: >=1\n", b"Description: no diff at all\n"]
    for real in _repo_heads():
        corpus += [real, real.replace(b"\n", b"\r\n"), b"Applies-To: >=1\n" + real]
        corpus += [real.replace(b"Smoke:", b"Smoke: x\nSmoke:", 1)]
    return corpus


def _today(path: Path) -> tuple[bytes, PatchFile | None, list]:
    """What `check` read of a variant it had not chosen, before `quick_read`: its first bytes
    up to its diff's start, read by the strict reading without the diff."""
    head, unreadable = read_user_file_head(str(path), MAX_PATCH_BYTES, header_end, HEAD)
    assert unreadable is None
    parsed, problems = parse_data(path, head, False, PEP440, diff=False)
    return head, parsed, problems


def test_a_head_read_quickly_is_read_as_the_strict_reading_reads_it(tmp_path: Path) -> None:
    corpus = _corpus()
    accepted = 0
    for number, data in enumerate(corpus):
        path = tmp_path / f"v{number:05d}.patch"
        path.write_bytes(data)
        quick = quick_read(str(path), PEP440)
        if quick is None:
            continue
        accepted += 1
        head, parsed, problems = _today(path)
        assert problems == [] and parsed is not None, (data, problems)
        assert quick.source == head, data
        for field in dataclasses.fields(PatchFile):
            mine, theirs = getattr(quick, field.name), getattr(parsed, field.name)
            assert mine == theirs, (field.name, data, mine, theirs)
    # Enough of the corpus is accepted for the comparison to mean something, and not all.
    assert len(corpus) > 1500 and len(corpus) // 8 < accepted < len(corpus) // 2, accepted


@pytest.mark.parametrize("name", ["bench", "dep3", "format-patch", "quilt", "by-content", "port"])
@pytest.mark.parametrize("diff", [GIT_DIFF, PLAIN_DIFF])
def test_plain_heads_are_read_quickly(tmp_path: Path, name: str, diff: str) -> None:
    """The heads `port` and the benchmark write, DEP-3 and quilt ones: read quickly (else
    the gain is nothing); the strict reading's answers, as above."""
    text = BASES[name].format(own="", after="") + diff
    if name == "format-patch":
        text = text.replace("\n---\n", "\nApplies-To: <2\n---\n")
    path = tmp_path / "v.patch"
    path.write_text(text)
    quick = quick_read(str(path), PEP440)
    assert isinstance(quick, HeadOnly)
    _, parsed, _ = _today(path)
    assert parsed is not None
    assert (quick.applies_to, quick.upstream_fixed_in, quick.smoke, quick.unchecked) == (
        parsed.applies_to, parsed.upstream_fixed_in, parsed.smoke, parsed.unchecked
    )  # fmt: skip
    assert quick.by_content is (name == "by-content")


def test_a_set_in_another_version_scheme_is_read_the_strict_way(tmp_path: Path) -> None:
    path = tmp_path / "v.patch"
    path.write_text(BASES["bench"].format(own="", after="") + GIT_DIFF)
    assert quick_read(str(path), PEP440) is not None
    assert quick_read(str(path), SCHEMES["semver"]) is None


FIXES, VARIANTS = 3, 30
LINES = "".join(f"line {n}\n" for n in range(1, 21))


def test_check_makes_one_header_and_no_path_for_a_fix_of_30_variants(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", {"app.py": LINES}, tag="v7.5")
    root = tmp_path / "ps"
    for n in range(FIXES):
        diff = diff_of(repo, {"app.py": LINES.replace(f"line {n * 5 + 3}\n", "fixed\n")})
        (root / f"fix{n}").mkdir(parents=True)
        for k in range(VARIANTS):
            text = patch_text(diff, f"fix {n}", applies_to=f">={k + 1}.0,<{k + 2}.0")
            (root / f"fix{n}" / f"v{k:02d}.patch").write_text(text)
    (root / "series").write_text("".join(f"fix{n}/\n" for n in range(FIXES)))
    headers_made: list[Path] = []
    real_parse_header = parse.parse_header

    def counted(path: Path, lines: list[str]):  # type: ignore[no-untyped-def]
        headers_made.append(path)
        return real_parse_header(path, lines)

    monkeypatch.setattr(parse, "parse_header", counted)
    with redirect_stdout(io.StringIO()) as out:
        code = check_run.run(
            refs=("v7.5",), tag_globs=(), since=None, fetch_remote=None, output="text",
            junit_path=None, progress=False, install_path=repo, patches_dir=root,
            metrics_path=None,
        )  # fmt: skip
    # text, not --json: test_refs_cost counts the JSON renderer where it is first imported
    rows = [line.split() for line in out.getvalue().splitlines() if line.startswith("fix")]
    assert (code, rows) == (0, [[f"fix{n}", "applied"] for n in range(FIXES)])
    assert sorted(p.name for p in headers_made) == ["v06.patch"] * FIXES
    patch_set = load_patch_set(root, deferred=True)
    loaded = [v for p in patch_set.patches for v in p.variants]
    assert all(isinstance(v, HeadOnly) for v in loaded)
    for patch in patch_set.patches:
        [chosen] = patch.candidates(Version("7.5"))
        assert chosen.path.name == "v06.patch" and chosen.diff
    unchosen = [v for v in loaded if "path" not in vars(v)]
    assert len(unchosen) == FIXES * (VARIANTS - 1)
    assert head_only._facts.cache_info().currsize >= VARIANTS
