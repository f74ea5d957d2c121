"""Pages of moment and sampled pools: the metrics table in the papers' layout, the inferred-AP page
with its per-caption chart, the build forms for admins, and who may open them."""
from __future__ import annotations

import pytest

from annotation.services.pools.moments import moment_pool_create
from annotation.services.reports.kinds.infap import infap_report_create
from annotation.services.reports.kinds.moment_metrics import moment_metrics_report_create
from annotation.services.pools.build import pool_create
from annotation.services.pools.sampled import sampled_pool_create
from tests.annotation.services.pools.test_moment_pools import moment_run
from tests.annotation.services.pools.test_sampled_pools import clip_run, rankings
from tests.factories import make_dataset, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def pages():
    moments_data = make_dataset(clips=3, captions=2)
    moments_data.clips.update(duration=10)  # q1 was written for the whole of v1 [0, 10], q2 for v2
    a = moment_run(moments_data, "moment-A", [("q1", "v1", 0, 10), ("q2", "v2", 0, 5)])
    b = moment_run(moments_data, "moment-B", [("q1", "v2", 0, 10), ("q2", "v1", 0, 5)])
    moments = moment_pool_create(dataset=moments_data, name="spans", runs=[a, b])
    metrics = moment_metrics_report_create(pool=moments, ks=(1, 2))
    deep_data = make_dataset(clips=30, captions=3)
    runs = [clip_run(deep_data, name, rankings(shift)) for name, shift in (("deep-A", 0), ("deep-B", 1))]
    sampled = sampled_pool_create(dataset=deep_data, name="deep", runs=runs, strata=[[1, 2, 1], [3, 20, 0.25]], seed=1)
    infap = infap_report_create(pool=sampled)
    return {"moments": moments, "metrics": metrics, "sampled": sampled, "infap": infap, "runs": runs,
            "urls": ["/moments/", f"/moments/pools/{moments.pk}/", f"/moments/pools/{sampled.pk}/",
                     f"/moments/pools/{moments.pk}/moment-metrics/{metrics.pk}/",
                     f"/moments/pools/{sampled.pk}/infap/{infap.pk}/"]}


def signed_in(client, role: str):
    client.force_login(make_user(role))
    return client


@pytest.mark.parametrize("role, status", [("admin", 200), ("researcher", 200), ("rater", 403)])
def test_who_may_open_the_pages(client, pages, role, status):
    signed_in(client, role)
    for url in pages["urls"]:
        assert client.get(url).status_code == status, url


def test_signed_out_visitors_are_sent_to_log_in(client, pages):
    response = client.get(pages["urls"][0])
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_index_lists_both_kinds_and_offers_forms_to_admins_only(client, pages):
    admin_page = signed_in(client, "admin").get("/moments/").content.decode()
    assert "spans" in admin_page and "deep" in admin_page and "1–2: 1, 3–20: 0.25" in admin_page
    assert 'data-api="/api/v1/moment-pools/"' in admin_page and 'data-api="/api/v1/sampled-pools/"' in admin_page
    # Moment runs are offered for moment pools, clip runs for sampled pools.
    moment_form, sampled_form = admin_page.split('data-api="/api/v1/sampled-pools/"')
    assert "moment-A" in moment_form and "deep-A" not in moment_form.split('data-api="/api/v1/moment-pools/"')[1]
    assert "deep-A" in sampled_form and "moment-A" not in sampled_form
    client.logout()
    researcher_page = signed_in(client, "researcher").get("/moments/").content.decode()
    assert "spans" in researcher_page and "data-api" not in researcher_page


def test_metrics_page_is_the_papers_table(client, pages):
    moments, metrics = pages["moments"], pages["metrics"]
    html = signed_in(client, "researcher").get(f"/moments/pools/{moments.pk}/moment-metrics/{metrics.pk}/").content.decode()
    assert html.count('scope="colgroup"') == 3 and "IoU = 0.5" in html and "IoU = 0.7" in html and "Video" in html
    # Nothing is judged yet: corrected = original. moment-A finds q1's [0, 10] of v1 exactly and q2's v2 with
    # [0, 5] (IoU 0.5): 100 at IoU 0.5, 50 at 0.7, 100 for videos. moment-B names the wrong videos: 0 everywhere.
    rows = html.split('<th scope="row">')[1:]
    values = [[cell.split("</span>")[0] for cell in row.split('<span class="value">')[1:]] for row in rows]
    assert [row.split("<")[0] for row in rows] == ["moment-A", "moment-B"]
    assert values == [["100.00", "100.00", "50.00", "50.00", "100.00", "100.00"], ["0.00"] * 6]
    assert f"/api/v1/pools/{moments.pk}/moment-metrics/{metrics.pk}.csv" in html


def test_infap_page_shows_the_chart_of_the_chosen_run(client, pages):
    sampled, infap, runs = pages["sampled"], pages["infap"], pages["runs"]
    signed_in(client, "researcher")
    url = f"/moments/pools/{sampled.pk}/infap/{infap.pk}/"
    first = client.get(url).content.decode()
    assert f"query-chart.svg?report={infap.pk}&amp;run={runs[0].pk}" in first
    chosen = client.get(url, {"run": runs[1].pk}).content.decode()
    assert f"query-chart.svg?report={infap.pk}&amp;run={runs[1].pk}&amp;download=1" in chosen
    assert "xinfAP per caption: deep-B" in chosen and "Stratified sample" in chosen
    chart = client.get(f"/api/v1/pools/{sampled.pk}/query-chart.svg", {"report": infap.pk, "run": runs[1].pk})
    assert chart.status_code == 200 and chart.content.startswith(b"<?xml")


def test_sampled_pool_page_tells_the_judgments_saved(client, pages):
    sampled = pages["sampled"]
    html = signed_in(client, "admin").get(f"/moments/pools/{sampled.pk}/").content.decode()
    design = sampled.sampled_design
    assert f"<strong>{design.full_pool_size}</strong>" in html and f"<strong>{design.judgments_saved}</strong>" in html
    assert f'data-api="/api/v1/pools/{sampled.pk}/infap/"' in html


def test_a_plain_pool_has_no_moments_page(client):
    dataset = make_dataset()
    run = clip_run(dataset, "plain", {"q1": ["v1", "v2"]})
    pool = pool_create(dataset=dataset, name="plain", runs=[run])
    assert signed_in(client, "admin").get(f"/moments/pools/{pool.pk}/").status_code == 404
