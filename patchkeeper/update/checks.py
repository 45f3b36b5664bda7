"""Phases 8 and 9: the smoke checks the patches in place name, and the post-apply commands."""

from __future__ import annotations

from collections.abc import Callable

from patchkeeper.install.workspace import Workspace
from patchkeeper.model import nextstep
from patchkeeper.model import outcomes as oc
from patchkeeper.patchset.settings import CONFIG_NAME
from patchkeeper.patchset.versions import VersionInfo
from patchkeeper.proof.smoke.for_patches import run_for_patches
from patchkeeper.proof.smoke.interpreter import Interpreter, interpreter_facts
from patchkeeper.proof.smoke.proven import keep_verdicts, unchecked_notes
from patchkeeper.proof.smoke.results import worst_verdict
from patchkeeper.update.context import RunContext
from patchkeeper.update.report import SmokeReport
from patchkeeper.update.upstream import run_streamed


def smoke(ctx: RunContext) -> str:
    """Phase 8: the smoke checks of the patches in place, with the version phase 6 found."""
    tree = ctx.report.tree
    ctx.report.smoke = run_smoke_checks(
        ctx.ws,
        tree.results if tree else [],
        lambda name, text: ctx.say(f"smoke {name}: {text}"),
        tree.version if tree else None,
    )
    if ctx.report.smoke.action:
        ctx.report.attention.append(ctx.report.smoke.action)
    results = tree.results if tree else []
    if ctx.report.smoke.checks:  # what proves each fix in place now (status reads it back)
        keep_verdicts(ctx.install.state_dir, ctx.ws.patch_set, results, ctx.report.smoke.checks)
    ctx.report.attention += unchecked_notes(ctx.ws.patch_set, results)
    return f"smoke: {ctx.report.smoke.status}"


def post(ctx: RunContext) -> str:
    """Phase 9: the [update] post_apply commands, each in turn; one that fails needs you."""
    timeout = ctx.timeout
    for command in ctx.ws.settings.post_apply:
        ctx.say(f"running {' '.join(command)}")
        result = run_streamed(list(command), ctx.install.path, timeout, ctx.sink)
        ctx.report.post.append(result)
        if not result.ok:
            ctx.report.attention.append(
                f"post-apply command {' '.join(command)} failed ({result.describe()})"
            )
    return f"{len(ctx.report.post)} command(s)"


def run_smoke_checks(
    workspace: Workspace,
    results: list[oc.PatchResult],
    progress: Callable[[str, str], None],
    version: VersionInfo | None = None,
) -> SmokeReport:
    """The smoke checks the patches in place name; none named is `not-configured`: never a
    pass, though not a failure either. VERSION, when the caller has it, is the install's (it
    is not worked out again)."""
    ws = workspace
    ran = run_for_patches(ws.install, ws.settings, ws.patch_set, results, progress, version)
    checks, python = ran.results, interpreter_facts(ran.python)
    if not checks:
        why = "no smoke check named by the patches in place"
        return SmokeReport("not-configured", why, python=python)
    status = worst_verdict(check.verdict for check in checks)
    detail = ", ".join(
        f"{c.name} {c.verdict}" + (f" ({c.detail})" if c.detail else "") for c in checks
    )
    failing = [c.name for c in checks if c.verdict != "pass"]
    action = _smoke_action(ws, ran.python, status, failing) if failing else ""
    listed = [{"name": c.name, "verdict": c.verdict, "detail": c.detail} for c in checks]
    return SmokeReport(status, detail, listed, python, action)


def _smoke_action(ws: Workspace, python: Interpreter, status: str, failing: list[str]) -> str:
    """One line: which check did not pass, why when it is the interpreter, what to run next."""
    again = nextstep.command("smoke", install=ws.install.path, patches=ws.patch_set.root)
    config = ws.settings.source or ws.patch_set.root / CONFIG_NAME
    if not python.found:
        return (
            f"smoke could not check: interpreter {python.path} not found ([install] python in "
            f"{config}); fix it, then run: {again}"
        )
    if not python.installs_own:
        return (
            f"smoke could not check: it ran under patchkeeper's own interpreter {python.path} "
            f"(no [install] python set and no venv in the install); set [install] python in "
            f"{config}, then run: {again}"
        )
    word = "could not check" if status == "error" else "failed"
    return f"smoke check {', '.join(failing)} {word}; see why with: {again}"
