"""Results -> text for people and JSON documents for machines. No logic about outcomes here."""

from __future__ import annotations

import copy
import functools
import os
import sys
from collections.abc import Iterator
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from patchkeeper.model import outcomes as oc
from patchkeeper.model.errors import one_line
from patchkeeper.model.outcomes import PatchResult

if TYPE_CHECKING:
    from patchkeeper.leftovers.find import Leftover
    from patchkeeper.leftovers.updater_refs import UpdaterBackup
    from patchkeeper.model.conflict_details import UpstreamTook

SCHEMA = "patchkeeper/1"

_COLOURS = {
    oc.APPLIED: "green",
    oc.APPLIED_OFFSET: "green",
    oc.MERGED_3WAY: "yellow",
    oc.ALREADY_APPLIED: "green",
    oc.UPSTREAM_HAS_IT: "cyan",
    oc.NOT_APPLICABLE: "bright_black",
    oc.CONFLICT: "red",
    oc.INVALID: "red",
    oc.DRIFTED: "yellow",
    oc.EXPIRED: "yellow",
    oc.PENDING: "yellow",
}


def colour_forced() -> bool:
    """FORCE_COLOR (force-color.org) or CLICOLOR_FORCE set, and not to 0: colour off a
    terminal too (a CI log that renders it)."""
    forcing = ("FORCE_COLOR", "CLICOLOR_FORCE")
    return any(os.environ.get(name, "") not in ("", "0") for name in forcing)


def use_colour() -> bool:
    """Never when NO_COLOR is set and non-empty (no-color.org); always when forced
    (`colour_forced`); else on a terminal only, and not a dumb one (as git does). A stdout
    closed from the start (None) is no terminal."""
    if os.environ.get("NO_COLOR"):
        return False
    if colour_forced():
        return True
    return sys.stdout is not None and sys.stdout.isatty() and os.environ.get("TERM") != "dumb"


# click.echo's own rule for escape sequences (`click._compat._ansi_re`)
_ANSI = r"\033\[[;?0-9]*[a-zA-Z]"


def echo(line: str) -> None:
    """LINE and a newline on stdout, as click.echo writes it under the CLI's colour setting
    (cli.py passes `color=use_colour() or None`): escape sequences are taken out when colour
    is off and stdout is no terminal. No click: a plain `check` prints through this."""
    if "\x1b" in line and not use_colour() and not sys.stdout.isatty():
        import re

        line = re.sub(_ANSI, "", line)
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def paint(text: str, colour: str | None) -> str:
    if not (colour and use_colour()):
        return text
    import click  # only for colour: a plain `check` runs without click (cli.py)

    return click.style(text, fg=colour)


def outcome_word(outcome: str) -> str:
    return paint(outcome, _COLOURS.get(outcome))


def smoke_line(status: str, detail: str, results: list[PatchResult]) -> str:
    """The smoke line, and what it does not prove: a fix that conflicts, is undecided or
    otherwise not in place had no check of its own pass, whatever the others' say."""
    line = f"smoke: {status.replace('-', ' ')}" + (f" ({detail})" if detail else "")
    unproven = [
        f"{r.name} ({'undecided' if r.undecided else r.outcome})"
        for r in results
        if r.outcome in oc.FAILED or r.needs_a_person
    ]
    return line + (f"; not proven: {', '.join(unproven)}" if unproven else "")


def record(value: Any) -> Any:
    """VALUE as `dataclasses.asdict` makes it (a dataclass a dict of its fields, lists and
    tuples item by item), the same JSON, without asdict's deep copy of every leaf: a
    conflict's expected lines cost a copy each, and the results' leaves are immutable."""
    kind = type(value)
    names = _field_names(kind)
    if names is not None:
        return {name: record(getattr(value, name)) for name in names}
    if kind is list or kind is tuple:
        if all(type(item) is str for item in value):
            return kind(value)
        return kind(record(item) for item in value)
    if kind is dict:
        return {record(key): record(item) for key, item in value.items()}
    return value


@functools.cache
def _field_names(kind: type) -> tuple[str, ...] | None:
    """The fields `asdict` reads of a dataclass KIND; None for any other type."""
    if not hasattr(kind, "__dataclass_fields__"):
        return None
    return tuple(f.name for f in fields(kind))


def patch_json(result: PatchResult) -> dict[str, Any]:
    return {
        "name": result.name,
        "outcome": result.outcome,
        "variant": result.variant,
        "in_place": result.in_place,
        "recorded": result.recorded,
        "undecided": result.undecided,
        "would": result.would,
        "detail": result.detail,
        "offsets": [record(o) for o in result.offsets],
        "merged_files": result.merged_files,
        "conflicts": [record(c) for c in result.conflicts],
        "upstream_took": upstream_took_json(result.upstream_took),
        "notes": result.notes,
        "variant_choice": None
        if result.variant_choice is None
        else {"by": "content", **record(result.variant_choice)},
    }


def upstream_took_json(measured: UpstreamTook | None) -> dict[str, Any] | None:
    """How much of a conflicting patch the target holds (engine/upstream_took.py), or None."""
    if measured is None:
        return None
    return {
        "appears": measured.appears,
        "qualifier": measured.qualifier(),
        "hunks_held": measured.held,
        "hunks": len(measured.hunks),
        "fuzz_applies": measured.fuzz_applies,
        "per_hunk": [{**record(h), "held": h.held} for h in measured.hunks],
    }


def upstream_took_lines(measured: UpstreamTook | None) -> list[str]:
    """The evidence under a conflict: what of it the target holds, per hunk, and the fuzz hint."""
    if measured is None:
        return []
    added_present, added, removed_gone, removed = measured.lines()
    said = measured.qualifier() or (
        f"upstream holds {measured.held} of {len(measured.hunks)} hunks"
    )
    lines = []
    if measured.appears or measured.held:
        lines.append(
            f"{said}: {added_present} of {added} added line(s) present, {removed_gone} of "
            f"{removed} removed line(s) gone"
        )
    if measured.appears:
        lines += [
            f"  {h.file}: hunk #{h.hunk} {'held' if h.held else 'not held'} "
            f"({h.added_present}/{h.added} added present, {h.removed_gone}/{h.removed} "
            "removed gone)"
            for h in measured.hunks
        ]
    if measured.fuzz_applies:
        lines.append(
            "hint: quilt's fuzz (GNU patch --fuzz=2) would apply it; patchkeeper never "
            "writes with fuzz: check the place before you port it"
        )
    return lines


def updater_backup_json(backup: UpdaterBackup) -> dict[str, Any]:
    return {
        "ref": backup.ref,
        "commit": backup.commit,
        "kind": backup.kind,
        "needs_a_person": backup.needs_a_person,
        "commands": [backup.inspect_command(), backup.keep_command(), backup.delete_command()]
        if backup.needs_a_person
        else [],
    }


def leftover_json(item: Leftover) -> dict[str, Any]:
    return {
        "id": item.id,
        "kind": item.kind,
        "label": item.label,
        "age": item.age(),
        "created": item.created,
        "files": item.files,
        "classification": item.classification,
        "patches": item.patches,
        "notes": item.notes,
    }


# Every document of a command has the same top-level keys, whatever happened: a run that
# stopped on an error carries each key too, empty, so automation that reads
# `install.head_before` or `patches` from whatever came back never meets a missing key. Such a
# document has one key more, `error` (why it stopped): its presence is the sign of an error
# (the fleet playbook tests `doc.error is defined`). Each command's keys beyond `schema`,
# `command` and `exit_code`, with the value an error document gets; `leftovers restore` and
# `leftovers drop` share the keys of `leftovers`.
_TREE_INSTALL = {
    "path": None, "version": None, "version_source": None, "version_from": None,
    "version_not_from": [], "head": None,
}  # fmt: skip
_UPDATE_INSTALL = {
    "path": None, "head_before": None, "head_after": None,
    "version_before": None, "version_before_from": None, "version_before_not_from": [],
    "version_after": None, "version_after_from": None, "version_after_not_from": [],
}  # fmt: skip
_TREE = {"install": _TREE_INSTALL, "patch_set": None, "patches": [], "notes": []}
_UPDATE = {
    "run": None, "finished": False, "update_done": False, "not_done": None,
    "rolled_back": False, "retry": None, "install": _UPDATE_INSTALL, "patch_set": None,
    "phases": [], "preview": None, "preview_fetch": None, "upstream": None, "leftovers": [],
    "patches": [], "restore": None, "smoke": None, "post": [], "attention": [], "notes": [],
}  # fmt: skip
_AUDIT = {
    "home": None, "ledger": None, "jobs_file": None, "now": None, "stuck_after_seconds": None,
    "days": None, "day_zone": None, "executions_read": 0, "jobs_read": 0, "checked": [],
    "unchecked": [], "anomalies": 0, "never_started": [], "green_but_failing": [], "stuck": [],
    "deliveries": None, "ownership_lost": 0, "delivered_but_booked_lost": [], "per_day": [],
    "patches": [],
}  # fmt: skip
_LEFTOVERS = {
    "leftovers": [], "updater_backups": [], "leftover": None, "clean": None, "written": [],
    "conflicts": [], "backup_ref": None, "undo": None, "patches": [],
}  # fmt: skip
_PORT = {
    "status": None, "onto": None, "commit": None, "version": None, "patch_set": None,
    "out": None, "patches": [], "conflict": None, "smoke": None, "next_step": None, "notes": [],
}  # fmt: skip
DOCUMENT_KEYS: dict[str, dict[str, Any]] = {
    "status": _TREE,
    "apply": {**_TREE, "smoke": None},
    "unapply": _TREE,
    "record": _TREE,
    "init": {"patch_set": None, "source": None, "files": [], "patches": []},
    "refresh": _TREE,
    "check": {"patch_set": None, "selection": None, "targets": [], "patches": []},
    "lint": {"patch_set": None, "problems": [], "patches": []},
    "smoke": {"install": None, "patch_set": None, "python": None, "checks": [], "patches": []},
    "doctor": {"install": None, "findings": [], "patches": []},
    "update": _UPDATE,
    "recover": {"direction": None, "meaning": None, "actions": [], **_UPDATE},
    "leftovers": _LEFTOVERS,
    "leftovers show": {**_LEFTOVERS, "diff": None},
    "audit": _AUDIT,
    "demo": {"sandbox": None, "steps": [], **_UPDATE},
    "fleet report": {"reports_dir": None, "counts": {}, "hosts": [], "patches": []},
    "fleet ready": {"install": None, "patch_set": None, "patches": []},
    "port": _PORT,
}


def emit_json(command: str, exit_code: int, **fields: Any) -> None:
    """One document on stdout: `schema`, `command`, `exit_code`, then the command's keys
    (DOCUMENT_KEYS), all present in every document; `error` too when the run stopped on one.

    A field given as an iterator (not a list) is a list written item by item as it comes, so
    a large document (`check` over many refs) is never held whole, as objects or as text; the
    bytes are those `json.dumps(document, indent=2)` gives (made by the C encoder:
    json_text.py; a value made once may stand in as `json_text.Encoded`)."""
    from patchkeeper.report.json_text import indented  # here: the text reports never need it

    document: dict[str, Any] = {"schema": SCHEMA, "command": command, "exit_code": exit_code}
    keys = DOCUMENT_KEYS.get(command, DOCUMENT_KEYS.get(command.split(" ")[0], {}))
    document.update(copy.deepcopy(keys))
    document.update(fields)
    out = _Chunks()
    for number, (key, value) in enumerate(document.items()):
        out.write(("{\n  " if number == 0 else ",\n  ") + indented(key) + ": ")
        if isinstance(value, Iterator):
            _write_items(out, value)
        else:
            out.write(indented(value, 1))
    out.write("\n}\n")
    out.flush()


def _write_items(out: _Chunks, items: Iterator[Any]) -> None:
    """A list at the document's second level, one item (or json_text.Items) at a time."""
    from patchkeeper.report.json_text import ITEM_LEVEL, ITEM_SEPARATOR, Items, indented

    separator = "[\n    "
    for item in items:
        text = item.text if isinstance(item, Items) else indented(item, ITEM_LEVEL)
        out.write(separator + text)
        separator = ITEM_SEPARATOR
    out.write("[]" if separator.startswith("[") else "\n  ]")


class _Chunks:
    """Text for stdout, passed on in pieces of about a megabyte."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._size = 0

    def write(self, text: str) -> None:
        self._parts.append(text)
        self._size += len(text)
        if self._size >= 1 << 20:
            self.flush()

    def flush(self) -> None:
        if self._parts:  # as click.echo writes it (JSON escapes every control character)
            sys.stdout.write("".join(self._parts))
            sys.stdout.flush()
        self._parts, self._size = [], 0


def patch_lines(
    result: PatchResult, *, width: int = 24, indent: str = "  ", colour: bool = True
) -> list[str]:
    """The lines that say how one patch stands: outcome, detail, offsets, failed hunks.

    Each is one line: control characters the patch or git brought in (a vertical tab in an
    expected line, an escape sequence in a file name) are escaped, never sent to the terminal.
    """
    word = outcome_word(result.outcome) if colour else result.outcome
    head = f"{indent}{one_line(result.name):<{width}} {word}"
    if result.detail:
        head += f"  ({one_line(result.detail)})"
    lines = [head]
    more = indent + "    "
    lines += [f"{more}{offset.file}: hunk #{offset.hunk} at line {offset.line}, "
              f"offset {offset.offset:+d}" for offset in result.offsets]  # fmt: skip
    if result.merged_files:
        lines.append(f"{more}3-way merged: {', '.join(result.merged_files)}")
    for conflict in result.conflicts:
        where = f"hunk #{conflict.hunk} ({conflict.header})" if conflict.hunk else "whole file"
        lines.append(f"{more}{conflict.file}: {where}: {conflict.reason}")
        for miss in conflict.mismatches:
            found = "the file ends" if miss.found is None else f"upstream has {miss.found!r}"
            lines.append(f"{more}  line {miss.line}: expected {miss.expected!r}, {found}")
        if conflict.expected and not conflict.mismatches:
            lines.append(f"{more}  expected upstream lines (none found nearby):")
            lines += [f"{more}  | {line}" for line in conflict.expected]
    lines += [f"{more}{line}" for line in upstream_took_lines(result.upstream_took)]
    lines += [f"{more}note: {note}" for note in result.notes]
    return [lines[0], *map(one_line, lines[1:])]
