"""The one writer of the install's work tree: a kill at any instant leaves each path old
or new. The way in (`write`), what a write changes (`changes`), its journal
(`write_journal`), each path put in place (`put_paths`), and the undo after a kill
(`settle`).

Imports checkout/, plumbing/, records/, system/."""
