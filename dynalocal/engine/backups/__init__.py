"""Backups, restores, point-in-time recovery and resource policies (issue 27, first half)."""
