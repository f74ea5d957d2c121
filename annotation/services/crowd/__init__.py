"""Crowd campaigns: studies that open a pool to Prolific or MTurk workers (studies, arrivals,
quota and completion) and the pool's rater quality rules (quality)."""
