"""The registered names of the Celery tasks that run jobs.

Services start jobs by these names (through dispatch.job_enqueue) and never import
annotation.tasks, which imports the services: one direction only, no import circle. Each task
module registers its task under the same constant, and a test checks that every name here is a
task the Celery app knows.

Every operation of the registry (annotation/services/operations/) runs under RUN_OPERATION: the
job row names its operation. The other job task names are those jobs were queued under before the
registry; they stay registered as aliases of the one runner (annotation/tasks/operations.py), so a
job queued by an older version, or re-sent by the reaper under its stored task name, still runs.
An operation names its old task as `legacy_task`; a name here that no operation claims yet is
still served by its own task in annotation/tasks/<area>.py.
"""
from __future__ import annotations

RUN_OPERATION = "annotation.tasks.run_operation"

PING = "annotation.tasks.ping"
IMPORT_DATASET = "annotation.tasks.import_dataset"
IMPORT_RUN = "annotation.tasks.import_run"
IMPORT_JUDGMENTS = "annotation.tasks.import_judgments"
BUILD_POOL = "annotation.tasks.build_pool"
POOL_ADD_RUN = "annotation.tasks.pool_add_run"
COMPUTE_REPORT = "annotation.tasks.compute_report"
EXPORT_LABELS = "annotation.tasks.export_labels"
BUILD_MOMENT_POOL = "annotation.tasks.build_moment_pool"
BUILD_SAMPLED_POOL = "annotation.tasks.build_sampled_pool"
MOMENT_METRICS_REPORT = "annotation.tasks.moment_metrics_report"
INFAP_REPORT = "annotation.tasks.infap_report"
COMPUTE_PROXY_MATRICES = "annotation.tasks.compute_proxy_matrices"
PROXY_NDCG_REPORT = "annotation.tasks.proxy_ndcg_report"
PROXY_ANALYSIS_REPORT = "annotation.tasks.proxy_analysis_report"
BUILD_RANKING_STUDY = "annotation.tasks.build_ranking_study"
RANKING_STUDY_REPORT = "annotation.tasks.ranking_study_report"
EVALUATE_JUDGMENT_SET = "annotation.tasks.evaluate_judgment_set"
JUDGMENT_SET_AGREEMENT = "annotation.tasks.judgment_set_agreement"
JUDGMENT_SET_FROM_POOL = "annotation.tasks.judgment_set_from_pool"
JUDGING_SIMULATION = "annotation.tasks.judging_simulation"
JUDGING_REORDER = "annotation.tasks.judging_reorder"
MACHINE_JUDGE_SET_REPORT = "annotation.tasks.machine_judge_set_report"
IMPORT_MACHINE_JUDGMENTS = "annotation.tasks.import_machine_judgments"
CREATE_RELEASE = "annotation.tasks.create_release"
RUN_MACHINE_JUDGE = "annotation.tasks.run_machine_judge"

# Periodic (celery beat) tasks: they take no job.
RELEASE_EXPIRED_LEASES = "annotation.tasks.release_expired_leases"
RELEASE_EXPIRED_RANKING_LEASES = "annotation.tasks.release_expired_ranking_leases"
RECOVER_JOBS = "annotation.tasks.recover_jobs"
CLEAN_JOB_FILES = "annotation.tasks.clean_job_files"

JOB_TASKS = frozenset({
    RUN_OPERATION, PING, IMPORT_DATASET, IMPORT_RUN, IMPORT_JUDGMENTS, BUILD_POOL, POOL_ADD_RUN, COMPUTE_REPORT, EXPORT_LABELS,
    BUILD_MOMENT_POOL, BUILD_SAMPLED_POOL, MOMENT_METRICS_REPORT, INFAP_REPORT, COMPUTE_PROXY_MATRICES,
    PROXY_NDCG_REPORT, PROXY_ANALYSIS_REPORT, BUILD_RANKING_STUDY, RANKING_STUDY_REPORT,
    EVALUATE_JUDGMENT_SET, JUDGMENT_SET_AGREEMENT, JUDGMENT_SET_FROM_POOL, JUDGING_SIMULATION, JUDGING_REORDER,
    MACHINE_JUDGE_SET_REPORT, IMPORT_MACHINE_JUDGMENTS, RUN_MACHINE_JUDGE,
    CREATE_RELEASE,
})
