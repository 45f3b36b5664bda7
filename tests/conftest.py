"""Shared fixtures: a practice upstream ("sandbox") built once per session, copied per test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from patchkeeper.demo.sandbox import Sandbox, build_sandbox, open_copied_sandbox


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
