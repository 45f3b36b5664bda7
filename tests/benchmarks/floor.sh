#!/usr/bin/env bash
# The per-patch plumbing floor: for every tag and every patch, a scratch index holding only the
# paths the patch touches (`ls-tree` into `update-index`), then `git apply --cached --check`.
# The least a script that checks patches one by one, without a checkout, must run.
#
#   floor.sh INSTALL LIST TAG...     LIST: one line per patch, PATCH_FILE<TAB>PATH PATH...
set -u
install=$1 list=$2
shift 2
index=$(mktemp -d)/index
trap 'rm -rf "$(dirname "$index")"' EXIT
cd "$install"
for tag in "$@"; do
  while IFS=$'\t' read -r patch paths; do
    rm -f "$index"
    # shellcheck disable=SC2086  # paths are plain words, one per touched file
    git ls-tree -r -z "$tag" -- $paths | GIT_INDEX_FILE=$index git update-index -z --index-info
    GIT_INDEX_FILE=$index git apply --cached --check "$patch" 2>/dev/null
  done <"$list"
done
exit 0
