"""`check` in CI: choosing refs (--tags, --since, --fetch), the output formats (text tables,
JSON, JUnit, GitHub annotations and step summary), progress, the object store left alone,
a CLI that starts without importing what it does not use, and the README's CI files."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from patchkeeper.demo.sandbox import TAGS, Sandbox
from patchkeeper.report import progress as progress_module
from patchkeeper.report.annotations import escape_data, escape_property
from patchkeeper.report.progress import Progress
from tests.helpers import (
    GIT_ID,
    commit_files,
    diff_of,
    git,
    make_repo,
    modules_loaded,
    patch_text,
    run_cli,
    write_patch_set,
)

ROOT = Path(__file__).resolve().parent.parent
LINES = "".join(f"line {n}\n" for n in range(1, 41))


def pk(sandbox: Sandbox, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None):
    return subprocess.run(
        [sys.executable, "-m", "patchkeeper", *args, "--install", str(sandbox.install),
         "--patches", str(sandbox.patches)],
        capture_output=True, text=True, check=False, cwd=cwd,
        env={**os.environ, **GIT_ID, "NO_COLOR": "1", **(env or {})},
    )  # fmt: skip


def objects(repo: Path) -> set[str]:
    store = repo / ".git" / "objects"
    return {str(p.relative_to(store)) for p in store.rglob("*") if p.is_file()}


# ---------------------------------------------------------------- choosing refs


def test_tags_and_since_choose_refs_in_version_order(sandbox: Sandbox) -> None:
    sandbox.fetch_tags()
    proc = pk(sandbox, "check", "--tags", "v*", "--json")
    document = json.loads(proc.stdout)
    assert [t["ref"] for t in document["targets"]] == list(TAGS)
    proc = pk(sandbox, "check", "--since", "0.22", "--json")
    since = TAGS.index("v2026.10.1")
    assert [t["ref"] for t in json.loads(proc.stdout)["targets"]] == list(TAGS[since:])
    glob = "v2026.1[01].[29]*"  # 0.23.0 and 0.24.0
    proc = pk(sandbox, "check", "--tags", glob, "--ref", "v2026.9.24", "--json")
    refs = [t["ref"] for t in json.loads(proc.stdout)["targets"]]
    assert refs == ["v2026.9.24", "v2026.10.26", "v2026.11.9"]  # --ref first, as given
    assert json.loads(proc.stdout)["selection"]["tags"] == [glob]


def test_tags_that_name_no_commit_are_left_out(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "up", {"app.py": LINES}, tag="v1.0.0")
    patches = write_patch_set(
        tmp_path / "ps",
        {"fix.patch": patch_text(diff_of(repo, {"app.py": LINES.replace("line 9\n", "x\n")}))},
    )
    git(repo, "tag", "v1.0.1-tree", "HEAD^{tree}")
    git(repo, "tag", "-a", "-m", "annotated", "v1.1.0")
    proc = run_cli("check", "--install", repo, "--patches", patches, "--tags", "v*", "--json")
    assert proc.returncode == 0, proc.stderr
    assert [t["ref"] for t in json.loads(proc.stdout)["targets"]] == ["v1.0.0", "v1.1.0"]


def test_nothing_to_check_is_a_usage_error(sandbox: Sandbox) -> None:
    proc = pk(sandbox, "check")
    assert proc.returncode == 2 and "--ref REF, --tags GLOB or --since VERSION" in proc.stderr
    proc = pk(sandbox, "check", "--tags", "release-*")  # the shallow install has no such tag
    assert proc.returncode == 2 and "no tag matches 'release-*'" in proc.stderr
    assert "--fetch" in proc.stderr
    proc = pk(sandbox, "check", "--since", "banana")
    assert proc.returncode == 2 and "not a PEP 440 version" in proc.stderr


def test_fetch_brings_tags_without_moving_anything(sandbox: Sandbox) -> None:
    install = sandbox.install
    head = git(install, "rev-parse", "HEAD")
    status = git(install, "status", "--porcelain")
    assert git(install, "tag", "--list") in ("", "v2026.9.14")  # shallow, no later tags
    proc = pk(sandbox, "check", "--fetch", "--since", "0.23", "--json")
    assert proc.returncode == 3, proc.stderr
    assert [t["ref"] for t in json.loads(proc.stdout)["targets"]] == ["v2026.10.26", "v2026.11.9"]
    assert json.loads(proc.stdout)["selection"]["fetched"] == "origin"
    assert git(install, "rev-parse", "HEAD") == head
    assert git(install, "status", "--porcelain") == status
    proc = pk(sandbox, "check", "--fetch", "nowhere", "--ref", "HEAD")
    assert proc.returncode == 5 and "could not fetch nowhere" in proc.stderr
    assert "nothing was checked" in proc.stderr


# ---------------------------------------------------------------- formats


def test_github_format_annotates_the_failing_hunk_and_writes_a_summary(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    sandbox.fetch_tags()
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    proc = pk(
        sandbox, "check", "--tags", "v*", "--format", "github",
        env={"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_WORKSPACE": str(sandbox.root)},
    )  # fmt: skip
    assert proc.returncode == 3
    errors = [line for line in proc.stdout.splitlines() if line.startswith("::error ")]
    assert len(errors) == 3  # the worker's two hunks on the half-wired 0.22.1, schema-once
    for error in errors[:2]:
        assert error.startswith("::error file=patches/adoption-retry/scheduler-0.21.patch,")
        assert "adoption-retry does not apply on v2026.10.8" in error
    patch_lines = (sandbox.patches / "schema-once.patch").read_text().split("\n")
    hunk = next(n for n, line in enumerate(patch_lines, 1) if line.startswith("@@"))
    assert errors[2].startswith(f"::error file=patches/schema-once.patch,line={hunk},title=")
    message = errors[2].split("::", 2)[2]
    assert message.startswith(
        "schema-once does not apply on v2026.11.9: cron/executions.py: hunk #1"
    )
    assert "%0Aline 47: expected" in message and "\n" not in message
    notices = [line for line in proc.stdout.splitlines() if line.startswith("::notice ")]
    assert len(notices) == 2
    assert notices[0].startswith("::notice file=patches/heartbeat-fence.patch,")
    assert "upstream has heartbeat-fence on 6 ref(s)" in notices[0]  # 0.21.3 and later
    assert "adoption-retry/scheduler-0.21.patch" in notices[1]
    assert "v2026.10.26 .. v2026.11.9 (2 refs)" in notices[1]
    assert "adoption-retry n/a->offset" in proc.stdout  # the table for the log, too
    text = summary.read_text()
    assert text.startswith("earlier step\n## patchkeeper check: 2 of 3 patches need work")
    assert "| `v2026.11.9` | 0.24.0 |" in text and "**schema-once**: conflict on v2026.11.9" in text


def test_annotation_escaping() -> None:
    assert escape_data("a%b\r\nc") == "a%25b%0D%0Ac"
    assert escape_property("x:y,z%") == "x%3Ay%2Cz%25"


def test_junit_format_prints_xml_and_junit_file_still_works(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    sandbox.fetch_tags()
    target = tmp_path / "out.xml"
    proc = pk(sandbox, "check", "--ref", "v2026.11.9", "--format", "junit", "--junit", str(target))
    assert proc.returncode == 3
    printed = ET.fromstring(proc.stdout)
    assert ET.tostring(printed) == ET.tostring(ET.parse(target).getroot())
    suite = printed.find("testsuite")
    # schema-once conflicts; adoption-retry and heartbeat-fence are upstream's own there
    assert suite is not None and (suite.get("failures"), suite.get("skipped")) == ("1", "2")


def test_json_and_format_json_are_one_thing(sandbox: Sandbox) -> None:
    one = json.loads(pk(sandbox, "check", "--ref", "HEAD", "--json").stdout)
    two = json.loads(pk(sandbox, "check", "--ref", "HEAD", "--format", "json").stdout)
    assert one == two and one["schema"] == "patchkeeper/1" and one["command"] == "check"
    proc = pk(sandbox, "check", "--ref", "HEAD", "--json", "--format", "text")
    assert proc.returncode == 2
    proc = pk(sandbox, "check", "--ref", "nope", "--format", "json")
    assert proc.returncode == 2 and json.loads(proc.stdout)["exit_code"] == 2


def many_tags(tmp_path: Path, count: int = 14) -> tuple[Path, Path]:
    """An upstream with COUNT release tags; something changes for the patches only at some."""
    files = {f"m{n}.py": LINES.replace("line", f"m{n}") for n in range(6)}
    repo = make_repo(tmp_path / "up", files, tag="v1.0.0")
    patches = {
        f"patch-number-{n}.patch": patch_text(
            diff_of(repo, {f"m{n}.py": files[f"m{n}.py"].replace(f"m{n} 20\n", f"m{n} 20 x\n")})
        )
        for n in range(6)
    }
    patch_dir = write_patch_set(tmp_path / "ps", patches)
    for number in range(1, count):
        changed = {"README": f"release {number}\n"}
        if number == 4:
            changed["m1.py"] = "new\n" + files["m1.py"]  # offset from here on
        if number == 9:
            changed["m2.py"] = files["m2.py"].replace("m2 20\n", "m2 20 upstream\n")  # conflict
        commit_files(repo, changed, f"r{number}", tag=f"v1.{number}.0")
    return repo, patch_dir


def test_many_refs_make_a_compact_table_under_100_columns(tmp_path: Path) -> None:
    repo, patches = many_tags(tmp_path)
    proc = run_cli("check", "--install", repo, "--patches", patches, "--tags", "v*")
    assert proc.returncode == 3
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100, max(lines, key=len)
    assert lines[0].startswith("14 refs x 6 patches")
    rows = [line.split()[0] for line in lines[2:] if re.match(r"^v\d", line)]
    assert rows == ["v1.0.0", "v1.4.0", "v1.9.0"]  # only where an outcome changed
    assert "  ... 3 more with the same outcomes: v1.1.0 .. v1.3.0 (3 refs)" in lines
    assert "  ... 4 more with the same outcomes: v1.10.0 .. v1.13.0 (4 refs)" in lines
    v14 = next(line for line in lines if line.startswith("v1.4.0"))
    assert "patch-number-1 ok->offset" in v14
    assert "  patch-number-2: conflict on v1.9.0 .. v1.13.0 (5 refs)" in lines


def test_few_refs_keep_the_matrix(tmp_path: Path) -> None:
    repo, patches = many_tags(tmp_path, count=3)
    proc = run_cli("check", "--install", repo, "--patches", patches, "--tags", "v*")
    assert proc.stdout.splitlines()[0].split() == ["patch", "v1.0.0", "v1.1.0", "v1.2.0"]


# ---------------------------------------------------------------- progress


def test_progress_is_quiet_off_a_terminal_and_for_quick_work(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc = pk(sandbox, "check", "--ref", "HEAD")
    assert proc.stderr == ""

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    quick = Terminal()
    meter = Progress("check", 3, "refs", stream=quick)
    for done in (1, 2, 3):
        meter.update(done, f"v{done}")
    meter.close()
    assert quick.getvalue() == ""  # done within the second: nothing shown
    monkeypatch.setattr(progress_module, "DELAY", 0.0)
    monkeypatch.setattr(progress_module, "INTERVAL_TTY", 0.0)
    monkeypatch.setattr(progress_module, "INTERVAL_LOG", 0.0)
    screen = Terminal()
    meter = Progress("check", 2, "refs", stream=screen)
    meter.update(1, "v1")
    meter.update(2, "v2")
    meter.close()
    assert screen.getvalue() == ("\r\x1b[Kcheck: 1/2 refs (v1)\r\x1b[Kcheck: 2/2 refs (v2)\r\x1b[K")
    log = io.StringIO()
    Progress("check", 2, "refs", stream=log).update(1, "v1")
    assert log.getvalue() == ""  # a log is quiet unless asked
    meter = Progress("check", 2, "refs", stream=log, enabled=True)
    meter.update(1, "v1")
    meter.update(2, "v2")
    meter.close()
    assert log.getvalue() == "check: 1/2 refs (v1)\ncheck: 2/2 refs (v2)\n"


# ---------------------------------------------------------------- read-only means read-only


def test_check_and_status_add_no_object_to_the_install(sandbox: Sandbox) -> None:
    sandbox.fetch_tags()
    assert pk(sandbox, "apply").returncode == 0
    git(sandbox.install, "stash", "push", "-q", "-u", "-m", "hermes-update-autostash-1")
    before = objects(sandbox.install)
    assert pk(sandbox, "check", "--tags", "v*").returncode == 3
    proc = pk(sandbox, "status")
    assert proc.returncode == 5 and "hermes-update-autostash-1" in proc.stdout
    (sandbox.install / "cron" / "executions.py").write_text("edited\n")
    assert pk(sandbox, "status").returncode == 5
    assert objects(sandbox.install) == before


# ---------------------------------------------------------------- start-up




def test_version_imports_nothing_of_ours_but_the_cli_and_no_third_party() -> None:
    modules = modules_loaded("--version")
    ours = sorted(m for m in modules if m.startswith("patchkeeper"))
    ours = [m for m in ours if m != "patchkeeper._version"]  # the version, where it was built
    assert ours == ["patchkeeper", "patchkeeper.cli"]
    third = {m.split(".")[0] for m in modules} & {"click", "packaging", "unidiff", "git", "yaml"}
    assert not third


def test_a_text_check_loads_nothing_only_writers_or_json_need(sandbox: Sandbox) -> None:
    sandbox.fetch_tags()
    modules = set(modules_loaded("check", "--ref", TAGS[-1], "--install", str(sandbox.install),
                                 "--patches", str(sandbox.patches)))  # fmt: skip
    assert "patchkeeper.engine.checking" in modules  # it did check
    writers = {f"patchkeeper.install.{name}" for name in
               ("records.update_journal", "locks.install_lock", "records.applied",
                "writer.write", "writer.changes", "writer.write_journal",
                "writer.put_paths", "writer.settle", "processes.process_groups")}  # fmt: skip
    assert not writers & modules
    assert "json" not in modules
    # Standard modules a small check pays for at start-up and does not use: a scratch folder
    # is made with os.mkdir, a patch file's SHA-256 is taken when a writer asks for it.
    assert not {"tempfile", "shutil", "hashlib", "difflib"} & modules


def test_help_lists_commands_without_importing_them() -> None:
    modules = modules_loaded("--help")
    assert not [m for m in modules if m.startswith("patchkeeper.commands")]
    assert "packaging" not in {m.split(".")[0] for m in modules}


def test_help_summaries_are_the_commands_own() -> None:
    import importlib
    import inspect

    from patchkeeper.cli import COMMANDS, SUMMARIES

    for name, module in COMMANDS.items():
        if name not in SUMMARIES:
            continue  # imported for its summary: right by construction
        command = importlib.import_module(f"patchkeeper.commands.{module}").command
        own = inspect.cleandoc(command.short_help or command.help or "").split("\n\n")[0]
        assert SUMMARIES[name] == " ".join(own.split()), (
            f"patchkeeper/cli.py SUMMARIES[{name!r}] must be the first line of its help"
        )


# ---------------------------------------------------------------- the README's CI files


def yaml_blocks(text: str) -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", text, flags=re.DOTALL)


def test_readme_ci_examples_are_valid_yaml() -> None:
    yaml = pytest.importorskip("yaml")
    readme = (ROOT / "docs" / "ci.md").read_text()  # the CI files moved out of README.md
    documents = [yaml.safe_load(b) for b in yaml_blocks(readme) if "patchkeeper" in b]
    workflows = [d for d in documents if isinstance(d, dict) and "jobs" in d]
    assert workflows, "no GitHub Actions workflow in docs/ci.md"
    workflow = workflows[0]
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads `on` as True
    assert "schedule" in triggers and "push" in triggers
    steps = [step.get("run", "") for job in workflow["jobs"].values() for step in job["steps"]]
    assert any("patchkeeper check" in run and "--format github" in run for run in steps)
    gitlab = [d for d in documents if isinstance(d, dict) and any(
        isinstance(v, dict) and "script" in v for v in d.values()
    )]  # fmt: skip
    assert gitlab, "no GitLab CI job in docs/ci.md"
    job = next(v for v in gitlab[0].values() if isinstance(v, dict) and "script" in v)
    assert any("patchkeeper check" in line for line in job["script"])


def test_pre_commit_hooks_file() -> None:
    yaml = pytest.importorskip("yaml")
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    by_id = {hook["id"]: hook for hook in hooks}
    assert set(by_id) == {"patchkeeper-lint", "patchkeeper-check"}
    for hook in hooks:
        assert hook["language"] == "python" and hook["pass_filenames"] is False
        assert re.search(hook["files"], "patches/fix.patch") and re.search(hook["files"], "series")
    assert by_id["patchkeeper-lint"]["entry"].startswith("patchkeeper lint")
    assert by_id["patchkeeper-check"]["entry"].startswith("patchkeeper check")
