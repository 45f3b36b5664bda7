"""The `Applies-To` arithmetic of a port: split a variant's range at the release a port is
onto, or widen it to take that release in. Texts in, texts out; every version written is
plain PEP 440 (`1.2.3`), which every version scheme reads as it is."""

from __future__ import annotations

from packaging.specifiers import InvalidSpecifier, Specifier, SpecifierSet
from packaging.version import Version

from patchkeeper.patchset.variants import bounds

_LOWER = (">", ">=")
_UPPER = ("<", "<=")


def release_of(version: Version) -> str:
    """VERSION as an Applies-To writes it: the public part (no `+local` label, which a
    range may not name)."""
    return version.public


def _specs(text: str | None) -> list[Specifier]:
    if not text:
        return []
    try:
        return list(SpecifierSet(text))
    except InvalidSpecifier:
        return []


def _joined(specs: list[Specifier]) -> str:
    order = {">": 0, ">=": 0, "==": 1, "~=": 1, "!=": 2, "<": 3, "<=": 3}
    ordered = sorted(specs, key=lambda s: order.get(s.operator, 1))
    return ", ".join(str(s) for s in dict.fromkeys(ordered))


def contains(text: str | None, version: Version) -> bool:
    return text is None or SpecifierSet(text).contains(version, prereleases=True)


def below_is_empty(text: str | None, version: Version) -> bool:
    """Whether the range TEXT admits no version below VERSION (a split there would leave
    the old variant nothing)."""
    below = SpecifierSet(f"<{release_of(version)}")
    spec = below if not text else SpecifierSet(text) & below
    return bounds(spec).empty


def split(old: str | None, version: Version, others: list[str | None]) -> tuple[str, str]:
    """The old variant's range and the new one's, split at VERSION: the old keeps what it
    had below VERSION (a range that never held VERSION stays as it is), the new one starts
    at VERSION and keeps the old one's upper bounds that admit it; below any other variant
    (OTHERS) that starts above VERSION."""
    at = release_of(version)
    old_specs = _specs(old)
    if contains(old, version):  # its upper bounds above VERSION say no more than `<VERSION`
        below = [s for s in old_specs if s.operator not in _UPPER or Version(s.version) < version]
        old_text = _joined([*below, Specifier(f"<{at}")])
    else:  # a range that never held VERSION (the nearest variant, chosen for it) stays
        old_text = _joined(old_specs)
    new_specs = [s for s in old_specs if s.operator not in _LOWER and s.contains(version, True)]
    new_specs.append(Specifier(f">={at}"))
    new_specs += _below_others(version, others if contains(old, version) else [*others, old])
    return old_text, _joined(new_specs)


def widen(old: str | None, version: Version, others: list[str | None]) -> str | None:
    """The range OLD taking VERSION in: each bound that shuts VERSION out is moved to it
    (`<0.22` with 0.22.1 -> `<=0.22.1`; `>=0.21.3` with 0.21.2 -> `>=0.21.2`); an exact
    or compatible pin becomes the span from it to VERSION. Kept below other variants."""
    if old is None or contains(old, version):
        return old
    at = release_of(version)
    specs: list[Specifier] = []
    for spec in _specs(old):
        if spec.contains(version, prereleases=True):
            specs.append(spec)
        elif spec.operator in _UPPER:
            specs.append(Specifier(f"<={at}"))
        elif spec.operator in _LOWER:
            specs.append(Specifier(f">={at}"))
        elif spec.operator in ("==", "~=", "==="):
            pinned = Version(spec.version.removesuffix(".*"))
            low, high = sorted([pinned, version])
            specs += [Specifier(f">={low.public}"), Specifier(f"<={high.public}")]
    specs += _below_others(version, others)
    return _joined(specs)


def _below_others(version: Version, others: list[str | None]) -> list[Specifier]:
    """`<X` for each other variant's lower bound X above VERSION (`>X`: `<=X`), so a new or
    widened range never reaches into a later variant's."""
    specs = []
    for other in others:
        for spec in _specs(other):
            if spec.operator in _LOWER and Version(spec.version) > version:
                specs.append(Specifier(f"{'<=' if spec.operator == '>' else '<'}{spec.version}"))
    return specs
