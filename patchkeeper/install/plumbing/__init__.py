"""git as a tool, given a repository path: commands and cat-file batches, the scratch index
(a temporary index holding only the paths a patch set touches), a git question asked
beside other work. Knows no Install.

Imports system/."""
