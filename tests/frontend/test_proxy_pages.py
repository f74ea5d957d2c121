"""Admin pages of the proxies area: the overview and each kind of proxy report as tables, and
who may open them."""
from __future__ import annotations

import pytest

from annotation.services.proxies.matrices import (proxy_analysis_report_create, proxy_matrices_compute,
                                                  proxy_ndcg_report_create)
from annotation.services.ranking.report import ranking_report_create
from annotation.services.ranking.submissions import ranking_submission_create
from tests.annotation.services.proxies.test_proxy_matrices import TINY_RUN, make_run, tiny  # noqa: F401  (fixture)
from tests.annotation.services.ranking.helpers import make_study
from tests.factories import lease_task_for, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def pages(tiny):  # noqa: F811
    (modern,) = proxy_matrices_compute(dataset=tiny, proxies=["bow"], mode="modern")
    (paper,) = proxy_matrices_compute(dataset=tiny, proxies=["bow"], mode="paper")
    ndcg = proxy_ndcg_report_create(run=make_run(tiny, TINY_RUN), artefact=modern)
    analysis = proxy_analysis_report_create(dataset=tiny, artefacts=[modern, paper], thresholds=[0.3, 1.0])
    raters = [make_user("rater") for _ in range(3)]
    study = make_study(n_clips=1, raters=raters)
    task = study.tasks.get()
    order = list(task.captions.values_list("caption_id", flat=True))
    for r in raters:
        ranking_submission_create(rater=r, client_id="k", lease=lease_task_for(r, task).token, order=order)
    human = ranking_report_create(study=study)
    return {"modern": modern, "ndcg": ndcg, "analysis": analysis, "human": human, "study": study}


def signed_in(client, role):
    client.force_login(make_user(role))
    return client


def test_overview_lists_matrices_studies_and_reports(client, pages):
    html = signed_in(client, "admin").get("/proxies/").content.decode()
    assert f"/api/v1/proxy-matrices/{pages['modern'].pk}/download/" in html
    assert pages["study"].name in html and "1 / 1 (100%)" in html
    for key in ("ndcg", "analysis", "human"):
        assert f"/proxies/reports/{pages[key].pk}/" in html


def test_overview_random_baseline(client, pages, tiny):  # noqa: F811
    from annotation.services.proxies.matrices import proxy_random_baseline_table

    admin = signed_in(client, "admin")
    assert f'id="baseline-{tiny.pk}"' in admin.get("/proxies/").content.decode()
    html = admin.get(f"/proxies/?baseline={tiny.pk}&draws=3&seed=1&gain=linear&empty=zero").content.decode()
    (row,) = proxy_random_baseline_table(dataset=tiny, draws=3, seed=1, empty="zero")["proxies"]
    assert f'<td data-col="mean">{100 * row["mean"]:.2f}%</td>' in html
    for bad, message in (("draws=0", "draws must be between 1 and 1000"), ("seed=x", "must be whole numbers"),
                         ("gain=cubic", "gain must be one of linear, exponential")):
        html = admin.get(f"/proxies/?baseline={tiny.pk}&{bad}").content.decode()
        assert message in html and f'id="baseline-table-{tiny.pk}"' not in html


def test_report_tables(client, pages):
    admin = signed_in(client, "admin")
    human = admin.get(f"/proxies/reports/{pages['human'].pk}/").content.decode()
    bow = pages["human"].result["proxies"]["bow"]
    assert "Human-to-proxy agreement" in human and f"{bow['consistent_pairs']} / 10" in human
    ndcg = admin.get(f"/proxies/reports/{pages['ndcg'].pk}/").content.decode()
    assert f"{pages['ndcg'].result['mean']:.4f}" in ndcg
    analysis = admin.get(f"/proxies/reports/{pages['analysis'].pk}/").content.decode()
    assert "bow/paper" in analysis and "1.67" in analysis  # 5/3 captions per clip at S >= 0.3


@pytest.mark.parametrize("role", ["rater", "researcher"])
def test_pages_are_for_admins(client, pages, role):
    signed_in(client, role)
    assert client.get("/proxies/").status_code == 403
    assert client.get(f"/proxies/reports/{pages['ndcg'].pk}/").status_code == 403


def test_signed_out_visitors_go_to_login(client, pages):
    resp = client.get("/proxies/")
    assert resp.status_code == 302 and "/login/" in resp["Location"]
