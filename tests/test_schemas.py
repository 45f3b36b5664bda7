"""Every `--json` document of every command is valid against its JSON Schema under
docs/schemas/ (issue 19, item 4): the normal documents of a real run, the error documents of
each command, and the documents of `demo`, `audit` and the fleet. The schemas are the
published contract; jsonschema, a real consumer, reads them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests import ledgers
from tests.helpers import GIT_ID, diff_of, git, make_repo, patch_text, run_cli, write_patch_set

jsonschema = pytest.importorskip("jsonschema")
referencing = pytest.importorskip("referencing")

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "docs" / "schemas"
LINES = "".join(f"line {n}\n" for n in range(1, 21))
FIXED = LINES.replace("line 5\n", "line 5 fixed\n")
CHECK = 'import json\nprint(json.dumps({"check": "ok", "verdict": "pass", "steps": []}))\n'


def schema_file(command: str) -> Path:
    return SCHEMAS / f"{command.replace(' ', '-')}.schema.json"


def registry() -> Any:
    """Every schema under docs/schemas/, by its file name, so `$ref`s between them resolve."""
    resources = []
    for path in sorted(SCHEMAS.glob("*.schema.json")):
        contents = json.loads(path.read_text(encoding="utf-8"))
        resource = referencing.Resource.from_contents(contents)
        resources += [(path.name, resource), (contents["$id"], resource)]
    return referencing.Registry().with_resources(resources)


def validate(document: dict[str, Any]) -> None:
    schema = json.loads(schema_file(document["command"]).read_text(encoding="utf-8"))
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    validator = validator_class(schema, registry=registry())
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(
        f"{document['command']}: {'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in errors[:10]
    )


def run(*args: str | Path, cwd: Path | None = None) -> dict[str, Any]:
    proc = run_cli(*args, "--json", cwd=cwd)
    assert proc.stdout, (args, proc.stderr)
    document = json.loads(proc.stdout)
    assert document["exit_code"] == proc.returncode, (args, document)
    return document


def stash(repo: Path, name: str, text: str) -> None:
    (repo / name).write_text(text)
    git(repo, "stash", "push", "-q", "-m", "hermes-update-autostash-20261129-093032", name)


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """One run of every command with --json (and each command's error document). The demo,
    which mostly waits (its smoke check holds the ledger lock on purpose), runs meanwhile."""
    tmp = tmp_path_factory.mktemp("schemas")
    demo = subprocess.Popen(
        [sys.executable, "-m", "patchkeeper", "demo", "--dir", str(tmp / "demo"), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **GIT_ID, "NO_COLOR": "1"},
    )
    repo = make_repo(tmp / "up", {"app.py": LINES, "other.py": LINES}, tag="v1.0.0")
    patches = write_patch_set(
        tmp / "ps",
        {"fix.patch": patch_text(diff_of(repo, {"app.py": FIXED}), smoke="ok")},
        config='[install]\npython = "/usr/bin/env"\n[update]\ncommand = ["true"]\n',
    )
    (patches / "smoke").mkdir()
    (patches / "smoke" / "ok.py").write_text(CHECK)
    where = ["--install", repo, "--patches", patches]
    out: list[dict[str, Any]] = [
        run("status", *where),
        run("check", "--ref", "HEAD", "--ref", "v1.0.0", *where),
        run("lint", "--patches", patches),
        run("port", "--onto", "v1.0.0", *where),
        run("smoke", *where),
        run("doctor", *where),
        run("apply", *where),
        run("status", *where),
    ]
    (repo / "other.py").write_text(FIXED)
    out.append(run("record", "mine", "--path", "other.py", "-m", "Mine", *where))
    (repo / "other.py").write_text(FIXED.replace("line 6\n", "line 6 too\n"))
    out.append(run("refresh", "mine", *where))
    out.append(run("unapply", "mine", *where))
    git(repo, "checkout", "-q", "--", "other.py")
    stash(repo, "other.py", LINES + "kept\n")
    listed = run("leftovers", *where)
    out.append(listed)
    first = listed["leftovers"][0]["id"]
    out.append(run("leftovers", "show", first, *where))
    out.append(run("leftovers", "restore", first, *where))
    git(repo, "checkout", "-q", "--", "other.py")
    stash(repo, "other.py", LINES + "dropped\n")
    second = run("leftovers", *where)["leftovers"][0]["id"]
    out.append(run("leftovers", "drop", second, *where))
    out += [run("update", *where), run("recover", *where), run("fleet", "ready", *where)]

    reports = tmp / "reports"
    (reports / "h1").mkdir(parents=True)
    (reports / "h2").mkdir()
    (reports / "h1" / "update.json").write_text(json.dumps(out[-3]))
    out.append(run("fleet", "report", reports))

    home = tmp / "home"
    ledger = ledgers.create_ledger(home)
    claimed = ledgers.NOW - timedelta(hours=3)
    ledgers.insert(
        ledger,
        ledgers.execution("d1g3st", "failed", claimed, error=ledgers.LOCKED_ERROR),
        ledgers.execution("b4ckup", "running", claimed, started_at=claimed),
    )
    ledgers.write_jobs(home, [ledgers.job("d1g3st"), ledgers.job("b4ckup")])
    out.append(run("audit", "--home", home, "--days", "3"))
    out.append(run("init", tmp / "own-set"))
    out.append(run("init", tmp / "own-set"))  # not empty now: the error document

    missing = ["--install", tmp / "no-such-install", "--patches", patches]
    for words in (
        ["status"], ["apply"], ["unapply"], ["check", "--ref", "HEAD"], ["smoke"],
        ["record", "x", "--path", "x.py", "-m", "X"], ["refresh", "x"], ["update"],
        ["recover"], ["leftovers"], ["leftovers", "show", "0123456789"],
        ["leftovers", "restore", "0123456789"],
        ["leftovers", "drop", "0123456789"], ["fleet", "ready"], ["port", "--onto", "HEAD"],
    ):  # fmt: skip
        out.append(run(*words, *missing))
    out.append(run("fleet", "report", tmp / "no-such-reports"))
    out.append(run("lint", "--patches", tmp / "no-such-set"))
    out.append(run("audit", "--home", tmp / "no-such-home"))
    out.append(run("update", "--timeout", "0", *where))  # a usage mistake
    stdout, _ = demo.communicate(timeout=300)
    out.append(json.loads(stdout))
    assert out[-1]["command"] == "demo" and out[-1]["exit_code"] == demo.returncode
    return out


def test_every_command_has_a_schema_and_every_document_is_valid(
    documents: list[dict[str, Any]],
) -> None:
    from patchkeeper.report.render import DOCUMENT_KEYS

    commands = {doc["command"] for doc in documents}
    parts = {"leftovers restore", "leftovers drop", "leftovers show"}
    assert set(DOCUMENT_KEYS) | parts <= commands
    for document in documents:
        validate(document)
    for command in commands - {"demo", "lint", "doctor"}:  # lint and doctor report, never stop
        assert any(d["command"] == command and "error" in d for d in documents), command


def test_no_schema_is_left_without_a_document(documents: list[dict[str, Any]]) -> None:
    named = {doc["command"].replace(" ", "-") for doc in documents} | {"common"}
    shipped = {path.name.removesuffix(".schema.json") for path in SCHEMAS.glob("*.schema.json")}
    assert shipped == named


def test_a_schema_rejects_a_document_that_breaks_the_contract(
    documents: list[dict[str, Any]],
) -> None:
    """The schemas are strict enough to matter: a missing key, a key nobody documented, an
    outcome that is no outcome and an error with the old prefix each fail."""
    status = next(d for d in documents if d["command"] == "status" and "error" not in d)
    broken = [
        {k: v for k, v in status.items() if k != "patches"},
        {**status, "surprise": 1},
        {**status, "patches": [{**status["patches"][0], "outcome": "fine"}]},
        {**status, "exit_code": 7},
        {**status, "error": "error: no such install"},
    ]
    for document in broken:
        with pytest.raises(AssertionError):
            validate(document)


def test_error_values_carry_no_error_prefix(documents: list[dict[str, Any]]) -> None:
    errors = [doc["error"] for doc in documents if "error" in doc]
    assert len(errors) >= 16
    assert all(error and not error.lower().startswith("error:") for error in errors), errors


def test_fleet_error_documents_keep_their_command_and_keys(
    documents: list[dict[str, Any]],
) -> None:
    for command in ("fleet report", "fleet ready"):
        normal = next(d for d in documents if d["command"] == command and "error" not in d)
        error = next(d for d in documents if d["command"] == command and "error" in d)
        assert sorted(set(error) - {"error"}) == sorted(normal), command

