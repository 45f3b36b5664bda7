"""Hermes Agent's command line."""
