"""Run what reads a version: `git describe` (tags read as `[tags]` says), the upstream's own
version command; and learn the remote's release tags. Which source is asked, in what order,
and what a file or stamp says is install/checkout/version_chain.py's.

Describe comes last in a real chain: release installs are shallow, fetched with `--no-tags`,
so describe often has no tag to name, and where it has one it may be a CalVer tag
(`v2026.9.24`) that only `[tags]` turns into its release.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from patchkeeper.install.plumbing import git
from patchkeeper.patchset.version_sources import NAMES_ARE_VERSIONS, DescribeSource, TagNames
from patchkeeper.patchset.versions import PEP440, VersionInfo, VersionScheme, describe_parts

_DESCRIBE = DescribeSource()
DESCRIBED = "git describe: "  # what a version `git describe` read says first
MAX_COMMAND_OUTPUT = 4096  # bytes of a version command's output kept


def describe_version(
    repo: Path, ref: str, tags: TagNames = NAMES_ARE_VERSIONS, source: DescribeSource = _DESCRIBE
) -> VersionInfo:
    """REF's version as `git describe` names it, its tag read through TAGS."""
    args = ["describe", "--tags", *tags.describe_matches(source), "--end-of-options", ref]
    proc = git.run(args, repo, check=False)
    described = proc.stdout.decode(errors="replace").strip()
    return _described_info(described if proc.returncode == 0 else "", tags)


def describe_all(
    repo: Path, refs: Sequence[str], tags: TagNames, source: DescribeSource = _DESCRIBE
) -> list[VersionInfo]:
    """`git describe` of every ref in one process; when it cannot name one (it stops at
    the first), one by one. A tag named that is no release is said from the one answer."""
    args = ["describe", "--tags", *tags.describe_matches(source), "--end-of-options", *refs]
    proc = git.run(args, repo, check=False)
    lines = proc.stdout.decode(errors="replace").splitlines()
    if proc.returncode == 0 and len(lines) == len(refs):
        return [_described_info(line.strip(), tags) for line in lines]
    return [describe_version(repo, ref, tags, source) for ref in refs]


def _described_info(described: str, tags: TagNames) -> VersionInfo:
    if not described:
        why = "no release tag reachable (a shallow clone without tags?)"
        return VersionInfo(None, f"{DESCRIBED}{why}", "unknown")
    if (version := tags.described(described)) is not None:
        return VersionInfo(version, f"{DESCRIBED}{described}", "describe")
    parts = describe_parts(described)
    tag = parts[0] if parts else described
    return VersionInfo(None, f"git describe: {described}: {tags.unknown_reason(tag)}", "unknown")


def described_on_a_tag(info: VersionInfo) -> bool | None:
    """Whether INFO, `git describe`'s answer, named a tag on the commit itself (no distance
    from it): True, False; None when INFO is not describe's answer."""
    if info.source != "describe" or not (info.answered or "").startswith(DESCRIBED):
        return None
    parts = describe_parts((info.answered or "").removeprefix(DESCRIBED))
    return None if parts is None else parts[1] is None


def version_from_command(
    repo: Path, command: Sequence[str], timeout: float = 30.0, scheme: VersionScheme = PEP440
) -> VersionInfo:
    """The upstream's own version logic, e.g. Hermes' `hermes_cli/version_info.py`.

    It runs in a process group of its own: past TIMEOUT, or once it exits, the whole group is
    ended, so no helper it started outlives it.
    """
    # only for a [install] version_command
    from patchkeeper.install.processes.process_groups import run_in_group

    output: list[bytes] = []

    def keep(chunk: bytes) -> None:  # a version is a line: a command that floods is cut off
        if sum(map(len, output)) < MAX_COMMAND_OUTPUT:
            output.append(chunk)

    done = run_in_group(
        command,
        repo,
        timeout=timeout,
        on_stdout=keep,
        on_stderr=lambda _line: None,
        end_group=True,
    )
    if done.exit_status is None:
        return VersionInfo(None, f"version command failed: {done.start_error}", "unknown")
    if done.timed_out:
        return VersionInfo(None, f"version command timed out after {timeout:g} s", "unknown")
    text = b"".join(output)[:MAX_COMMAND_OUTPUT].decode(errors="replace").strip()
    if done.exit_status == 0 and (version := scheme.parse(text)) is not None:
        return VersionInfo(version, f"version command: {text}", "command")
    return VersionInfo(None, f"version command exited {done.exit_status}: {text!r}", "unknown")


def adopt_remote_tags(repo: Path, remote: str = "origin", timeout: float = 60.0) -> list[str]:
    """Create local tags for REMOTE's version tags whose commits this clone already has.

    `hermes update` fetches the branch only, so a shallow install never learns the new
    release's tag and `git describe` keeps naming the old version, which would pick the wrong
    variants. Listing the remote's tags transfers no objects; then only the tags whose
    commit is already here are fetched, as they are upstream (annotated ones included, so a
    later `git fetch --tags` agrees with them): no history comes along. Returns those tags.
    """
    listing = git.run(["ls-remote", "--tags", remote, "refs/tags/v*"], repo, timeout=timeout)
    commits: dict[str, str] = {}
    for line in listing.stdout.decode(errors="replace").splitlines():
        sha, _, ref = line.partition("\t")
        name = ref.removeprefix("refs/tags/")
        if name.endswith("^{}"):  # the commit an annotated tag points at wins
            commits[name[:-3]] = sha
        else:
            commits.setdefault(name, sha)
    local = set(git.out(["tag", "--list", "v*"], repo).split())
    wanted = {name: sha for name, sha in commits.items() if name not in local}
    if not wanted:
        return []
    query = "".join(f"{sha}^{{commit}}\n" for sha in wanted.values()).encode()
    answers = git.run(["cat-file", "--batch-check"], repo, stdin=query).stdout.decode()
    present = [
        name
        for name, answer in zip(wanted, answers.splitlines(), strict=True)
        if not answer.endswith(" missing")
    ]
    if present:
        refspecs = [f"refs/tags/{name}:refs/tags/{name}" for name in present]
        git.run(["fetch", "--quiet", "--no-tags", remote, *refspecs], repo, timeout=timeout)
    return present
