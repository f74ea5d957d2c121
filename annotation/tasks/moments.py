"""Celery jobs for the moments area."""
