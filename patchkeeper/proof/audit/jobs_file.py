"""Reading the jobs file (cron/jobs.json) in every shape Hermes has written it.

Only read, never through upstream's loader (loading upstream's jobs may rewrite jobs.json).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from patchkeeper.proof.audit.records import Job, text_or_none

JOBS_PATH = Path("cron") / "jobs.json"


class JobsUnreadable(Exception):
    """The jobs file exists but cannot be used (torn, not JSON, not a jobs shape, unreadable).

    Hermes writes jobs.json, not the operator: the audit reports it as "could not check" and
    goes on with the checks that need only the ledger.
    """


def load_jobs(path: Path) -> tuple[dict[str, Job], list[str]] | None:
    """Jobs by id plus complaints about entries that cannot be reconciled; None if no file.

    Accepts the current `{"jobs": [...]}` object, an older bare list, or an id-keyed map, with or
    without a leading UTF-8 BOM. A file that cannot be read, is not JSON (a torn write) or is not
    one of those shapes raises JobsUnreadable naming the file.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise JobsUnreadable(f"{path}: cannot read jobs file ({exc.strerror or exc})") from exc
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise JobsUnreadable(f"{path}: jobs file is not UTF-8 text") from exc
    except json.JSONDecodeError as exc:
        raise JobsUnreadable(
            f"{path}: jobs file is not JSON ({exc.msg}, line {exc.lineno}; a torn write?)"
        ) from exc
    return _jobs_from_entries(_job_entries(path, data))


def _job_entries(path: Path, data: Any) -> list[tuple[str | None, Any]]:
    """(key, entry) pairs; the key is the id an id-keyed map gives its entries."""
    if isinstance(data, dict) and isinstance(data.get("jobs"), list):
        return [(None, entry) for entry in data["jobs"]]
    if isinstance(data, list):
        return [(None, entry) for entry in data]
    if isinstance(data, dict) and all(isinstance(entry, dict) for entry in data.values()):
        return [(str(key), entry) for key, entry in data.items()]
    raise JobsUnreadable(
        f'{path}: not a jobs file (expected {{"jobs": [...]}}, a list or an id map)'
    )


def _jobs_from_entries(entries: list[tuple[str | None, Any]]) -> tuple[dict[str, Job], list[str]]:
    jobs: dict[str, Job] = {}
    complaints: list[str] = []
    for number, (key, entry) in enumerate(entries, start=1):
        job_id = entry.get("id", key) if isinstance(entry, dict) else None
        if not isinstance(job_id, str | int) or isinstance(job_id, bool) or job_id == "":
            complaints.append(f"jobs.json entry #{number} has no id; it was not reconciled")
            continue
        jobs[str(job_id)] = Job(
            id=str(job_id),
            name=text_or_none(entry.get("name")),
            last_status=text_or_none(entry.get("last_status")),
            failure_streak=entry.get("failure_streak"),
        )
    return jobs, complaints
