"""Outcomes -> exit codes (the table in README)."""

from __future__ import annotations

from collections.abc import Iterable

from patchkeeper.model import exitcodes
from patchkeeper.model import outcomes as oc
from patchkeeper.model.outcomes import PatchResult


def tree_exit_code(results: Iterable[PatchResult], *, pending_needs_attention: bool) -> int:
    """3 when a patch cannot apply; 5 when one drifted, could not be judged (unknown version)
    or (status) is not applied yet; else 0."""
    codes = []
    for result in results:
        if result.outcome in oc.FAILED:
            codes.append(exitcodes.PATCH_FAILED)
        elif result.needs_a_person or (pending_needs_attention and result.outcome in oc.WRITES):
            codes.append(exitcodes.ATTENTION)
    return exitcodes.worst(*codes)
