"""The doctor's questions about the patch set: does it lint, is every patch in place."""

from __future__ import annotations

from patchkeeper.engine.patching import worktree_status
from patchkeeper.model import exitcodes
from patchkeeper.model.outcomes import PatchResult
from patchkeeper.model.verdict import tree_exit_code
from patchkeeper.patchset.model import PatchSet
from patchkeeper.proof.doctor.finding import DoctorContext, Finding


def lint_finding(patch_set: PatchSet, problems: list[str], reason: str = "") -> Finding:
    count = len(patch_set.patches)
    which = f"{patch_set.root} ({reason})" if reason else str(patch_set.root)
    if problems:
        return Finding("patch set", False, f"{which}: {len(problems)} lint problem(s)", problems)
    return Finding("patch set", True, f"{which}: {count} patch(es), lints clean")


def patches_finding(context: DoctorContext, seen: list[PatchResult] | None = None) -> Finding:
    report = worktree_status(context.install, context.settings, context.patch_set)
    results = report.results
    if seen is not None:
        seen.extend(results)
    details = [f"{r.name}: {r.outcome}" + (f" ({r.detail})" if r.detail else "") for r in results]
    ok = tree_exit_code(results, pending_needs_attention=True) == exitcodes.OK
    # Undecided (version unknown) is "not applicable" to nothing: never counted in place.
    in_place = sum(1 for r in results if r.in_place and not r.undecided)
    undecided = sum(1 for r in results if r.undecided)
    summary = f"{in_place} of {len(results)} in place" + (
        f", {undecided} undecided (the install's version is unknown)" if undecided else ""
    )
    return Finding("patches", ok, summary, details)
