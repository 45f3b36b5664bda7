"""Which file a plain diff's `--- NAME` / `+++ NAME` pair patches, as `git apply` reads it.

A plain diff (quilt, `diff -u`, gendiff) names the file twice, and the two names need not
agree: `--- x.c.orig` / `+++ x.c`, `--- f.c` / `+++ f.c.new`. Neither git nor GNU patch
renames anything there: both patch one file. The rules, git's (apply.c) unless noted:

- The name ends at a tab; without a tab, a timestamp after spaces is not part of it
  (`2024-01-01 12:00:00.000000000 +0000`, and the `Mon Jan  1 12:00:00 2024` form, which GNU
  patch reads and git does not: we read it).
- One leading folder is dropped (-p1), except that git drops none (-p0) once a pair names no
  folder at all (`--- f.c` / `+++ f.c.new`; GNU patch -p1 cannot find that file: we follow
  git). Doubled slashes count as one (`foo-orig//src/x.c` is `src/x.c`, as GNU patch reads
  it; git would take `/src/x.c`, an absolute path it then cannot find).
- One name for both sides: the old one when it is a proper prefix of the new one
  (`f.c` / `f.c.new`), else the new one (`x.c.orig` / `x.c`). GNU patch takes the one that
  exists instead; they differ only when the two names are unrelated and the old one exists
  (git patches the new name there, and so do we).
- `/dev/null`, or a timestamp at the epoch (`1970-01-01 00:00:00`, in any zone), on one side
  makes the file new (old side) or deleted (new side).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from patchkeeper.patchset.diffpaths import unquote

DEV_NULL = "/dev/null"
_ISO = r"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.\d+)?(?: ?([+-]\d{4}))?"
_CTIME = r"[A-Z][a-z]{2} ([A-Z][a-z]{2}) +(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4})"
_ISO_RE = re.compile(rf"^{_ISO}$")
_CTIME_RE = re.compile(rf"^{_CTIME}$")
_TRAILING_STAMP_RE = re.compile(rf"\s+(?P<stamp>{_ISO}|{_CTIME})\s*$")


@dataclass(frozen=True)
class NameLine:
    """A `---` or `+++` line's name (unquoted, nothing dropped yet) and its timestamp."""

    name: str
    stamp: str


def name_line(line: str) -> NameLine:
    """The name and timestamp of a `--- ...` / `+++ ...` line (its first 4 characters cut)."""
    rest = line[4:].rstrip("\r\n")
    if "\t" in rest:
        name, stamp = rest.split("\t", 1)
        return NameLine(unquote(name.strip()), stamp.strip())
    if found := _TRAILING_STAMP_RE.search(rest):
        return NameLine(unquote(rest[: found.start()].strip()), found["stamp"])
    return NameLine(unquote(rest.strip()), "")


def at_epoch(stamp: str) -> bool:
    """Whether STAMP is the epoch, 1970-01-01 00:00:00 UTC, written in any zone."""
    if found := _ISO_RE.match(stamp):
        from datetime import UTC, datetime  # a plain diff's stamp: git's diffs carry none

        year, month, day, hour, minute, second, zone = found.groups()
        try:
            when = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second))
        except ValueError:  # a date no calendar has (month 13): not the epoch, as git reads it
            return False
        sign, zone = (-1 if zone and zone[0] == "-" else 1), zone or "+0000"
        shift = sign * (int(zone[1:3]) * 3600 + int(zone[3:5]) * 60)
        return when.replace(tzinfo=UTC).timestamp() - shift == 0
    if found := _CTIME_RE.match(stamp):
        month, day, hour, minute, second, year = found.groups()
        return (month, int(day), hour, minute, second, year) == (
            "Jan", 1, "00", "00", "00", "1970",
        )  # fmt: skip
    return False


def has_folder(name: str) -> bool:
    """Whether NAME has a slash to drop (git guesses -p0 for a pair where neither has)."""
    return name != DEV_NULL and "/" in name


def strip_names(name: str, strip: int) -> str | None:
    """NAME with STRIP leading folders dropped (doubled slashes count as one); None when it
    has fewer folders than that."""
    if name == DEV_NULL:
        return DEV_NULL
    parts = re.sub(r"/{2,}", "/", name).split("/")
    if len(parts) <= strip or not parts[-1]:
        return None
    return "/".join(parts[strip:])


def one_name(old: str, new: str) -> str:
    """The one file an edit of OLD into NEW patches (both stripped): git's rule."""
    return old if len(old) < len(new) and new.startswith(old) else new
