"""Start targets of the jobs area's operations (see __init__.py)."""

TARGETS = {"ping": lambda pool, runs, js: (None, {})}
