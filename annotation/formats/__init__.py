"""Readers and writers of the files the platform exchanges (no database access here)."""
