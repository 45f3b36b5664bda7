"""Classify a patch set against a target, each patch on top of the ones before it.

A target is the install's work tree or any ref. Its content for the touched paths is loaded
into a scratch index; each patch is tried there with `git apply --cached` (forward, reverse,
3-way, in that order, never with fuzz). The scratch index then holds the combined result of
every patch that applies, so a writer can put it into the work tree in one step.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

from patchkeeper import git, nextstep
from patchkeeper import outcomes as oc
from patchkeeper.git import GitError
from patchkeeper.outcomes import HunkConflict, HunkOffset, Mismatch, PatchResult
from patchkeeper.patchset import (
    Patch,
    PatchFile,
    PatchSet,
    diff_path,
    git_line_paths,
    spec_contains,
)
from patchkeeper.scratch import ScratchIndex, scratch_index, tree_diff

_CHECKING_RE = re.compile(r"^Checking patch (.+)\.\.\.$")
_OFFSET_RE = re.compile(r"^Hunk #(\d+) succeeded at (\d+) \(offset (-?\d+) lines?\)\.$")
_FAILED_FILE_RES = (
    re.compile(r"^error: patch failed: (.+):\d+$"),
    re.compile(r"^error: (.+): (?:patch does not apply|(?:does not|already) exists? in index)$"),
)
_GIT_FATAL = 128  # git apply could not even read the patch
_CORRUPT_RE = re.compile(r"corrupt patch|unrecognized input|patch fragment without header")
_BATCH_HEADER_RE = re.compile(rb"^[0-9a-f]{40,64} (\w+) (\d+)$")  # else "NAME missing"


@dataclass
class Classification:
    """Every patch's result plus the scratch trees before and after (for the writer)."""

    repo: Path
    results: list[PatchResult]
    start_tree: str
    final_tree: str

    def combined_diff(self) -> bytes:
        return tree_diff(self.repo, self.start_tree, self.final_tree)

    def patch_diff(self, result: PatchResult) -> bytes | None:
        """The exact diff RESULT's patch made to the target (what a record keeps)."""
        return tree_diff(self.repo, *result.trees) if result.trees else None


@dataclass(frozen=True)
class Recorded:
    """What the state says patchkeeper wrote for one patch (work tree targets only)."""

    sha256: str
    diff: bytes


def _lines(output: bytes) -> list[str]:
    return output.decode(errors="replace").splitlines()


def parse_offsets(stderr: bytes) -> list[HunkOffset]:
    offsets, current = [], ""
    for line in _lines(stderr):
        if match := _CHECKING_RE.match(line):
            current = match.group(1)
        elif (match := _OFFSET_RE.match(line)) and int(match.group(3)) != 0:
            offsets.append(HunkOffset(current, int(match[1]), int(match[2]), int(match[3])))
    return offsets


def failed_files(stderr: bytes) -> list[str]:
    files: list[str] = []
    for line in _lines(stderr):
        for pattern in _FAILED_FILE_RES:
            if (match := pattern.match(line)) and match.group(1) not in files:
                files.append(match.group(1))
    return files


def _lines_with_ends(data: bytes) -> list[bytes]:
    """Lines split on "\\n" only: a lone "\\r" (or CRLF) is content, not a break."""
    parts = data.split(b"\n")
    return [part + b"\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def split_hunks(diff: bytes) -> list[tuple[str, bytes, list[bytes]]]:
    """(path, file header, hunks) per file section of a git diff, raw bytes kept."""
    sections: list[tuple[str, bytes, list[bytes]]] = []
    header: list[bytes] = []
    hunks: list[list[bytes]] = []
    path = ""

    def flush() -> None:
        if header:
            sections.append((path, b"".join(header), [b"".join(h) for h in hunks]))

    for line in _lines_with_ends(diff):
        text = line.decode(errors="surrogateescape").rstrip("\r\n")
        if line.startswith(b"diff --git "):
            flush()
            header, hunks = [line], []
            path = git_line_paths(text[len("diff --git ") :])[-1]
        elif line.startswith(b"@@"):
            hunks.append([line])
        elif hunks:
            hunks[-1].append(line)
        else:
            header.append(line)
            named = diff_path(text[4:].split("\t")[0]) if text[:4] in ("+++ ", "--- ") else ""
            if named and named != "/dev/null" and (text.startswith("+++") or not path):
                path = named
    flush()
    return sections


def closest_mismatches(target: list[str], expected: list[str], hint: int) -> tuple[Mismatch, ...]:
    """Where the target best matches EXPECTED (ties: nearest HINT), the lines that differ."""
    if not expected:
        return ()
    best_key, best_start = (-1, 0), 0
    for start in range(max(1, len(target) - len(expected) + 1)):
        window = target[start : start + len(expected)]
        key = (sum(a == b for a, b in zip(expected, window, strict=False)), -abs(start - hint))
        if key > best_key:
            best_key, best_start = key, start
    if best_key[0] <= 0:
        return ()
    window = target[best_start : best_start + len(expected)]
    return tuple(
        Mismatch(best_start + offset + 1, want, window[offset] if offset < len(window) else None)
        for offset, want in enumerate(expected)
        if offset >= len(window) or window[offset] != want
    )


def _hunk_start(header: str) -> int:
    match = re.match(r"^@@ -(\d+)", header)
    return int(match.group(1)) - 1 if match else 0


def conflicting_hunks(index: ScratchIndex, diff: bytes, files: list[str]) -> list[HunkConflict]:
    """Which hunks fail, each checked alone against the target, with the lines it expected
    and, where the target is closest to them, the lines that differ."""
    conflicts = []
    for path, header, hunks in split_hunks(diff):
        if files and path not in files:
            continue
        if not hunks:
            conflicts.append(HunkConflict(path, 0, "", (), "file-level change does not apply"))
        content = index.read_file(path)
        target = content.decode(errors="replace").splitlines() if content is not None else []
        for number, hunk in enumerate(hunks, 1):
            proc = index.apply(header + hunk, "--check")
            if proc.returncode == 0:
                continue
            first, *body = hunk.decode(errors="replace").splitlines()
            expected = tuple(line[1:] for line in body if line[:1] in (" ", "-"))
            reason = next(
                (m for m in _lines(proc.stderr) if "exist" in m), "context does not match"
            )
            mismatches = closest_mismatches(target, list(expected), _hunk_start(first))
            conflicts.append(HunkConflict(path, number, first, expected, reason, mismatches))
    return conflicts


def _try_three_way(index: ScratchIndex, result: PatchResult, diff: bytes, files: list[str]):
    before = index.write_tree()
    proc = index.apply(diff, "--3way")
    if proc.returncode == 0:
        result.outcome = oc.MERGED_3WAY
        result.merged_files = files
        return True
    index.read_tree(before)  # drop the conflict stages the failed merge left
    return False


def classify_one(
    index: ScratchIndex,
    patch_file: PatchFile,
    result: PatchResult,
    has_it_outcome: str,
) -> None:
    """Try one patch on the scratch index; leave the index holding its result if it applies."""
    diff = patch_file.diff
    check = index.apply(diff)  # atomic: applied in full, or the index is unchanged
    if check.returncode == 0:
        result.offsets = parse_offsets(check.stderr)
        result.outcome = oc.APPLIED_OFFSET if result.offsets else oc.APPLIED
        return
    if check.returncode == _GIT_FATAL or any(_CORRUPT_RE.search(x) for x in _lines(check.stderr)):
        result.outcome = oc.INVALID
        result.detail = f"git cannot read the diff: {_lines(check.stderr)[-1]}"
        return
    if index.apply(diff, "--check", "--reverse").returncode == 0:
        result.outcome = has_it_outcome
        return
    files = failed_files(check.stderr)
    if _try_three_way(index, result, diff, files):
        return
    result.outcome = oc.CONFLICT
    result.conflicts = conflicting_hunks(index, diff, files)
    names = ", ".join(files) or "the target"
    result.detail = f"does not apply to {names}"


def classify(
    patch_set: PatchSet,
    repo: Path,
    version: Version | None,
    load: Callable[[ScratchIndex, set[str]], None],
    *,
    upstream_ref: str | None,
    recorded: dict[str, Recorded] | None = None,
    from_upstream: Callable[[PatchFile], bool] | None = None,
    was_in_place: Collection[str] = (),
) -> Classification:
    """Classify every patch of PATCH_SET in series order against the content LOAD puts in.

    UPSTREAM_REF is the commit whose blobs judge `Upstream-Has:` conditions: the ref itself
    for a ref, HEAD for the work tree, whose own content carries our patches (None: no
    commit, so no condition holds). RECORDED (work tree targets) holds what patchkeeper wrote
    earlier: an intact one is `already-applied`, a damaged one `drifted`, and one whose patch
    file changed is taken out first and then tried afresh. FROM_UPSTREAM tells whether content
    that is already present came from upstream (else it is reported `already-applied`, not yet
    recorded). WAS_IN_PLACE names patches that were in place before (records, or the records
    an update set aside): one of them that no variant covers any more is `expired`, never a
    quiet `not-applicable`.
    """
    recorded = recorded or {}
    selected = {p.name: p.select(version) for p in patch_set.patches}
    every_variant = [v for p in patch_set.patches for v in p.variants]
    judging = _Judging(
        version,
        recorded,
        from_upstream,
        upstream_has_content(repo, upstream_ref, every_variant) if upstream_ref else {},
        frozenset(was_in_place) | recorded.keys(),
        repo,
        patch_set.root,
    )
    paths: set[str] = set()
    for variant in selected.values():
        paths.update(variant.files if variant else ())
    for record in recorded.values():
        paths.update(path for path, _, _ in split_hunks(record.diff))
    with scratch_index(repo) as index:
        load(index, paths)
        start = index.write_tree()
        results = [
            _classify_patch(index, patch, selected[patch.name], judging)
            for patch in patch_set.patches
        ]
        for result, patch in zip(results, patch_set.patches, strict=True):
            if (variant := selected[patch.name]) is not None:
                result.variant = str(variant.path.relative_to(patch_set.root))
        _hold_back_dependents(index, patch_set, selected, results, start)
        return Classification(repo, results, start, index.write_tree())


@dataclass(frozen=True)
class _Judging:
    """What every patch of one classification is judged with."""

    version: Version | None
    recorded: dict[str, Recorded]
    from_upstream: Callable[[PatchFile], bool] | None
    has_by_content: dict[Path, str]  # variant path -> the Upstream-Has conditions that hold
    was_in_place: frozenset[str]
    repo: Path  # for the commands a result names
    patches: Path


def _upstream_has_any(patch: Patch, judging: _Judging) -> str | None:
    """Why upstream has PATCH whatever its variants' ranges say, or None."""
    for variant in patch.variants:
        if spec_contains(variant.upstream_fixed_in, judging.version):
            return f"Upstream-Fixed-In {variant.upstream_fixed_in} contains {judging.version}"
        if variant.path in judging.has_by_content:
            return f"upstream has it: {judging.has_by_content[variant.path]}"
    return None


def _no_variant(result: PatchResult, patch: Patch, judging: _Judging) -> None:
    """No variant covers the version. Nothing is taken out on that ground: an unknown version
    is undecided, and a fix that was in place is `expired` unless upstream has it."""
    if (why := _upstream_has_any(patch, judging)) is not None:
        result.outcome = oc.UPSTREAM_HAS_IT
        result.detail = why
    elif judging.version is None:
        result.undecided = True  # never green: a fix may be missing and nobody can tell
        result.detail = "the version is unknown and every variant has an Applies-To range"
    elif patch.name in judging.was_in_place:
        result.outcome = oc.EXPIRED
        retire = nextstep.command(
            "unapply", patch.name, install=judging.repo, patches=judging.patches
        )
        result.detail = (
            f"it was in place, but no variant's Applies-To contains {judging.version}: add a "
            f"variant for it (or widen Applies-To), or retire it with `{retire}`"
        )
    else:
        result.detail = f"no variant's Applies-To contains version {judging.version}"


def _classify_patch(
    index: ScratchIndex, patch: Patch, variant: PatchFile | None, judging: _Judging
) -> PatchResult:
    result = PatchResult(patch.name, oc.NOT_APPLICABLE)
    before = index.write_tree()
    record = _live_record(index, result, judging.recorded.get(patch.name))
    if result.outcome == oc.DRIFTED:
        return result
    if variant is None:
        _no_variant(result, patch, judging)
        if record is not None:
            result.notes.append("what patchkeeper wrote earlier stays in place")
        return result
    if record is not None and record.sha256 == variant.sha256:
        result.outcome = oc.ALREADY_APPLIED
        return result
    if record is not None:
        index.apply(record.diff, "--reverse")  # stale: take out what was written before
        result.notes.append("patch file changed since it was applied: re-applying")
    if spec_contains(variant.upstream_fixed_in, judging.version):
        result.outcome = oc.UPSTREAM_HAS_IT
        result.detail = f"Upstream-Fixed-In {variant.upstream_fixed_in} contains {judging.version}"
    elif variant.path in judging.has_by_content:
        result.outcome = oc.UPSTREAM_HAS_IT
        result.detail = f"upstream has it: {judging.has_by_content[variant.path]}"
    else:
        has_it = oc.UPSTREAM_HAS_IT
        if judging.from_upstream is not None and not judging.from_upstream(variant):
            has_it = oc.ALREADY_APPLIED
        classify_one(index, variant, result, has_it)
        if result.outcome == oc.UPSTREAM_HAS_IT:
            result.detail = "its changes are already upstream: the patch can be retired"
        elif result.outcome == oc.ALREADY_APPLIED:
            result.detail = "present in the work tree but not recorded by patchkeeper"
    if result.outcome in oc.FAILED and record is not None:
        index.read_tree(before)  # keep the version written earlier rather than nothing
        result.notes.append("the version applied earlier stays in place")
    after = index.write_tree()
    if after != before:
        result.trees = (before, after)
    return result


def _live_record(
    index: ScratchIndex, result: PatchResult, record: Recorded | None
) -> Recorded | None:
    """The record of what patchkeeper wrote, if that is still in the tree.

    Wholly gone (a stash or a reset took it): None, and the patch is tried afresh. Partly
    changed: the outcome becomes `drifted` and nothing is tried.
    """
    if record is None:
        return None
    result.recorded = True
    if index.apply(record.diff, "--check", "--reverse").returncode == 0:
        return record
    if index.apply(record.diff, "--check").returncode == 0:
        result.recorded = False
        result.notes.append("patchkeeper wrote it earlier, but it is gone from the tree")
        return None
    result.outcome = oc.DRIFTED
    result.detail = "applied by patchkeeper, then changed by hand"
    return record


def _hold_back_dependents(
    index: ScratchIndex,
    patch_set: PatchSet,
    selected: dict[str, PatchFile | None],
    results: list[PatchResult],
    start: str,
) -> None:
    """A patch sharing a file with an earlier failed one is not written either.

    When any is held back, the scratch index is rebuilt from the start with only the patches
    still going ahead, so the combined result never holds half of a chain.
    """
    failed_files: dict[str, str] = {}
    held = False
    for patch, result in zip(patch_set.patches, results, strict=True):
        files = set(selected[patch.name].files) if selected[patch.name] else set()
        if result.outcome in oc.FAILED:
            failed_files.update(dict.fromkeys(files, patch.name))
            continue
        shared = sorted(files & failed_files.keys())
        if shared and result.outcome in oc.WRITES:
            blocker = failed_files[shared[0]]
            result.outcome = oc.CONFLICT
            result.detail = f"held back: shares {shared[0]} with {blocker}, which did not apply"
            result.trees = None
            failed_files.update(dict.fromkeys(files, patch.name))
            held = True
    if held:
        index.read_tree(start)
        for result in results:
            if result.trees is None:
                continue
            if index.apply(tree_diff(index.repo, *result.trees)).returncode != 0:
                raise GitError(f"internal: {result.name} no longer applies after a hold-back")


def present_in_ref(repo: Path, ref: str, variant: PatchFile) -> bool:
    """Whether REF's committed content already holds every change of VARIANT."""
    with scratch_index(repo) as index:
        index.load_ref(ref, variant.files)
        return index.apply(variant.diff, "--check", "--reverse").returncode == 0


def upstream_has_content(repo: Path, ref: str, variants: Iterable[PatchFile]) -> dict[Path, str]:
    """Which VARIANTS' `Upstream-Has:` conditions all hold in REF's committed blobs.

    Maps each such variant's path to the conditions, for the report. Every blob is read by
    one `git cat-file --batch` (no checkout, no process per condition), and none at all when
    no variant has conditions. A missing file, or a folder, holds no text.
    """
    judged = [variant for variant in variants if variant.upstream_has]
    paths = sorted({c.path for variant in judged for c in variant.upstream_has})
    if not paths:
        return {}
    blobs = _read_blobs(repo, ref, paths)
    return {
        variant.path: ", ".join(map(str, variant.upstream_has))
        for variant in judged
        if all(c.text.encode() in blobs.get(c.path, b"") for c in variant.upstream_has)
    }


def _read_blobs(repo: Path, ref: str, paths: list[str]) -> dict[str, bytes]:
    """REF's blobs at PATHS (paths that are no blob in REF are left out), in one process."""
    query = "".join(f"{ref}:{path}\n" for path in paths).encode()
    output = git.run(["cat-file", "--batch"], repo, stdin=query).stdout
    blobs: dict[str, bytes] = {}
    position = 0
    for path in paths:
        end = output.index(b"\n", position)
        header = _BATCH_HEADER_RE.match(output[position:end])
        position = end + 1
        if header is None:
            continue  # no such file in REF
        size = int(header[2])
        if header[1] == b"blob":
            blobs[path] = output[position : position + size]
        position += size + 1  # the content, then a newline
    return blobs
