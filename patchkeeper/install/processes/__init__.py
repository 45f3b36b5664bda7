"""External commands in a process group of their own, with a time limit that ends the
group.

Imports system/ and records/ (the fault-injection points)."""
