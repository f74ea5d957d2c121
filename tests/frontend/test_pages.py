"""Who may open which page, and what each page shows (the page scripts are tested in tests/browser)."""
from __future__ import annotations

import pytest

from annotation.models import Job, Label, Pool, PooledPair, PoolMembership
from tests.factories import make_dataset, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def pool():
    dataset = make_dataset(name="bench", clips=3, captions=3)
    pool = Pool.objects.create(dataset=dataset, name="first pool")
    for caption, clip in zip(dataset.captions.order_by("pk"), dataset.clips.order_by("pk")):
        PooledPair.objects.create(pool=pool, caption=caption, clip=clip)
    return pool


def signed_in(client, role):
    user = make_user(role)
    client.force_login(user)
    return user


ADMIN_PAGES = ["/admin-ui/", "/admin-ui/datasets/{dataset}/", "/admin-ui/pools/", "/admin-ui/pools/{pool}/",
               "/admin-ui/pools/{pool}/attention/", "/admin-ui/raters/", "/admin-ui/jobs/{job}/"]
RATER_PAGES = ["/judge/{pool}/", "/rank/1/"]


def urls(templates, pool, job=None):
    return [t.format(dataset=pool.dataset_id, pool=pool.pk, job=job.pk if job else 0) for t in templates]


def test_signed_out_visitors_are_sent_to_the_login_page(client, pool):
    for url in ["/", *urls(ADMIN_PAGES + RATER_PAGES, pool)]:
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/login/?next="), url


@pytest.mark.parametrize("role", ["rater", "researcher"])
def test_admin_pages_refuse_raters_and_researchers(client, pool, role):
    signed_in(client, role)
    job = Job.objects.create(kind="import_run")
    for url in urls(ADMIN_PAGES, pool, job):
        response = client.get(url)
        assert response.status_code == 403, url
        assert b"for admins only" in response.content


@pytest.mark.parametrize("role", ["admin", "researcher"])
def test_rater_pages_refuse_admins_and_researchers(client, pool, role):
    signed_in(client, role)
    for url in urls(RATER_PAGES, pool):
        assert client.get(url).status_code == 403, url


def test_judging_page_is_for_members_of_the_pool(client, pool):
    rater = signed_in(client, "rater")
    assert client.get(f"/judge/{pool.pk}/").status_code == 404
    PoolMembership.objects.create(pool=pool, rater=rater)
    response = client.get(f"/judge/{pool.pk}/")
    assert response.status_code == 200
    body = response.content.decode()
    assert f'data-pool="{pool.pk}"' in body and f'data-user="{rater.pk}"' in body
    assert 'data-pool-pairs' not in body  # the pool's size is no business of the page: it would tell gold pairs apart
    for key in "1234":
        assert f'aria-keyshortcuts="{key}"' in body
    assert "every element it mentions" in body  # the guidelines are in the page
    assert "csrftoken" in response.cookies


def test_ranking_page_renders_for_raters(client):
    signed_in(client, "rater")
    response = client.get("/rank/7/")
    assert response.status_code == 200
    assert b'data-study="7"' in response.content and b"rank.js" in response.content


def test_home_page_depends_on_the_role(client, pool):
    rater = signed_in(client, "rater")
    PoolMembership.objects.create(pool=pool, rater=rater)
    body = client.get("/").content.decode()
    assert f'href="/judge/{pool.pk}/"' in body and "Start judging" in body and "3 pairs to judge" in body
    assert "/admin-ui/" not in body
    first = pool.pairs.first()
    PooledPair.objects.create(pool=pool, caption=first.caption, clip=first.clip, role="training",
                              known_answer="relevant")
    body = client.get("/").content.decode()
    assert "Start training" in body and "1 training pair first" in body

    client.force_login(make_user("admin"))
    body = client.get("/").content.decode()
    assert 'href="/admin-ui/pools/"' in body and 'href="/reports/"' in body and "bench" in body

    client.force_login(make_user("researcher"))
    body = client.get("/").content.decode()
    assert 'href="/reports/"' in body and "/admin-ui/" not in body and "/judge/" not in body


def test_admin_pages_show_their_records(client, pool):
    admin = signed_in(client, "admin")
    rater = make_user("rater", username="ann")
    PoolMembership.objects.create(pool=pool, rater=rater)
    escalated = pool.pairs.first()
    escalated.state = PooledPair.State.ADJUDICATION
    escalated.save()
    Label.objects.create(pair=escalated, rater=rater, value="ambiguous", client_id="x", counted=False,
                         comment="two dogs or one?")
    job = Job.objects.create(kind="import_run", created_by=admin)

    overview = client.get("/admin-ui/").content.decode()
    assert f'href="/admin-ui/datasets/{pool.dataset_id}/"' in overview and ">Import a run</a>" in overview  # the job in words (describe.job_title)
    dataset_page = client.get(f"/admin-ui/datasets/{pool.dataset_id}/").content.decode()
    assert f'action="/api/v1/datasets/{pool.dataset_id}/runs/import/"' in dataset_page
    assert "first pool" in dataset_page
    pool_page = client.get(f"/admin-ui/pools/{pool.pk}/").content.decode()
    assert "Agreement so far" in pool_page and "ann" in pool_page and 'id="pool-charts"' in pool_page
    attention = client.get(f"/admin-ui/pools/{pool.pk}/attention/").content.decode()
    assert "two dogs or one?" in attention and f"/api/v1/pairs/{escalated.pk}/adjudicate/" in attention
    set_aside = client.get(f"/admin-ui/pools/{pool.pk}/attention/?state=set_aside").content.decode()
    assert "two dogs or one?" not in set_aside
    raters = client.get("/admin-ui/raters/").content.decode()
    assert 'data-rater="ann"' in raters and "first pool" in raters
    assert f'data-job-url="/api/v1/jobs/{job.pk}/"' in client.get(f"/admin-ui/jobs/{job.pk}/").content.decode()
    assert client.get("/admin-ui/pools/999999/").status_code == 404
    assert client.get("/admin-ui/jobs/999999/").status_code == 404


def test_navigation_marks_the_current_section(client, pool):
    signed_in(client, "admin")
    body = client.get(f"/admin-ui/pools/{pool.pk}/").content.decode()
    assert '<a href="/admin-ui/pools/" aria-current="page">Pools</a>' in body
    assert '<a href="/admin-ui/" aria-current="page">' not in body
    body = client.get(f"/admin-ui/datasets/{pool.dataset_id}/").content.decode()
    assert '<a href="/admin-ui/" aria-current="page">Datasets</a>' in body
