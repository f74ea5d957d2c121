"""Judging strategies: the order pairs are judged in, stopping, and what partial judgments tell (issue 15)."""
