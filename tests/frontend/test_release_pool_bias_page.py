"""The release page's pool-bias section (issue 38): each leaderboard run with and without the pairs
only it contributed, the difference and Judged@K of the run left out; the reason where a release
has none; nothing on a release made before pool bias existed."""
from __future__ import annotations

import html as html_lib
import re

import pytest
from django.test import Client

from annotation.services.releases.create import release_create
from annotation.services.releases.pool_bias import NO_POOL
from tests.annotation.services.releases.test_release_from_judgment_sets import judgment_set_of_example
from tests.annotation.services.reports.test_report_metrics import example_pool
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def _page(release) -> str:
    client = Client()
    client.force_login(make_user("researcher"))
    response = client.get(f"/releases/{release.pk}/")
    assert response.status_code == 200
    return html_lib.unescape(response.content.decode())


def _section(page: str) -> str:
    found = re.search(r'<section class="card" aria-labelledby="release-pool-bias">(.*?)</section>', page, re.S)
    assert found, "no pool-bias section"
    return found.group(1)


def test_the_page_shows_each_run_with_and_without_its_own_pairs(tmp_path):
    release = release_create(pools=[example_pool(tmp_path)], name="example-bias", allow_unresolved=True)
    section = _section(_page(release))
    # By hand (tests/annotation/services/releases/test_release_pool_bias.py): A's C@1 75.0 -> 50.0, its
    # seven own pairs (one relevant); B's 66.7 -> 33.3, five (two relevant); A's Judged@10 left out 33.3.
    row_a = re.search(r'<tr><th scope="row">A</th>(.*?)</tr>', section, re.S).group(1)
    row_b = re.search(r'<tr><th scope="row">B</th>(.*?)</tr>', section, re.S).group(1)
    # Each cell may break between the values and the difference, never inside either (1280 px wide).
    assert '<td class="num">7 (1)</td><td class="num fire"><span>75.0 → 50.0</span> <span>(+25.0)</span></td>' in row_a
    assert '<td class="num">5 (2)</td><td class="num fire"><span>66.7 → 33.3</span> <span>(+33.3)</span></td>' in row_b
    assert row_a.endswith('<td class="num">33.3</td>')  # Judged@10, the last column
    assert "Judged@K without the run's own pairs" in section and "Leave one run out (Zobel 1998)" in section


def test_a_judgment_set_release_page_says_why_it_has_no_pool_bias(tmp_path):
    release = release_create(judgment_sets=[judgment_set_of_example(tmp_path)], name="published-only")
    section = _section(_page(release))
    assert NO_POOL in section and "<table" not in section


def test_a_release_from_before_pool_bias_shows_no_section(tmp_path):
    from frontend.views import releases as views

    release = release_create(pools=[example_pool(tmp_path)], name="example-old", allow_unresolved=True)
    assert views._pool_bias(release.leaderboard["pool_bias"])["rows"]
    # As stored before issue 38: no pool_bias in the leaderboard, no reason in the counts (in memory
    # only: a release never changes).
    release.leaderboard = {k: v for k, v in release.leaderboard.items() if k != "pool_bias"}
    from annotation.models import Release

    Release.objects.filter(pk=release.pk).delete()
    release.pk = None
    release._state.adding = True
    release.save()
    assert 'aria-labelledby="release-pool-bias"' not in _page(release)
