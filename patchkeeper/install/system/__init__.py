"""What the operating system keeps and answers, no git: durable writes of tool state,
patchkeeper's temporary folders, whether a process is alive and still the same one.

Imports nothing else of install/."""
