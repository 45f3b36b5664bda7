"""One module per command; each exposes a click command named `command`."""
