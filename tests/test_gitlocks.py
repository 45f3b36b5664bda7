"""Who may hold git's index.lock, on a shared host: real processes of two users.

Another user's git shows us neither its descriptors nor its cwd, so all we can see is that it
is a git. The lock file's owner says who made it: a git of another user did not, and holds
nothing; a git of the lock's owner that hides its descriptors may, and still counts.

As root, the install belongs to `nobody` and its processes are started with setpriv (root
reads every process's descriptors); run as any other user, the install is that user's own and
only the test that needs a second user's git skips.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import make_repo

SETPRIV = shutil.which("setpriv")
TWO_USERS = os.geteuid() == 0 and SETPRIV is not None
USER = 65534 if TWO_USERS else os.geteuid()  # the install's user: nobody, or the one running

# Run as the install's user: the holders of its index.lock as gitlocks sees them.
PROBE = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from patchkeeper.install.locks.git_locks import holders
    from patchkeeper.install.checkout.install import Install
    top = Path(sys.argv[1])
    install = Install(top, top / ".git")
    print(json.dumps([[h.pid, h.why] for h in holders(install, top / ".git/index.lock")]))
    """
)

# A process named git that keeps its descriptors from its own user (not dumpable), as a
# hardened git would: ARGV = where it says it is ready.
HIDDEN_GIT = textwrap.dedent(
    """
    import ctypes, sys, time
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_NAME, PR_SET_DUMPABLE = 15, 4
    assert libc.prctl(PR_SET_NAME, b"git", 0, 0, 0) == 0
    assert libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0
    open(sys.argv[1], "w").close()
    time.sleep(120)
    """
)


def as_user(*argv: str) -> list[str]:
    """ARGV run as the install's user."""
    if not TWO_USERS:
        return list(argv)
    return [str(SETPRIV), f"--reuid={USER}", f"--regid={USER}", "--clear-groups", *argv]


@pytest.fixture
def install() -> Iterator[Path]:
    """An install of USER, with an index.lock that user's killed git left; outside pytest's
    own temporary folders, which other users cannot enter."""
    top = Path(tempfile.mkdtemp(prefix="patchkeeper-shared-host-"))
    try:
        repo = make_repo(top / "install", {"app.py": "x = 1\n"})
        if TWO_USERS:
            subprocess.run(["chown", "-R", f"{USER}:{USER}", str(top)], check=True)
            os.chmod(top, 0o755)
        subprocess.run(as_user("touch", str(repo / ".git/index.lock")), check=True)
        assert (repo / ".git/index.lock").stat().st_uid == USER
        yield repo
    finally:
        shutil.rmtree(top, ignore_errors=True)


def holders_seen_by_its_user(repo: Path) -> dict[int, str]:
    proc = subprocess.run(
        as_user(sys.executable, "-c", PROBE, str(repo)),
        capture_output=True,
        text=True,
        check=True,
        cwd="/",
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    return {pid: why for pid, why in json.loads(proc.stdout)}


def uid_of(pid: int) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None  # gone since
    return int(next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1])


@pytest.mark.skipif(not TWO_USERS, reason="needs root and setpriv to be a second user")
def test_another_users_git_elsewhere_is_not_a_holder(install: Path, tmp_path: Path) -> None:
    """A root-owned git working in its own repository: the install's user cannot read its
    descriptors, and it did not make the lock."""
    elsewhere = make_repo(tmp_path / "elsewhere", {"a": "a\n"})
    root_git = subprocess.Popen(
        ["git", "cat-file", "--batch"], cwd=elsewhere, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        found = holders_seen_by_its_user(install)
        assert root_git.pid not in found, found[root_git.pid]
        # and no other user's process on this machine is taken for one (other root gits)
        assert {pid: why for pid, why in found.items() if uid_of(pid) not in (USER, None)} == {}
    finally:
        root_git.kill()
        root_git.wait()


def test_a_git_of_the_locks_owner_that_hides_its_files_still_holds_it(install: Path) -> None:
    ready = install.parent / "hidden-git.ready"
    hidden = subprocess.Popen(as_user(sys.executable, "-c", HIDDEN_GIT, str(ready)), cwd="/")
    try:
        deadline = time.monotonic() + 10
        while not ready.exists() and hidden.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert ready.exists(), "the hidden git did not start"
        found = holders_seen_by_its_user(install)
        assert found.get(hidden.pid) == "a git whose files cannot be inspected", found
    finally:
        hidden.kill()
        hidden.wait()
