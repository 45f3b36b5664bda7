"""Make a remote-tracking ref current before judging anything by it (`update --preview`).

`origin/main` in a clone is only what the last fetch saw: a preview against it can pass while
upstream has moved on, and the update that follows (whose updater fetches first) then ends in
a conflict. So a preview of a remote-tracking ref fetches that branch first (the same fetch
the updater is about to do: only that ref and its objects change, never the work tree, HEAD
or the index), and names the release tags of commits it brought in, as the apply phase does.
When the fetch fails, the caller gets how old the ref is, from its reflog, to refuse with.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from pathlib import Path

from patchkeeper.install.checkout.version_probes import adopt_remote_tags
from patchkeeper.install.plumbing import git

FETCH_TIMEOUT = 300.0


@dataclass
class Freshness:
    """A remote-tracking ref and how fresh it is: what a fetch of it did."""

    ref: str  # as the user wrote it
    full: str  # refs/remotes/<remote>/<branch>
    remote: str
    branch: str
    fetched: bool = False
    error: str = ""
    before: str | None = None  # the commit it named before the fetch
    after: str | None = None
    last_fetched: float | None = None  # when the ref was last updated, before this fetch

    def age(self, now: float | None = None) -> str:
        if self.last_fetched is None:
            return "at an unknown time (no reflog)"
        seconds = max(0, int((now or time.time()) - self.last_fetched))
        for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
            if seconds >= size:
                return f"{seconds // size}{unit} ago"
        return f"{seconds}s ago"

    def as_json(self) -> dict[str, object]:
        return {
            "remote": self.remote,
            "tracking_ref": self.full,
            "fetched": self.fetched,
            "error": self.error,
            "before": self.before,
            "after": self.after,
            "last_fetched": self.last_fetched,
        }


def remote_tracking(repo: Path, ref: str) -> Freshness | None:
    """REF as a remote-tracking branch (origin/main, refs/remotes/origin/main), else None."""
    proc = git.run(["rev-parse", "--symbolic-full-name", ref], repo, check=False)
    full = proc.stdout.decode(errors="replace").strip()
    remotes = git.out(["remote"], repo).split()
    if proc.returncode != 0 or not full:  # no such ref here: one never fetched, perhaps
        return _never_fetched(ref, remotes)
    if not full.startswith("refs/remotes/"):
        return None
    owners = [r for r in remotes if full.startswith(f"refs/remotes/{r}/")]
    if not owners:
        return None
    remote = max(owners, key=len)
    return Freshness(ref, full, remote, full.removeprefix(f"refs/remotes/{remote}/"))


def _never_fetched(ref: str, remotes: list[str]) -> Freshness | None:
    """REF as REMOTE/BRANCH of a configured remote that this clone has never fetched: a
    single-branch shallow clone of a tag (what installers make) has no origin/main until a
    fetch brings it. None when REF names no configured remote."""
    name = ref.removeprefix("refs/remotes/")
    owners = [r for r in remotes if name.startswith(f"{r}/") and len(name) > len(r) + 1]
    if not owners:
        return None
    remote = max(owners, key=len)
    branch = name.removeprefix(f"{remote}/")
    return Freshness(ref, f"refs/remotes/{remote}/{branch}", remote, branch)


def _last_update(repo: Path, full: str) -> float | None:
    proc = git.run(
        ["reflog", "show", "-1", "--date=unix", "--format=%gd", full, "--"], repo, check=False
    )
    selector = proc.stdout.decode(errors="replace").strip()
    stamp = selector.rpartition("@{")[2].rstrip("}")
    return float(stamp) if proc.returncode == 0 and stamp.isdigit() else None


def freshen(repo: Path, ref: str, timeout: float = FETCH_TIMEOUT) -> Freshness | None:
    """Fetch the branch REF tracks, when REF is a remote-tracking ref; None when it is not
    (a tag, a commit, a local branch: nothing to fetch). A failed fetch is in `error`."""
    found = remote_tracking(repo, ref)
    if found is None:
        return None
    found.before = git.rev_parse(repo, found.full)
    found.last_fetched = _last_update(repo, found.full)
    if found.branch == "HEAD":  # origin/HEAD: the remote's default branch, by its own refspec
        args = ["fetch", "--quiet", "--no-tags", found.remote]
    else:
        refspec = f"+refs/heads/{found.branch}:{found.full}"
        args = ["fetch", "--quiet", "--no-tags", found.remote, refspec]
    try:
        git.run(args, repo, timeout=timeout)
    except git.GitError as exc:
        found.error = str(exc)
        return found
    found.fetched = True
    found.after = git.rev_parse(repo, found.full)
    with contextlib.suppress(git.GitError):  # else the version may lag; the check says so
        adopt_remote_tags(repo, found.remote)  # the version of what was fetched, named right
    return found
