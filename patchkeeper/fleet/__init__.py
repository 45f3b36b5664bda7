"""Fleet rollouts: the Ansible playbook patchkeeper ships, and the report over its results.

Ansible does the scheduling (batches, halting, retries, fetching); patchkeeper only supplies
the playbook (`rollout.yml`, package data, written out by `patchkeeper fleet playbook`) and
reads what the playbook brought back (`patchkeeper fleet report DIR`, in `report.py`).

The reports folder is the rollout's record, one folder per host of the play:

    DIR/HOST/            made for every host when the play starts: a host without
                         update.json never ran (or its report was not brought back)
    DIR/HOST/update.json the last patchkeeper JSON document of the host's turn: `update`'s,
                         or `fleet ready`'s when the host was busy (exit 6) or not ready
    DIR/HOST/smoke.json  `smoke`'s, when the play ran the smoke checks after the update

Rerunning the play with the same folder resumes the rollout: a host whose update.json says
exit 0 with the update done, and that still stands so (`status` exit 0 at that HEAD), is
skipped.
"""

from __future__ import annotations

from importlib import resources

PLAYBOOK_NAME = "patchkeeper-rollout.yml"


def playbook_text() -> str:
    """The shipped playbook, as it is in the wheel."""
    return (resources.files(__name__) / "rollout.yml").read_text(encoding="utf-8")
