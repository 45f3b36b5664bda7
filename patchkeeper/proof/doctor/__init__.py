"""Doctor: is this install safe to update unattended? Each question is one finding.

The findings: the install and its interpreter are found; git is not in the middle of a merge
and holds no leftovers; the patch set lints; every patch is in place; the timeout budget the
smoke checks read from the install holds (asked with `--probe`, which only reads); the last
update finished well. Nothing here writes to the install's work tree (the probes' scratch
HOME is under .git/patchkeeper/smoke/, removed afterwards). A finding that could not be checked
is not ok: "could not check" never reads as healthy.

The modules: `finding` (a finding, the report, what every question is asked about), one module
per group of questions (`install_state`, `patches`, `budget`, `last_update`, `fire_claims`),
and `diagnose`, which asks them all in order.
"""
