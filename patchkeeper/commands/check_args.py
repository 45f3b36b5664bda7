"""A plain `patchkeeper check` read without click: what an operator or a CI job types most.

Loading click costs more than a small check's own work, so `cli.py` asks `plain_check` first.
It knows the few options a plain run uses (`--ref`, `--tags`, `--install`, `--patches`,
`--format`, `--json`, `--progress`, `--no-progress`) and reads them exactly as click reads
check's options; for anything else (help, another option, a value that looks like an option,
a usage mistake, a path click would refuse, shell completion) it answers None and click reads
the line as ever, with its own help and error messages. tests/test_check_args.py compares the
two on many command lines.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

TYPE_CHECKING = False  # typing is not loaded for this: see cli.py
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

FORMATS = ("text", "json", "junit", "github")  # check.py's --format choices
_MANY = {"--ref": "refs", "--tags": "tag_globs"}  # multiple=True: every value, in order
_ONE = {"--install": "install_path", "--patches": "patches_dir", "--format": "output_format"}
_FLAGS = {"--json": ("as_json", True), "--progress": ("progress", True),
          "--no-progress": ("progress", False)}  # fmt: skip


def plain_check(args: list[str], environ: Mapping[str, str]) -> dict[str, Any] | None:
    """The keyword arguments of `check_run.run` for ARGS (what follows `check`), or None when
    click must read them."""
    if any(name.startswith("_") and name.endswith("_COMPLETE") for name in environ):
        return None  # click's shell completion (_PATCHKEEPER_COMPLETE)
    many: dict[str, list[str]] = {"refs": [], "tag_globs": []}
    one: dict[str, str] = {}
    flags: dict[str, bool] = {}
    at = 0
    while at < len(args):
        name, equals, value = args[at].partition("=")
        at += 1
        if name in _FLAGS:
            if equals:  # click: "option does not take a value"
                return None
            key, flag = _FLAGS[name]
            flags[key] = flag
            continue
        if name not in _MANY and name not in _ONE:
            return None  # help, another option, an argument, `--`: click's
        if not equals:
            if at == len(args):
                return None  # click: "option requires an argument"
            value = args[at]
            at += 1
        if not value or value.startswith("-") or "\0" in value:
            return None  # click's to read (and mostly to refuse)
        if name in _MANY:
            many[_MANY[name]].append(value)
        else:
            one[_ONE[name]] = value  # given twice: the last, as click takes it
    return _checked(many, one, flags)


def _checked(
    many: dict[str, list[str]], one: dict[str, str], flags: dict[str, bool]
) -> dict[str, Any] | None:
    """The options as check.py would pass them on, or None where check.py or click's types
    would refuse them."""
    output_format = one.get("output_format")
    if output_format is not None and output_format not in FORMATS:
        return None
    as_json = flags.get("as_json", False)
    if as_json and output_format not in (None, "json"):
        return None
    if not (many["refs"] or many["tag_globs"]):
        return None
    folders = {key: one.get(key) for key in ("install_path", "patches_dir")}
    if not all(value is None or _folder_ok(value) for value in folders.values()):
        return None
    return {
        "refs": tuple(many["refs"]),
        "tag_globs": tuple(many["tag_globs"]),
        "since": None,
        "fetch_remote": None,
        "output": "json" if as_json else output_format or "text",
        "junit_path": None,
        "progress": flags.get("progress"),
        "install_path": None if folders["install_path"] is None else Path(folders["install_path"]),
        "patches_dir": None if folders["patches_dir"] is None else Path(folders["patches_dir"]),
        "metrics_path": None,
    }


def _folder_ok(value: str) -> bool:
    """What `click.Path(file_okay=False)` accepts: no such path, or one that is no regular
    file and can be read."""
    try:
        mode = os.stat(value).st_mode
    except OSError:
        return True
    return not stat.S_ISREG(mode) and os.access(value, os.R_OK)
