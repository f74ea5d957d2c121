"""Aggregation of a pool's human votes beyond majority (Dawid–Skene, MACE): pool_labels.py. The
models themselves are annotation/analysis/aggregation.py."""
