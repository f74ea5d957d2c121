"""Jobs that survive a lost worker (heartbeat, retries, task name)."""
import django.db.models.deletion
from django.db import migrations, models

# The task each kind of job ran before jobs stored their task name, so that jobs created before
# this migration can still be retried (a copy: the migration must not depend on today's code).
_TASKS_BY_KIND = {
    "ping": "ping", "import_dataset": "import_dataset", "import_run": "import_run", "build_pool": "build_pool",
    "pool_add_run": "pool_add_run", "import_judgments": "import_judgments", "build_moment_pool": "build_moment_pool",
    "build_sampled_pool": "build_sampled_pool", "moment_metrics": "moment_metrics_report", "infap": "infap_report",
    "proxy_matrices": "compute_proxy_matrices", "proxy_ndcg": "proxy_ndcg_report",
    "proxy_analysis": "proxy_analysis_report", "build_ranking_study": "build_ranking_study",
    "ranking_study_report": "ranking_study_report",
}
_TASKS_BY_PREFIX = {"report_": "compute_report", "export_": "export_labels"}


def _task_for(kind: str) -> str:
    name = _TASKS_BY_KIND.get(kind) or next((t for p, t in _TASKS_BY_PREFIX.items() if kind.startswith(p)), "")
    return f"annotation.tasks.{name}" if name else ""


def backfill_task_names(apps, schema_editor):
    Job = apps.get_model("annotation", "Job")
    for kind in Job.objects.order_by().values_list("kind", flat=True).distinct():
        task = _task_for(kind)
        if task:
            Job.objects.filter(kind=kind, task_name="").update(task_name=task)


class Migration(migrations.Migration):
    dependencies = [("annotation", "0001_initial")]

    operations = [
        migrations.CreateModel(
            name="JobAttempt",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("number", models.PositiveIntegerField()),
                ("token", models.UUIDField(unique=True)),
                ("worker", models.CharField(blank=True, max_length=255)),
                ("started_at", models.DateTimeField()),
                ("heartbeat_at", models.DateTimeField()),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
                ("outcome", models.CharField(choices=[("running", "Running"), ("succeeded", "Succeeded"), ("failed", "Failed"),
                                                      ("lost", "Lost"), ("superseded", "Superseded")],
                                             default="running", max_length=12)),
                ("message", models.TextField(blank=True)),
                ("job", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="attempt_records",
                                          to="annotation.job")),
            ],
            options={"ordering": ["job", "number"]},
        ),
        migrations.AddField(model_name="job", name="attempts", field=models.PositiveIntegerField(default=0)),
        migrations.AddField(model_name="job", name="attempts_at_submit", field=models.PositiveIntegerField(default=0)),
        migrations.AddField(model_name="job", name="dispatched_at", field=models.DateTimeField(blank=True, null=True)),
        migrations.AddField(model_name="job", name="dispatches", field=models.PositiveIntegerField(default=0)),
        migrations.AddField(model_name="job", name="execution_token", field=models.UUIDField(blank=True, null=True)),
        migrations.AddField(model_name="job", name="task_name",
                            field=models.CharField(blank=True, default="", max_length=200)),
        migrations.AddIndex(model_name="job", index=models.Index(fields=["status"], name="job_status_idx")),
        migrations.AddIndex(model_name="jobattempt",
                            index=models.Index(fields=["outcome", "heartbeat_at"], name="job_attempt_liveness_idx")),
        migrations.AddConstraint(model_name="jobattempt",
                                 constraint=models.UniqueConstraint(fields=("job", "number"),
                                                                    name="job_attempt_unique_number")),
        migrations.RunPython(backfill_task_names, migrations.RunPython.noop),
    ]
