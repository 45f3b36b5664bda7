"""Where the bundled Hermes patch set is: `patches/` in a source checkout, or in the wheel."""

from __future__ import annotations

from pathlib import Path


def bundled_patches() -> Path:
    package = Path(__file__).resolve().parent.parent  # patchkeeper/
    source_tree = package.parent / "patches"
    if (source_tree / "series").is_file():
        return source_tree
    return package / "_patches"
