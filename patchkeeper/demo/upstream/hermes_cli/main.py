"""The `hermes` command: `hermes update` and `hermes version`."""

from __future__ import annotations

import argparse


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hermes")
    commands = parser.add_subparsers(dest="command", required=True)
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
    args = _parser().parse_args(argv)
    if args.command == "version":
        from hermes_cli.version_info import version_string

        print(version_string())
        return 0
    from hermes_cli.update_cmd import run_update

    return run_update(branch=args.branch, keep_stash=args.keep_stash)
