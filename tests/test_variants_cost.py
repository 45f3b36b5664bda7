"""What a variant `check` does not choose costs, counted (never timed; issue 30).

- A header line the variants of a set share (a fix's Description, its Smoke, a range) is
  read once by the strict reading (every command but `check`, which reads the variants it
  does not choose from their heads' bytes: tests/test_head_only.py), however many variants
  carry it.
- A range many variants share is bounded once when a version chooses among them.
- PatchFile and Header write their fields in one update (their frozen dataclass's own
  `__init__` sets each through `object.__setattr__`): the hand-written `__init__` takes
  exactly the dataclass's fields, with the same defaults.

Real patch files in tmp_path; the counters read patchkeeper's own caches and wrap its own
constructor of bounds.
"""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pytest
from packaging.version import Version

from patchkeeper.patchset import headers, variants
from patchkeeper.patchset.headers import Header
from patchkeeper.patchset.load import load_patch_set
from patchkeeper.patchset.model import PatchFile
from tests.helpers import diff_of, make_repo, patch_text

LINES = "".join(f"line {n}\n" for n in range(1, 21))
FIXES, VARIANTS = 4, 25


def _set(tmp_path: Path) -> Path:
    """FIXES fixes of VARIANTS variants each, for 1.x .. VARIANTS.x: each fix's variants share
    their Description and Smoke lines, and variant k of every fix has the same range."""
    repo = make_repo(tmp_path / "repo", {"app.py": LINES})
    diff = diff_of(repo, {"app.py": LINES.replace("line 3\n", "fixed\n")})
    root = tmp_path / "ps"
    for n in range(FIXES):
        (root / f"fix{n}").mkdir(parents=True)
        for k in range(VARIANTS):
            text = patch_text(diff, f"fix {n}", applies_to=f">={k + 1}.0,<{k + 2}.0")
            (root / f"fix{n}" / f"v{k:02d}.patch").write_text(text)
    (root / "series").write_text("".join(f"fix{n}/\n" for n in range(FIXES)))
    return root


def test_a_header_line_the_variants_share_is_read_once(tmp_path: Path) -> None:
    root = _set(tmp_path)
    headers._short_line_facts.cache_clear()
    patch_set = load_patch_set(root)
    distinct = FIXES + 1 + VARIANTS  # the Descriptions, the one Smoke line, the ranges
    assert headers._short_line_facts.cache_info().misses == distinct
    chosen = [p.select(Version("7.5")) for p in patch_set.patches]
    assert [v.path.name if v else None for v in chosen] == ["v06.patch"] * FIXES
    assert all(v is not None and v.diff and v.files == ("app.py",) for v in chosen)


def test_a_range_many_variants_share_is_bounded_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _set(tmp_path)
    made: list[variants.Bounds] = []
    real = variants.Bounds

    def counted(low: variants.Point, high: variants.Point) -> variants.Bounds:
        made.append(real(low, high))
        return made[-1]

    variants._BOUNDED.clear()
    variants._SORTED.clear()  # what fixes with the same ranges share, from an earlier test
    monkeypatch.setattr(variants, "Bounds", counted)
    patch_set = load_patch_set(root, deferred=True)
    for version in ("1.5", "9.0", "25.1", "40.0"):
        [p.candidates(Version(version)) for p in patch_set.patches]
    monkeypatch.undo()
    assert len(made) == VARIANTS  # one per distinct range, not one per variant (100)
    chosen = patch_set.patches[0].candidates(Version("25.1"))
    assert [v.path.name for v in chosen] == ["v24.patch"]


@pytest.mark.parametrize("kind", [PatchFile, Header])
def test_the_one_update_init_takes_exactly_the_dataclass_fields(kind: type) -> None:
    declared = dataclasses.fields(kind)
    parameters = list(inspect.signature(kind.__init__).parameters.values())[1:]
    assert [p.name for p in parameters] == [f.name for f in declared]
    for parameter, field in zip(parameters, declared, strict=True):
        if field.default is not dataclasses.MISSING:
            assert parameter.default == field.default, field.name
        elif field.default_factory is not dataclasses.MISSING:
            assert parameter.default is None, field.name  # None stands for a fresh default
        else:
            assert parameter.default is inspect.Parameter.empty, field.name
    if kind is Header:
        made = Header({}, {}, {}, {}, (), 0)
        assert made.problems == [] and made.warnings == [] and made.problems is not made.warnings
        with pytest.raises(dataclasses.FrozenInstanceError):
            made.diff_start = 1  # type: ignore[misc]


def test_fixes_with_the_same_ranges_share_one_sorting_of_them(tmp_path: Path) -> None:
    """Every fix of `_set` has the same 25 ranges in the same order: they are bounded and
    sorted once for all of them, and each fix still chooses its own variant."""
    root = _set(tmp_path)
    variants._SORTED.clear()
    patch_set = load_patch_set(root, deferred=True)
    chosen = [p.candidates(Version("7.5")) for p in patch_set.patches]
    assert len(variants._SORTED) == 1
    assert [[v.path.parent.name, v.path.name] for (v,) in chosen] == [
        [f"fix{n}", "v06.patch"] for n in range(FIXES)
    ]
    sorted_once = {id(p.choose._sorted) for p in patch_set.patches}  # type: ignore[attr-defined]
    assert len(sorted_once) == 1
