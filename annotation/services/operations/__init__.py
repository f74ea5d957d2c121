"""Background operations, declared once each (see docs/architecture.md, "Background operations").

- operation.py  what an operation is: name, title, parameters (`Param`), a check, a run
- start.py      the one service that starts any operation as a job (validation, idempotency, the
                job row, the send to Celery)
- run.py        the one runner: a job's operation run by job_execute (annotation/tasks/operations.py)
- registry.py   every operation, by name, and the task names jobs queued before the registry carry

An operation is declared in its area package, beside the service it calls (e.g.
services/pools/operations.py). Nothing is re-exported here: registry.py imports every area, and
the areas import operation.py and start.py.
"""
