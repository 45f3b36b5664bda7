"""Reports: text for people, JSON for scripts, JUnit XML and GitHub annotations for CI, progress."""
