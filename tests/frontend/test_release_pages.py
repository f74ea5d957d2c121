"""The release page for every shape of release: judgment sets alone (no leaderboard, no pool
counts), several pools (a total row), and a release made before pair counts were recorded (its
sources give the pooled pairs only); each names its counts in words, never by field name."""
from __future__ import annotations

import pytest
from django.test import Client

from annotation.services.pools.build import pool_create
from annotation.services.releases.create import release_create
from tests.annotation.services.releases.test_release_from_judgment_sets import judgment_set_of_example
from tests.annotation.services.reports.test_report_metrics import example_pool
from frontend.views import releases as views
from tests.factories import make_user

pytestmark = pytest.mark.django_db

FIELD_NAMES = ("fire_annotations", "qrels_pairs", "pool_pairs", "label_rows", "original_low", "rank_corrected",
               "unresolved_allowed")


def _page(release) -> str:
    client = Client()
    client.force_login(make_user("researcher"))
    response = client.get(f"/releases/{release.pk}/")
    assert response.status_code == 200
    return response.content.decode()


def _visible(html: str) -> str:
    """The page without its tooltips (title="field"), where field names belong."""
    import re

    return re.sub(r'title="[^"]*"', "", html)


def test_a_judgment_set_release_page_states_its_judgments(tmp_path):
    release = release_create(judgment_sets=[judgment_set_of_example(tmp_path)], name="published-only")
    html = _visible(_page(release))
    assert "4 judgments (2 relevant, 2 not relevant)" in html and "No leaderboard in this release" in html
    assert not any(field in html for field in FIELD_NAMES)


def test_two_pools_get_a_total_row_and_the_share_of_both(tmp_path):
    pool = example_pool(tmp_path)
    fresh = pool_create(dataset=pool.dataset, name="fresh", runs=list(pool.runs.all()), depth=1, redundancy=0.0)
    release = release_create(pools=[pool, fresh], name="two-pools", allow_unresolved=True)
    html = _visible(_page(release))
    # example: 17 pooled, 16 judged and resolved, 3 originals; fresh (depth 1): 7 pooled, none judged, 3 originals.
    assert "All pools</th><td class=\"num\">24</td><td class=\"num\">16</td><td class=\"num\">16</td><td " \
           "class=\"num\">8</td><td class=\"num\">6</td>" in html
    assert "16 of 24 pooled pairs resolved (67%); 8 unresolved pairs were scored as not relevant." in html
    assert not any(field in html for field in FIELD_NAMES)


def test_a_release_from_before_pair_counts_still_shows(tmp_path):
    release = release_create(pools=[example_pool(tmp_path)], name="example-fire", allow_unresolved=True)
    old_counts = {k: v for k, v in release.counts.items() if k not in ("pool_pairs", "unresolved_allowed")}
    old_counts["pool_pairs"] = 17
    old_sources = [{k: v for k, v in s.items() if k != "pair_counts"} for s in release.sources]
    release.counts, release.sources = old_counts, old_sources  # in memory only: a release never changes

    assert views._sources(release) == [{"kind": "pool", "name": "example pool", "counts": {"pooled": 17}}]
    assert not any(row["field"] == "pool_pairs" for row in views._other_counts(old_counts))
