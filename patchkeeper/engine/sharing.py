"""Which patches share files: the groups they form, and the paths several of them touch.

Patches linked by shared files (directly or through others) are the engine's unit of
dependence: a group's outcomes depend on its own patches and files only, so the memo keys on
groups and a failed batch is split at group borders. A path that several patches touch keeps
them out of batches when a writer needs each patch's own diff.
"""

from __future__ import annotations

from collections.abc import Iterable

from patchkeeper.engine.state import Item
from patchkeeper.patchset.model import Patch, PatchFile


def linked_groups(tried: list[tuple[Patch, PatchFile]]) -> list[list[tuple[Patch, PatchFile]]]:
    """TRIED split into groups of patches linked by shared files, each in series order."""
    parent = list(range(len(tried)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for i, (_, variant) in enumerate(tried):
        for path in variant.files:
            if path in owner:
                parent[root(i)] = root(owner[path])
            else:
                owner[path] = i
    groups: dict[int, list[tuple[Patch, PatchFile]]] = {}
    for i, item in enumerate(tried):
        groups.setdefault(root(i), []).append(item)
    return list(groups.values())


def item_groups(items: list[Item]) -> list[list[int]]:
    """Indexes of ITEMS in groups linked by shared files, each in order, groups in the order
    of their first item."""
    groups = linked_groups([(patch, variant) for patch, variant, _ in items])
    position = {id(item[0]): i for i, item in enumerate(items)}
    return [[position[id(patch)] for patch, _ in group] for group in groups]


def shared_files(variants: Iterable[PatchFile | None], record_paths: set[str]) -> set[str]:
    """Paths more than one of VARIANTS (the chosen ones, and the candidates of fixes chosen by
    content) or a record (RECORD_PATHS) touches."""
    seen: set[str] = set(record_paths)
    shared: set[str] = set(record_paths)
    for variant in variants:
        for path in variant.files if variant else ():
            (shared if path in seen else seen).add(path)
    return shared
