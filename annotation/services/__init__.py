"""Writes: every state change of the domain goes through a function here."""
