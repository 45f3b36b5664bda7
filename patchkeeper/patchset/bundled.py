"""Where the bundled Hermes patch set is: `patches/` in a source checkout, or in the wheel;
and `patchkeeper init`'s copy of it, the start of an operator's own set.

The bundled set is part of the installed package: a `pipx upgrade` or reinstall replaces it
whole, so nothing of an operator's is ever written there (`is_packaged`)."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent  # patchkeeper/


def bundled_patches() -> Path:
    source_tree = PACKAGE.parent / "patches"
    if (source_tree / "series").is_file():
        return source_tree
    return PACKAGE / "_patches"


def is_packaged(root: Path) -> bool:
    """ROOT is the bundled set as the package holds it (or a folder inside it)."""
    packaged = (PACKAGE / "_patches").resolve()
    resolved = root.expanduser().resolve()
    return resolved == packaged or packaged in resolved.parents


def _copied(name: str) -> bool:
    """What a set of one's own takes from the bundled one: series, patches, smoke checks,
    patchkeeper.toml and the README; not the package's import files."""
    return name != "__pycache__" and name != "__init__.py" and not name.endswith(".pyc")


def copy_bundled(target: Path) -> list[str]:
    """Copy the bundled set into TARGET (made if missing, empty otherwise: the caller checks);
    the files written, relative to TARGET, sorted."""
    import shutil  # here: every command loads this module, only `init` copies

    source = bundled_patches()
    written: list[str] = []
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if not all(_copied(part) for part in relative.parts) or not path.is_file():
            continue
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
        written.append(relative.as_posix())
    return written
