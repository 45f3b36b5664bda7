"""`patchkeeper.toml` -> typed settings. Relative paths are taken from the patch set's folder."""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patchkeeper.model.errors import UserError
from patchkeeper.patchset.userfiles import (
    MAX_SMALL_FILE_BYTES,
    SMOKE_NAME_RE,
    read_user_file,
)
from patchkeeper.patchset.version_settings import tag_names, version_sources
from patchkeeper.patchset.version_sources import (
    NAMES_ARE_VERSIONS,
    DescribeSource,
    TagNames,
    VersionSource,
)
from patchkeeper.patchset.versions import PEP440, SCHEMES, VersionScheme

CONFIG_NAME = "patchkeeper.toml"
DEFAULT_INSTALL = "~/.hermes/hermes-agent"
DEFAULT_UPDATE_COMMAND = ("hermes", "update", "--yes")

_KNOWN: dict[str, set[str]] = {
    "install": {
        "path",
        "python",
        "version_command",
        "version_file",
        "version_pattern",
        "version_scheme",
        "version_source",
    },
    "update": {"command", "timeout", "post_apply"},
    "smoke": {"checks", "timeout"},
    "patches": {"allow_outside_symlinks"},
    "tags": set(),  # any tag name: version_settings.tag_names checks them
}


@dataclass(frozen=True)
class Settings:
    """The patch set's `patchkeeper.toml` as read (SOURCE: that file, None when there is none),
    with the defaults filled in."""

    source: Path | None
    install_path: Path
    python: str | None = None
    # where the version is read, the first that answers wins (install/checkout/version_chain.py)
    version_sources: tuple[VersionSource, ...] = (DescribeSource(),)
    update_command: tuple[str, ...] = DEFAULT_UPDATE_COMMAND
    update_timeout: float | None = None
    post_apply: tuple[tuple[str, ...], ...] = ()
    smoke_checks: tuple[str, ...] = ()
    smoke_timeout: float = 120.0
    allow_outside_symlinks: bool = False  # may a patch write a symlink out of the install?
    version_scheme: VersionScheme = PEP440  # how the project writes versions (versions.py)
    tags: TagNames = NAMES_ARE_VERSIONS  # which release each tag is ([tags])


def _str_list(path: Path, key: str, value: Any, *, allow_empty: bool = True) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UserError(f"{path}: {key} must be a list of strings")
    if not value and not allow_empty:
        raise UserError(f"{path}: {key} must not be empty")
    return tuple(value)


def _seconds(path: Path, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise UserError(f"{path}: {key} must be a positive number of seconds")
    return float(value)


def _version_scheme(path: Path, install: dict[str, Any]) -> VersionScheme:
    """`[install] version_scheme`: one of SCHEMES, PEP 440 when not given."""
    name = install.get("version_scheme", PEP440.name)
    if not isinstance(name, str) or name not in SCHEMES:
        known = ", ".join(repr(n) for n in SCHEMES)
        raise UserError(f"{path}: install.version_scheme must be one of {known}, not {name!r}")
    return SCHEMES[name]


def _resolve(base: Path, value: str) -> Path:
    candidate = Path(value).expanduser()
    return candidate if candidate.is_absolute() else (base / candidate).resolve()


def load_settings(patch_dir: Path) -> Settings:
    """Read PATCH_DIR/patchkeeper.toml; a missing file means all defaults."""
    path = patch_dir / CONFIG_NAME
    if not path.exists() and not path.is_symlink():
        return Settings(source=None, install_path=Path(DEFAULT_INSTALL).expanduser())
    # A folder, a FIFO, a link to a device or a broken one: an error, never silent defaults.
    raw, unreadable = read_user_file(path, MAX_SMALL_FILE_BYTES)
    if unreadable:
        raise UserError(f"{path}: {unreadable}")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise UserError(f"{path}: not valid UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib descends once per `[` or `{`: x = [[[[...]]]]
        why = "not valid TOML here: arrays or tables nested too deeply"
        raise UserError(f"{path}: {why}") from None
    for section, body in data.items():
        if section not in _KNOWN:
            raise UserError(f"{path}: unknown section [{section}]")
        if not isinstance(body, dict):
            raise UserError(f"{path}: {section} must be a table ([{section}]), not {body!r:.40}")
        unknown = sorted(set(body) - _KNOWN[section]) if section != "tags" else []
        if unknown:
            raise UserError(f"{path}: unknown key {unknown[0]!r} in [{section}]")
    install = data.get("install", {})
    update = data.get("update", {})
    smoke = data.get("smoke", {})
    links = data.get("patches", {}).get("allow_outside_symlinks", False)
    if not isinstance(links, bool):
        raise UserError(f"{path}: patches.allow_outside_symlinks must be true or false")
    for key in ("path", "python"):
        if key in install and not isinstance(install[key], str):
            raise UserError(f"{path}: install.{key} must be a string")
    scheme = _version_scheme(path, install)
    post = update.get("post_apply", [])
    if not isinstance(post, list):
        raise UserError(f"{path}: update.post_apply must be a list of commands")
    return Settings(
        source=path,
        install_path=_resolve(patch_dir, install.get("path", DEFAULT_INSTALL)),
        python=install.get("python"),
        version_sources=version_sources(path, install, scheme),
        update_command=_str_list(
            path,
            "update.command",
            update.get("command", list(DEFAULT_UPDATE_COMMAND)),
            allow_empty=False,
        ),
        update_timeout=_seconds(path, "update.timeout", update["timeout"])
        if "timeout" in update
        else None,
        post_apply=tuple(
            _str_list(path, "update.post_apply[]", cmd, allow_empty=False) for cmd in post
        ),
        smoke_checks=_check_names(path, smoke.get("checks", [])),
        smoke_timeout=_seconds(path, "smoke.timeout", smoke.get("timeout", 120.0)),
        allow_outside_symlinks=links,
        version_scheme=scheme,
        tags=tag_names(path, data, scheme),
    )


def _check_names(path: Path, value: Any) -> tuple[str, ...]:
    """`[smoke] checks`: names of files in smoke/, never paths."""
    names = _str_list(path, "smoke.checks", value)
    for name in names:
        if not SMOKE_NAME_RE.fullmatch(name.removesuffix(".py")):
            raise UserError(
                f"{path}: smoke.checks {name!r} is not a check name (a file in smoke/, "
                "without a path)"
            )
    return names
