"""A command's result as Prometheus text, for node_exporter's textfile collector.

The seeds' costliest failure was "everything looks normal": jobs vanished while every panel
stayed green. So the figures are read from the command's own JSON document (the keys
docs/schemas/ describe), never worked out a second way: a dashboard and `--json` cannot
disagree. Every sample carries the command that wrote it, so one file per command (or per
host, for the fleet) sits side by side in the collector's folder without a clash. Each family
lists every value of its label that the command can produce, zeros included, so a series
never vanishes when its count drops to nothing (an alert on `> 0` would then go quiet).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patchkeeper.model import exitcodes
from patchkeeper.model import outcomes as oc

if TYPE_CHECKING:  # loaded by write_metrics, only when a state folder is given
    from patchkeeper.install.records.last_update import LastUpdate

PREFIX = "patchkeeper_"
OUTCOMES = (*oc.WRITES, *oc.NOTHING_TO_DO, *oc.FAILED, oc.DRIFTED, oc.EXPIRED, oc.PENDING)
FIX_STATES = ("in_place", "missing", "unproven", "not_applicable")
VERDICTS = ("pass", "fail", "error")
AUDIT_KINDS = ("never_started", "green_but_failing", "stuck", "delivered_but_booked_lost")

# name -> (type, help); the order the families are written in.
FAMILIES: dict[str, tuple[str, str]] = {
    "run_exit_code": ("gauge", "Exit code of the command's last run (0: all fixes in place "
                      "and proven)."),
    "run_ok": ("gauge", "1 when the command's last run exited 0, else 0."),
    "run_timestamp_seconds": ("gauge", "When the command last ran, in Unix seconds."),
    "patches": ("gauge", "Patches of the set by outcome, as the last run judged them."),
    "fixes": ("gauge", "Fixes by state: in_place, missing (conflict, invalid, pending, "
              "undecided, ...), unproven (written, no passing smoke check), not_applicable."),
    "smoke_checks": ("gauge", "Smoke checks the last run ran, by verdict."),
    "leftovers": ("gauge", "Leftovers of updates (parked stashes, autostash files, unmerged "
                  "paths) the last run saw."),
    "update_ok": ("gauge", "1 when the last update happened and ended with exit 0, else 0."),
    "update_timestamp_seconds": ("gauge", "When the last update started, in Unix seconds."),
    "update_exit_code": ("gauge", "Exit code of the last update."),
    "doctor_findings": ("gauge", "Doctor's questions by answer (ok or fail)."),
    "audit_anomalies": ("gauge", "Cron-ledger anomalies the audit found, by kind."),
    "check_patches": ("gauge", "Patches by outcome against each ref the check judged."),
    "fleet_host_exit_code": ("gauge", "Exit code each host's report ended with (-1: no report)."),
}


@dataclass(frozen=True)
class Sample:
    """One line of the exposition: a family's name (without the prefix), labels, a value."""

    family: str
    labels: tuple[tuple[str, str], ...]
    value: float


def _samples(family: str, base: Mapping[str, str], by: str, counts: Mapping[str, int],
             values: Iterable[str]) -> list[Sample]:
    """One sample per value of label BY: every value in VALUES (zeros too), then any other
    value COUNTS names (an outcome word a newer patchkeeper added, say)."""
    names = list(dict.fromkeys([*values, *sorted(counts)]))
    return [Sample(family, (*base.items(), (by, name)), counts.get(name, 0)) for name in names]


# The sentences status and apply say of a fix in place that nothing proves (proof/smoke/
# proven.py, commands/apply.py): "NAME is in place but not proven ...", "NAME is in place,
# but no smoke check proves it ...".
_NOT_PROVEN = re.compile(r"(?P<name>\S+) is in place,? but (?:not proven|no smoke check)")


def fix_state(patch: Mapping[str, Any], proven: bool, unproven: Container[str] = ()) -> str:
    """Where one judged patch leaves its fix. PROVEN: the run's smoke checks passed (or it
    had none to run); UNPROVEN: the names the run's notes say nothing proves."""
    outcome = patch.get("outcome")
    if patch.get("undecided") or outcome in (*oc.FAILED, oc.PENDING, oc.EXPIRED, oc.DRIFTED):
        return "missing"
    if outcome == oc.NOT_APPLICABLE:
        return "not_applicable"
    if (outcome in oc.WRITES and not proven) or patch.get("name") in unproven:
        return "unproven"
    if outcome in (*oc.WRITES, *oc.NOTHING_TO_DO):
        return "in_place"
    return "missing"  # an outcome word this version does not know is never a fix in place


def _patch_samples(base: Mapping[str, str], document: Mapping[str, Any]) -> list[Sample]:
    if "patches" not in document:  # this command judged no patch (smoke, say): no zeros
        return []
    patches = [p for p in document.get("patches") or [] if isinstance(p, Mapping)]
    smoke = document.get("smoke")
    proven = not isinstance(smoke, Mapping) or smoke.get("status") in ("pass", "not-configured")
    notes = [str(note) for note in document.get("notes") or []]
    unproven = {m["name"] for note in notes if (m := _NOT_PROVEN.match(note))}
    outcomes = Counter(str(p.get("outcome")) for p in patches)
    states = Counter(fix_state(p, proven, unproven) for p in patches)
    return [
        *_samples("patches", base, "outcome", outcomes, OUTCOMES),
        *_samples("fixes", base, "state", states, FIX_STATES),
    ]


def _smoke_samples(base: Mapping[str, str], document: Mapping[str, Any]) -> list[Sample]:
    smoke = document.get("smoke")
    checks = smoke.get("checks") if isinstance(smoke, Mapping) else document.get("checks")
    if not isinstance(checks, list):
        return []
    verdicts = Counter(str(c.get("verdict")) for c in checks if isinstance(c, Mapping))
    return _samples("smoke_checks", base, "verdict", verdicts, VERDICTS)


def _leftover_count(command: str, document: Mapping[str, Any]) -> int | None:
    """Leftovers the run saw: update's own list, or status' and apply's `leftover` notes;
    None where the document says nothing of them (a run that stopped on an error)."""
    if "leftovers" in document:
        return len(document["leftovers"] or [])
    if command in ("status", "apply") and "notes" in document:
        return sum(1 for note in document["notes"] or [] if str(note).startswith("leftover "))
    return None


def _update_samples(base: Mapping[str, str], last: LastUpdate | None) -> list[Sample]:
    if last is None:
        return []
    samples = [Sample("update_ok", tuple(base.items()), int(last.happened and last.exit_code == 0))]
    if last.exit_code is not None:
        samples.append(Sample("update_exit_code", tuple(base.items()), last.exit_code))
    if last.started is not None:
        samples.append(Sample("update_timestamp_seconds", tuple(base.items()), last.started))
    return samples


def _doctor_samples(base: Mapping[str, str], document: Mapping[str, Any]) -> list[Sample]:
    findings = [f for f in document.get("findings") or [] if isinstance(f, Mapping)]
    answers = Counter("ok" if f.get("ok") else "fail" for f in findings)
    return _samples("doctor_findings", base, "answer", answers, ("ok", "fail"))


def _audit_samples(base: Mapping[str, str], document: Mapping[str, Any]) -> list[Sample]:
    kinds = Counter({kind: len(document.get(kind) or []) for kind in AUDIT_KINDS})
    kinds["ownership_lost"] = int(document.get("ownership_lost") or 0)
    return _samples("audit_anomalies", base, "kind", kinds, (*AUDIT_KINDS, "ownership_lost"))


def _check_samples(base: Mapping[str, str], targets: Iterable[Mapping[str, Any]]) -> list[Sample]:
    samples: list[Sample] = []
    counted: dict[int, Counter[str]] = {}  # refs that share their results share the list
    for target in targets:
        patches = target.get("patches") or ()
        if id(patches) not in counted:  # TARGETS holds the lists: no id is reused meanwhile
            counted[id(patches)] = Counter(str(p.get("outcome")) for p in patches)
        outcomes = counted[id(patches)]
        ref = {**base, "ref": str(target.get("ref")), "version": str(target.get("version") or "")}
        samples += _samples("check_patches", ref, "outcome", outcomes, OUTCOMES)
    return samples


def _fleet_samples(base: Mapping[str, str], document: Mapping[str, Any]) -> list[Sample]:
    samples: list[Sample] = []
    for host in document.get("hosts") or []:
        labels = {**base, "host": str(host.get("host"))}
        code = host.get("exit_code")
        samples.append(
            Sample("fleet_host_exit_code", tuple(labels.items()), -1 if code is None else code)
        )
        judged: dict[str, Any] = {"patches": host.get("patches") or []}
        if host.get("smoke"):  # the host's smoke verdict proves its written fixes, or not
            judged["smoke"] = {"status": host["smoke"]}
        samples += _patch_samples(labels, judged)
    return samples


def samples_of(
    command: str,
    exit_code: int,
    document: Mapping[str, Any],
    *,
    now: float,
    last_update: LastUpdate | None = None,
) -> list[Sample]:
    """Every sample COMMAND's run gives, read from its JSON DOCUMENT (the fields emit_json
    writes besides schema, command and exit_code)."""
    base = {"command": command}
    install = document.get("install")
    where = install.get("path") if isinstance(install, Mapping) else install
    if where:
        base["install"] = str(where)
    elif document.get("home"):
        base["home"] = str(document["home"])
    elif document.get("reports_dir"):
        base["reports_dir"] = str(document["reports_dir"])
    labels = tuple(base.items())
    samples = [
        Sample("run_exit_code", labels, exit_code),
        Sample("run_ok", labels, int(exit_code == exitcodes.OK)),
        Sample("run_timestamp_seconds", labels, now),
    ]
    if command == "check":
        return samples + _check_samples(base, document.get("targets") or [])
    if command == "fleet report":
        return samples + _fleet_samples(base, document)
    if command == "audit":
        return samples + _audit_samples(base, document)
    samples += _patch_samples(base, document) + _smoke_samples(base, document)
    if (leftovers := _leftover_count(command, document)) is not None:
        samples.append(Sample("leftovers", labels, leftovers))
    if command == "doctor":
        samples += _doctor_samples(base, document)
    return samples + _update_samples(base, last_update)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def exposition(samples: Iterable[Sample]) -> str:
    """SAMPLES in the text exposition format 0.0.4: families in FAMILIES' order, each with
    its HELP and TYPE once, its samples together, no sample written twice."""
    by_family: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for sample in samples:
        by_family.setdefault(sample.family, {})[sample.labels] = sample.value
    lines: list[str] = []
    for family, (kind, help_text) in FAMILIES.items():
        if family not in by_family:
            continue
        lines += [f"# HELP {PREFIX}{family} {help_text}", f"# TYPE {PREFIX}{family} {kind}"]
        for labels, value in by_family[family].items():
            inner = ",".join(f'{key}="{_escape(text)}"' for key, text in labels)
            lines.append(f"{PREFIX}{family}{{{inner}}} {_number(value)}")
    return "\n".join(lines) + "\n"


def write_metrics(
    path: Path,
    command: str,
    exit_code: int,
    document: Mapping[str, Any],
    *,
    state_dir: Path | None = None,
) -> None:
    """The run's metrics to PATH, atomically: the collector reads the old file or the new one
    (its temp name does not end in .prom, which the textfile collector skips). STATE_DIR: the
    install's state folder, whose last finished update is reported too."""
    from patchkeeper.install.records.last_update import last_update
    from patchkeeper.install.system.durable import atomic_write

    last = last_update(state_dir) if state_dir is not None else None
    if last is not None and last.unreadable:
        last = None  # no figure is better than a wrong one
    samples = samples_of(command, exit_code, document, now=time.time(), last_update=last)
    try:
        atomic_write(path, exposition(samples).encode())
    except BaseException:
        _NOT_WRITTEN.add(path)
        raise


_NOT_WRITTEN: set[Path] = set()


def failed_before(path: Path) -> bool:
    """Whether this process tried to write PATH and failed: the error said so already, and
    a run that stops on it does not try (and say) it a second time."""
    return path in _NOT_WRITTEN


def metrics_path(argv: list[str]) -> Path | None:
    """The FILE of `--metrics FILE` (or `--metrics=FILE`) in ARGV before any `--`."""
    options = argv[: argv.index("--")] if "--" in argv else argv
    for number, arg in enumerate(options):
        if arg == "--metrics" and number + 1 < len(options):
            return Path(options[number + 1])
        if arg.startswith("--metrics="):
            return Path(arg.removeprefix("--metrics="))
    return None


def write_failure_metrics(argv: list[str], command: str, code: int) -> None:
    """A run that stopped on an error still tells the dashboard so: its exit CODE in the
    metrics file ARGV names, never the last good run's figures left standing. A failure to
    write it is said after the error being told (which stays the one that counts)."""
    path = metrics_path(argv)
    if path is None or not path.name or not path.parent.is_dir():
        return  # not a file the option takes: the usage error said so
    if path.exists() and not path.is_file():
        return  # a folder, a device, a FIFO: the usage error said so
    if failed_before(path):
        return
    try:
        write_metrics(path, command, code, {})
    except Exception as exc:
        import click

        click.echo(f"patchkeeper: {path}: metrics not written ({exc})", err=True)
