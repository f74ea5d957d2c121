"""Ranking tasks (five-caption study) and proxy matrices: owned by the proxies area."""
