#!/usr/bin/env bash
# How quilt, rebase-helper and devtool check patches against a release: a checkout of it
# (`git worktree add`), then `git apply --check` of every patch in series order.
#
#   worktree_check.sh INSTALL LIST TAG     LIST as for floor.sh
set -u
install=$1 list=$2 tag=$3
work=$(mktemp -d)/tree
cd "$install"
git worktree add -q --detach "$work" "$tag"
while IFS=$'\t' read -r patch _paths; do
  git -C "$work" apply --check "$patch" 2>/dev/null
done <"$list"
git worktree remove --force "$work"
rm -rf "$(dirname "$work")"
exit 0
