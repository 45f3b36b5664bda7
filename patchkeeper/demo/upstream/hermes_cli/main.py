"""The `hermes` command: `hermes update`, `hermes version` and `hermes --version`."""

from __future__ import annotations

import argparse


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hermes")
    parser.add_argument(
        "--version", action="store_true", help="print `Hermes Agent v<version> (<date>)`"
    )
    commands = parser.add_subparsers(dest="command")
    update = commands.add_parser("update", help="update this checkout from origin")
    update.add_argument(
        "--yes",
        "-y",
        action="store_true",
        help="restore local changes without asking (this practice copy never asks)",
    )
    update.add_argument(
        "--keep-stash",
        action="store_true",
        help="leave local changes in the stash instead of re-applying them",
    )
    update.add_argument(
        "--branch",
        metavar="NAME",
        default=None,
        help="follow origin's branch NAME instead of the latest release",
    )
    commands.add_parser("version", help="print the version of this checkout")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.version or args.command == "version":
        import hermes_cli
        from hermes_cli.version_info import version_string

        version = version_string()
        # __release_date__: a literal up to 0.21.4, read from the stamp from 0.21.5 on
        print(f"Hermes Agent v{version} ({hermes_cli.__release_date__})" if args.version else version)
        return 0
    if args.command is None:
        parser.error("a command is required (update, version) or --version")
    from hermes_cli.update_cmd import run_update

    return run_update(branch=args.branch, keep_stash=args.keep_stash)
