"""The agent runtime (practice: only what the cron worker touches)."""
