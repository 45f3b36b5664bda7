"""The one place that decides an upstream's version: the patch set's chain of version sources
(patchset/version_sources.py) asked in order, for the work tree or for any ref; the first
that answers wins, and the answer names it and says why each source before it gave none.

In the work tree every source can answer. At a ref only what the ref's tree holds can: a file
the installer writes (an untracked install stamp) or a command says it reads the work tree
only. Every file is read bounded: a regular file (a FIFO never blocks, a device is refused)
of at most MAX_VERSION_FILE_BYTES, and a blob only when its size is within that too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from patchkeeper.install.checkout.version_probes import (
    describe_all,
    describe_version,
    version_from_command,
)
from patchkeeper.install.plumbing import git
from patchkeeper.patchset.settings import Settings
from patchkeeper.patchset.userfiles import read_user_file
from patchkeeper.patchset.version_sources import (
    CommandSource,
    DescribeSource,
    JsonKeySource,
    VersionSource,
)
from patchkeeper.patchset.versions import VersionInfo, fallen_back

MAX_VERSION_FILE_BYTES = 256 * 1024  # a version file or stamp is a few kB; more is no version

_NOTHING = VersionInfo(None, "no version source", "unknown")
_UNTRACKED = "not in its tree (a file written at install is read in the work tree only)"


def worktree_version(repo: Path, settings: Settings) -> VersionInfo:
    """The version that runs in REPO's work tree (edits and untracked files included)."""
    reasons: list[str] = []
    head: list[str | None] = []  # asked once, and only when a stamp names its commit

    def head_commit() -> str | None:
        if not head:
            head.append(git.rev_parse(repo, "HEAD"))
        return head[0]

    info = _NOTHING
    for source in settings.version_sources:
        info = _from_worktree(repo, source, settings, head_commit)
        if info.version is not None:
            return fallen_back(info, reasons)
        reasons.append(info.text)
    return fallen_back(info, reasons[:-1]) if reasons else info


def _from_worktree(
    repo: Path, source: VersionSource, settings: Settings, head: Callable[[], str | None]
) -> VersionInfo:
    if isinstance(source, CommandSource):
        return version_from_command(repo, source.argv, source.timeout, settings.version_scheme)
    if isinstance(source, DescribeSource):
        return describe_version(repo, "HEAD", settings.tags, source)
    path = repo / source.name
    if not path.exists() and not path.is_symlink():
        return VersionInfo(None, f"{source.name}: no such file", "unknown")
    content, unreadable = read_user_file(path, MAX_VERSION_FILE_BYTES)
    if unreadable:
        return VersionInfo(None, f"{source.name}: {unreadable}", "unknown")
    commit = head() if getattr(source, "commit_key", None) else None
    return source.read(content, commit)


def ref_versions(repo: Path, commits: Sequence[str], settings: Settings) -> list[VersionInfo]:
    """Each of COMMITS' versions (commit names or refs), each source asked for every commit
    still without one in one or two git processes."""
    infos: list[VersionInfo | None] = [None] * len(commits)
    reasons: list[list[str]] = [[] for _ in commits]
    last: list[VersionInfo] = [_NOTHING] * len(commits)
    for source in settings.version_sources:
        wanted = [i for i, info in enumerate(infos) if info is None]
        if not wanted:
            break
        answers = _from_commits(repo, [commits[i] for i in wanted], source, settings)
        for i, answer in zip(wanted, answers, strict=True):
            if answer.version is not None:
                infos[i] = fallen_back(answer, reasons[i])
            else:
                reasons[i].append(answer.text)
                last[i] = answer
    return [
        info if info is not None else fallen_back(last[i], reasons[i][:-1])
        for i, info in enumerate(infos)
    ]


def _from_commits(
    repo: Path, commits: Sequence[str], source: VersionSource, settings: Settings
) -> list[VersionInfo]:
    if isinstance(source, CommandSource):
        why = f"{source.name}: runs in the work tree only, not at a ref"
        return [VersionInfo(None, why, "unknown") for _ in commits]
    if isinstance(source, DescribeSource):
        return describe_all(repo, commits, settings.tags, source)
    blobs = read_small_blobs(repo, [(commit, source.name) for commit in commits])
    infos = []
    for commit in commits:
        blob = blobs[(commit, source.name)]
        if isinstance(blob, bytes):
            infos.append(source.read(blob, commit if _is_sha(commit) else None))
        else:
            where = f"{source.name} at {commit[:12] if _is_sha(commit) else commit}"
            infos.append(VersionInfo(None, f"{where}: {blob}", "unknown"))
    return infos


def _is_sha(name: str) -> bool:
    return len(name) >= 7 and all(c in "0123456789abcdef" for c in name)


def read_small_blobs(
    repo: Path, wanted: Sequence[tuple[str, str]], limit: int = MAX_VERSION_FILE_BYTES
) -> dict[tuple[str, str], bytes | str]:
    """The blob at each (REF, PATH) of WANTED, or why it is not read ("not in the tree", "not a
    file", "larger than LIMIT bytes"): sizes first (`cat-file --batch-check`), then only the
    blobs within LIMIT (`cat-file --batch`). An untracked file (an install stamp the installer
    writes) is in no commit's tree: the reason says it is read in the work tree only."""
    names = [f"{ref}:{path}" for ref, path in wanted]
    query = "".join(f"{name}\n" for name in names).encode(errors="surrogateescape")
    checked = git.run(["cat-file", "--batch-check"], repo, stdin=query).stdout.decode()
    found: dict[tuple[str, str], bytes | str] = {}
    small = []
    for pair, line in zip(wanted, checked.splitlines(), strict=True):
        parts = line.split(" ")
        if len(parts) != 3 or parts[2] == "missing":
            found[pair] = _UNTRACKED
        elif parts[1] != "blob":
            found[pair] = f"not a file ({parts[1]})"
        elif int(parts[2]) > limit:
            found[pair] = f"larger than {limit} bytes ({parts[2]})"
        else:
            small.append((pair, parts[0]))
    if small:
        query = "".join(f"{sha}\n" for _, sha in small).encode()
        output = git.run(["cat-file", "--batch"], repo, stdin=query).stdout
        position = 0
        # an answer cut short is exit 7 (plumbing/git.py), never a ValueError
        for pair, _sha in small:
            line, position = git.batch_record(output, position, repo)
            size = int(line.split(b" ")[2])
            found[pair] = git.batch_content(output, position, size, repo)
            position += size + 1
    return found


def reads_the_work_tree(settings: Settings) -> bool:
    """Whether a source before describe reads the work tree (a file, a stamp, a command): then
    what a patch, a check or your edits wrote since may change the version it gives."""
    return any(not isinstance(source, DescribeSource) for source in settings.version_sources)


def a_file_answers(repo: Path, settings: Settings) -> bool:
    """Whether a file or stamp source before describe gives REPO's work tree a version (no
    command is run, no git asked): then describe, and the release tags it needs, are not."""
    for source in settings.version_sources:
        if isinstance(source, DescribeSource):
            return False
        if isinstance(source, CommandSource):
            continue
        if _from_worktree(repo, source, settings, lambda: git.rev_parse(repo, "HEAD")).version:
            return True
    return False


def unknown_version_advice(repo: Path, info: VersionInfo, settings: Settings) -> str:
    """What to do when no source gave REPO's work tree a version, from why each gave none: the
    real cause, never advice the settings already follow (a version file that is set) or that
    cannot help (fetching tags into a shallow install, whose tags name CalVer dates)."""
    where = settings.source or "patchkeeper.toml"
    kinds = {type(source) for source in settings.version_sources}
    literal = next((r for r in info.tried if r.endswith(": no __version__ literal")), None)
    if literal and JsonKeySource not in kinds:
        path = literal.removesuffix(": no __version__ literal")
        return (
            f"{path} holds no version literal (Hermes 0.21.5+ keeps it in install-stamp.json): "
            f'add an install-stamp source to {where} ([[install.version_source]] json = '
            f'"install-stamp.json", key = "baseVersion"), before the file'
        )
    stamps = [s.path for s in settings.version_sources if isinstance(s, JsonKeySource)]
    missing = [p for p in stamps if f"{p}: no such file" in info.tried]
    if missing:
        return (
            f"{repo / missing[0]} is missing: the upstream's installer or updater writes it; "
            "run the upstream's own update or install step again to rewrite it"
        )
    if kinds <= {DescribeSource}:
        return f"say where the version is kept: a [[install.version_source]] in {where}"
    if DescribeSource in kinds and not _shallow(repo):
        return f"fetch the release tags for git describe: git -C {repo} fetch --tags"
    return f"see why each source gave none above, and fix the one that should answer ({where})"


def _shallow(repo: Path) -> bool:
    return git.out(["rev-parse", "--is-shallow-repository"], repo).strip() == "true"
