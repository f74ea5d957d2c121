"""The sampled pool's infAP report applies NIST's max-result-size rule by default, as TRECVID's
sample_eval does (AP x R_hat / max when R_hat exceeds it), names it, and can leave it off."""
from __future__ import annotations

import pytest

from annotation.analysis.infap import xinfap
from annotation.analysis.sampled_pools import build_sampled_pool
from annotation.services.reports.kinds.infap import infap_report_create
from annotation.services.pools.sampled import sampled_pool_create
from tests.annotation.services.reports.test_sampled_infap_report import STRATA, judgments_of, label, setting  # noqa: F401
from tests.annotation.services.pools.test_sampled_pools import rankings  # noqa: F401

pytestmark = pytest.mark.django_db


def test_the_rule_is_on_by_default_named_and_matches_the_estimator(setting):  # noqa: F811
    dataset, ranked, runs, rater = setting
    pool = sampled_pool_create(dataset=dataset, name="s", runs=runs, strata=STRATA, seed=17, redundancy=0)
    label(pool, rater)
    default = infap_report_create(pool=pool)
    assert default.params["max_result_size"] == 1000
    assert "R_hat/1000" in default.result["conventions"]

    # With 20-deep runs no query reaches 1,000 relevant shots, so a small limit shows the rule:
    # every query whose R_hat exceeds 3 has its AP multiplied by R_hat / 3.
    sample = build_sampled_pool(ranked, [tuple(s) for s in STRATA], seed=17)
    qrels = sample.stratified_qrels(judgments_of(sample))
    small = infap_report_create(pool=pool, max_result_size=3)
    off = infap_report_create(pool=pool, max_result_size=None)
    assert "without a max result size" in off.result["conventions"]
    changed = 0
    for with_rule, without in zip(small.result["runs"], off.result["runs"]):
        name = with_rule["run"]
        assert with_rule["mean"]["xinfAP"] == pytest.approx(xinfap(ranked[name], qrels, max_result_size=3).mean)
        assert without["mean"]["xinfAP"] == pytest.approx(xinfap(ranked[name], qrels).mean)
        for query, ap in without["per_query"]["xinfAP"].items():
            rescaled = with_rule["per_query"]["xinfAP"][query]
            changed += rescaled != pytest.approx(ap)
            assert rescaled >= ap - 1e-12  # R_hat / 3 > 1 only ever raises AP
    assert changed > 0
    # The default (1,000) changes nothing here: no query reaches it.
    assert [r["mean"] for r in default.result["runs"]] == [r["mean"] for r in off.result["runs"]]
