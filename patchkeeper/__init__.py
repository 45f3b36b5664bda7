"""patchkeeper: keep local fixes alive across upstream updates of a git-installed project."""

__version__ = "0.1.0"
