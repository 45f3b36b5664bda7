"""Read an install's version: from its own version command, from a file of its source
(`[install] version_file`), or from `git describe`; and learn the remote's release tags.

A file is what a real install can always answer: release installs are shallow, fetched with
`--no-tags`, so describe often has no tag to name, and where it has one it may be a CalVer tag
(`v2026.7.20`) that sorts above every SemVer release. Describe comes last for that reason.
How a version is written and compared (the schemes) is the patch set's: patchset/versions.py.
"""

from __future__ import annotations

from pathlib import Path

from patchkeeper.install import git
from patchkeeper.patchset.versions import (
    PEP440,
    VersionFile,
    VersionInfo,
    VersionScheme,
    describe_to_version,
    fallen_back,
)


def version_from_worktree(repo: Path, version_file: VersionFile) -> VersionInfo:
    """The version VERSION_FILE states in REPO's work tree (what runs, edits included)."""
    try:
        content = (repo / version_file.path).read_bytes()
    except FileNotFoundError:
        return VersionInfo(None, f"{version_file.path}: no such file", "unknown")
    except OSError as exc:
        reason = f"cannot read ({exc.strerror or exc})"
        return VersionInfo(None, f"{version_file.path}: {reason}", "unknown")
    return version_file.read(content)


def version_from_blob(repo: Path, ref: str, version_file: VersionFile) -> VersionInfo:
    """The version VERSION_FILE states in REF's committed content (no checkout)."""
    proc = git.run(["cat-file", "blob", f"{ref}:{version_file.path}"], repo, check=False)
    if proc.returncode != 0:
        return VersionInfo(None, f"{version_file.path}: no such file in {ref}", "unknown")
    return version_file.read(proc.stdout)


def version_of_ref(
    repo: Path, ref: str, version_file: VersionFile | None = None, scheme: VersionScheme = PEP440
) -> VersionInfo:
    """REF's version: what VERSION_FILE states in REF when it states one, else git describe."""
    if version_file is None:
        return describe_version(repo, ref, scheme)
    info = version_from_blob(repo, ref, version_file)
    if info.version is not None:
        return info
    return fallen_back(describe_version(repo, ref, scheme), [info.text])


def describe_version(repo: Path, ref: str, scheme: VersionScheme = PEP440) -> VersionInfo:
    args = ["describe", "--tags", "--match", "v[0-9]*", "--end-of-options", ref]
    proc = git.run(args, repo, check=False)
    described = proc.stdout.decode().strip()
    if proc.returncode == 0 and (version := describe_to_version(described, scheme)):
        return VersionInfo(version, described, "describe")
    reason = described or "no version tag reachable (shallow clone without tags?)"
    return VersionInfo(None, reason, "unknown")


def version_from_command(
    repo: Path, command: tuple[str, ...], timeout: float = 30.0, scheme: VersionScheme = PEP440
) -> VersionInfo:
    """The upstream's own version logic, e.g. Hermes' `hermes_cli/version_info.py`.

    It runs in a process group of its own: past TIMEOUT, or once it exits, the whole group is
    ended, so no helper it started outlives it.
    """
    from patchkeeper.install.processes import run_in_group  # only for a [install] version_command

    output: list[bytes] = []
    done = run_in_group(
        command,
        repo,
        timeout=timeout,
        on_stdout=output.append,
        on_stderr=lambda _line: None,
        end_group=True,
    )
    if done.exit_status is None:
        return VersionInfo(None, f"version command failed: {done.start_error}", "unknown")
    if done.timed_out:
        return VersionInfo(None, f"version command timed out after {timeout:g} s", "unknown")
    text = b"".join(output).decode(errors="replace").strip()
    if done.exit_status == 0 and (version := scheme.parse(text)) is not None:
        return VersionInfo(version, text, "command")
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
