"""`RealPaths` tells a folder's real path from its parent's (one `lstat` a folder, issue 30):
the same answer as `Path.resolve`, through symlinked folders, links to links, `.` and `..`
in the text, and a symlink loop (None). Real folders and links in tmp_path."""

from __future__ import annotations

import os
from pathlib import Path

from patchkeeper.patchset.series import RealPaths


def test_a_folders_real_path_from_its_parents_is_what_resolve_says(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "set" / "fix" / "deep").mkdir(parents=True)
    (tmp_path / "other").mkdir()
    os.symlink(real / "set", tmp_path / "linked-set")  # a symlinked folder
    os.symlink(tmp_path / "linked-set", tmp_path / "link-to-link")
    os.symlink("../other", real / "set" / "relative")  # a relative link
    os.symlink(tmp_path / "loop-a", tmp_path / "loop-b")
    os.symlink(tmp_path / "loop-b", tmp_path / "loop-a")
    texts = [
        f"{real}/set/fix/deep",
        f"{tmp_path}/linked-set/fix/deep",
        f"{tmp_path}/link-to-link/fix",
        f"{real}/set/relative",
        f"{real}/set/./fix",
        f"{real}/set/fix/../fix/deep",
        f"{real}/set/fix/deep/",
        f"{tmp_path}//real/set",
        f"{tmp_path}/missing/fix",
        f"{tmp_path}/loop-a/fix",
    ]
    paths = RealPaths()
    for text in texts:
        try:
            expected: str | None = str(Path(text).resolve())
        except RuntimeError:  # Python 3.11's "Symlink loop"
            expected = None
        assert paths._folder(text) == expected, text
