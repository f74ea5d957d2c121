"""Who may call what: every operation of the OpenAPI schema, called as every kind of caller.

PERMISSIONS is the one table of who may call each operation. Each row lists what each caller gets:
ALLOW (the view's own code runs: any status but 401/403, and never a 5xx) or the exact status of a
refusal. Columns, in order:

    anonymous    no credentials
    no_role      a signed-in account in no role group (neither staff, rater nor researcher)
    rater        a rater who is a member of the pool and of the ranking study used in the paths
    other_rater  a rater who is a member of nothing: where the API hides what exists, a 404
    researcher   read-only token
    admin        staff

Anonymous callers get 403, not 401: session authentication comes first, and DRF answers with the
first authenticator's challenge, which sessions do not have.

The first test fails when the schema has an operation the table lacks, or the other way round:
a new endpoint must be added here, with the callers it admits. To update the table, run the
first test and copy the operations it names.
"""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.api.api_world import ROLES, build_world

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

ALLOW = "allow"
N = 404  # hidden on purpose: the other rater is not told the pool, study or lease exists

PERMISSIONS = {
    # operation                                             anonymous, no_role, rater, other_rater, researcher, admin
    "GET /api/v1/datasets/":                                         (403, 403, 403, 403, ALLOW, ALLOW),
    "POST /api/v1/datasets/import/":                                 (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/datasets/{dataset_id}/":                            (403, 403, 403, 403, ALLOW, ALLOW),
    "DELETE /api/v1/datasets/{dataset_id}/":                         (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/datasets/{dataset_id}/judgments/":                  (403, 403, 403, 403, ALLOW, ALLOW),
    "GET /api/v1/datasets/{dataset_id}/media-check/":                (403, 403, 403, 403, ALLOW, ALLOW),
    "POST /api/v1/datasets/{dataset_id}/media-check/":               (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/datasets/{dataset_id}/media-prepare/":             (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/datasets/{dataset_id}/judgments/import/":          (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/datasets/{dataset_id}/proxies/":                    (403, 403, 403, 403, ALLOW, ALLOW),
    "POST /api/v1/datasets/{dataset_id}/proxies/":                   (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/datasets/{dataset_id}/proxy-analysis/":            (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/datasets/{dataset_id}/runs/":                       (403, 403, 403, 403, ALLOW, ALLOW),
    "POST /api/v1/datasets/{dataset_id}/runs/import/":               (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/exports/":                                          (403, 403, 403, 403, ALLOW, ALLOW),
    "GET /api/v1/exports/{export_id}/download/":                     (403, 403, 403, 403, ALLOW, ALLOW),
    "GET /api/v1/jobs/":                                             (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/jobs/{job_id}/":                                    (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/jobs/{job_id}/retry/":                             (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/judgment-sets/{judgment_set_id}/":                  (403, 403, 403, 403, ALLOW, ALLOW),
    "DELETE /api/v1/judgment-sets/{judgment_set_id}/":               (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/judgment-sets/{judgment_set_id}/agreement/":       (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/judgment-sets/{judgment_set_id}/download/":         (403, 403, 403, 403, ALLOW, ALLOW),
    "POST /api/v1/judgment-sets/{judgment_set_id}/evaluate/":        (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/judgment-sets/{judgment_set_id}/machine-judges/":  (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/judgment-sets/{judgment_set_id}/machine-judge-report/": (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/machine-judges/":                                   (403, 403, 403, 403, ALLOW, ALLOW),
    "GET /api/v1/machine-judges/{judge_id}/":                        (403, 403, 403, 403, ALLOW, ALLOW),
    "POST /api/v1/pools/{pool_id}/machine-judges/":                  (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/pools/{pool_id}/machine-judges/run/":              (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/judgment-sets/{judgment_set_id}/machine-judges/run/": (403, 403, 403, 403, 403, ALLOW),
    # Registered machine judges name an outbound URL and a key variable: admins only, even to read.
    "GET /api/v1/judge-endpoints/":                                  (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/judge-endpoints/":                                 (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/judge-endpoints/{endpoint_id}/":                    (403, 403, 403, 403, 403, ALLOW),
    "PATCH /api/v1/judge-endpoints/{endpoint_id}/":                  (403, 403, 403, 403, 403, ALLOW),
    "DELETE /api/v1/judge-endpoints/{endpoint_id}/":                 (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/labels/":                                          (403, 403, ALLOW, N, 403, 403),
    "POST /api/v1/leases/{lease_id}/heartbeat/":                     (403, 403, ALLOW, N, 403, 403),
    "POST /api/v1/leases/{lease_id}/release/":                       (403, 403, ALLOW, N, 403, 403),
    "GET /api/v1/pools/{pool_id}/crowd-study/":                      (403, 403, 403, 403, 403, ALLOW),
    "PUT /api/v1/pools/{pool_id}/crowd-study/":                      (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/pools/{pool_id}/quality-rule/":                     (403, 403, 403, 403, 403, ALLOW),
    "PUT /api/v1/pools/{pool_id}/quality-rule/":                     (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/pools/{pool_id}/rater-quality/":                    (403, 403, 403, 403, 403, ALLOW),
    # A crowd study's link: anyone may arrive; its other endpoints are for the study's own
    # workers (signed in by the link), 404 for every other account (tests/api/test_crowd_flow.py).
    "POST /api/v1/study/{token}/arrive/":                            (ALLOW, ALLOW, ALLOW, ALLOW, ALLOW, ALLOW),
    "GET /api/v1/study/{token}/progress/":                           (403, N, N, N, N, N),
    "POST /api/v1/study/{token}/consent/":                           (403, N, N, N, N, N),
    "POST /api/v1/study/{token}/guidelines-read/":                   (403, N, N, N, N, N),
    "POST /api/v1/study/{token}/leave/":                             (403, N, N, N, N, N),
    "POST /api/v1/study/{token}/return/":                            (403, N, N, N, N, N),
    "GET /api/v1/releases/":                                         (403, 403, 403, 403, ALLOW, ALLOW),
    "POST /api/v1/releases/":                                        (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/releases/{release_id}/":                            (403, 403, 403, 403, ALLOW, ALLOW),
    "GET /api/v1/releases/{release_id}/archive/":                    (403, 403, 403, 403, ALLOW, ALLOW),
    "GET /api/v1/releases/{release_id}/submissions/":                (403, 403, 403, 403, ALLOW, ALLOW),
    # Anonymous and no-role callers submit only to a release an admin opened (none here).
    "POST /api/v1/releases/{release_id}/submissions/":               (403, 403, 403, 403, ALLOW, ALLOW),
    "GET /api/v1/releases/{release_id}/submission-policy/":          (403, 403, 403, 403, ALLOW, ALLOW),
    "PATCH /api/v1/releases/{release_id}/submission-policy/":        (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/submissions/{submission_id}/":                      (403, 403, 403, 403, ALLOW, ALLOW),
    "POST /api/v1/submissions/{submission_id}/accept/":              (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/submissions/{submission_id}/rescore/":             (403, 403, 403, 403, ALLOW, ALLOW),
    "GET /api/v1/me/":                                               (403, 403, ALLOW, ALLOW, ALLOW, ALLOW),
    "POST /api/v1/moment-pools/":                                    (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/my/answers/{item_id}/change/":                     (403, 403, ALLOW, N, 403, 403),
    "GET /api/v1/my/labels/":                                        (403, 403, ALLOW, ALLOW, 403, 403),
    "GET /api/v1/my/pools/":                                         (403, 403, ALLOW, ALLOW, 403, 403),
    "GET /api/v1/my/ranking-studies/":                               (403, 403, ALLOW, ALLOW, 403, 403),
    "GET /api/v1/my/recent-answers/":                                (403, 403, ALLOW, ALLOW, 403, 403),
    "POST /api/v1/pairs/{pair_id}/adjudicate/":                      (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/pairs/{pair_id}/requeue/":                         (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/pools/":                                            (403, 403, 403, 403, ALLOW, ALLOW),
    "POST /api/v1/pools/build/":                                     (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/pools/{pool_id}/":                                  (403, 403, 403, 403, ALLOW, ALLOW),
    "DELETE /api/v1/pools/{pool_id}/":                               (403, 403, 403, 403, 403, ALLOW),
    "PATCH /api/v1/pools/{pool_id}/":                                (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/pools/{pool_id}/attention/":                        (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/pools/{pool_id}/exports/":                         (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/pools/{pool_id}/infap/":                            (403, 403, 403, 403, ALLOW, ALLOW),
    "POST /api/v1/pools/{pool_id}/infap/":                           (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/pools/{pool_id}/infap/{report_id}.csv":             (403, 403, 403, 403, ALLOW, ALLOW),
    "GET /api/v1/pools/{pool_id}/infap/{report_id}/":                (403, 403, 403, 403, ALLOW, ALLOW),
    "POST /api/v1/pools/{pool_id}/judging/resume/":                  (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/pools/{pool_id}/judgment-sets/":                   (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/pools/{pool_id}/judging-simulation/":              (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/judgment-sets/{judgment_set_id}/judging-simulation/": (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/pools/{pool_id}/known-pairs/":                     (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/pools/{pool_id}/live/":                             (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/pools/{pool_id}/members/":                          (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/pools/{pool_id}/members/":                         (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/pools/{pool_id}/queries/":                          (403, 403, 403, 403, ALLOW, ALLOW),
    "POST /api/v1/pools/{pool_id}/queries/{caption_id}/resume/":     (403, 403, 403, 403, 403, ALLOW),
    "DELETE /api/v1/pools/{pool_id}/members/{user_id}/":             (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/pools/{pool_id}/members/{user_id}/reset-training/": (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/pools/{pool_id}/moment-design/":                    (403, 403, 403, 403, ALLOW, ALLOW),
    "GET /api/v1/pools/{pool_id}/moment-metrics/":                   (403, 403, 403, 403, ALLOW, ALLOW),
    "POST /api/v1/pools/{pool_id}/moment-metrics/":                  (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/pools/{pool_id}/moment-metrics/{report_id}.csv":    (403, 403, 403, 403, ALLOW, ALLOW),
    "GET /api/v1/pools/{pool_id}/moment-metrics/{report_id}/":       (403, 403, 403, 403, ALLOW, ALLOW),
    "GET /api/v1/pools/{pool_id}/moment-spans/":                     (403, 403, 403, 403, ALLOW, ALLOW),
    "GET /api/v1/pools/{pool_id}/my-progress/":                      (403, 403, ALLOW, N, 403, 403),
    "POST /api/v1/pools/{pool_id}/next/":                            (403, 403, ALLOW, N, 403, 403),
    "GET /api/v1/pools/{pool_id}/query-chart.svg":                   (403, 403, 403, 403, ALLOW, ALLOW),
    "POST /api/v1/pools/{pool_id}/reports/":                         (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/pools/{pool_id}/runs/":                            (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/pools/{pool_id}/sampled-design/":                   (403, 403, 403, 403, ALLOW, ALLOW),
    "GET /api/v1/pools/{pool_id}/stats/":                            (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/proxy-matrices/{artefact_id}/download/":            (403, 403, 403, 403, ALLOW, ALLOW),
    "POST /api/v1/ranking-leases/{lease_id}/heartbeat/":             (403, 403, ALLOW, N, 403, 403),
    "POST /api/v1/ranking-leases/{lease_id}/release/":               (403, 403, ALLOW, N, 403, 403),
    "GET /api/v1/ranking-studies/":                                  (403, 403, 403, 403, ALLOW, ALLOW),
    "POST /api/v1/ranking-studies/":                                 (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/ranking-studies/{study_id}/":                       (403, 403, 403, 403, ALLOW, ALLOW),
    "GET /api/v1/ranking-studies/{study_id}/members/":               (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/ranking-studies/{study_id}/members/":              (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/ranking-studies/{study_id}/next/":                 (403, 403, ALLOW, N, 403, 403),
    "POST /api/v1/ranking-studies/{study_id}/report/":               (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/ranking-submissions/":                             (403, 403, ALLOW, N, 403, 403),
    "GET /api/v1/raters/":                                           (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/raters/":                                          (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/raters/import/":                                   (403, 403, 403, 403, 403, ALLOW),
    "PATCH /api/v1/raters/{user_id}/":                               (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/raters/{user_id}/password-reset/":                 (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/researchers/":                                      (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/researchers/":                                     (403, 403, 403, 403, 403, ALLOW),
    "DELETE /api/v1/researchers/{user_id}/":                         (403, 403, 403, 403, 403, ALLOW),
    "GET /api/v1/reports/":                                          (403, 403, 403, 403, ALLOW, ALLOW),
    "GET /api/v1/reports/{report_id}/":                              (403, 403, 403, 403, ALLOW, ALLOW),
    "GET /api/v1/reports/{report_id}/csv/":                          (403, 403, 403, 403, ALLOW, ALLOW),
    "GET /api/v1/reports/{report_id}/file/":                         (403, 403, 403, 403, ALLOW, ALLOW),
    "POST /api/v1/runs/{run_id}/proxy-ndcg/":                        (403, 403, 403, 403, 403, ALLOW),
    "POST /api/v1/sampled-pools/":                                   (403, 403, 403, 403, 403, ALLOW),
}


def rater_bodies(world) -> dict:
    """Bodies that name the member rater's objects, so a refusal of the other rater is about them."""
    ids = world.ids
    return {
        "POST /api/v1/labels/": {"client_id": "perm-1", "lease_id": ids["lease"], "value": "relevant"},
        "POST /api/v1/my/answers/{item_id}/change/": {"value": "not_relevant"},
        "POST /api/v1/ranking-submissions/": {"client_id": "perm-2", "lease_id": ids["ranking_lease"],
                                              "order": ids["ranking_order"]},
    }


def schema_operations(client) -> set[str]:
    schema = client.get("/api/v1/schema/", {"format": "json"}).json()
    return {f"{method.upper()} {path}" for path, item in schema["paths"].items() for method in item
            if method in ("get", "post", "put", "patch", "delete")}


@pytest.fixture
def world(settings):
    # Throttles count every call of a test; these tests are about permissions, not rates.
    settings.REST_FRAMEWORK = settings.REST_FRAMEWORK | {
        "DEFAULT_THROTTLE_RATES": {scope: None for scope in settings.REST_FRAMEWORK.get("DEFAULT_THROTTLE_RATES", {})}}
    return build_world()


def client_as(world, role: str) -> APIClient:
    client = APIClient()
    if world.tokens[role]:
        client.credentials(HTTP_AUTHORIZATION=f"Token {world.tokens[role]}")
    return client


def test_the_table_lists_exactly_the_schemas_operations(world):
    in_schema = schema_operations(client_as(world, "admin"))
    missing, stale = sorted(in_schema - set(PERMISSIONS)), sorted(set(PERMISSIONS) - in_schema)
    assert not missing and not stale, f"add to PERMISSIONS: {missing}; remove from PERMISSIONS: {stale}"
    assert all(len(row) == len(ROLES) for row in PERMISSIONS.values())


@pytest.mark.parametrize("operation", sorted(PERMISSIONS))
def test_each_caller_gets_what_the_table_says(world, operation):
    method, template = operation.split(" ", 1)
    path = template.format(**world.path_values(template))
    body = rater_bodies(world).get(operation, {})
    got = {}
    for role, expected in zip(ROLES, PERMISSIONS[operation]):
        client = client_as(world, role)
        response = getattr(client, method.lower())(path, body, format="json") if method != "GET" else client.get(path)
        status = response.status_code
        got[role] = status
        assert status < 500, f"{operation} as {role}: {status}"
        if expected == ALLOW:
            assert status not in (401, 403), f"{operation} as {role} was refused ({status}): {got}"
        else:
            assert status == expected, f"{operation} as {role}: expected {expected}, got {status}: {got}"
