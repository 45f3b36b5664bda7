"""The update's report agrees with the other reports (issue 19, item 3): the leftovers it
leaves are the ones `patchkeeper leftovers` lists, a smoke phase that did not run is not
"not configured", and the progress names every phase, run or skipped."""

from __future__ import annotations

import re

import pytest

from patchkeeper.demo.sandbox import Sandbox
from patchkeeper.install.records.update_journal import PHASES
from tests.test_update import applied, pk, pk_json, quiet, with_conflicting_edit


@pytest.fixture
def box(sandbox: Sandbox) -> Sandbox:
    return quiet(sandbox)


def test_the_leftovers_an_update_leaves_are_in_its_own_report(box: Sandbox) -> None:
    with_conflicting_edit(box)
    code, doc = pk_json(box, "update")
    assert code == 5, doc["attention"]
    listed = pk_json(box, "leftovers")[1]["leftovers"]
    assert listed, "the conflicting edit stays set aside"
    reported = {item["id"]: item for item in doc["leftovers"]}
    for item in listed:
        assert item["id"] in reported
        assert (reported[item["id"]]["kind"], reported[item["id"]]["action"]) == (
            item["kind"],
            "kept",
        )


def test_a_preview_that_stops_says_smoke_did_not_run(sandbox: Sandbox) -> None:
    box = quiet(sandbox, smoke=True)  # smoke checks are configured
    applied(box)
    box.publish("v2026.11.9")
    box.fetch_tags()
    code, doc = pk_json(box, "update", "--preview", "v2026.11.9")
    assert code == 3 and doc["upstream"] is None
    assert doc["smoke"]["status"] == "not-run"
    assert doc["smoke"]["detail"] == "stopped after preview"
    text = pk(box, "update", "--preview", "v2026.11.9")
    assert "smoke: not run (stopped after preview)" in text.stdout
    assert "not configured" not in text.stdout


def test_progress_names_every_phase_in_order_skipped_ones_too(box: Sandbox) -> None:
    applied(box)
    box.publish("v2026.10.1")
    proc = pk(box, "update")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    steps = [int(n) for n in re.findall(r"^patchkeeper: \[(\d+)/10\]", proc.stderr, re.M)]
    assert steps == list(range(1, len(PHASES) + 1))
    assert "[2/10] preview: skipped (no --preview REF)" in proc.stderr
