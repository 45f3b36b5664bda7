"""Hermes update receipts, read from real files as the sandbox's `hermes update` writes them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from datetime import datetime
from pathlib import Path

import pytest
from helpers import make_repo

from patchkeeper.install.checkout.install import open_install
from patchkeeper.install.records import update_journal as jr
from patchkeeper.leftovers.receipts import (
    LATEST,
    RECEIPTS_DIR,
    install_receipts,
    read_receipts,
    receipt_dirs,
)
from patchkeeper.proof.doctor.last_update import last_update_finding

REPO = Path(__file__).resolve().parents[1]
UPDATE_CMD = REPO / "patchkeeper" / "demo" / "upstream" / "hermes_cli" / "update_cmd.py"
SHA = "0123456789abcdef0123456789abcdef01234567"


def receipt(
    started: str | None,
    outcome: str = "success",
    stash: str | None = None,
    update_id: str | None = None,
    finished: str | None = None,
) -> dict:
    steps = []
    if stash is not None:
        ok = not stash.startswith("parked")
        steps.append({"name": "local_changes_stash", "ok": ok, "detail": stash})
    return {
        "schema": 1,
        "update_id": update_id or uuid.uuid4().hex,
        "started_at": started,
        "finished_at": finished,
        "outcome": outcome,
        "exit_code": 0,
        "steps": steps,
    }


def write(folder: Path, name: str, content: dict | bytes, *, bom: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = content if isinstance(content, bytes) else json.dumps(content, indent=2).encode()
    path = folder / name
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data)
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path / "home" / RECEIPTS_DIR


def test_the_shape_the_writer_uses_is_what_we_read() -> None:
    """The sandbox's writer names files and steps the way this reader expects."""
    source = UPDATE_CMD.read_text()
    assert 'STASH_STEP = "local_changes_stash"' in source
    assert 'stamp = time.strftime("%Y%m%d_%H%M%S")  # local time' in source
    assert "f\"update_{stamp}_{os.getpid()}_{receipt['update_id']}.json\"" in source
    assert 'folder / "latest.json"' in source
    assert '"logs" / "update_receipts"' in source
    assert 'text = f"{outcome}: {sha}" + (f" ({detail})" if detail else "")' in source


def test_parked_receipt_names_its_stash(folder: Path) -> None:
    write(
        folder,
        "update_20261001_120000_aaaaaaaa.json",
        receipt("2026-10-01T12:00:00+00:00", stash=f"parked: {SHA} (restore hit conflicts)"),
    )
    [found] = read_receipts([folder]).found
    assert found.parked and found.stash_outcome == "parked"
    assert found.stash_sha == SHA
    assert found.names_commit(SHA) and not found.names_commit("f" * 40)


def test_a_bom_is_read_like_any_other_receipt(folder: Path) -> None:
    write(
        folder,
        "update_20261001_120000_aaaaaaaa.json",
        receipt("2026-10-01T12:00:00+00:00", stash=f"parked: {SHA}"),
        bom=True,
    )
    receipts = read_receipts([folder])
    assert receipts.skipped == []
    assert [r.parked for r in receipts.found] == [True]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b'{"schema": 1, "steps": [{"name": "local_ch', "not JSON"),
        (b"", "not JSON"),
        (b"[1, 2]", "not a receipt"),
        (b"\xff\xfe{}", "not UTF-8"),
    ],
    ids=["torn", "empty", "list", "binary"],
)
def test_an_unreadable_receipt_is_skipped_with_a_note(
    folder: Path, content: bytes, reason: str
) -> None:
    good = write(
        folder,
        "update_20261001_120000_aaaaaaaa.json",
        receipt("2026-10-01T12:00:00+00:00", stash=f"restored: {SHA}"),
    )
    torn = write(folder, "update_20261002_120000_bbbbbbbb.json", content)
    receipts = read_receipts([folder])
    assert [r.path for r in receipts.found] == [good]
    [skipped] = receipts.skipped
    assert skipped.path == torn and reason in skipped.reason
    assert str(torn) in skipped.note
    assert receipts.skipped_after(receipts.newest) == [skipped]


def test_newest_is_by_instant_not_by_text(folder: Path) -> None:
    # 09:00-05:00 is 14:00Z: later than 13:00+00:00 though it sorts first as text.
    write(folder, "update_20261001_140000_aaaaaaaa.json", receipt("2026-10-01T09:00:00-05:00"))
    write(
        folder,
        "update_20261001_130000_bbbbbbbb.json",
        receipt("2026-10-01T13:00:00+00:00", outcome="failed"),
    )
    newest = read_receipts([folder]).newest
    assert newest is not None and newest.path.name.endswith("aaaaaaaa.json")


def test_only_update_receipts_are_read(folder: Path) -> None:
    write(folder, "notes.json", b"{not json")
    write(folder, "update_20261001_120000_aaaaaaaa.json", receipt("2026-10-01T12:00:00+00:00"))
    receipts = read_receipts([folder])
    assert len(receipts.found) == 1 and receipts.skipped == []


def test_odd_fields_do_not_break_the_reader(folder: Path) -> None:
    odd = {"started_at": 12, "steps": [None, {"name": "local_changes_stash", "detail": 5}]}
    write(folder, "update_20261001_120000_aaaaaaaa.json", odd)
    [found] = read_receipts([folder]).found
    assert found.stash_outcome == "?" and found.stash_sha is None and not found.parked
    assert found.when.year == 2026  # from the file name


def test_receipts_written_by_the_sandbox_hermes_are_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real writer (`_write_receipt`) in a child process, HERMES_HOME pointing at tmp."""
    home = tmp_path / "hermes"
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from hermes_cli.update_cmd import _write_receipt, _stash_step;"
        f"step = _stash_step('parked', '{SHA}', 'restore hit conflicts');"
        "_write_receipt({'update_id': 'c' * 32, 'started_at': '2026-10-01T12:00:00+00:00',"
        " 'outcome': 'success', 'steps': [step]})"
    )
    env = {"HERMES_HOME": str(home), "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-c", code, str(UPDATE_CMD.parents[1])], env=env, check=True)
    monkeypatch.setenv("HERMES_HOME", str(home))
    assert receipt_dirs(tmp_path / "elsewhere" / "hermes-agent")[0] == (
        home.resolve() / RECEIPTS_DIR
    )
    names = sorted(path.name for path in (home / RECEIPTS_DIR).iterdir())
    assert len(names) == 2 and names[0] == LATEST
    assert re.fullmatch(r"update_\d{8}_\d{6}_\d+_c{32}\.json", names[1])
    receipts = install_receipts(tmp_path / "elsewhere" / "hermes-agent")
    [found] = receipts.found  # latest.json is the same update: counted once
    assert found.path.name == names[1]
    assert found.parked and found.stash_sha == SHA


# ---------------------------------------------------------------- names, latest.json, profiles


NEW_NAME = "update_20261001_120000_4242_" + "a" * 32 + ".json"


def test_new_and_old_names_are_both_read(folder: Path) -> None:
    write(folder, NEW_NAME, receipt("2026-10-01T12:00:00+00:00", update_id="a" * 32))
    write(folder, "update_20260901_120000_bbbbbbbb.json", receipt("2026-09-01T12:00:00+00:00"))
    receipts = read_receipts([folder])
    assert [r.path.name for r in receipts.found] == [
        "update_20260901_120000_bbbbbbbb.json",
        NEW_NAME,
    ]


def test_latest_json_is_not_a_second_update(folder: Path) -> None:
    parked = receipt("2026-10-01T12:00:00+00:00", stash=f"parked: {SHA}", update_id="a" * 32)
    write(folder, NEW_NAME, parked)
    write(folder, LATEST, parked)
    receipts = read_receipts([folder])
    assert [r.path.name for r in receipts.found] == [NEW_NAME]
    assert len(receipts.parked()) == 1


def test_latest_json_counts_when_its_receipt_is_gone(folder: Path) -> None:
    write(folder, "update_20260901_120000_bbbbbbbb.json", receipt("2026-09-01T12:00:00+00:00"))
    write(folder, LATEST, receipt("2026-10-01T12:00:00+00:00", outcome="failed"))
    newest = read_receipts([folder]).newest
    assert newest is not None and newest.path.name == LATEST and newest.outcome == "failed"


def test_a_torn_latest_json_is_no_news_beside_stamped_receipts(folder: Path) -> None:
    write(folder, NEW_NAME, receipt("2026-10-01T12:00:00+00:00"))
    write(folder, LATEST, b'{"schema": 1, "ste')
    receipts = read_receipts([folder])
    assert len(receipts.found) == 1 and receipts.skipped == []
    (folder / NEW_NAME).unlink()
    [skipped] = read_receipts([folder]).skipped
    assert skipped.path.name == LATEST


def test_order_is_by_the_receipts_own_instants_not_their_names(folder: Path) -> None:
    """A name's stamp is local time; the instants inside decide, finished_at when alone."""
    write(folder, "update_20261005_000000_1_" + "b" * 32 + ".json",
          receipt("2026-10-01T10:00:00+00:00", outcome="failed"))  # fmt: skip
    write(folder, "update_20261001_000000_2_" + "c" * 32 + ".json",
          receipt(None, finished="2026-10-02T10:00:00+02:00"))  # fmt: skip
    newest = read_receipts([folder]).newest
    assert newest is not None and newest.outcome == "success"


def test_name_stamps_are_local_time_when_nothing_else_says(folder: Path) -> None:
    write(folder, NEW_NAME, {"schema": 1, "steps": []})
    [found] = read_receipts([folder]).found
    assert found.when == datetime(2026, 10, 1, 12, 0, 0).astimezone()


def test_profile_homes_have_receipts_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "hermes"
    monkeypatch.setenv("HERMES_HOME", str(home))
    write(home / RECEIPTS_DIR, NEW_NAME, receipt("2026-10-01T12:00:00+00:00"))
    profile = home / "profiles" / "work" / RECEIPTS_DIR
    parked = receipt("2026-10-02T12:00:00+00:00", stash=f"parked: {SHA} (kept on request)")
    write(profile, "update_20261002_120000_7_" + "d" * 32 + ".json", parked)
    install = tmp_path / "elsewhere" / "hermes-agent"
    assert profile.resolve() in receipt_dirs(install)
    newest = install_receipts(install).newest
    assert newest is not None and newest.parked and newest.profile == "work"
    assert install_receipts(install).found[0].profile is None


# ---------------------------------------------------------------- doctor's "last update"


def finished_run(install_path: Path, *, ended: float, exit_code: int = 0) -> None:
    """A finished patchkeeper update in the install's journal history, ended at ENDED."""
    state = open_install(install_path).state_dir
    run = jr.Journal(
        id="20261001T120000Z-1",
        pid=1,
        started_at="2026-10-01T12:00:00+00:00",
        old_head="0" * 40,
        old_version="0.21.3",
        stash_top=None,
        phase=10,
        upstream_exit=0,
        upstream_ok=True,
        extra={"exit_code": exit_code},
    )
    jr.save(state, run)
    jr.finish(state, run)
    os.utime(run.run_dir(state) / jr.JOURNAL_FILE, (ended, ended))


@pytest.fixture
def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "home"))
    return make_repo(tmp_path / "hermes-agent", {"app.py": "x = 1\n"})


def test_a_newer_parked_receipt_beats_patchkeepers_finished_run(
    install: Path, folder: Path
) -> None:
    """Issue 8 case 12: doctor said "last update ok" with a newer receipt saying parked."""
    ended = datetime.fromisoformat("2026-10-01T12:05:00+00:00").timestamp()
    finished_run(install, ended=ended)
    write(folder, NEW_NAME, receipt("2026-10-01T12:01:00+00:00", stash=f"parked: {SHA}"))
    finding = last_update_finding(open_install(install))
    assert finding.ok, "a receipt from inside the run: the run's journal judged it"
    assert finding.summary.endswith(": finished")
    write(
        folder,
        "update_20261008_120000_9_" + "e" * 32 + ".json",
        receipt("2026-10-08T12:00:00+00:00", stash=f"parked: {SHA} (restore hit conflicts)"),
    )
    finding = last_update_finding(open_install(install))
    assert not finding.ok
    assert finding.summary == (
        "hermes update at 2026-10-08T12:00:00+00:00: outcome success, local changes parked"
    )


def test_a_newer_parked_receipt_beats_an_older_good_one_whatever_the_names(
    install: Path, folder: Path
) -> None:
    write(
        folder,
        "update_20261009_120000_1_" + "a" * 32 + ".json",
        receipt("2026-10-01T12:00:00+00:00", stash=f"restored: {SHA}"),
    )
    write(
        folder,
        "update_20261002_120000_2_" + "b" * 32 + ".json",
        receipt("2026-10-02T12:00:00+00:00", stash=f"parked: {SHA} (kept on request)"),
    )
    write(
        folder,
        LATEST,
        receipt("2026-10-01T12:00:00+00:00", stash=f"restored: {SHA}", update_id="a" * 32),
    )
    finding = last_update_finding(open_install(install))
    assert not finding.ok and finding.summary.endswith("local changes parked")


def test_a_parked_receipt_in_a_profile_home_counts(install: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(home / RECEIPTS_DIR, NEW_NAME, receipt("2026-10-01T12:00:00+00:00"))
    write(
        home / "profiles" / "work" / RECEIPTS_DIR,
        NEW_NAME,
        receipt("2026-10-02T12:00:00+00:00", stash=f"parked: {SHA}"),
    )
    finding = last_update_finding(open_install(install))
    assert not finding.ok
    assert finding.summary.startswith("hermes update (profile work) at 2026-10-02")
