"""floor.sh and floor_one.sh written in Python: the same git processes, started through
`subprocess`, and nothing else. Its cost over the shell floor is the least any Python program
that runs those git processes pays (the interpreter's start, `import subprocess`, a fork and
exec per process): a share of the floor no Python tool can go below, printed by
bench_issue30.py beside the check rows.

    floor_python.py [--one] INSTALL LIST TAG...   LIST: PATCH_FILE<TAB>PATH PATH... per line

Per patch (default), like floor.sh: for every tag and patch, `ls-tree` of the paths it
touches into a scratch index (`update-index`), then `git apply --cached --check`. With
--one, like floor_one.sh: one scratch index of every touched path per tag, then ONE
`git apply --cached --check` of every patch.
"""

import os
import shutil
import subprocess
import sys


def scratch_index(install: str, tag: str, paths: list[str], env: dict[str, str]) -> None:
    index = env["GIT_INDEX_FILE"]
    if os.path.exists(index):
        os.remove(index)
    listed = subprocess.run(["git", "ls-tree", "-r", "-z", tag, "--", *paths], cwd=install,
                            capture_output=True, check=True).stdout  # fmt: skip
    subprocess.run(["git", "update-index", "-z", "--index-info"], cwd=install, input=listed,
                   env=env, check=True)  # fmt: skip


def check(install: str, patches: list[str], env: dict[str, str]) -> None:
    subprocess.run(["git", "apply", "--cached", "--check", *patches], cwd=install, env=env,
                   capture_output=True, check=False)  # fmt: skip


def main(argv: list[str]) -> None:
    one = argv[:1] == ["--one"]
    install, listing, *tags = argv[1:] if one else argv
    with open(listing, encoding="utf-8") as lines:
        entries = [line.rstrip("\n").split("\t") for line in lines]
    folder = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"floor-python-{os.getpid()}")
    os.mkdir(folder)
    env = {**os.environ, "GIT_INDEX_FILE": os.path.join(folder, "index")}
    try:
        for tag in tags:
            if one:
                scratch_index(install, tag, [p for _, paths in entries for p in paths.split()], env)
                check(install, [patch for patch, _ in entries], env)
                continue
            for patch, paths in entries:
                scratch_index(install, tag, paths.split(), env)
                check(install, [patch], env)
    finally:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main(sys.argv[1:])
