"""The release page flags a run's Judged@K below the leaderboard's threshold (issue 38): "(!)" beside
the value in the scores table, the rule in words under it, and the leaderboard's own note beside
each measure cut at K in the detail table; at the threshold nothing is flagged."""
from __future__ import annotations

import copy
import re

import pytest

from annotation.services.releases.create import release_create
from frontend.views import releases as views
from annotation.services.pools.build import pool_create
from tests.annotation.services.reports.test_report_metrics import example_pool, load_example
from tests.frontend.test_release_pool_bias_page import _page

pytestmark = pytest.mark.django_db


def test_a_run_below_the_threshold_is_flagged_where_its_judged_at_k_is_shown(tmp_path):
    # The example's runs pooled at depth 1 and nothing judged: their top 10 hold verdicts only for
    # the original positives, far below 90%.
    dataset, runs = load_example(tmp_path / "files", "shallow")
    pool = pool_create(dataset=dataset, name="shallow pool", runs=runs, depth=1, redundancy=0.0)
    release = release_create(pools=[pool], name="example-flag", allow_unresolved=True)
    board = release.leaderboard
    assert board["judged_threshold"] == 0.9
    judged10 = {r["run"]: r["judged"]["Judged@10"] for r in board["runs"]}
    flagged = {run for run, share in judged10.items() if share < 0.9}
    assert flagged == set(judged10), judged10
    page = _page(release)
    scores = re.search(r'<table id="release-leaderboard-table".*?</table>', page, re.S).group(0)
    for run in judged10:
        row = re.search(rf'<tr><th scope="row">{run}</th>(.*?)</tr>', scores, re.S).group(1)
        assert ("judged-flag" in row) == (run in flagged), (run, row)
    assert "(!) Judged@K below 90%: the run's measures cut at K are not comparable with the leaderboard" in page
    detail = re.search(r'<table id="release-leaderboard-detail".*?</table>', page, re.S).group(0)
    assert "not comparable with the leaderboard (Judged@10 < 0.9)" in detail


def test_at_the_threshold_nothing_is_flagged_just_below_it_is(tmp_path):
    release = release_create(pools=[example_pool(tmp_path)], name="example-edge", allow_unresolved=True)
    board = copy.deepcopy(release.leaderboard)
    for run in board["runs"]:
        run["judged"] = {name: 0.9 for name in run["judged"]}
    at = views._leaderboard(board)
    assert not at["flagged"] and all(not flag for row in at["scores"] for _, flag in row["judged"])
    assert all(row["judged_note"] is None for group in at["groups"] for row in group["rows"])
    board["runs"][0]["judged"] = {name: 0.89 for name in board["runs"][0]["judged"]}
    below = views._leaderboard(board)
    first = board["runs"][0]["run"]
    assert below["flagged"]
    assert [flag for row in below["scores"] if row["run"] == first for _, flag in row["judged"]] == [True] * len(
        below["judged_headers"])
