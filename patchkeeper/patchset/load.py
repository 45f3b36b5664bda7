"""Loading a patch set: each `series` entry read (a patch file, or a folder of variants whose
`Applies-To:` says which upstream versions each is for), the patch files `series` does not
list, and the settings that change how a patch is read. Everything a command needs is checked
here once, so the engine only ever sees a well-formed patch set. Problems are collected rather
than raised, so `lint` can list them all.
"""

from __future__ import annotations

from pathlib import Path

from patchkeeper.model.problems import Problem, raise_first
from patchkeeper.patchset.fields import field_line
from patchkeeper.patchset.head_only import HEAD, quick_read
from patchkeeper.patchset.headers import header_end
from patchkeeper.patchset.model import Patch, PatchFile, PatchSet
from patchkeeper.patchset.parse import MAX_PATCH_BYTES, parse_data, parse_patch_file
from patchkeeper.patchset.series import RealPaths, patch_files_on_disk, patch_name, read_series
from patchkeeper.patchset.userfiles import read_user_file, read_user_file_head
from patchkeeper.patchset.variants import VariantChoice, overlap_problems
from patchkeeper.patchset.versions import PEP440, VersionScheme


def _outside_links_allowed(root: Path) -> bool:
    """`[patches] allow_outside_symlinks` of the set's patchkeeper.toml; a config that does
    not load allows nothing (its own problem is reported where settings are read)."""
    from patchkeeper.model.errors import UserError
    from patchkeeper.patchset.settings import load_settings

    try:
        return load_settings(root).allow_outside_symlinks
    except UserError:
        return False


def _version_scheme(root: Path) -> VersionScheme:
    """`[install] version_scheme` of the set's patchkeeper.toml (PEP 440 when it does not load:
    its own problem is reported where settings are read)."""
    from patchkeeper.model.errors import UserError
    from patchkeeper.patchset.settings import load_settings

    try:
        return load_settings(root).version_scheme
    except UserError:
        return PEP440


def inspect_patch_set(root: Path) -> tuple[PatchSet, list[Problem]]:
    """Load everything that loads and list every problem (the basis of `lint`), the variants
    of one fix whose `Applies-To` ranges overlap among them: every variant is read whole."""
    return _read_set(root, deferred=False, overlaps=True)


def _read_set(root: Path, *, deferred: bool, overlaps: bool) -> tuple[PatchSet, list[Problem]]:
    """The patch set at ROOT and its problems; OVERLAPS: with the overlaps of variants' ranges.

    DEFERRED (`check`): a folder's variants are read without their diffs, each diff when the
    variant is first chosen (`Patch.complete`): a variant whose diff cannot be read is then
    `invalid` when it is chosen, not for every version. A folder with a variant that is
    `invalid` on its header is read whole, as without DEFERRED."""
    root = root.resolve()
    if not root.is_dir():
        return PatchSet(root, ()), [Problem(root, 1, "patch set folder does not exist")]
    real = RealPaths()
    entries, problems = read_series(root, real)
    outside_links = _outside_links_allowed(root)
    scheme = _version_scheme(root)
    listed: set[str] = set()  # paths as text (`RealPaths`)
    patches: list[Patch] = []
    for _, entry in entries:
        target = root / entry
        if target.is_dir():
            texts = real.listing(str(target))
            if not texts:
                problems.append(Problem(target, 1, "variant folder holds no .patch files"))
        else:
            texts = [str(target)]
        listed.update(texts)
        reader = _VariantReader(outside_links, scheme)
        variants, file_problems = reader.read(texts, deferred=deferred and len(texts) > 1)
        if reader.pending and any(v.invalid is not None for v in variants):
            variants, file_problems = reader.read(texts, deferred=False)
        problems += file_problems
        if overlaps:
            problems += overlap_problems(variants)
        if variants:
            complete = reader.complete if reader.pending else None
            choose = VariantChoice(variants)
            patches.append(Patch(patch_name(entry), entry, tuple(variants), choose, complete))
    known: set[str | None] = {*real.reals(listed)}  # a file seen through symlinks is one,
    strays = patch_files_on_disk(root, real) - listed  # named by its own path where it has one
    strays_seen: list[Problem] = []  # a warning: quilt and dpkg leave such a file alone too
    for stray in sorted(strays, key=lambda text: (real(text) != text, Path(text))):
        if (where := real(stray)) is None or where not in known:
            known.add(where)
            strays_seen.append(Problem(Path(stray), 1, "patch file is not listed in series"))
    return PatchSet(root, tuple(patches), scheme, tuple(strays_seen)), problems


class _VariantReader:
    """Reads the patch files of one series entry, maybe only their headers: then `pending`
    keeps each such file's first bytes (up to where its diff starts, `headers.header_end`),
    and `complete` reads the file whole when the variant is chosen, holding it to those very
    bytes. A variant not chosen costs one read of its beginning, whatever its diff's size,
    and where that beginning proves the strict reading's answer (`head_only.quick_read`),
    neither a Path nor a Header until one is asked for."""

    def __init__(self, outside_links: bool, scheme: VersionScheme) -> None:
        self.outside_links, self.scheme = outside_links, scheme
        self.pending: dict[str, bytes] = {}  # path (as text) -> the bytes read of it

    def read(self, texts: list[str], *, deferred: bool) -> tuple[list[PatchFile], list[Problem]]:
        """The variants at TEXTS (their paths as text, what is opened)."""
        self.pending = {}
        variants: list[PatchFile] = []
        problems: list[Problem] = []
        for text in texts:
            if deferred and (quick := quick_read(text, self.scheme)) is not None:
                self.pending[text] = quick.source
                variants.append(quick)
                continue
            if deferred:
                data, unreadable = read_user_file_head(text, MAX_PATCH_BYTES, header_end, HEAD)
            else:
                data, unreadable = read_user_file(text, MAX_PATCH_BYTES)
            file = Path(text)
            if unreadable:
                parsed, file_problems = None, [Problem(file, 1, unreadable)]
            else:
                parsed, file_problems = parse_data(
                    file, data, self.outside_links, self.scheme, diff=not deferred
                )
                if deferred and file_problems:  # its answer, read whole, names its first problem
                    parsed, file_problems = parse_patch_file(
                        file, outside_links=self.outside_links, scheme=self.scheme
                    )
                elif deferred and parsed is not None and not parsed.empty:
                    self.pending[text] = data
            problems += file_problems
            variants.append(parsed or _invalid(file, file_problems))
        return variants, problems

    def complete(self, variant: PatchFile) -> PatchFile:
        """VARIANT, read without its diff, read whole; `invalid` when its diff cannot be read,
        or when the file no longer begins with the header it was chosen by."""
        if (head := self.pending.get(str(variant.path))) is None:
            return variant  # an empty patch: nothing was left to read
        data, unreadable = read_user_file(variant.path, MAX_PATCH_BYTES)
        if unreadable or not data.startswith(head):
            why = unreadable or "changed while patchkeeper read it: run the command again"
            return _invalid(variant.path, [Problem(variant.path, 1, why)])
        parsed, problems = parse_data(variant.path, data, self.outside_links, self.scheme)
        return parsed or _invalid(variant.path, problems)


def _invalid(path: Path, problems: list[Problem]) -> PatchFile:
    """A patch file that cannot be read, or is unsafe: it stays in the set, as `invalid`
    (its first problem says why), so one bad file does not stop the others."""
    return PatchFile(
        path=path, fields={}, diff=b"", files=(), applies_to=None, upstream_fixed_in=None,
        smoke=(), source=b"", invalid=str(problems[0]) if problems else "cannot be read",
    )  # fmt: skip


def dangling_smoke(patch_set: PatchSet) -> list[Problem]:
    """A `Smoke:` name with no smoke/NAME.py behind it: lint's error, never a silent pass.

    Not a load error: smoke, apply and update still run and say "could not check" for it.
    """
    problems = []
    for variant in (v for p in patch_set.patches for v in p.variants):
        for name in variant.smoke:
            stem = name.removesuffix(".py")
            if not (patch_set.root / "smoke" / f"{stem}.py").is_file():
                lines = variant.path.read_text(encoding="utf-8", errors="replace").splitlines()
                line = field_line([text.lower() for text in lines], "smoke")
                why = f"Smoke {name!r}: no check named {stem} (smoke/{stem}.py is missing)"
                problems.append(Problem(variant.path, line, why))
    return problems


def load_patch_set(root: Path, *, deferred: bool = False) -> PatchSet:
    """The patch set, or a one-line error (exit 2) naming the first problem of the set as a
    whole (series, stray files, a variant folder with no patch). A patch file that cannot be
    read or is unsafe is no such problem: it is `invalid` on its own (`lint` lists it).
    Variants whose ranges overlap are not judged here (`lint` and `update` do): a command that
    chooses for a version two of them claim refuses it then (`variants.AmbiguousVariant`).
    DEFERRED: variants' diffs are read when chosen (see `_read_set`)."""
    patch_set, problems = _read_set(root, deferred=deferred, overlaps=False)
    invalid = {v.path for p in patch_set.patches for v in p.variants if v.invalid is not None}
    raise_first([problem for problem in problems if problem.path not in invalid])
    return patch_set


def refuse_overlapping_variants(patch_set: PatchSet) -> None:
    """A one-line error (exit 2) when two variants of one fix claim a version, any version:
    for `update`, which cannot know the version it will choose for until it has changed the
    install. Once per fix, in one sweep of its variants' bounds."""
    raise_first(
        [problem for patch in patch_set.patches for problem in overlap_problems(patch.variants)]
    )
