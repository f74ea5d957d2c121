"""The admin's pool page leads to the rater-quality page, holds the crowd study's settings form, and shows
the study's link when the pool has a study."""
from __future__ import annotations

import pytest
from django.test import Client

from annotation.services.crowd.studies import study_save
from tests.factories import make_pool_with_runs, make_user

pytestmark = pytest.mark.django_db


def _pool_page(pool) -> str:
    client = Client()
    client.force_login(make_user("admin"))
    response = client.get(f"/admin-ui/pools/{pool.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def test_pool_page_links_to_quality_and_crowd_settings():
    pool, _ = make_pool_with_runs()
    html = _pool_page(pool)
    assert f'id="pool-quality-link" href="/admin-ui/pools/{pool.pk}/quality/"' in html
    # The settings are a form on the page itself (issue 24), saved through the API by the page.
    assert f'<form id="crowd-study-form" data-api-form data-method="PUT" action="/api/v1/pools/{pool.pk}/crowd-study/"' in html
    assert "No crowd study" in html
    # The links lead somewhere an admin may go.
    admin = Client()
    admin.force_login(make_user("admin"))
    assert admin.get(f"/admin-ui/pools/{pool.pk}/quality/").status_code == 200

    study = study_save(pool=pool, platform="mturk", title="Judge clips", quota_pairs=20, quota_minutes=15,
                       consent_text="You agree.", training_required=False)
    html = _pool_page(pool)
    assert "No crowd study" not in html
    # The entry URL (the study link with the platform's parameters) is put together by the page from
    # the study's API answer, shown with a copy button (tests/browser/test_pool_campaign_settings.py).
    assert '<div id="crowd-entry" data-study-url="/api/v1/pools/%d/crowd-study/"' % pool.pk in html
    entry_tag = html[html.index('<div id="crowd-entry"'):].split(">", 1)[0]
    assert 'id="crowd-entry-copy"' in html and " hidden" not in entry_tag
    assert "Judge clips · Amazon Mechanical Turk · open · 0 workers" in html
