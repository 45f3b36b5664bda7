"""Cron: scheduled jobs, their execution ledger and the restart-safe external worker.

Importing the package loads the scheduler, as upstream's does: the ledger comes with it.
"""

from cron.scheduler import tick

__all__ = ["tick"]
