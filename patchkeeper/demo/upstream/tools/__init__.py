"""Tools the agent runs (practice: process dispatch only)."""
