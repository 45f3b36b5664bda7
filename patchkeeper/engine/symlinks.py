"""Refuse a patch set whose paths go through a symbolic link in the install.

Apart from patching.py so that `update`'s preflight, which runs it before anything changes,
needs none of the classifier behind the writer."""

from __future__ import annotations

from patchkeeper.install.checkout.install import Install
from patchkeeper.install.writer.changes import symlinked_folder
from patchkeeper.model.errors import UserError
from patchkeeper.patchset.model import PatchSet


def check_symlinks(install: Install, patch_set: PatchSet) -> None:
    """Refuse a patch whose target path goes through a symlink: one that leaves the install,
    or a symlinked folder inside it (git writes nothing beyond a symbolic link, and a write
    through it would change another path of the tree)."""
    root = install.path.resolve()
    for patch in patch_set.patches:
        for variant in patch.variants:
            for path in variant.files:
                resolved = (install.path / path).resolve()
                if not resolved.is_relative_to(root):
                    raise UserError(
                        f"{variant.path}: {path!r} reaches outside the install through a "
                        f"symlink (to {resolved})"
                    )
                if (link := symlinked_folder(install.path, path)) is not None:
                    target = resolved.relative_to(root)
                    raise UserError(
                        f"{variant.path}: {path!r} goes through the symbolic link {link!r} "
                        f"in the install; name the file where it is: {str(target)!r}"
                    )
