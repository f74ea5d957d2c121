"""Celery jobs for the reports area."""
