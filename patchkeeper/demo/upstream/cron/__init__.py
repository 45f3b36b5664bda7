"""Cron: scheduled jobs, their execution ledger and the external worker."""
