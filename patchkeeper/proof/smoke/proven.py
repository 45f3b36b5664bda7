"""Which fixes in place are proven, and the line that names each one that is not.

Exit 0 means every fix that applies is in place and proven by its smoke check. A fix is
proven when the checks its variant's `Smoke:` header names passed since it was written (the
verdict the install's records keep, `proven` in install/records/applied.py), or when its patch says
that no check can prove it, and why (`Smoke: none (WHY)`). A fix in place that names no check
and says nothing is not proven (5); one whose checks have not run since it was written (an
`apply --no-smoke`, a run killed during its checks, a record older than the verdicts) is not
proven either (5: `apply` runs them); one whose last run failed or could not check is 4.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from patchkeeper.install.records.applied import AppliedRecord, record_proof
from patchkeeper.model import exitcodes, nextstep
from patchkeeper.model import outcomes as oc
from patchkeeper.model.outcomes import PatchResult
from patchkeeper.patchset.model import PatchFile, PatchSet
from patchkeeper.proof.smoke.results import ERROR, PASS, worst_verdict

FIXES_IN_PLACE = (*oc.WRITES, oc.ALREADY_APPLIED)  # the operator's fix is what runs


def chosen_variant(patch_set: PatchSet, result: PatchResult) -> PatchFile | None:
    """The variant RESULT was judged with (None: none chosen, or the patch is gone)."""
    patch = patch_set.by_name(result.name)
    if patch is None or not result.variant:
        return None
    chosen = patch_set.root / result.variant
    return next((v for v in patch.variants if v.path == chosen), None)


def named_checks(variant: PatchFile | None) -> list[str]:
    """The checks VARIANT's `Smoke:` header names, without `.py`."""
    return list(dict.fromkeys(n.removesuffix(".py") for n in variant.smoke)) if variant else []


def verdicts_by_patch(
    patch_set: PatchSet, results: Iterable[PatchResult], checks: Iterable[Mapping[str, Any]]
) -> dict[str, str]:
    """Each fix in place among RESULTS whose variant names checks, with the worst verdict of
    those CHECKS (a run's `{"name", "verdict"}` list); a named check that did not run is
    `error`, never a pass."""
    ran = {str(c["name"]).removesuffix(".py"): str(c["verdict"]) for c in checks}
    verdicts = {}
    for result in results:
        names = named_checks(chosen_variant(patch_set, result))
        if result.outcome in FIXES_IN_PLACE and names:
            verdicts[result.name] = worst_verdict(ran.get(name, ERROR) for name in names)
    return verdicts


def keep_verdicts(
    state_dir: Path,
    patch_set: PatchSet,
    results: Iterable[PatchResult],
    checks: Iterable[Mapping[str, Any]],
) -> None:
    """Record the verdict of each fix in place whose checks just ran (the install's lock is
    held by the caller)."""
    record_proof(state_dir, verdicts_by_patch(patch_set, results, checks))


def to_prove(
    patch_set: PatchSet, results: Iterable[PatchResult], records: Mapping[str, AppliedRecord]
) -> list[PatchResult]:
    """Fixes in place, written earlier, whose checks have not passed since: what a second
    `apply` runs the checks of (so it is never green on a fix never proven)."""
    return [
        result
        for result in results
        if result.outcome == oc.ALREADY_APPLIED
        and named_checks(chosen_variant(patch_set, result))
        and (record := records.get(result.name)) is not None
        and record.proven != PASS
    ]


def unchecked_notes(patch_set: PatchSet, results: Iterable[PatchResult]) -> list[str]:
    """A line for each fix in place that names no smoke check and does not say why none can
    prove it: in place, not proven (5)."""
    notes = []
    for result in results:
        variant = chosen_variant(patch_set, result)
        if (
            result.outcome in FIXES_IN_PLACE
            and variant is not None
            and not variant.smoke
            and variant.unchecked is None
            and not variant.empty  # nothing of it is in the tree to prove
        ):
            notes.append(
                f"{result.name} is in place, but no smoke check proves it: name one in the "
                f"Smoke: header of {variant.path}, or say why none can: `Smoke: none (WHY)`"
            )
    return notes


def status_notes(
    install: Path,
    patch_set: PatchSet,
    results: Iterable[PatchResult],
    records: Mapping[str, AppliedRecord],
    head: str | None = None,
) -> tuple[int, list[str]]:
    """What `status` says of the fixes in place that are not proven, and its exit code: 4 when
    a fix's checks failed or could not check at their last run, else 5 when one was never
    proven (or names no check), else 0. A verdict proves the fix on the code it ran on: a
    record made on another commit than HEAD (HEAD moved without patchkeeper: a `git pull`, an
    updater run alone) proves nothing of the code that runs now (5: `apply` runs its checks)."""
    results = list(results)
    codes, notes = [], []
    for result in results:
        names = named_checks(chosen_variant(patch_set, result))
        if result.outcome != oc.ALREADY_APPLIED or not names:
            continue
        record = records.get(result.name)
        verdict = record.proven if record is not None else ""
        checks = ", ".join(names)
        moved = record is not None and head is not None and record.base != head
        if verdict == PASS and not moved:
            continue
        if moved:
            apply = nextstep.command("apply", install=install, patches=patch_set.root)
            notes.append(
                f"{result.name} is in place but not proven: HEAD moved to {head[:12]} since its "
                f"smoke check {checks} ran (on {record.base[:12]}); prove it on this code "
                f"with: {apply}"
            )
            codes.append(exitcodes.ATTENTION)
        elif verdict:
            said = "could not check" if verdict == ERROR else "failed"
            again = nextstep.command("smoke", install=install, patches=patch_set.root)
            apply = nextstep.command("apply", install=install, patches=patch_set.root)
            notes.append(
                f"{result.name} is in place but not proven: its smoke check {checks} {said} "
                f"at its last run; see why with: {again}; prove it again with: {apply}"
            )
            codes.append(exitcodes.SMOKE_FAILED)
        else:
            apply = nextstep.command("apply", install=install, patches=patch_set.root)
            notes.append(
                f"{result.name} is in place but not proven: its smoke check {checks} has not "
                f"passed since it was written; prove it with: {apply}"
            )
            codes.append(exitcodes.ATTENTION)
    unchecked = unchecked_notes(patch_set, [r for r in results if r.outcome in oc.NOTHING_TO_DO])
    codes += [exitcodes.ATTENTION] * len(unchecked)
    return exitcodes.worst(*codes), notes + unchecked
