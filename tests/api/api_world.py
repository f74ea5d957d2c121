"""One small but complete platform state for tests that call every API operation (the permission
table, the schema fuzz test): each role's account with an API token, a dataset with runs and a pool,
a rater who is a member of the pool and of a ranking study and holds a lease on each, a rater who is
a member of nothing, an agreement report, a qrels export, a bag-of-words proxy matrix and a job. (The
pool is not a moment or sampled pool: its moment-metrics and infAP routes answer 404 or 400.)

`path_values` gives, for each path parameter of the OpenAPI schema, the id of an object that
exists, so a call reaches the view's real code instead of stopping at a 404."""
from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth import get_user_model

from annotation.models import CrowdStudy, Job, PooledPair
from annotation.selectors.ranking import ranking_task_display
from annotation.services.exports.labels import export_create
from annotation.services.judgment_sets.imports import judgments_import
from annotation.services.proxies.matrices import proxy_matrices_compute
from annotation.services.queue.leases import item_id_for, lease_next
from annotation.services.ranking.leases import ranking_lease_next
from annotation.services.ranking.study import ranking_memberships_grant, ranking_study_create
from annotation.services.accounts.raters import memberships_grant
from annotation.services.reports.create import report_create
from annotation.services.accounts.users import api_token_for
from tests.factories import make_dataset, make_pool_with_runs, make_rater, make_user, unique

ROLES = ("anonymous", "no_role", "rater", "other_rater", "researcher", "admin")


@dataclass
class World:
    users: dict  # role -> user (None for anonymous)
    tokens: dict  # role -> API token key (None for anonymous)
    ids: dict  # object name -> id or token
    runs: list = field(default_factory=list)

    def path_values(self, path: str) -> dict:
        """Existing objects for the path parameters of `path` (an OpenAPI path template)."""
        ids = self.ids
        values = {"dataset_id": ids["dataset"], "pool_id": ids["pool"], "pair_id": ids["pair"], "user_id": ids["rater"],
                  "report_id": ids["report"], "export_id": ids["export"], "artefact_id": ids["matrix"],
                  "job_id": ids["job"], "run_id": ids["run"], "study_id": ids["study"],
                  "judgment_set_id": ids["judgment_set"], "item_id": ids["item"], "token": ids["crowd_study_token"],
                  "lease_id": ids["ranking_lease"] if path.startswith("/api/v1/ranking-leases/") else ids["lease"],
                  "caption_id": PooledPair.objects.get(pk=ids["pair"]).caption_id,
                  # No machine judge in the world: readers get a 404, which the table counts as admitted.
                  "judge_id": ids.get("machine_judge", 999_999),
                  # No release either (tests/api/test_releases_api.py makes them): readers get a 404.
                  "release_id": ids.get("release", 999_999),
                  "submission_id": ids.get("submission", 999_999),
                  # No registered judge either (a DELETE must not remove the world's): a 404 for admins.
                  "endpoint_id": ids.get("judge_endpoint", 999_999)}
        return values

    def headers(self, role: str) -> dict:
        token = self.tokens[role]
        return {"Authorization": f"Token {token}"} if token else {}


def _judgment_set(pool):
    """A rater_labels set on the pool's first pair (so agreement and evaluate reach their code)."""
    pair = PooledPair.objects.filter(pool=pool).select_related("caption", "clip").first()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "labels.csv"
        path.write_text(f"query,item,rater,value\n{pair.caption.external_id},{pair.clip.external_id},a,1\n"
                        f"{pair.caption.external_id},{pair.clip.external_id},b,0\n")
        return judgments_import(dataset=pool.dataset, path=path, fmt="rater_labels").judgment_set


def build_world() -> World:
    pool, runs = make_pool_with_runs(captions=4, clips=6, depth=3)
    dataset = pool.dataset
    rater, other_rater = make_rater(), make_rater()
    memberships_grant(pool=pool, users=[rater])
    no_role = get_user_model().objects.create_user(username=unique("norole"), password="pw-123456")
    users = {"anonymous": None, "no_role": no_role, "rater": rater, "other_rater": other_rater,
             "researcher": make_user("researcher"), "admin": make_user("admin")}
    tokens = {role: (api_token_for(user=user) if user else None) for role, user in users.items()}

    lease = lease_next(pool=pool, rater=rater).lease
    study = ranking_study_create(dataset=make_dataset(clips=6, captions=6), name=unique("study"), proxies=["bow"],
                                 n_clips=2)
    ranking_memberships_grant(study=study, users=[rater])
    ranking_lease = ranking_lease_next(study=study, rater=rater).lease
    # Reports and files made by the real services, so views reading them see what they will in use.
    report = report_create(pool=pool, kind="agreement")
    export = export_create(pool=pool, fmt="qrels")
    (matrix,) = proxy_matrices_compute(dataset=dataset, proxies=["bow"])
    job = Job.objects.create(kind="import_dataset", params={}, created_by=users["admin"])
    judgment_set = _judgment_set(pool)
    crowd_study = CrowdStudy.objects.create(pool=pool, platform="prolific", title="crowd", completion_code="C0DE",
                                            quota_pairs=5, consent_text="I agree.", training_required=False)
    ids = {"judgment_set": judgment_set.pk, "dataset": dataset.pk, "pool": pool.pk, "pair": PooledPair.objects.filter(pool=pool).first().pk,
           "rater": rater.pk, "other_rater": other_rater.pk, "run": runs[0].pk, "study": study.pk,
           "lease": lease.token, "ranking_lease": ranking_lease.token, "report": report.pk,
           "export": export.pk, "matrix": matrix.pk, "job": job.pk, "item": item_id_for("pair", lease.pair_id),
           "crowd_study_token": crowd_study.token,
           "ranking_order": [c["id"] for c in ranking_task_display(task=ranking_lease.task, rater=rater)]}
    return World(users=users, tokens=tokens, ids=ids, runs=runs)
