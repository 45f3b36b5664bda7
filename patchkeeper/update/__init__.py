"""`patchkeeper update`: the phases around the upstream updater, recovery and rollback."""
