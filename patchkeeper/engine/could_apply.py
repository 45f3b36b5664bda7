"""Questions git need not be asked: a reverse check or a fuzz check that cannot succeed.

A conflict used to cost a `git apply --check --reverse` (is it there already?) and a
`git apply --check -C1` (would quilt's fuzz apply it?) whatever the target held. Both need
every hunk's lines to stand together somewhere in the file: the reverse check all the lines
the patch leaves (context and added), exactly; the fuzz check at least the lines from its
first change to its last (git cuts only leading and trailing context). When the file the
caller has read already holds no such run, git's answer is known: no. Else git is asked, so
an answer is never guessed.

The test is looser than git in every way, so it never says no where git says yes: lines are
compared with all their blanks taken out (whatever `apply.whitespace` or
`apply.ignoreWhitespace` a user's config sets), trailing blank lines of a hunk are dropped
(git's whitespace fix lets them run past the end of the file), and anything this reader does
not follow (a rename, a mode change, binary data, a line of no known kind, a file the caller
did not read) is left to git.
"""

from __future__ import annotations

import functools

from patchkeeper.engine.diffs import split_hunks

_NOT_PLAIN = (
    b"rename ", b"copy ", b"similarity", b"dissimilarity", b"old mode", b"new mode",
    b"deleted file mode", b"GIT binary patch", b"Binary files",
)  # fmt: skip
_BLANKS = b" \t\r\n\v\f"
_BLANKS_IN_LINE = b" \t\r\v\f"  # a file keeps its line breaks


def plain_section(header: bytes) -> bool:
    """Whether a file section's HEADER changes a regular file's content and nothing else (a
    file it creates counts; a deletion, rename, copy, mode change, symlink or binary does
    not)."""
    lines = header.split(b"\n")
    return not any(line.startswith(_NOT_PLAIN) or line.endswith(b" 120000") for line in lines)


def _squeezed(line: bytes) -> bytes:
    return line.translate(None, _BLANKS)


@functools.lru_cache(maxsize=256)
def _sides(hunk: bytes) -> list[tuple[bytes, bytes]] | None:
    """(kind, line without blanks) per body line of HUNK: kind b" ", b"-" or b"+"; None for a
    line of no known kind. Once per hunk (its reverse and its fuzz are both asked): the
    answer is shared, read only."""
    lines = hunk.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    body: list[tuple[bytes, bytes]] = []
    for line in lines[1:]:
        kind = line[:1]
        if kind == b"\\":
            continue  # "\ No newline at end of file"
        if kind == b"":  # an empty context line (newer GNU diff writes it so)
            body.append((b" ", b""))
        elif kind in (b" ", b"-", b"+"):
            body.append((kind, _squeezed(line[1:])))
        else:
            return None
    return body


def _stands(run: list[bytes], text: bytes) -> bool:
    """Whether RUN (lines without blanks) stands as consecutive lines of TEXT (a file without
    blanks, "\n" before and after). An empty run says nothing: True."""
    while run and run[-1] == b"":
        run = run[:-1]
    return not run or b"\n" + b"\n".join(run) + b"\n" in text


def _could(diff: bytes, contents: dict[str, bytes], pattern) -> bool:
    for path, header, hunks in split_hunks(diff):
        content = contents.get(path)
        if content is None or not plain_section(header):
            return True  # not read, or not a plain change: git decides
        text = b"\n" + content.translate(None, _BLANKS_IN_LINE) + b"\n"
        for hunk in hunks:
            body = _sides(hunk)
            if body is None:
                return True
            if not _stands(pattern(body), text):
                return False
    return True


def _left(body: list[tuple[bytes, bytes]]) -> list[bytes]:
    """The lines a hunk leaves: what its reverse must find."""
    return [text for kind, text in body if kind != b"-"]


def _changed_core(body: list[tuple[bytes, bytes]]) -> list[bytes]:
    """The lines a hunk needs with its leading and trailing context cut off."""
    changes = [n for n, (kind, _) in enumerate(body) if kind != b" "]
    if not changes:
        return []
    return [text for kind, text in body[changes[0] : changes[-1] + 1] if kind != b"+"]


def reverse_could_apply(diff: bytes, contents: dict[str, bytes]) -> bool:
    """False when `git apply --check --reverse` of DIFF certainly fails on files whose content
    is CONTENTS (path -> bytes, every file of DIFF the target holds); True: ask git."""
    return _could(diff, contents, _left)


def fuzz_could_apply(diff: bytes, contents: dict[str, bytes]) -> bool:
    """False when `git apply --check -C1` of DIFF certainly fails on CONTENTS; True: ask git."""
    return _could(diff, contents, _changed_core)
