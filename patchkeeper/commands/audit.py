"""`patchkeeper audit`: reconcile a Hermes cron ledger with its jobs, read-only."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import click

from patchkeeper.commands.common import metrics_option, write_metrics
from patchkeeper.proof.audit.reconcile import DEFAULT_DAYS, audit, resolve_home
from patchkeeper.report.audit import render_text, to_dict
from patchkeeper.report.render import emit_json

_DURATION_PART = re.compile(r"(\d+)([smhd])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class Duration(click.ParamType):
    """`45s`, `90m`, `2h`, `1d`, or a sum such as `1h30m`."""

    name = "duration"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> timedelta:
        if isinstance(value, timedelta):  # click may pass an already converted value
            return value
        text = str(value).strip().lower()
        parts = _DURATION_PART.findall(text)
        seconds = sum(int(amount) * _UNIT_SECONDS[unit] for amount, unit in parts)
        if "".join(a + u for a, u in parts) != text or seconds <= 0:
            self.fail(f"{value!r} is not a duration like 45s, 90m, 2h or 1h30m", param, ctx)
        return timedelta(seconds=seconds)


@click.command(name="audit")
@click.option(
    "--home",
    type=click.Path(path_type=Path, file_okay=False),
    envvar="HERMES_HOME",
    default=Path("~/.hermes"),
    show_default="$HERMES_HOME or ~/.hermes",
    help="The Hermes home whose cron ledger and jobs are audited.",
)
@click.option("--profile", default=None, help="Audit the profile <home>/profiles/NAME instead.")
@click.option(
    "--stuck-after",
    type=Duration(),
    default="2h",
    show_default=True,
    help="A claimed/running execution older than this is reported as stuck.",
)
@click.option(
    "--days",
    type=click.IntRange(1, 366),
    default=DEFAULT_DAYS,
    show_default=True,
    help="How many days the per-day table shows.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
@metrics_option
def command(
    home: Path,
    profile: str | None,
    stuck_after: timedelta,
    days: int,
    as_json: bool,
    metrics_path: Path | None,
) -> int:
    """Check the cron ledger for jobs that silently did not run.

    Reads HOME/cron/executions.db and HOME/cron/deliveries.db (read-only) and
    HOME/cron/jobs.json and reports executions that never started (separating "database is
    locked" losses from designed refusals), jobs the dashboard shows green while their latest
    execution failed, claims stuck in claimed/running, counts per day, and executions booked
    failed as a lost fire claim ("fire claim ownership lost", or the "Interrupted by shutdown"
    text it books when the claim was still the run's own) whose delivery succeeded. Never writes
    anything.

    Exit 0 when everything was checked and nothing is wrong; 5 when something needs attention
    or could not be checked (a locked or missing ledger is never "clean"); 2 on bad input.

    \b
    Example:
      patchkeeper audit --profile work --stuck-after 90m --days 7
    """
    result = audit(
        resolve_home(home, profile), stuck_after=stuck_after, days=days
    )
    document = to_dict(result)
    for key in ("schema", "command", "exit_code"):
        document.pop(key)
    if metrics_path is not None:
        write_metrics(metrics_path, "audit", result.exit_code, document)
    if as_json:
        emit_json("audit", result.exit_code, **document, patches=[])  # audit judges no patch
    else:
        click.echo(render_text(result), nl=False)
    return result.exit_code
