"""`patchkeeper fleet report DIR`: the reports a rollout brought back, one row per host.

Every host the play named has a folder in DIR (see `patchkeeper.fleet`); its row comes from
the JSON documents there. A document is read by its keys with defaults, never by its text, so
an error document (which may carry only `exit_code` and `error`) still makes a row. A host
whose folder has no report, or a report that is not a whole JSON document, is its own row
("no report") and counts as needing a person: a host nobody can vouch for is never green.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patchkeeper.model import exitcodes
from patchkeeper.model.errors import UserError

UPDATE_REPORT = "update.json"
SMOKE_REPORT = "smoke.json"
NO_REPORT = "no report"
_FAILED = ("conflict", "invalid")
KEPT = "kept"  # what a leftover an update did not settle is called in the table


@dataclass
class HostRow:
    """One host of a rollout, as its report (or the lack of one) tells."""

    host: str
    exit_code: int | None = None  # None: no report
    problem: str = ""  # why there is no report ("never ran", "torn: ...")
    command: str = ""  # which command's document this is (update, fleet ready, ...)
    version_before: str | None = None
    version_after: str | None = None
    version_before_from: str | None = None  # which version source answered, and what it read
    version_after_from: str | None = None
    patches: dict[str, str] = field(default_factory=dict)  # name -> outcome
    patches_on: str | None = None  # the preview ref, when the outcomes are the preview's
    smoke: str = ""
    leftovers: list[dict[str, Any]] = field(default_factory=list)  # not settled by the update
    attention: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def reported(self) -> bool:
        return self.exit_code is not None

    def fleet_code(self) -> int:
        """This host's part in the fleet's exit code: 3 and 4 as they are, the rest 5."""
        if self.exit_code in (exitcodes.OK, exitcodes.PATCH_FAILED, exitcodes.SMOKE_FAILED):
            return self.exit_code
        return exitcodes.ATTENTION


@dataclass
class Fleet:
    """Every host's row of a rollout, read from the reports in FOLDER."""

    folder: Path
    rows: list[HostRow]

    def patch_names(self) -> list[str]:
        names: list[str] = []
        for row in self.rows:
            names += [name for name in row.patches if name not in names]
        return names

    def counts(self) -> dict[str, int]:
        counts = {"hosts": len(self.rows), "no_report": sum(not r.reported for r in self.rows)}
        for row in self.rows:
            if row.reported:
                key = f"exit_{row.exit_code}"
                counts[key] = counts.get(key, 0) + 1
        return counts

    def exit_code(self) -> int:
        return exitcodes.worst(*(row.fleet_code() for row in self.rows))


# ---------------------------------------------------------------- reading


def _load(path: Path) -> tuple[dict[str, Any] | None, str]:
    """The document at PATH, or None and why not (missing, torn, not a patchkeeper report)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None, "never ran, or its report was not brought back"
    except OSError as exc:
        return None, f"{path.name}: cannot read: {exc.strerror or exc}"
    try:
        document = json.loads(text)
    except ValueError as exc:
        return None, f"{path.name} is torn ({exc.msg} at line {exc.lineno})"
    if not isinstance(document, dict) or type(document.get("exit_code")) is not int:
        return None, f"{path.name} is torn (no exit_code: not a patchkeeper report)"
    return document, ""


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _smoke_verdict(document: dict[str, Any]) -> str:
    """`smoke --json`'s checks as one word: the worst verdict, `none` when none ran."""
    checks = document.get("checks") if isinstance(document.get("checks"), list) else []
    verdicts = [c.get("verdict") for c in checks if isinstance(c, dict)]
    for word in ("error", "fail"):
        if word in verdicts:
            return word
    return "pass" if verdicts else "none"


def _preview_only(document: dict[str, Any]) -> str | None:
    """The preview's ref when the update stopped there: its outcomes are then the preview's
    (against that ref), and the install still has what it had."""
    preview = document.get("preview")
    if not isinstance(preview, dict) or not isinstance(preview.get("ref"), str):
        return None
    phases = document.get("phases") if isinstance(document.get("phases"), list) else []
    applied = any(
        isinstance(p, dict) and p.get("name") == "apply" and p.get("status") == "done"
        for p in phases
    )
    return None if applied else preview["ref"]


def read_host(folder: Path) -> HostRow:
    row = HostRow(folder.name)
    document, problem = _load(folder / UPDATE_REPORT)
    if document is None:
        row.problem = problem
        return row
    row.exit_code = document["exit_code"]
    row.command = _text(document.get("command"))
    row.error = _text(document.get("error"))
    install = document.get("install") if isinstance(document.get("install"), dict) else {}
    row.version_before = _text(install.get("version_before")) or None
    row.version_after = _text(install.get("version_after")) or None
    row.version_before_from = _text(install.get("version_before_from")) or None
    row.version_after_from = _text(install.get("version_after_from")) or None
    patches = document.get("patches") if isinstance(document.get("patches"), list) else []
    row.patches = {
        p["name"]: _text(p.get("outcome")) or "?"
        for p in patches
        if isinstance(p, dict) and isinstance(p.get("name"), str)
    }
    row.patches_on = _preview_only(document)
    smoke = document.get("smoke") if isinstance(document.get("smoke"), dict) else {}
    row.smoke = _text(smoke.get("status"))
    leftovers = document.get("leftovers") if isinstance(document.get("leftovers"), list) else []
    row.leftovers = [
        item for item in leftovers if isinstance(item, dict) and item.get("action") != "dropped"
    ]
    attention = document.get("attention") if isinstance(document.get("attention"), list) else []
    row.attention = [item for item in attention if isinstance(item, str)]
    _add_smoke_report(row, folder / SMOKE_REPORT)
    return row


def _add_smoke_report(row: HostRow, path: Path) -> None:
    """The play's smoke run after the update: its verdict, and its exit code when worse."""
    if not path.exists():
        return
    document, problem = _load(path)
    if document is None:
        row.smoke = "no report"
        row.attention.append(f"smoke after the update: {problem}")
        row.exit_code = exitcodes.worst(row.exit_code or 0, exitcodes.ATTENTION)
        return
    row.smoke = _smoke_verdict(document)
    if document["exit_code"] != exitcodes.OK:
        row.exit_code = exitcodes.worst(row.exit_code or 0, document["exit_code"])
        row.attention.append(f"smoke after the update: exit {document['exit_code']}")


def read_fleet(folder: Path) -> Fleet:
    if not folder.is_dir():
        raise UserError(f"{folder}: no such folder (the playbook's patchkeeper_reports_dir)")
    hosts = sorted(child for child in folder.iterdir() if child.is_dir())
    if not hosts:
        raise UserError(
            f"{folder}: no host folders; run the rollout playbook with "
            f"-e patchkeeper_reports_dir={folder}"
        )
    return Fleet(folder, [read_host(host) for host in hosts])


# ---------------------------------------------------------------- rendering


def _version(row: HostRow) -> str:
    before, after = row.version_before or "?", row.version_after or "?"
    return before if before == after else f"{before} -> {after}"


def _leftovers(row: HostRow) -> str:
    return f"{len(row.leftovers)} {KEPT}" if row.leftovers else "none"


def render_fleet(fleet: Fleet) -> list[str]:
    names = fleet.patch_names()
    header = ["host", "version", *names, "smoke", "leftovers", "exit"]
    table = []
    for row in fleet.rows:
        if not row.reported:
            table.append([row.host, f"{NO_REPORT}: {row.problem}"])
            continue
        mark = " (preview)" if row.patches_on else ""
        cells = [row.patches[name] + mark if name in row.patches else "-" for name in names]
        smoke = row.smoke or "-"
        table.append([row.host, _version(row), *cells, smoke, _leftovers(row), str(row.exit_code)])
    widths = [
        max([len(header[i])] + [len(cells[i]) for cells in table if len(cells) == len(header)])
        for i in range(len(header))
    ]

    def line(cells: list[str]) -> str:
        if len(cells) < len(header):  # a "no report" row runs on from its host
            return f"{cells[0]:<{widths[0]}}  {cells[1]}"
        return "  ".join(f"{c:<{w}}" for c, w in zip(cells, widths, strict=True)).rstrip()

    lines = [line(header), *(line(cells) for cells in table)]
    details = [row for row in fleet.rows if row.reported and row.exit_code != exitcodes.OK]
    for row in details:
        what = f"{row.host}: exit {row.exit_code}" + (f" ({row.command})" if row.command else "")
        lines.append("")
        lines.append(what)
        if row.error:
            lines.append(f"  error: {row.error}")
        if row.patches_on:
            lines.append(
                f"  stopped at the preview: the outcomes are against {row.patches_on}, "
                "and the install was not touched"
            )
        failed = [name for name, outcome in row.patches.items() if outcome in _FAILED]
        if failed:
            lines.append(f"  does not apply: {', '.join(failed)}")
        lines += [f"  needs you: {item}" for item in row.attention]
        for item in row.leftovers:
            label = _text(item.get("label")) or _text(item.get("id"))
            command = _text(item.get("command"))
            lines.append(f"  leftover {label}" + (f"; restore: {command}" if command else ""))
    counts = fleet.counts()
    parts = [f"{counts['hosts']} hosts"]
    exits = sorted((key, value) for key, value in counts.items() if key.startswith("exit_"))
    parts += [f"exit {key[5:]}: {value}" for key, value in exits]
    if counts["no_report"]:
        parts.append(f"{NO_REPORT}: {counts['no_report']}")
    lines += ["", "fleet: " + ", ".join(parts) + f" (exit {fleet.exit_code()})"]
    return lines


def fleet_json(fleet: Fleet) -> dict[str, Any]:
    return {
        "reports_dir": str(fleet.folder),
        "counts": fleet.counts(),
        "hosts": [
            {
                "host": row.host,
                "report": row.reported,
                "problem": row.problem or None,
                "command": row.command or None,
                "exit_code": row.exit_code,
                "version_before": row.version_before,
                "version_after": row.version_after,
                "version_before_from": row.version_before_from,
                "version_after_from": row.version_after_from,
                "patches": [{"name": n, "outcome": o} for n, o in row.patches.items()],
                "patches_on": row.patches_on,
                "smoke": row.smoke or None,
                "leftovers": row.leftovers,
                "attention": row.attention,
                "error": row.error or None,
            }
            for row in fleet.rows
        ],
        "patches": [
            {"name": name, "outcome": outcome, "host": row.host}
            for row in fleet.rows
            for name, outcome in row.patches.items()
        ],
    }
