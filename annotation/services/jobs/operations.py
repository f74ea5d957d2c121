"""The jobs area's own operation: `ping`, a no-op job that checks end to end that a worker is
consuming the queue."""
from __future__ import annotations

from annotation.models import Job
from annotation.services.jobs import task_names
from annotation.services.operations.operation import Operation


def _ping_run(job: Job, progress) -> dict:
    return {"pong": True, "params": job.params}


PING = Operation(name="ping", title="Ping a worker", run=_ping_run, legacy_task=task_names.PING)

OPERATIONS = (PING,)
