"""A judgment set's counts as words, the same wherever they are shown (import_judgments' message,
the reports page's list of sets)."""
from __future__ import annotations

from enum import Enum

LABEL_ORDER = ("relevant", "not_relevant", "disagreement")


def counts_in_words(counts: dict) -> str:
    """`{"relevant": 15649, "not_relevant": 42769, "records": 58418}` -> 'relevant: 15649, not relevant: 42769,
    records: 58418'. Keys may be ImportedJudgment.Label members or plain strings (sets imported before the
    service stored strings); the verdicts come first, in label order."""
    words = {(key.value if isinstance(key, Enum) else str(key)): value for key, value in counts.items()}
    keys = [k for k in LABEL_ORDER if k in words] + [k for k in words if k not in LABEL_ORDER]
    return ", ".join(f"{key.replace('_', ' ')}: {_value_in_words(words[key])}" for key in keys)


def _value_in_words(value) -> str:
    if isinstance(value, (list, tuple)):
        return " / ".join(map(str, value)) or "none"
    return str(value)
