"""The error every machine-judge request raises when it cannot be carried out."""
from __future__ import annotations


class MachineJudgeError(ValueError):
    """A machine-judge request that cannot be carried out; the message says why."""
