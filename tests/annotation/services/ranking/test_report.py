"""The human-to-proxy report (services/ranking/report.py) on hand-worked orderings."""
from __future__ import annotations

import pytest

from annotation.models import Report
from annotation.services.ranking.report import ranking_report_create
from tests.annotation.services.ranking.helpers import make_study, raters, submit

pytestmark = pytest.mark.django_db


def test_human_proxy_report_by_hand():
    r1, r2, r3 = raters(3)
    study = make_study(n_clips=7, raters=[r1, r2, r3])
    task = study.tasks.get(clip__external_id="v1")
    by_ext = dict(task.captions.values_list("caption__external_id", "caption_id"))
    q2, q3, q7, q5, q6 = (by_ext[k] for k in ("q2", "q3", "q7", "q5", "q6"))
    # proxy scores: q2 .6 > q3 .4 > q7 1/7 > q5 = q6 = 0.
    # r1, r2 agree with the proxy; r3 swaps q2/q3 and q5/q6.
    submit(r1, task, order=[q2, q3, q7, q5, q6])
    submit(r2, task, order=[q2, q3, q7, q5, q6])
    submit(r3, task, order=[q3, q2, q7, q6, q5])
    report = ranking_report_create(study=study)
    bow = report.result["proxies"]["bow"]
    # 10 pairs; r3 breaks {q2,q3} and {q5,q6}: 8 consistent, all ordered as the proxy orders them.
    assert (bow["tasks"], bow["pairs"], bow["consistent_pairs"]) == (1, 10, 8)
    assert bow["consistent_share"] == pytest.approx(0.8)
    assert (bow["proxy_agree"], bow["proxy_ties"], bow["proxy_disagree"]) == (8, 0, 0)
    assert bow["proxy_agreement"] == pytest.approx(1.0)
    # Kendall's W: rank sums q2 4, q3 5, q7 9, q5 13, q6 14; mean 9; S = 25+16+0+16+25 = 82;
    # W = 12 * 82 / (9 * 120) = 0.9111
    assert bow["kendalls_w"] == pytest.approx(12 * 82 / (9 * 120))
    assert -1 <= bow["krippendorff_alpha_ordinal"] <= 1
    assert report.kind == "human_proxy" and report.params["study_id"] == study.pk
    assert report.result["tasks"] == 7 and report.result["complete_tasks"] == 1
    assert Report.objects.filter(kind="human_proxy").count() == 1


def test_proxy_ties_count_half():
    r1, r2, r3 = raters(3)
    study = make_study(n_clips=7, raters=[r1, r2, r3])
    task = study.tasks.get(clip__external_id="v1")
    by_ext = dict(task.captions.values_list("caption__external_id", "caption_id"))
    order = [by_ext[k] for k in ("q2", "q3", "q7", "q5", "q6")]
    for r in (r1, r2, r3):
        submit(r, task, order=order)
    bow = ranking_report_create(study=study).result["proxies"]["bow"]
    # all 10 pairs consistent; the proxy ties q5/q6 (both 0): (9 + 1/2) / 10
    assert (bow["consistent_pairs"], bow["proxy_agree"], bow["proxy_ties"]) == (10, 9, 1)
    assert bow["proxy_agreement"] == pytest.approx(0.95)
    assert bow["proxy_agreement_strict"] == pytest.approx(0.9)
    assert bow["kendalls_w"] == pytest.approx(1.0)
    assert bow["krippendorff_alpha_ordinal"] == pytest.approx(1.0)
