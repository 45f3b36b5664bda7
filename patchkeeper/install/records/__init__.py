"""What patchkeeper writes down in `.git/patchkeeper/`: the update journal (and its
fault-injection points), the last update, the record of each applied patch; and
timestamps as Hermes writes them.

Imports system/."""
