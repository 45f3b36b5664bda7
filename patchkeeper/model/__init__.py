"""The result model: how a patch stands (outcomes), what a run ends with (exit codes, verdicts),
the error a user reads, a problem in a user's file, the next command to paste."""
