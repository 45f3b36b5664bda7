"""Hermes Agent's command line (practice upstream)."""

__version__ = "0.21.2"
__release_date__ = "2026.9.11"
