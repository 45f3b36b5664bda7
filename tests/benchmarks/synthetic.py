"""A synthetic upstream at CI scale, for the benchmarks: FILES files, TAGS release tags, each
release changing about CHANGES files; and a patch set of up to PATCHES patches against its
first release, each of HUNKS hunks in its own file. SEED picks which files the patches own
and what each release changes: the judges hold their own generator, so a figure should hold
for any seed, tree size and patch size, not just the defaults.

Everything is deterministic (one seeded random generator) and written with `git fast-import`
into a bare `origin`, so building 20,000 files x 50 tags takes seconds. Layout under ROOT:

    origin.git/          bare upstream: main at the newest tag, tags v1.0.0 .. v1.<TAGS-1>.0
    install/             a clone of it (every tag), checked out at main
    patches-<M>/         the first M patches of the series, for M in the sizes asked for
    floor-<M>.list       one line per patch for the bash floor: PATCH_FILE<TAB>PATH...

Each file is `pkgDDD/modIIIII.py`, LINES lines of `value_I_K = K` (30, more when HUNKS needs
them), so every hunk's context is unique. Patch j changes line 15 of its own file (and, for
HUNKS > 1, every 8th line after it: one hunk each); every 10th also changes a second file of its
own, and every 20th also changes line 5 of the file of the patch before it (two patches that
share a file, so the engine's hold-back and chaining are exercised). Releases change random
files, and some patched ones on purpose:

    offset       lines inserted at the top of a patched file (applied-offset from then on)
    3-way        a context line next to the patched line changes (merged-3way)
    conflict     the patched line itself changes upstream (conflict from then on)
    upstream     the patch's own change is made upstream (upstream-has-it from then on)

Patches 0-3 get one of each early on, so every patch set size meets every outcome.
"""

from __future__ import annotations

import hashlib
import random
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

LINES = 30
PATCHED_LINE = 15  # 1-based line each patch changes in its main file
SECOND_LINE = 25  # in a patch's second file
SHARED_LINE = 5  # what a sharing patch changes in the previous patch's file
HUNK_STEP = 8  # lines between a patch's hunks in its main file (3 context lines each side)
_ID = b"Synthetic Upstream <upstream@bench.invalid> 1700000000 +0000"


@dataclass
class Upstream:
    root: Path
    origin: Path
    install: Path
    tags: list[str]
    patch_sets: dict[int, Path] = field(default_factory=dict)  # M -> patch set folder
    floor_lists: dict[int, Path] = field(default_factory=dict)  # M -> floor input list
    files: int = 0
    changes: int = 0


def _path(number: int) -> str:
    return f"pkg{number % 100:03d}/mod{number:05d}.py"


def _content(number: int, lines: int = LINES) -> list[str]:
    return [f"value_{number}_{k} = {k}\n" for k in range(1, lines + 1)]


def lines_for(hunks: int) -> int:
    """How long a file must be for a patch of HUNKS hunks, 8 lines apart, 3 of context."""
    return max(LINES, PATCHED_LINE + HUNK_STEP * (hunks - 1) + 4)


def _blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _hunk(old: list[str], new: list[str], line: int) -> str:
    """One hunk replacing line LINE (1-based) of OLD with NEW's, 3 lines of context."""
    start = max(1, line - 3)
    end = min(len(old), line + 3)
    body = [f" {text}" for text in old[start - 1 : line - 1]]
    body += [f"-{old[line - 1]}", f"+{new[line - 1]}"]
    body += [f" {text}" for text in old[line:end]]
    count = end - start + 1
    return f"@@ -{start},{count} +{start},{count} @@\n" + "".join(body)


def _file_diff(path: str, old: list[str], changes: dict[int, str]) -> str:
    new = list(old)
    for line, text in changes.items():
        new[line - 1] = text
    hunks = "".join(_hunk(old, new, line) for line in sorted(changes))
    old_id = _blob_id("".join(old).encode())
    new_id = _blob_id("".join(new).encode())
    return (
        f"diff --git a/{path} b/{path}\nindex {old_id}..{new_id} 100644\n"
        f"--- a/{path}\n+++ b/{path}\n{hunks}"
    )


@dataclass(frozen=True)
class _Patch:
    name: str
    edits: dict[str, dict[int, str]]  # path -> line -> new text

    def text(self, base: dict[str, list[str]]) -> str:
        diff = "".join(_file_diff(path, base[path], lines) for path, lines in self.edits.items())
        return f"Description: synthetic fix {self.name}\nSmoke: none (synthetic)\n---\n{diff}"


def _patches(count: int, files: int, seed: int, hunks: int) -> list[_Patch]:
    """COUNT patches, each owning files chosen by SEED (a random order of the tree's files)."""
    order = list(range(files))
    random.Random(seed * 7919 + 13).shuffle(order)
    owned = iter(order)
    patches: list[_Patch] = []
    for j in range(count):
        main = next(owned)
        edits = {
            _path(main): {
                line: f"value_{main}_{line} = {j}  # fix {j}\n"
                for line in range(PATCHED_LINE, PATCHED_LINE + HUNK_STEP * hunks, HUNK_STEP)
            }
        }
        if j % 10 == 9:
            second = next(owned)
            edits[_path(second)] = {SECOND_LINE: f"value_{second}_{SECOND_LINE} = -{j}\n"}
        if j % 20 == 19:
            previous = next(iter(patches[-1].edits))
            number = int(previous.split("mod")[1].split(".")[0])
            edits[previous] = {SHARED_LINE: f"value_{number}_{SHARED_LINE} = 'shared {j}'\n"}
        patches.append(_Patch(f"fix-{j:03d}", edits))
    return patches


def _data(text: bytes) -> bytes:
    return b"data %d\n" % len(text) + text + b"\n"


def _commit(tag: str, parent: bool, changed: dict[str, list[str]], number: int) -> bytes:
    out = [b"commit refs/heads/main\n", b"mark :%d\n" % number]
    out += [b"author " + _ID + b"\n", b"committer " + _ID + b"\n"]
    out.append(_data(f"release {tag}".encode()))
    if parent:
        out.append(b"from :%d\n" % (number - 1))
    for path, lines in sorted(changed.items()):
        out.append(f"M 100644 inline {path}\n".encode())
        out.append(_data("".join(lines).encode()))
    out.append(f"reset refs/tags/{tag}\nfrom :{number}\n\n".encode())
    return b"".join(out)


def build(
    root: Path,
    *,
    files: int = 20_000,
    tags: int = 50,
    changes: int = 200,
    patches: int = 200,
    sizes: tuple[int, ...] = (10, 50, 200),
    seed: int = 10,
    hunks: int = 1,
) -> Upstream:
    """Build the upstream, its clone and the patch sets under ROOT (which must not exist)."""
    if patches + patches // 10 + 1 > files:
        raise ValueError(f"{patches} patches need more than {files} files (one or two each)")
    rng = random.Random(seed)
    root.mkdir(parents=True)
    origin = root / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True)
    length = lines_for(hunks)
    tree = {_path(n): _content(n, length) for n in range(files)}
    base = {path: list(lines) for path, lines in tree.items()}
    series = _patches(patches, files, seed, hunks)
    patched = series
    names = [f"v1.{n}.0" for n in range(tags)]
    # Planned events on patches 0-3 (so every patch set size meets every outcome), then random.
    planned = {1: [("offset", 1)], 2: [("conflict", 2)], 3: [("upstream", 0)], 4: [("3way", 3)]}
    stream = [_commit(names[0], False, tree, 1)]
    for number in range(1, tags):
        changed: dict[str, list[str]] = {}
        events = list(planned.get(number, []))
        hits = max(1, changes // 50)  # about 2 % of a release's changes touch patched files
        events += [
            (
                rng.choice(["offset"] * 6 + ["3way"] * 2 + ["conflict"]),
                rng.randrange(len(patched)),
            )
            for _ in range(hits)
        ]
        for kind, j in events:
            path, lines = next(iter(patched[j].edits.items()))
            content = tree[path]
            key = base[path][PATCHED_LINE - 1].split(" = ")[0] + " = "
            where = next(i for i, text in enumerate(content) if text.startswith(key))
            if kind == "offset":
                content[0:0] = [f"# release {number} note {k}\n" for k in range(3)]
            elif kind == "3way":
                content[where - 2] = content[where - 2].rstrip("\n") + "  # tuned\n"
            elif kind == "conflict":
                content[where] = content[where].rstrip("\n") + "  # upstream\n"
            else:  # upstream ships the fix itself, every hunk of it
                for line, text in lines.items():
                    content[where + line - PATCHED_LINE] = text
            changed[path] = content
        while len(changed) < min(changes, files - len(patched) - len(patched) // 10):
            n = rng.randrange(files)
            path = _path(n)
            if any(path in p.edits for p in patched):
                continue
            content = tree[path]
            k = rng.randrange(len(content))
            content[k] = content[k].rstrip("\n") + f"  # r{number}\n"
            changed[path] = content
        stream.append(_commit(names[number], True, changed, number + 1))
    subprocess.run(
        ["git", "fast-import", "--quiet", "--done"],
        cwd=origin,
        input=b"".join(stream) + b"done\n",
        check=True,
    )
    install = root / "install"
    subprocess.run(["git", "clone", "-q", str(origin), str(install)], check=True)
    upstream = Upstream(root, origin, install, names, files=files, changes=changes)
    for size in sizes:
        folder = root / f"patches-{size}"
        folder.mkdir()
        entries, floor = [], []
        for patch in series[:size]:
            target = folder / f"{patch.name}.patch"
            target.write_text(patch.text(base))
            entries.append(target.name)
            floor.append(f"{target}\t{' '.join(patch.edits)}\n")
        (folder / "series").write_text("\n".join(entries) + "\n")
        (folder / "patchkeeper.toml").write_text(f'[install]\npath = "{install}"\n')
        upstream.patch_sets[size] = folder
        listing = root / f"floor-{size}.list"
        listing.write_text("".join(floor))
        upstream.floor_lists[size] = listing
    return upstream


def variant_set(upstream: Upstream, size: int, variants: int) -> Path:
    """The first SIZE patches, each as a folder of VARIANTS variants with disjoint `Applies-To`
    ranges (`>=0.K,<0.K+1`), the last of them (`>=1.0`) for every tag: the same fixes as
    patches-SIZE, chosen by version. Each variant's header is its own, as `port` writes one
    (its own range, `Last-Update` and `Base`, the commit it was made on): a reader that took
    one variant's header for another's, or read only some fields quickly, would be measured on
    a set no one has. Written once under ROOT/port-written-SIZE-VARIANTS/."""
    plain = upstream.patch_sets[size]
    folder = upstream.root / f"port-written-{size}-{variants}"
    if folder.exists():
        return folder
    folder.mkdir()
    names = (plain / "series").read_text().split()
    for name in names:
        text = (plain / name).read_text()
        own = folder / name.removesuffix(".patch")
        own.mkdir()
        for k in range(variants):
            spec = ">=1.0" if k == variants - 1 else f">=0.{k},<0.{k + 1}"
            dated = f"Last-Update: 2026-{1 + k // 28 % 12:02d}-{1 + k % 28:02d}"
            base = f"Base: {hashlib.sha1(f'{name} {k}'.encode()).hexdigest()}"
            header = f"Applies-To: {spec}\n{dated}\n{base}\n"
            (own / f"v{k:02d}.patch").write_text(header + text)
    (folder / "series").write_text("".join(f"{name.removesuffix('.patch')}/\n" for name in names))
    (folder / "patchkeeper.toml").write_text((plain / "patchkeeper.toml").read_text())
    return folder


def same_tree_tags(upstream: Upstream, count: int) -> list[str]:
    """COUNT release tags after the newest (v2.0.0, v2.1.0, ...), each on a commit of its own
    whose tree is the newest tag's: releases that change nothing. Made in the install once."""
    names = [f"v2.{n}.0" for n in range(count)]
    git = ["git", "-C", str(upstream.install)]
    have = subprocess.run([*git, "tag", "--list", "v2.*"], capture_output=True, text=True).stdout
    if set(names) <= set(have.split()):
        return names
    stream = [b"reset refs/heads/same-tree\nfrom refs/tags/%s^0\n\n" % upstream.tags[-1].encode()]
    for number, name in enumerate(names, 1):
        stream.append(b"commit refs/heads/same-tree\nmark :%d\n" % number)
        stream += [b"author " + _ID + b"\n", b"committer " + _ID + b"\n"]
        stream.append(_data(f"release {name}: no change".encode()))
        stream.append(f"reset refs/tags/{name}\nfrom :{number}\n\n".encode())
    subprocess.run(
        [*git, "fast-import", "--quiet", "--done", "--force"],
        input=b"".join(stream) + b"done\n",
        check=True,
    )
    return names
