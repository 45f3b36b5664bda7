"""Hermes update receipts, read from real files as the sandbox's `hermes update` writes them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from patchkeeper.receipts import (
    RECEIPTS_DIR,
    install_receipts,
    read_receipts,
    receipt_dirs,
)

REPO = Path(__file__).resolve().parents[1]
UPDATE_CMD = REPO / "patchkeeper" / "demo" / "upstream" / "hermes_cli" / "update_cmd.py"
SHA = "0123456789abcdef0123456789abcdef01234567"


def receipt(started: str, outcome: str = "success", stash: str | None = None) -> dict:
    steps = []
    if stash is not None:
        ok = not stash.startswith("parked")
        steps.append({"name": "local_changes_stash", "ok": ok, "detail": stash})
    return {
        "schema": 1,
        "update_id": "f" * 32,
        "started_at": started,
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
    assert "f\"update_{stamp.replace('-', '_')}_{receipt['update_id'][:8]}.json\"" in source
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
        " 'outcome': 'success', 'steps': [step]}, '20261001-120000')"
    )
    env = {"HERMES_HOME": str(home), "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-c", code, str(UPDATE_CMD.parents[1])], env=env, check=True)
    monkeypatch.setenv("HERMES_HOME", str(home))
    assert receipt_dirs(tmp_path / "elsewhere" / "hermes-agent")[0] == (
        home.resolve() / RECEIPTS_DIR
    )
    receipts = install_receipts(tmp_path / "elsewhere" / "hermes-agent")
    [found] = receipts.found
    assert found.path.name == "update_20261001_120000_cccccccc.json"
    assert found.parked and found.stash_sha == SHA
