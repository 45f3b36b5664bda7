"""Classify a patch set against a target, each patch on top of the ones before it.

A target is the install's work tree or any ref. Its content for the touched paths is loaded
into a scratch index; each patch is tried there with `git apply --cached` (forward, reverse,
3-way, in that order, never with fuzz). The scratch index then holds the combined result of
every patch that applies, so a writer can put it into the work tree in one step.

Speed comes from asking git fewer questions, never from changing an answer:

- Batches. Patches that need no special handling are applied as ONE concatenated stream
  (`git apply` applies a stream's patches in order, each on the result of the ones before,
  and all or nothing). When the stream fails, git names the files that failed; the batch is
  split there (or halved when it cannot tell) and every patch that failed is tried alone
  (forward, reverse, 3-way), exactly as one-by-one classification would. So the results are
  the one-by-one results by construction; `tests/test_batch.py` checks it.
- No `write-tree` per patch unless a result needs its tree: undoing a failed 3-way merge
  restores a copy of the index file; per-patch trees are taken only for a writer's records,
  and only for patches that share a file with another patch (the others' written diffs are
  their part of the combined diff).
- Reuse across refs (`TrialMemo`, for `check`): patches that share files form a group whose
  outcomes depend only on the group's patch files and the target's blobs of the group's
  files; a group seen with the same blobs on an earlier ref is not tried again.
- Private objects: the scratch work writes its blobs and trees into a temporary object
  directory (scratch.py), so classifying adds nothing to the install's object store.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from packaging.version import Version

from patchkeeper.engine.merge_guard import Refusal, judge_merge
from patchkeeper.install import git
from patchkeeper.install.git import GitError
from patchkeeper.install.scratch import Scratch, ScratchIndex, open_scratch, scratch_index
from patchkeeper.model import nextstep
from patchkeeper.model import outcomes as oc
from patchkeeper.model.outcomes import HunkConflict, HunkOffset, Mismatch, PatchResult
from patchkeeper.patchset.load import (
    Patch,
    PatchFile,
    PatchSet,
    diff_path,
    git_line_paths,
    spec_contains,
    unquote,
)

_CHECKING_RE = re.compile(r"^Checking patch (.+)\.\.\.$")
_OFFSET_RE = re.compile(r"^Hunk #(\d+) succeeded at (\d+) \(offset (-?\d+) lines?\)\.$")
_FAILED_FILE_RES = (
    re.compile(r"^error: patch failed: (.+):\d+$"),
    re.compile(r"^error: (.+): (?:patch does not apply|(?:does not|already) exists? in index)$"),
)
_GIT_FATAL = 128  # git apply could not even read the patch
_CORRUPT_RE = re.compile(r"corrupt patch|unrecognized input|patch fragment without header")
_BATCH_HEADER_RE = re.compile(rb"^[0-9a-f]{40,64} (\w+) (\d+)$")  # else "NAME missing"
_SECTION_RE = re.compile(rb"^diff --git ", re.MULTILINE)
_CONFLICTED_RE = re.compile(r"^Applied patch to '(.+)' with conflicts\.$")
EMPTY_PATCH = "an empty patch (no diff): applied as empty, nothing to write"
# Batches on (the default), or every patch tried alone: the same results, more git calls.
# Tests switch it off to prove the first equals the second.
BATCHES = True


@dataclass
class Classification:
    """Every patch's result; for a writer, the combined diff and each patch's own diff.

    The scratch index's trees (and, with private objects, the objects) stay until `close`
    (or until this object is dropped), so the diffs can be taken after classification.
    """

    repo: Path
    results: list[PatchResult]
    start_tree: str | None  # None: classified for reading only (no trees were written)
    final_tree: str | None
    index: ScratchIndex | None = field(default=None, repr=False)
    scratch: Scratch | None = field(default=None, repr=False)
    # Patches applied in a batch, with no other patch on their files: name -> files.
    batched: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False)
    _combined: bytes | None = field(default=None, repr=False)

    def _diff(self, old: str, new: str) -> bytes:
        if self.index is None:
            raise GitError("internal: this classification kept no trees")
        return self.index.diff(old, new)

    def combined_diff(self) -> bytes:
        if self.start_tree is None or self.final_tree is None:
            raise GitError("internal: this classification kept no trees")
        if self._combined is None:
            self._combined = self._diff(self.start_tree, self.final_tree)
        return self._combined

    def patch_diff(self, result: PatchResult) -> bytes | None:
        """The exact diff RESULT's patch made to the target (what a record keeps)."""
        if result.trees:
            return self._diff(*result.trees)
        files = self.batched.get(result.name)
        if not files or result.outcome not in oc.WRITES:
            return None
        own = set(files)
        diff = b"".join(
            header + b"".join(hunks)
            for path, header, hunks in split_hunks(self.combined_diff())
            if path in own
        )
        return diff or None

    def close(self) -> None:
        if self.scratch is not None:
            self.scratch.close()
            self.scratch = None


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


def _text_lines(data: bytes) -> list[str]:
    """Lines as git sees them: broken at "\n" only (a form feed or a vertical tab, which
    str.splitlines also breaks at, is content)."""
    lines = data.decode(errors="replace").split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


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


# A line that stands more often than this in a file (a blank line, a lone brace) says nothing
# about where a hunk belongs: it casts no vote.
COMMON_LINE = 50


def line_positions(target: list[str]) -> dict[str, list[int]]:
    """Where each line of TARGET stands (built once per file, shared by its hunks)."""
    positions: dict[str, list[int]] = {}
    for number, line in enumerate(target):
        positions.setdefault(line, []).append(number)
    return positions


def best_start_of(
    target: list[str],
    expected: list[str],
    hint: int,
    positions: dict[str, list[int]] | None = None,
) -> int | None:
    """The start in TARGET where the most lines of EXPECTED line up (ties: nearest HINT);
    None when no line does. Each expected line votes for the starts that would line it up
    with an equal target line, so the cost grows with the hunk, not with the file."""
    if not expected:
        return None
    positions = positions if positions is not None else line_positions(target)
    last = max(0, len(target) - len(expected))
    votes: dict[int, int] = {}
    for offset, line in enumerate(expected):
        found = positions.get(line, ())
        if len(found) > COMMON_LINE:
            continue
        for position in found:
            start = position - offset
            if 0 <= start <= last:
                votes[start] = votes.get(start, 0) + 1
    if not votes:
        return None
    return max(votes, key=lambda start: (votes[start], -abs(start - hint)))


def closest_mismatches(
    target: list[str],
    expected: list[str],
    hint: int,
    positions: dict[str, list[int]] | None = None,
) -> tuple[Mismatch, ...]:
    """Where the target best matches EXPECTED (`best_start_of`), the lines that differ."""
    best_start = best_start_of(target, expected, hint, positions)
    if best_start is None:
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


def stderr_blocks(stderr: bytes) -> dict[str, list[str]]:
    """`git apply -v` output split per file section: path -> the lines from its `Checking
    patch` line to the next one. A path with more than one section is left out."""
    blocks: dict[str, list[str]] = {}
    twice: set[str] = set()
    current: list[str] | None = None
    for line in _lines(stderr):
        if match := _CHECKING_RE.match(line):
            path = unquote(match.group(1))
            if path in blocks:
                twice.add(path)
            current = blocks[path] = [line]
        elif current is not None:
            current.append(line)
    return {path: lines for path, lines in blocks.items() if path not in twice}


def conflicting_hunks(
    index: ScratchIndex,
    diff: bytes,
    files: list[str],
    forward: bytes | None = None,
    contents: dict[str, bytes] | None = None,
) -> list[HunkConflict]:
    """Which hunks fail, each checked alone against the target, with the lines it expected
    and, where the target is closest to them, the lines that differ.

    FORWARD is what `git apply -v` of the whole DIFF said on this very index: a failed file
    section with a single hunk failed exactly as it says there (the hunk alone is the same
    input), so only sections with several hunks are checked hunk by hunk. CONTENTS: the
    index's content of the files, when the caller has read it already."""
    sections = [(p, h, hs) for p, h, hs in split_hunks(diff) if not files or p in files]
    if contents is None:
        contents = index.read_files([path for path, _, _ in sections])
    blocks = stderr_blocks(forward) if forward is not None else {}
    conflicts = []
    for path, header, hunks in sections:
        if not hunks:
            conflicts.append(HunkConflict(path, 0, "", (), "file-level change does not apply"))
        content = contents.get(path)
        target = _text_lines(content) if content is not None else []
        positions = line_positions(target)
        for number, hunk in enumerate(hunks, 1):
            first, *body = _text_lines(hunk)
            expected = tuple(line[1:] for line in body if line[:1] in (" ", "-"))
            if len(hunks) == 1 and path in files and path in blocks:
                said = blocks[path]
            elif len(hunks) > 1:
                # Many hunks: asking git about each one alone costs a process and a search of
                # the whole file per hunk. A hunk whose lines stand together in the file
                # lands (git found the file's failure elsewhere); the others are reported.
                start = best_start_of(target, list(expected), _hunk_start(first), positions)
                if start is not None and tuple(target[start : start + len(expected)]) == expected:
                    continue
                said = []
            else:
                proc = index.apply(header + hunk, "--check")
                if proc.returncode == 0:
                    continue
                said = _lines(proc.stderr)
            # git's own words ("does not exist in index"), never a source line it quotes
            reason = next(
                (m for m in said if m.startswith("error: ") and "exist" in m),
                "context does not match",
            )
            mismatches = closest_mismatches(target, list(expected), _hunk_start(first), positions)
            conflicts.append(HunkConflict(path, number, first, expected, reason, mismatches))
    return conflicts


_INDEX_LINE_RE = re.compile(r"^index ([0-9a-f]{4,64})\.\.[0-9a-f]{4,64}(?: \d+)?$")


def preimages(diff: bytes) -> dict[str, str | None]:
    """Per file section of DIFF that changes an existing file: the preimage blob its `index`
    line names, or None when it names none (quilt and `diff -u` write no index line)."""
    found: dict[str, str | None] = {}
    for path, header, _ in split_hunks(diff):
        lines = header.decode(errors="surrogateescape").split("\n")
        if any(line.startswith(("new file mode", "copy from")) for line in lines):
            continue  # a file it creates: git needs no preimage to try
        match = next((m for line in lines if (m := _INDEX_LINE_RE.match(line.rstrip()))), None)
        found[path] = match[1] if match else None
    return found


class BlobCheck:
    """Which preimage blobs the scratch index's object store holds, asked lazily and in one
    process per question; a blob once there stays there (objects are never taken away)."""

    def __init__(self, index: ScratchIndex) -> None:
        self.index = index
        self.present: set[str] = set()

    def can_merge(self, diff: bytes, files: Iterable[str]) -> bool:
        """Whether `git apply --3way` could merge the sections of FILES (the ones that failed
        forward): git merges a section only with its preimage blob at hand, and applies it
        directly otherwise, which fails as the forward apply did. So a failed section with
        no index line, or whose blob is missing, makes the 3-way attempt fail for sure."""
        return self.mergeable([(diff, list(files))])[0]

    def mergeable(self, patches: Sequence[tuple[bytes, list[str]]]) -> list[bool]:
        """`can_merge` for each (diff, failed files) of PATCHES, in one process at most."""
        wanted: list[list[str | None]] = []
        for diff, files in patches:
            needed = preimages(diff)
            wanted.append([needed[path] for path in files if path in needed])
        ask = sorted({
            blob for blobs in wanted for blob in blobs
            if blob and set(blob) != {"0"} and blob not in self.present
        })  # fmt: skip
        if ask:
            query = "".join(f"{blob}\n" for blob in ask).encode()
            proc = git.run(
                ["cat-file", "--batch-check=%(objecttype)"], self.index.repo,
                env=self.index.env, stdin=query, check=False,
            )  # fmt: skip
            answers = _lines(proc.stdout)
            if proc.returncode != 0 or len(answers) != len(ask):
                self.present.update(ask)  # no clear answer: git's own attempt decides
            else:
                self.present.update(b for b, a in zip(ask, answers, strict=True) if a == "blob")
        return [
            all(blob is not None and (set(blob) == {"0"} or blob in self.present) for blob in b)
            for b in wanted
        ]


def _try_three_way(
    index: ScratchIndex, diff: bytes, before: dict[str, bytes]
) -> tuple[bool, Refusal | None]:
    """Merge DIFF in 3-way; it stays in the index only when it writes nothing upstream has
    (`merge_guard`). BEFORE: the index's content of the diff's files before the merge."""
    saved = index.save()  # a copy of the index file: no write-tree to come back to
    proc = index.apply(diff, "--3way")
    if proc.returncode == 0:
        sections = [(path, hunks) for path, _, hunks in split_hunks(diff)]
        refusal = judge_merge(sections, before, index.read_files([p for p, _ in sections]))
        if refusal is None:
            return True, None
        index.restore(saved)
        return False, refusal
    index.restore(saved)  # drop the conflict stages the failed merge left
    return False, None


HasIt = str | Callable[[], str]


def classify_one(
    index: ScratchIndex,
    patch_file: PatchFile,
    result: PatchResult,
    has_it_outcome: HasIt,
    blobs: BlobCheck | None = None,
    merge_has_it: HasIt | None = None,
) -> None:
    """Try one patch on the scratch index; leave the index holding its result if it applies.

    HAS_IT_OUTCOME is the outcome when the patch's changes are already there (or a function
    that decides it, asked only then: it may cost git calls). BLOBS, MERGE_HAS_IT: see
    `judge_failed`."""
    check = index.apply(patch_file.diff)  # atomic: applied in full, or the index is unchanged
    if check.returncode == 0:
        result.offsets = parse_offsets(check.stderr)
        result.outcome = oc.APPLIED_OFFSET if result.offsets else oc.APPLIED
        return
    if check.returncode == _GIT_FATAL or any(_CORRUPT_RE.search(x) for x in _lines(check.stderr)):
        result.outcome = oc.INVALID
        result.detail = f"git cannot read the diff: {_lines(check.stderr)[-1]}"
        return
    judge_failed(
        index, patch_file, result, has_it_outcome, check.stderr, blobs=blobs,
        merge_has_it=merge_has_it,
    )  # fmt: skip


def judge_failed(
    index: ScratchIndex,
    patch_file: PatchFile,
    result: PatchResult,
    has_it_outcome: HasIt,
    forward: bytes,
    reverse_applies: bool | None = None,
    merged: bool | None = None,
    contents: dict[str, bytes] | None = None,
    refused: Refusal | None = None,
    blobs: BlobCheck | None = None,
    merge_has_it: HasIt | None = None,
) -> None:
    """A patch whose forward apply failed (git said FORWARD, not a fatal error): already
    there (reverse applies), merged in 3-way, or a conflict with its failing hunks.

    What a caller found out for several patches at once it passes in: REVERSE_APPLIES,
    MERGED (the 3-way merge is in the index already when True), CONTENTS (the index's
    content of the failed files), REFUSED (why a clean 3-way merge was dropped). BLOBS
    skips a 3-way attempt that cannot merge (no preimage blob). MERGE_HAS_IT: the outcome
    when a clean merge would write the change a second time (default: HAS_IT_OUTCOME)."""
    diff = patch_file.diff
    if reverse_applies is None:
        reverse_applies = index.apply(diff, "--check", "--reverse").returncode == 0
    if reverse_applies:
        result.outcome = has_it_outcome if isinstance(has_it_outcome, str) else has_it_outcome()
        return
    files = failed_files(forward)
    if merged is None:
        merged = False
        if blobs is None or blobs.can_merge(diff, files):
            paths = [path for path, _, _ in split_hunks(diff)]
            if contents is None or any(path not in contents for path in paths):
                contents = {**(contents or {}), **index.read_files(paths)}
            merged, refused = _try_three_way(index, diff, contents)
    if merged:
        result.outcome = oc.MERGED_3WAY
        result.merged_files = files
        return
    if refused is not None and refused.has_it:
        ask = merge_has_it or has_it_outcome
        outcome = ask if isinstance(ask, str) else ask()
        if outcome == oc.UPSTREAM_HAS_IT:  # else the work tree has it, but not from upstream
            result.outcome, result.detail = outcome, refused.detail
            return
        refused = Refusal(False, f"{refused.detail}, but HEAD's commit does not show it")
    result.outcome = oc.CONFLICT
    result.conflicts = conflicting_hunks(index, diff, files, forward, contents)
    names = ", ".join(files) or "the target"
    result.detail = refused.detail if refused else f"does not apply to {names}"


# ---------------------------------------------------------------- reuse across refs


def _copy(result: PatchResult) -> PatchResult:
    return replace(
        result,
        offsets=list(result.offsets),
        merged_files=list(result.merged_files),
        conflicts=list(result.conflicts),
        notes=list(result.notes),
        trees=None,
    )


class TrialMemo:
    """What trying patches gave, for `check` across many refs.

    Patches that share files (directly or through others) form a group. Trying a group's
    patches depends only on their files (the patch files' bytes) and on the target's blobs
    (mode and id) of the group's paths: when an earlier ref had the same blobs, its results
    are the answer, without a git call. Only the results of trying are kept; what depends
    on the ref's version (variant, Applies-To, Upstream-Fixed-In, Upstream-Has) is judged
    for each ref anew, and decides which patches are tried at all.
    """

    def __init__(self) -> None:
        self._results: dict[tuple, dict[str, PatchResult]] = {}
        self.hits = 0  # groups answered from an earlier ref
        self.tries = 0  # groups tried

    def get(self, key: tuple) -> dict[str, PatchResult] | None:
        found = self._results.get(key)
        if found is not None:
            self.hits += 1
            return {name: _copy(result) for name, result in found.items()}
        self.tries += 1
        return None

    def put(self, key: tuple, results: dict[str, PatchResult]) -> None:
        self._results[key] = {name: _copy(result) for name, result in results.items()}


def _entries(listing: bytes) -> dict[str, bytes]:
    """`ls-tree -z` output -> path: its whole entry (mode, type, id, path, NUL)."""
    entries: dict[str, bytes] = {}
    for entry in listing.split(b"\0"):
        if entry:
            entries[entry.split(b"\t", 1)[1].decode(errors="surrogateescape")] = entry + b"\0"
    return entries


def _groups(tried: list[tuple[Patch, PatchFile]]) -> list[list[tuple[Patch, PatchFile]]]:
    """TRIED split into groups of patches linked by shared files, each in series order."""
    parent = list(range(len(tried)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for i, (_, variant) in enumerate(tried):
        for path in variant.files:
            if path in owner:
                parent[root(i)] = root(owner[path])
            else:
                owner[path] = i
    groups: dict[int, list[tuple[Patch, PatchFile]]] = {}
    for i, item in enumerate(tried):
        groups.setdefault(root(i), []).append(item)
    return list(groups.values())


# ---------------------------------------------------------------- the classification


def classify(
    patch_set: PatchSet,
    repo: Path,
    version: Version | None,
    load: Callable[[ScratchIndex, set[str]], None] | None = None,
    *,
    upstream_ref: str | None,
    recorded: dict[str, Recorded] | None = None,
    from_upstream: Callable[[PatchFile], bool] | None = None,
    was_in_place: Collection[str] = (),
    target_ref: str | None = None,
    trees: bool = True,
    batch: bool | None = None,
    memo: TrialMemo | None = None,
    has_content: dict[Path, str] | None = None,
    listing: Callable[[set[str]], bytes] | None = None,
) -> Classification:
    """Classify every patch of PATCH_SET in series order against the content LOAD puts in
    (or, with TARGET_REF, against that commit's content).

    UPSTREAM_REF is the commit whose blobs judge `Upstream-Has:` conditions: the ref itself
    for a ref, HEAD for the work tree, whose own content carries our patches (None: no
    commit, so no condition holds); HAS_CONTENT is their answer when the caller has it
    already. RECORDED (work tree targets) holds what patchkeeper wrote earlier: an intact one
    is `already-applied`, a damaged one `drifted`, and one whose patch file changed is taken
    out first and then tried afresh. FROM_UPSTREAM tells whether content that is already
    present came from upstream (else it is reported `already-applied`, not yet recorded); it
    is asked only about a patch whose reverse check succeeds. WAS_IN_PLACE names patches that
    were in place before (records, or the records an update set aside): one of them that no
    variant covers any more is `expired`, never a quiet `not-applicable`.

    TREES: keep what a writer needs (the combined diff, each patch's diff); without it no
    tree is written at all. BATCH: apply patches in batches (off: one by one; the results
    are the same; default: BATCHES). MEMO: reuse results across refs (TARGET_REF only, no
    records). LISTING: TARGET_REF's `ls-tree -r -z` entries of the paths asked, when the
    caller has them (scratch.TreeListings).
    """
    recorded = recorded or {}
    selected = {p.name: p.select(version) for p in patch_set.patches}
    if has_content is None:
        every_variant = [v for p in patch_set.patches for v in p.variants]
        has_content = (
            upstream_has_content(repo, upstream_ref, every_variant) if upstream_ref else {}
        )
    judging = _Judging(
        version,
        recorded,
        from_upstream,
        has_content,
        frozenset(was_in_place) | recorded.keys(),
        repo,
        patch_set.root,
        upstream_ref,
    )
    scratch = Scratch()
    try:
        index = open_scratch(repo, scratch, private_objects=True)
        batch = BATCHES if batch is None else batch
        run = _Run(index, judging, selected, trees=trees, batch=batch)
        classification = run.classify(patch_set, load, target_ref, memo, listing)
    except BaseException:
        scratch.close()
        raise
    if trees:
        classification.scratch = scratch
    else:
        scratch.close()
    return classification


@dataclass(frozen=True)
class _Judging:
    """What every patch of one classification is judged with."""

    version: Version | None
    recorded: dict[str, Recorded]
    from_upstream: Callable[[PatchFile], bool] | None
    has_by_content: dict[Path, str]  # variant path -> why upstream has it (all conditions hold)
    was_in_place: frozenset[str]
    repo: Path  # for the commands a result names
    patches: Path
    upstream_ref: str | None = None  # the commit whose content is upstream's (classify's)

    def upstream_has(self, variant: PatchFile) -> str | None:
        """Why upstream has VARIANT without trying it (its header, its conditions), or None."""
        if spec_contains(variant.upstream_fixed_in, self.version):
            return f"Upstream-Fixed-In {variant.upstream_fixed_in} contains {self.version}"
        if variant.path in self.has_by_content:
            return self.has_by_content[variant.path]
        return None


# A patch to try in a batch: its patch, its variant, its result (filled in).
_Item = tuple[Patch, PatchFile, PatchResult]


class _Run:
    """One classification: the scratch index and how patches are tried on it."""

    def __init__(
        self,
        index: ScratchIndex,
        judging: _Judging,
        selected: dict[str, PatchFile | None],
        *,
        trees: bool,
        batch: bool,
    ) -> None:
        self.index = index
        self.judging = judging
        self.selected = selected
        self.trees = trees
        self.batch = batch
        self.batched: dict[str, tuple[str, ...]] = {}
        self.blobs = BlobCheck(index)

    # -- the whole set

    def classify(
        self,
        patch_set: PatchSet,
        load: Callable[[ScratchIndex, set[str]], None] | None,
        target_ref: str | None,
        memo: TrialMemo | None,
        listing_of: Callable[[set[str]], bytes] | None = None,
    ) -> Classification:
        judging, index = self.judging, self.index
        paths: set[str] = set()
        for variant in self.selected.values():
            paths.update(variant.files if variant else ())
        record_paths: set[str] = set()
        for record in judging.recorded.values():
            record_paths.update(path for path, _, _ in split_hunks(record.diff))
        paths |= record_paths
        tried = [
            (patch, variant)
            for patch in patch_set.patches
            if (variant := self.selected[patch.name]) is not None
            and patch.name not in judging.recorded
            and judging.upstream_has(variant) is None
        ]
        known: dict[str, PatchResult] = {}  # results reused from an earlier ref
        to_remember: list[tuple[tuple, list[str]]] = []
        if target_ref is not None:
            if not paths:
                listing = b""
            else:
                listing = listing_of(paths) if listing_of else index.listing(target_ref, paths)
            entries = _entries(listing)
            if memo is not None and not judging.recorded and judging.from_upstream is None:
                wanted: set[str] = set()
                for group in _groups(tried):
                    files = sorted({path for _, v in group for path in v.files})
                    key = (
                        tuple((patch.name, variant.sha256) for patch, variant in group),
                        tuple(entries.get(path, b"") for path in files),
                        tuple(files),
                    )
                    found = memo.get(key)
                    if found is None:
                        to_remember.append((key, [patch.name for patch, _ in group]))
                        wanted.update(files)
                    else:
                        known.update(found)
                listing = b"".join(entry for path, entry in entries.items() if path in wanted)
            index.clear()
            index.add_entries(listing)
        elif load is not None:
            load(index, paths)
        start = index.write_tree() if self.trees else None
        shared = self._shared_files(record_paths)
        results: list[PatchResult] = []
        pending: list[_Item] = []
        for patch in patch_set.patches:
            variant = self.selected[patch.name]
            if patch.name in known:
                results.append(known[patch.name])
            elif variant is not None and self._batchable(patch, variant, shared):
                result = PatchResult(patch.name, oc.NOT_APPLICABLE)
                pending.append((patch, variant, result))
                results.append(result)
            else:
                self._run_batch(pending)
                pending = []
                results.append(self._classify_patch(patch, variant))
        self._run_batch(pending)
        if memo is not None:
            by_name = {result.name: result for result in results}
            for key, names in to_remember:
                memo.put(key, {name: by_name[name] for name in names})
        for result, patch in zip(results, patch_set.patches, strict=True):
            if (variant := self.selected[patch.name]) is not None:
                result.variant = str(variant.path.relative_to(patch_set.root))
        held = _hold_back_dependents(patch_set, self.selected, results)
        if held and self.trees:
            assert start is not None
            self._rebuild(start, results)
        final = index.write_tree() if self.trees else None
        return Classification(
            index.repo, results, start, final, index if self.trees else None,
            batched=self.batched if self.trees else {},
        )  # fmt: skip

    def _shared_files(self, record_paths: set[str]) -> set[str]:
        """Paths more than one selected variant (or a record) touches."""
        seen: set[str] = set(record_paths)
        shared: set[str] = set(record_paths)
        for variant in self.selected.values():
            for path in variant.files if variant else ():
                (shared if path in seen else seen).add(path)
        return shared

    def _batchable(self, patch: Patch, variant: PatchFile, shared: set[str]) -> bool:
        """Whether PATCH may go into a batch: it is simply tried (no record, not judged by
        its header or conditions), its diff can be concatenated, and, when a writer needs
        each patch's diff, no other patch touches its files."""
        if not self.batch or patch.name in self.judging.recorded or not variant.diff:
            return False
        if self.judging.upstream_has(variant) is not None:
            return False
        diff = variant.diff
        if not diff.endswith(b"\n") or not _SECTION_RE.search(diff):
            return False
        return not (self.trees and shared.intersection(variant.files))

    # -- batches

    def _run_batch(self, items: list[_Item]) -> None:
        """Apply ITEMS in order, as few `git apply` runs as the answers allow."""
        if not items:
            return
        if len(items) == 1:
            self._try(*items[0])
            return
        saved = self.index.save()
        proc = self.index.apply(b"".join(variant.diff for _, variant, _ in items))
        if proc.returncode == 0:
            sections = _section_offsets(proc.stderr)
            counts = [len(_SECTION_RE.findall(variant.diff)) for _, variant, _ in items]
            if len(sections) == sum(counts):
                for (patch, variant, result), count in zip(items, counts, strict=True):
                    result.offsets = [o for found in sections[:count] for o in found]
                    sections = sections[count:]
                    result.outcome = oc.APPLIED_OFFSET if result.offsets else oc.APPLIED
                    self.batched[patch.name] = variant.files
                return
            self.index.restore(saved)  # git read the stream otherwise: one by one
            for item in items:
                self._try(*item)
            return
        failed = set(failed_files(proc.stderr))
        suspects = {i for i, (_, v, _) in enumerate(items) if failed.intersection(v.files)}
        if not suspects:  # git named nothing we know (a corrupt patch): halve
            half = len(items) // 2
            self._run_batch(items[:half])
            self._run_batch(items[half:])
            return
        # Patches linked by shared files form groups; groups share no file, so their order
        # changes none of them. The groups with no failed file go as one batch. A failed
        # patch alone in its group is judged from what git said about its files (the same
        # as about it alone), together with the others like it; a group of several is split
        # at its first failed patch, which is tried alone, in order.
        groups = _item_groups(items)
        bad = [g for g in groups if suspects.intersection(g)]
        self._run_batch([items[i] for g in groups if g not in bad for i in g])
        self._judge_failed([items[g[0]] for g in bad if len(g) == 1], stderr_blocks(proc.stderr))
        for group in (g for g in bad if len(g) > 1):
            first = next(n for n, i in enumerate(group) if i in suspects)
            self._run_batch([items[i] for i in group[:first]])
            self._try(*items[group[first]])
            self._run_batch([items[i] for i in group[first + 1 :]])

    def _has_it(self, variant: PatchFile) -> Callable[[], str]:
        from_upstream = self.judging.from_upstream

        def has_it() -> str:
            if from_upstream is not None and not from_upstream(variant):
                return oc.ALREADY_APPLIED
            return oc.UPSTREAM_HAS_IT

        return has_it

    def _merge_has_it(self, variant: PatchFile) -> Callable[[], str]:
        """The outcome when a clean 3-way merge of VARIANT would write its change a second
        time. On the work tree the content must be upstream's: the files as the upstream
        commit holds them (a reverse check of that commit fails, as it did here)."""
        upstream = self.judging.upstream_ref

        def has_it() -> str:
            if self.judging.from_upstream is None:
                return oc.UPSTREAM_HAS_IT
            if upstream is not None and self.index.same_as(upstream, variant.files):
                return oc.UPSTREAM_HAS_IT
            return oc.ALREADY_APPLIED

        return has_it

    def _judge_failed(self, items: list[_Item], blocks: dict[str, list[str]]) -> None:
        """ITEMS (no two share a file) failed in a batch; BLOCKS is what git said per file."""
        known: list[tuple[_Item, bytes]] = []
        for item in items:
            _, variant, _ = item
            sections = [path for path, _, _ in split_hunks(variant.diff)]
            if not sections or any(path not in blocks for path in sections):
                self._try(*item)  # git's words cannot be told apart: alone, as one by one
                continue
            said = "\n".join(line for path in sections for line in blocks[path]) + "\n"
            known.append((item, said.encode()))
        if not known:
            return
        reverse: dict[int, bool] = {}
        if len(known) > 1:
            reverse = self._reverse_checks([variant for (_, variant, _), _ in known])
        left = [i for i in range(len(known)) if reverse.get(i) is False]
        merged: dict[int, bool] = {}
        refused: dict[int, Refusal] = {}
        contents: dict[str, bytes] | None = None
        if len(left) > 1:
            pairs = [(known[i][0][1].diff, failed_files(known[i][1])) for i in left]
            mergeable = self.blobs.mergeable(pairs)
            merged = {i: False for i, can in zip(left, mergeable, strict=True) if not can}
            tried = [i for i in left if i not in merged]
            if len(tried) > 1:
                found, refused_here, contents = self._three_way([known[i] for i in tried])
                merged.update({tried[k]: m for k, m in found.items()})
                refused = {tried[k]: why for k, why in refused_here.items()}
        conflicting = [i for i in left if merged.get(i) is False]
        if len(conflicting) > 1 or contents is not None:
            paths = [
                path
                for i in conflicting
                for path in failed_files(known[i][1])
                if path in known[i][0][1].files and path not in (contents or {})
            ]
            contents = {**(contents or {}), **(self.index.read_files(paths) if paths else {})}
        for i, ((patch, variant, result), said) in enumerate(known):
            has_it = self._has_it(variant)
            judge_failed(
                self.index, variant, result, has_it, said, reverse.get(i), merged.get(i),
                contents, refused.get(i), self.blobs, self._merge_has_it(variant),
            )  # fmt: skip
            self._describe(patch, variant, result)

    def _three_way(
        self, items: list[tuple[_Item, bytes]]
    ) -> tuple[dict[int, bool], dict[int, Refusal], dict[str, bytes] | None]:
        """Whether each of ITEMS (no two share a file; none applies, none is there already)
        merges in 3-way, from one `git apply --3way` of them all and one of those that
        merged cleanly; the index then holds those merges. A clean merge that would write a
        change upstream has is dropped (`merge_guard`): its refusal is returned. {} when that
        does not settle it (the caller asks alone). Also the index's content of the items'
        files before any merge, for the conflicts."""
        paths = sorted({path for (_, v, _), _ in items for path in v.files})
        before = self.index.read_files(paths)
        saved = self.index.save()
        diffs = [variant.diff for (_, variant, _), _ in items]
        proc = self.index.apply(b"".join(diffs), "--3way")
        if proc.returncode == 0:
            merged, refused = self._guard(items, list(range(len(items))), before, saved)
            return merged, refused, before
        said = _lines(proc.stderr)
        self.index.restore(saved)
        conflicted = {m[1] for line in said if (m := _CONFLICTED_RE.match(line))}
        if (
            proc.returncode == _GIT_FATAL
            or not conflicted
            or any(line.startswith(("error:", "fatal:")) for line in said)
        ):
            return {}, {}, before
        clean = [
            i for i, ((_, v, _), _) in enumerate(items) if not conflicted.intersection(v.files)
        ]
        if clean and self.index.apply(b"".join(diffs[i] for i in clean), "--3way").returncode:
            self.index.restore(saved)
            return {}, {}, before
        merged, refused = self._guard(items, clean, before, saved)
        return {i: merged.get(i, False) for i in range(len(items))}, refused, before

    def _guard(
        self,
        items: list[tuple[_Item, bytes]],
        merged: list[int],
        before: dict[str, bytes],
        saved: tuple[bytes | None, str | None],
    ) -> tuple[dict[int, bool], dict[int, Refusal]]:
        """The merges of MERGED (in the index now) that may stand; the index then holds only
        those (from SAVED, the index before any of them)."""
        sections = {
            i: [(path, hunks) for path, _, hunks in split_hunks(items[i][0][1].diff)]
            for i in merged
        }
        after = self.index.read_files(sorted({p for found in sections.values() for p, _ in found}))
        refused = {
            i: why for i in merged if (why := judge_merge(sections[i], before, after)) is not None
        }
        if refused:
            self.index.restore(saved)
            kept = [i for i in merged if i not in refused]
            if kept:
                again = self.index.apply(b"".join(items[i][0][1].diff for i in kept), "--3way")
                if again.returncode != 0:  # not settled: each is asked alone
                    self.index.restore(saved)
                    return {}, {}
        return {i: i not in refused for i in merged}, refused

    def _reverse_checks(self, variants: list[PatchFile]) -> dict[int, bool]:
        """Whether each of VARIANTS (no two share a file) would reverse-apply, as far as two
        `git apply --check --reverse` runs tell: all of them, then those git did not name.
        Where that does not settle it, the index is left out (the caller asks alone)."""
        proc = self.index.apply(b"".join(v.diff for v in variants), "--check", "--reverse")
        if proc.returncode == 0:
            return dict.fromkeys(range(len(variants)), True)
        named = set(failed_files(proc.stderr))
        if proc.returncode == _GIT_FATAL or not named:
            return {}
        failed = {i for i, v in enumerate(variants) if named.intersection(v.files)}
        rest = [i for i in range(len(variants)) if i not in failed]
        answers = dict.fromkeys(failed, False)
        if not rest:
            return answers
        if len(rest) == 1:
            return answers  # one left: asking it alone costs the same
        again = self.index.apply(b"".join(variants[i].diff for i in rest), "--check", "--reverse")
        if again.returncode == 0:
            answers.update(dict.fromkeys(rest, True))
        return answers

    def _try(self, patch: Patch, variant: PatchFile, result: PatchResult) -> None:
        """Try VARIANT alone on the index (forward, reverse, 3-way), as one by one does."""
        has_it, merge_has_it = self._has_it(variant), self._merge_has_it(variant)
        classify_one(self.index, variant, result, has_it, self.blobs, merge_has_it)
        self._describe(patch, variant, result)

    def _describe(self, patch: Patch, variant: PatchFile, result: PatchResult) -> None:
        if result.outcome == oc.UPSTREAM_HAS_IT and not result.detail:
            result.detail = "its changes are already upstream: the patch can be retired"
        elif result.outcome == oc.ALREADY_APPLIED:
            result.detail = "present in the work tree but not recorded by patchkeeper"
        if result.outcome in oc.WRITES:  # its diff is its part of the combined diff
            self.batched[patch.name] = variant.files

    # -- one patch, with records and headers

    def _classify_patch(self, patch: Patch, variant: PatchFile | None) -> PatchResult:
        index, judging = self.index, self.judging
        result = PatchResult(patch.name, oc.NOT_APPLICABLE)
        before = index.write_tree() if self.trees else None
        saved = index.save()
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
        if variant.invalid is not None:  # unreadable or unsafe: never given to git
            result.outcome = oc.INVALID
            result.detail = variant.invalid
        elif variant.empty:  # quilt applies it as empty: nothing to write, nothing missing
            result.outcome = oc.ALREADY_APPLIED
            result.detail = EMPTY_PATCH
        elif (why := judging.upstream_has(variant)) is not None:
            result.outcome = oc.UPSTREAM_HAS_IT
            result.detail = why
        else:
            self._try(patch, variant, result)
            self.batched.pop(patch.name, None)  # its diff comes from its trees, below
        if result.outcome in oc.FAILED and record is not None:
            index.restore(saved)  # keep the version written earlier rather than nothing
            result.notes.append("the version applied earlier stays in place")
        if self.trees:
            after = index.write_tree()
            if after != before:
                assert before is not None
                result.trees = (before, after)
        return result

    def _rebuild(self, start: str, results: list[PatchResult]) -> None:
        """After a hold-back: the index again from START, with only the patches that still go
        ahead, so the combined result never holds half of a chain. Patches applied in a batch
        share no file with any other: their part comes back as one diff."""
        index = self.index
        own = sorted({path for name, files in self.batched.items() for path in files})
        theirs = index.diff(start, index.write_tree(), own) if own else b""
        index.read_tree(start)
        for result in results:
            if result.trees is None:
                continue
            if index.apply(index.diff(*result.trees)).returncode != 0:
                raise GitError(f"internal: {result.name} no longer applies after a hold-back")
        if theirs and index.apply(theirs).returncode != 0:
            raise GitError("internal: the batched patches no longer apply after a hold-back")


def _item_groups(items: list[_Item]) -> list[list[int]]:
    """Indexes of ITEMS in groups linked by shared files, each in order, groups in the order
    of their first item."""
    groups = _groups([(patch, variant) for patch, variant, _ in items])
    position = {id(item[0]): i for i, item in enumerate(items)}
    return [[position[id(patch)] for patch, _ in group] for group in groups]


def _section_offsets(stderr: bytes) -> list[list[HunkOffset]]:
    """Per `Checking patch` line of `git apply -v` (one per file section, in order), the
    offsets git reported for it."""
    sections: list[list[HunkOffset]] = []
    current = ""
    for line in _lines(stderr):
        if match := _CHECKING_RE.match(line):
            current = match.group(1)
            sections.append([])
        elif (match := _OFFSET_RE.match(line)) and int(match.group(3)) != 0 and sections:
            sections[-1].append(HunkOffset(current, int(match[1]), int(match[2]), int(match[3])))
    return sections


def _upstream_has_any(patch: Patch, judging: _Judging) -> str | None:
    """Why upstream has PATCH whatever its variants' ranges say, or None."""
    for variant in patch.variants:
        if (why := judging.upstream_has(variant)) is not None:
            return why
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


_ON_ITS_OWN = {
    oc.APPLIED: "applies",
    oc.APPLIED_OFFSET: "applies at an offset",
    oc.MERGED_3WAY: "merges in 3-way",
}


def _hold_back_dependents(
    patch_set: PatchSet,
    selected: dict[str, PatchFile | None],
    results: list[PatchResult],
) -> bool:
    """A patch sharing a file with an earlier failed one is not written either (its outcome
    becomes `conflict`). Returns whether any was held back: the caller then rebuilds the
    scratch index without them.

    A failed patch leaves the index as it was, so a held-back patch was tried without it:
    where no earlier patch wrote its files, its outcome is how it fares on its own, and the
    detail says so (a person then knows that only the dependency keeps it out)."""
    failed_files: dict[str, str] = {}
    written_by: dict[str, set[str]] = {}  # file -> earlier patches that wrote it
    held: set[str] = set()
    for patch, result in zip(patch_set.patches, results, strict=True):
        files = set(selected[patch.name].files) if selected[patch.name] else set()
        if result.outcome in oc.FAILED:
            failed_files.update(dict.fromkeys(files, patch.name))
            continue
        shared = sorted(files & failed_files.keys())
        if shared and result.outcome in oc.WRITES:
            blocker = failed_files[shared[0]]
            before = set().union(*(written_by.get(path, set()) for path in files))
            how = _ON_ITS_OWN[result.outcome]
            if not before:
                alone = f"; {how} on its own"
            elif before & held:
                alone = ""  # tried on top of another held-back patch: nothing to say
            else:
                alone = f"; {how} without it, on the patches before it"
            result.outcome = oc.CONFLICT
            why = "is held back too" if blocker in held else "failed"
            result.detail = f"held back: shares {shared[0]} with {blocker}, which {why}{alone}"
            result.trees = None
            failed_files.update(dict.fromkeys(files, patch.name))
            held.add(patch.name)
        if result.outcome in oc.WRITES or patch.name in held:
            for path in files:
                written_by.setdefault(path, set()).add(patch.name)
    return bool(held)


def present_in_ref(repo: Path, ref: str, variant: PatchFile) -> bool:
    """Whether REF's committed content already holds every change of VARIANT."""
    with scratch_index(repo, private_objects=True) as index:
        index.load_ref(ref, variant.files)
        return index.apply(variant.diff, "--check", "--reverse").returncode == 0


def upstream_has_content(repo: Path, ref: str, variants: Iterable[PatchFile]) -> dict[Path, str]:
    """Which VARIANTS' `Upstream-Has:` conditions all hold in REF's committed blobs.

    Maps each such variant's path to the conditions, for the report. Every blob is read by
    one `git cat-file --batch` (no checkout, no process per condition), and none at all when
    no variant has conditions. A missing file, or a folder, holds no text.
    """
    return upstream_has_contents(repo, [ref], variants)[ref]


def upstream_has_contents(
    repo: Path, refs: Sequence[str], variants: Iterable[PatchFile]
) -> dict[str, dict[Path, str]]:
    """`upstream_has_content` for each of REFS, still with one git process."""
    judged = [variant for variant in variants if variant.upstream_has]
    paths = sorted({c.path for variant in judged for c in variant.upstream_has})
    blobs = read_blobs(repo, [(ref, path) for ref in refs for path in paths]) if paths else {}
    return {
        ref: {
            variant.path: variant.upstream_has_reason
            for variant in judged
            if all(c.found_in(blobs.get((ref, c.path), b"")) for c in variant.upstream_has)
        }
        for ref in refs
    }


def read_blobs(repo: Path, wanted: Sequence[tuple[str, str]]) -> dict[tuple[str, str], bytes]:
    """The blob at each (REF, PATH) of WANTED (pairs that are no blob are left out), read by
    one `git cat-file --batch` process."""
    if not wanted:
        return {}
    query = "".join(f"{ref}:{path}\n" for ref, path in wanted).encode()
    output = git.run(["cat-file", "--batch"], repo, stdin=query).stdout
    blobs: dict[tuple[str, str], bytes] = {}
    position = 0
    for pair in wanted:
        end = output.index(b"\n", position)
        header = _BATCH_HEADER_RE.match(output[position:end])
        position = end + 1
        if header is None:
            continue  # no such file in REF
        size = int(header[2])
        if header[1] == b"blob":
            blobs[pair] = output[position : position + size]
        position += size + 1  # the content, then a newline
    return blobs
