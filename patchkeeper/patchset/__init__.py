"""The patch set on disk: `series`, patch files and their headers, variants of one fix, the
versions they name, `patchkeeper.toml`, the bundled set. Reads files only: no git, no install."""
