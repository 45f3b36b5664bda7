#!/usr/bin/env bash
# The one-apply-per-tag floor: for every tag, one scratch index holding only the paths the
# patches touch (one `ls-tree` of all of them into `update-index`), then ONE
# `git apply --cached --check` of every patch. Three git processes per tag, whatever the
# number of patches or the size of the tree: the least a script that checks a whole series
# against a tag, without a checkout, must run. (`git read-tree TAG` into the scratch index is
# one process fewer, but it reads and writes every entry of the tree: at 20,000 files it
# costs more than the two it saves, and it would grow with the tree.)
#
#   floor_one.sh INSTALL LIST TAG...     LIST: one line per patch, PATCH_FILE<TAB>PATH PATH...
set -u
install=$1 list=$2
shift 2
index=$(mktemp -d)/index
trap 'rm -rf "$(dirname "$index")"' EXIT
patches=() paths=()
while IFS=$'\t' read -r patch touched; do
  patches+=("$patch")
  # shellcheck disable=SC2206  # paths are plain words, one per touched file
  paths+=($touched)
done <"$list"
cd "$install"
for tag in "$@"; do
  rm -f "$index"
  git ls-tree -r -z "$tag" -- "${paths[@]}" | GIT_INDEX_FILE=$index git update-index -z --index-info
  GIT_INDEX_FILE=$index git apply --cached --check "${patches[@]}" 2>/dev/null
done
exit 0
