"""Moment pools and sampled deep pools: owned by the moments area."""
