"""Phase 6 when the update happened: apply the patch set to the new version, keep the records of
fixes that need a person, and settle the leftovers whose content is back."""

from __future__ import annotations

from pathlib import Path

from patchkeeper.engine.patching import TreeReport, apply_patches
from patchkeeper.engine.symlinks import check_symlinks
from patchkeeper.install.checkout.install import install_version
from patchkeeper.install.checkout.version_chain import a_file_answers, unknown_version_advice
from patchkeeper.install.checkout.version_probes import adopt_remote_tags, described_on_a_tag
from patchkeeper.install.plumbing import git
from patchkeeper.install.records import update_journal as jr
from patchkeeper.install.records.applied import load_applied, save_applied, written_diff
from patchkeeper.model import nextstep
from patchkeeper.model import outcomes as oc
from patchkeeper.model.errors import UserError
from patchkeeper.patchset.settings import Settings
from patchkeeper.patchset.version_sources import CommandSource, DescribeSource
from patchkeeper.patchset.versions import VersionInfo
from patchkeeper.update.context import RunContext
from patchkeeper.update.left_behind import settle_leftovers
from patchkeeper.update.rollback import STATE_BACKUP


def apply(ctx: RunContext) -> str:
    """Phase 6 when the update happened: the patch set on the new version."""
    version = _learn_release_tags(ctx)
    try:
        check_symlinks(ctx.install, ctx.ws.patch_set)
    except UserError as exc:  # the new release made a folder a symlink: never stuck
        return _not_applied(ctx, str(exc))
    # What was in place before set-aside took it out: a fix past its range is `expired`.
    backup = ctx.journal.run_dir(ctx.state_dir) / STATE_BACKUP
    ctx.report.tree = apply_patches(
        ctx.install,
        ctx.ws.settings,
        ctx.ws.patch_set,
        was_in_place=set(load_applied(backup)),
        version=version,
    )
    _keep_records_of_undecided(ctx, backup)
    jr.checkpoint("6.1")
    results = ctx.report.tree.results
    advice = ""
    if any(r.undecided for r in results):
        tree = ctx.report.tree
        advice = unknown_version_advice(ctx.install.path, tree.version, ctx.ws.settings)
    for result in results:
        if result.outcome == oc.UPSTREAM_HAS_IT:
            ctx.report.notes.append(
                f"{result.name}: upstream has it now: retire the patch (drop it from series)"
            )
        step = nextstep.for_patch(result, ctx.install.path, ctx.ws.patch_set.root, advice)
        if step is not None:
            ctx.report.attention.append(step)
    settle_leftovers(ctx, {r.name: r.outcome for r in results})
    return ", ".join(f"{r.name} {r.outcome}" for r in results) or "the patch set is empty"


def _not_applied(ctx: RunContext, why: str) -> str:
    """Phase 6 when no patch can be written: each is `invalid` (exit 3), and the run
    goes on (your edits come back), so recover is never stuck on it."""
    results = [
        oc.PatchResult(patch.name, oc.INVALID, None, why) for patch in ctx.ws.patch_set.patches
    ]
    version = install_version(ctx.install, ctx.ws.settings)
    ctx.report.tree = TreeReport(ctx.install, ctx.install.head(), version, results)
    again = nextstep.command("apply", install=ctx.install.path, patches=ctx.ws.patch_set.root)
    ctx.report.attention.append(f"{why}; no patch was applied: fix it, then run: {again}")
    return "no patch applied: " + why


def _keep_records_of_undecided(ctx: RunContext, backup: Path) -> None:
    """An expired or undecided fix stays recorded (its content is out of the tree), so
    later runs still know it was in place, and `unapply` can retire it on purpose."""
    assert ctx.report.tree is not None
    records, before = load_applied(ctx.state_dir), load_applied(backup)
    kept = {
        result.name: before[result.name]
        for result in ctx.report.tree.results
        if result.needs_a_person and result.name in before and result.name not in records
    }
    if kept:
        diffs = {name: written_diff(backup, record) for name, record in kept.items()}
        save_applied(ctx.state_dir, {**records, **kept}, diffs)


def _learn_release_tags(ctx: RunContext) -> VersionInfo | None:
    """Name the new version right (variants depend on it) though the updater fetched no tags;
    the version, when it was worked out here and stands (the apply takes it, not asking
    again), else None.

    Only `git describe` needs the release tags; it is asked only when no file or stamp
    source before it gives a version (install/checkout/version_chain.py). So origin is not asked (a
    network round trip) when a file states one in the new release, nor when the new HEAD
    carries a release tag here already (the updater's fetch brought it: describe names it,
    else `git tag --points-at` says so). The note names only the tags the update brought
    in: reachable from the new HEAD, not from the old one."""
    settings, repo = ctx.ws.settings, ctx.install.path
    if a_file_answers(repo, settings):
        return None
    version = _described_first(ctx)
    if version is not None and described_on_a_tag(version):
        return version
    asked = ["tag", "--points-at", "HEAD", "--list", "v[0-9]*"]
    if not _no_release_tag_on_head(version, settings) and git.out(asked, repo):
        return version
    try:
        adopted = adopt_remote_tags(repo)
    except git.GitError as exc:
        ctx.report.notes.append(f"could not list origin's tags ({exc}): the version may lag")
        return version
    brought = _brought_in(ctx, adopted)
    if brought:
        ctx.report.notes.append(f"tagged commits the update brought in: {', '.join(brought)}")
    return None if adopted else version


def _described_first(ctx: RunContext) -> VersionInfo | None:
    """The new version, worked out before the tags are learnt, when no version command is
    among its sources (a command is run once, after: it may read the tags its own way)."""
    if any(isinstance(source, CommandSource) for source in ctx.ws.settings.version_sources):
        return None
    return install_version(ctx.install, ctx.ws.settings)


def _no_release_tag_on_head(version: VersionInfo | None, settings: Settings) -> bool:
    """Whether `git describe`, looking at every release tag (`v[0-9]*`), named none on HEAD
    itself: then no release tag is on it, and git is not asked again."""
    every_release_tag = all(
        settings.tags.describe_matches(source) == ["--match", "v[0-9]*"]
        for source in settings.version_sources
        if isinstance(source, DescribeSource)
    )
    return version is not None and described_on_a_tag(version) is False and every_release_tag


def _brought_in(ctx: RunContext, tags: list[str]) -> list[str]:
    """Those of TAGS on the new HEAD's history and not on the old HEAD's: the release the
    update started from (its tag also adopted now) is not one it brought in."""
    if not tags:
        return []
    old = ctx.journal.old_head
    args = ["tag", "--list", "--merged", "HEAD", *(["--no-merged", old] if old else []), *tags]
    listed = set(git.out(args, ctx.install.path).split())
    return [tag for tag in tags if tag in listed]
