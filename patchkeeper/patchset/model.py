"""The patch set as the engine sees it: the set (`PatchSet`), each fix in it (`Patch`: one patch
file, or several variants for version ranges) and a patch file read (`PatchFile`; its
`Upstream-Has:` conditions are conditions.py's). Typed values and the small questions they
answer, apart from the reading: `load` builds them from disk, `variants` says which variant a
version picks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.version import Version

from patchkeeper.model.errors import UserError
from patchkeeper.model.problems import Problem
from patchkeeper.patchset.headers import Header
from patchkeeper.patchset.versions import PEP440, VersionScheme

if TYPE_CHECKING:  # loaded by the first Applies-To or Upstream-Fixed-In (fields.py)
    from packaging.specifiers import SpecifierSet

    from patchkeeper.patchset.conditions import ContentCondition  # the first Upstream-Has

# The header line by which variants whose ranges overlap say they are chosen by what applies.
BY_CONTENT_FIELD = "Choose: by-content"


@dataclass(frozen=True, init=False)
class PatchFile:
    """One patch file: parsed header fields plus the diff bytes exactly as stored."""

    path: Path
    fields: dict[str, str]
    diff: bytes
    files: tuple[str, ...]
    applies_to: SpecifierSet | None
    upstream_fixed_in: SpecifierSet | None
    smoke: tuple[str, ...]
    # The file's bytes as read (b"" when it could not be); for a variant `check` has not
    # chosen yet, only its header's (`Patch.complete` reads the rest): check never hashes it.
    source: bytes = field(repr=False)
    upstream_has: tuple[ContentCondition, ...] = ()  # all must hold upstream: it has the fix
    header: Header = field(default_factory=Header.none)  # every field, as written; free text
    warnings: tuple[Problem, ...] = ()  # header problems that leave the diff readable
    empty: bool = False  # no diff at all: applied as empty, as quilt does
    invalid: str | None = None  # why it cannot be read or is unsafe: `invalid`, never tried
    unchecked: str | None = None  # `Smoke: none (WHY)`: no check can prove it, and why
    by_content: bool = False  # `Choose: by-content`: may share versions with such variants

    def __init__(
        self,
        path: Path,
        fields: dict[str, str],
        diff: bytes,
        files: tuple[str, ...],
        applies_to: SpecifierSet | None,
        upstream_fixed_in: SpecifierSet | None,
        smoke: tuple[str, ...],
        source: bytes,
        upstream_has: tuple[ContentCondition, ...] = (),
        header: Header | None = None,
        warnings: tuple[Problem, ...] = (),
        empty: bool = False,
        invalid: str | None = None,
        unchecked: str | None = None,
        by_content: bool = False,
    ) -> None:
        """The dataclass's own, in one write: a frozen dataclass's sets each field through
        `object.__setattr__`, what a variant `check` does not choose mostly costs."""
        self.__dict__.update(
            path=path, fields=fields, diff=diff, files=files, applies_to=applies_to,
            upstream_fixed_in=upstream_fixed_in, smoke=smoke, source=source,
            upstream_has=upstream_has, header=Header.none() if header is None else header,
            warnings=warnings, empty=empty, invalid=invalid, unchecked=unchecked,
            by_content=by_content,
        )  # fmt: skip

    @property
    def description(self) -> str:
        return self.fields.get("description") or self.fields.get("subject") or ""

    @cached_property
    def sha256(self) -> str:
        """The file's SHA-256 as read ("" when it could not be read), on first use: `check`
        never asks, and importing hashlib costs more than a small check's judging."""
        import hashlib

        return hashlib.sha256(self.source).hexdigest() if self.invalid is None else ""

    @property
    def base(self) -> str | None:
        return self.fields.get("base")

    @property
    def upstream_has_reason(self) -> str:
        """What a result says when every `Upstream-Has:` condition holds (the engine writes
        it, the smoke run reads it back to find the variant that retired the patch)."""
        return f"upstream has it: {', '.join(map(str, self.upstream_has))}"

    @property
    def upstream_fixed_in_reason(self) -> str:
        """How a result says `Upstream-Fixed-In` contains the version, up to the version (the
        engine writes it, the smoke run reads it back to find the variant that retired the
        patch)."""
        return f"Upstream-Fixed-In {self.upstream_fixed_in} contains "


@dataclass(frozen=True)
class Patch:
    """One fix, as named in `series`: one patch file, or several variants for version ranges."""

    name: str
    entry: str
    variants: tuple[PatchFile, ...]
    # Which of VARIANTS a version picks (`variants.VariantChoice`, given by the loader: the
    # model holds no arithmetic of ranges): none, one, or several chosen by content.
    choose: Callable[[Version | None], tuple[PatchFile, ...]] = field(compare=False)
    # Set when VARIANTS were read without their diffs (`check`: `load_patch_set(deferred=
    # True)`): reads a variant's diff, the first time it is chosen; it may be `invalid` then.
    complete: Callable[[PatchFile], PatchFile] | None = field(default=None, compare=False)

    def candidates(self, version: Version | None) -> tuple[PatchFile, ...]:
        """The variants for VERSION: the one with no Applies-To or one that contains it;
        several only when they are chosen by content (`Choose: by-content`, the engine tries
        them); none when no variant is for VERSION; `AmbiguousVariant` (exit 2) when two
        claim it otherwise. An unknown version matches an unversioned variant, else every
        variant chosen by content.
        A variant that cannot be read is chosen first: its range is unknown, so it may be
        the one for VERSION, and the patch is `invalid` rather than quietly another variant.
        """
        if self._unread is not None:
            return (self._unread,)
        chosen = self.choose(version)
        if self.complete is None:
            return chosen
        for variant in chosen:  # once: the same object for every version
            if variant.path not in self._completed:
                self._completed[variant.path] = self.complete(variant)
        return tuple(self._completed[v.path] for v in chosen)

    def select(self, version: Version | None) -> PatchFile | None:
        """The one variant for VERSION (see `candidates`), None when there is none. Variants
        chosen by content have no one variant before the engine tried them: a caller that
        needs one then takes the variant a result or a record names (`variant_at`)."""
        found = self.candidates(version)
        if len(found) > 1:
            names = ", ".join(v.path.name for v in found)
            raise UserError(
                f"{found[0].path.parent}: {names} are chosen by content for version "
                f"{version or 'unknown'}: run `patchkeeper status` to see which one applies"
            )
        return found[0] if found else None

    def variant_at(self, relative: str | None, root: Path) -> PatchFile | None:
        """The variant whose path, relative to the set's folder ROOT, is RELATIVE."""
        found = next((v for v in self.variants if str(v.path.relative_to(root)) == relative), None)
        return self._completed.get(found.path, found) if found is not None else None

    @cached_property
    def _completed(self) -> dict[Path, PatchFile]:
        return {}

    @cached_property
    def _unread(self) -> PatchFile | None:
        """The first variant that cannot be read (asked once: the variants never change)."""
        return next((v for v in self.variants if v.invalid is not None), None)


@dataclass(frozen=True)
class PatchSet:
    """The patch set: its folder and its fixes, in series order."""

    root: Path
    patches: tuple[Patch, ...]
    scheme: VersionScheme = PEP440  # `[install] version_scheme`: how Applies-To was read
    set_warnings: tuple[Problem, ...] = ()  # of the folder: a patch file series leaves out

    def by_name(self, name: str) -> Patch | None:
        return next((p for p in self.patches if p.name == name), None)

    @property
    def warnings(self) -> list[Problem]:
        """Problems that leave every diff readable: shown, never a refusal."""
        own = [w for patch in self.patches for v in patch.variants for w in v.warnings]
        return [*self.set_warnings, *own]


def spec_contains(spec: SpecifierSet | None, version: Version | None) -> bool:
    return spec is not None and version is not None and spec.contains(version, prereleases=True)
