"""Celery jobs for the proxies area."""
