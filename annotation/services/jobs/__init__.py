"""Background jobs: their lifecycle (claim, heartbeat, finish), dispatch to Celery, recovery of
jobs whose worker was lost, and the files they leave.

- lifecycle.py  create, execute (claim, heartbeat, work and finish in one transaction), progress
- dispatch.py   the one place jobs are sent to Celery, by registered task name (task_names.py)
- recovery.py   the reaper (celery beat) and admins' retries
- files.py      job output folders, uploads, and the periodic clean-up
- reports.py   starting the jobs not yet declared as operations
  (services/operations/: pool builds, releases, simulations, imports, machine judges, judgment sets are)
- operations.py  the `ping` operation

Only the lifecycle and dispatch are re-exported here: the "start" modules import other services,
which import this package.
"""
from annotation.services.jobs.dispatch import job_enqueue, job_send
from annotation.services.jobs.lifecycle import (JobSuperseded, job_create, job_execute, job_live_progress,
                                                job_progress_reporter)

__all__ = ["JobSuperseded", "job_create", "job_enqueue", "job_execute", "job_live_progress", "job_progress_reporter",
           "job_send"]
