"""Pools: building them from runs (depth-k, sampled, moment), known (gold and training) pairs, settings."""
