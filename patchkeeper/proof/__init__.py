"""Proof: smoke checks of behaviour, the doctor's safe-to-update questions, the cron ledger
audit."""
