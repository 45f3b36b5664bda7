"""Shared fixtures: a practice upstream ("sandbox") built once per session, copied per test.

Tests make real commits, merges and stashes. They bring their own git identity and ignore the
machine's global and system git config (identity, signing, autocrlf, hooks), through the
environment every git they start inherits, so the README's test command gives the same
results on any machine, one without a git identity included.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from patchkeeper.demo.sandbox import Sandbox, build_sandbox, open_copied_sandbox

os.environ.update(
    {
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.invalid",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.invalid",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
)


@pytest.fixture(scope="session")
def sandbox_template(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    """Built once; never handed to a test that could change it."""
    return build_sandbox(tmp_path_factory.mktemp("sandbox-template") / "sandbox")


@pytest.fixture
def sandbox(sandbox_template: Sandbox, tmp_path: Path) -> Sandbox:
    """A fresh sandbox of the test's own: a copy of the template, pointed at itself."""
    root = tmp_path / "sandbox"
    shutil.copytree(sandbox_template.root, root, symlinks=True)
    return open_copied_sandbox(root)
