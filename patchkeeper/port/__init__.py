"""`patchkeeper port`: carry the patch set onto a new upstream release.

Each patch is judged against the release (REF) on top of the ones before it, as ported; what
it needs (nothing, a wider range, a new variant, retirement, a hand fix) is decided and kept in
a state file under `.git/patchkeeper/port/`; at the end the new set is built beside the old
one, linted, and swapped in with one rename (or written to `--out`). A peer of `update/`: it
judges with the engine, proves with `proof/smoke`, and never touches the install's work tree.
"""
