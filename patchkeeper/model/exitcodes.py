"""Exit codes: the contract scripts and fleet tooling rely on (documented in README)."""

OK = 0
INTERNAL = 1
USAGE = 2
PATCH_FAILED = 3
SMOKE_FAILED = 4
ATTENTION = 5
BUSY = 6
# The machine refused a write or a read (disk full, quota, read-only file system, permission,
# I/O error): one line names the path and the cause; nothing is half-written.
ENVIRONMENT = 7

# When several apply, the most serious wins: 3 > 4 > 5 (then 7, 6, 2, 1 are terminal on their
# own).
SEVERITY_ORDER = (PATCH_FAILED, SMOKE_FAILED, ATTENTION)


def worst(*codes: int) -> int:
    """Combine per-part exit codes into one, by the documented precedence."""
    for code in (INTERNAL, USAGE, ENVIRONMENT, BUSY, *SEVERITY_ORDER):
        if code in codes:
            return code
    return OK
