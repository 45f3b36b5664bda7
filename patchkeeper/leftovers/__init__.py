"""What an update leaves behind (stash entries, autostash files, set-aside edits, the updater's
backups and receipts): find it, classify it by content, restore or drop it."""
