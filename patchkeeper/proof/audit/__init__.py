"""Read-only reconciliation of a Hermes cron ledger with the jobs the dashboard shows.

Five checks, one report: executions that never started (and which of those are the
"database is locked" loss of upstream issue #135487), jobs whose dashboard fields say healthy
while their latest execution failed ("green but failing"), claims stuck in claimed/running,
counts per day, and executions booked failed as a lost fire claim whose delivery succeeded
(seed 000, upstream #100401/#108341/#105861: the heartbeat waited on the fence its own run
held). Nothing here writes: the ledger and the delivery queue are opened with `mode=ro`, the
jobs file is only read, and no upstream code is imported (loading upstream's jobs may rewrite
jobs.json, and opening its ledger runs schema changes).

A check that could not run is reported in `unchecked` with its reason. It is never "clean": a
ledger we could not read says nothing about lost jobs.

The modules, from the bottom up:
- `records`: the jobs and executions as read, and what an execution's error text says;
- `findings`: the checks, what each finds, and the whole `AuditResult`;
- `jobs_file`: reading cron/jobs.json in every shape Hermes has written;
- `ledger_file`: reading the ledger and the delivery queue, each in one read-only snapshot;
- `checks`: the five checks, pure functions from executions and jobs to findings;
- `reconcile`: the audit itself: which home, what could be read, which checks can run.
"""
