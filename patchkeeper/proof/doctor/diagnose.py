"""The doctor's run: load what it can, then ask every question in order, each one guarded so
that a check that hit an error is a finding that is not ok."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from patchkeeper.install.checkout.install import open_install
from patchkeeper.model.errors import PatchkeeperError, UserError
from patchkeeper.model.outcomes import PatchResult
from patchkeeper.patchset.load import dangling_smoke, inspect_patch_set
from patchkeeper.patchset.settings import DEFAULT_INSTALL, Settings, load_settings
from patchkeeper.proof.doctor.budget import budget_finding
from patchkeeper.proof.doctor.finding import DoctorContext, DoctorReport, Finding
from patchkeeper.proof.doctor.fire_claims import fire_claim_finding
from patchkeeper.proof.doctor.install_state import (
    git_state_finding,
    install_finding,
    interpreter_finding,
)
from patchkeeper.proof.doctor.last_update import last_update_finding
from patchkeeper.proof.doctor.patches import lint_finding, patches_finding


def _guarded(name: str, check: Callable[[], Finding]) -> Finding:
    """A finding whose check hit an error says so and is not ok."""
    try:
        return check()
    except PatchkeeperError as exc:
        return Finding(name, False, f"could not check: {exc}")


def _settings(patch_dir: Path, problems: list[str]) -> Settings:
    try:
        return load_settings(patch_dir)
    except UserError as exc:
        problems.append(str(exc))
        return Settings(source=None, install_path=Path(DEFAULT_INSTALL).expanduser())


def diagnose(install_path: Path | None, patch_dir: Path, reason: str = "") -> DoctorReport:
    """REASON: why this patch set (remembered.Choice), named in the patch set finding."""
    patch_set, lint = inspect_patch_set(patch_dir)
    problems = [str(p) for p in [*lint, *dangling_smoke(patch_set)]]
    settings = _settings(patch_set.root, problems)
    where = (install_path or settings.install_path).expanduser()
    findings: list[Finding] = []
    try:
        install = open_install(where)
    except UserError as exc:
        findings.append(Finding("install", False, str(exc)))
        findings.append(lint_finding(patch_set, problems, reason))
        return DoctorReport(where, findings)
    context = DoctorContext(settings, patch_set, install)
    patches: list[PatchResult] = []
    findings += [
        _guarded("install", lambda: install_finding(install, settings)),
        _guarded("interpreter", lambda: interpreter_finding(install, settings)),
        _guarded("git state", lambda: git_state_finding(install, patch_set)),
        lint_finding(patch_set, problems, reason),
        _guarded("patches", lambda: patches_finding(context, patches)),
        _guarded("timeout budget", lambda: budget_finding(context)),
        _guarded("last update", lambda: last_update_finding(install)),
        _guarded("fire claims", lambda: fire_claim_finding(install)),
    ]
    return DoctorReport(install.path, findings, patches)
