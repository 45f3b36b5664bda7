"""The sandbox: a practice upstream shaped like Hermes Agent, and its practice patch set."""
