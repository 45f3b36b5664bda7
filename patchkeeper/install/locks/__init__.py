"""One patchkeeper at a time per install (`install_lock`), and who may still hold one of
git's lock files (`git_locks`).

Imports writer/, checkout/ and below."""
