"""The install: the upstream git checkout and what patchkeeper keeps in it (state, the journal,
the lock, the one work-tree writer), git plumbing, processes, the install's version."""
