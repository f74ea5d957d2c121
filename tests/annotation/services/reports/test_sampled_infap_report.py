"""A sampled pool labelled by a rater in the database, then scored: the stored infAP report must
equal the estimators of annotation.analysis.infap computed independently from the same sample."""
from __future__ import annotations

import pytest

from annotation.analysis.infap import infap_trec_eval, xinfap
from annotation.analysis.sampled_pools import build_sampled_pool
from annotation.models import PooledPair, Report
from annotation.services.reports.kinds.infap import infap_report_create
from annotation.services.accounts.raters import memberships_grant
from annotation.services.reports.create import ReportError
from annotation.services.pools.sampled import sampled_pool_create
from tests.annotation.services.pools.test_sampled_pools import clip_run, rankings
from tests.factories import label_pair, make_dataset, make_user, unique

pytestmark = pytest.mark.django_db

STRATA = [[1, 2, 1.0], [3, 10, 0.5], [11, 20, 0.25]]
ORIGINAL = {"q1": "v1", "q2": "v2", "q3": "v3"}  # make_dataset writes caption qN for clip vN


def relevant(caption: str, clip: str) -> bool:
    return int(clip[1:]) % 3 == 0 or ORIGINAL[caption] == clip


@pytest.fixture
def setting():
    dataset = make_dataset(clips=30, captions=3)
    ranked = {"A": rankings(0), "B": rankings(1), "C": rankings(2)}
    runs = [clip_run(dataset, name, ranking) for name, ranking in ranked.items()]
    rater = make_user("rater")
    return dataset, ranked, runs, rater


def label(pool, rater, *, keep=lambda pair: True, verdict=relevant) -> None:
    memberships_grant(pool=pool, users=[rater])
    for pair in PooledPair.objects.filter(pool=pool).select_related("caption", "clip").order_by("pk"):
        if keep(pair):
            value = "relevant" if verdict(pair.caption.external_id, pair.clip.external_id) else "not_relevant"
            label_pair(rater, pair, client_id=unique("c"), value=value)


def judgments_of(sample, keep=lambda caption, clip: True):
    return {q: {d: int(relevant(q, d)) for d in docs if keep(q, d)} for q, docs in sample.to_judge().items()}


def test_stored_xinfap_equals_the_estimator_on_the_same_sample(setting):
    dataset, ranked, runs, rater = setting
    pool = sampled_pool_create(dataset=dataset, name="s", runs=runs, strata=STRATA, seed=17, redundancy=0)
    label(pool, rater)
    report = infap_report_create(pool=pool)

    sample = build_sampled_pool(ranked, [tuple(s) for s in STRATA], seed=17)
    qrels = sample.stratified_qrels(judgments_of(sample))
    result = report.result
    assert report.kind == "infap" and result["measure"] == "xinfAP" and result["measures"] == ["xinfAP"]
    assert [r["run"] for r in result["runs"]] == ["A", "B", "C"]
    for row in result["runs"]:
        expected = xinfap(ranked[row["run"]], qrels)
        assert row["per_query"]["xinfAP"] == pytest.approx(expected.per_query, abs=1e-12)
        assert row["mean"]["xinfAP"] == pytest.approx(expected.mean, abs=1e-12)
    judgments = result["judgments"]
    assert judgments["full_pool_size"] == sample.full_pool_size
    assert judgments["sampled"] == judgments["judged"] == sample.judged_count
    assert judgments["saved"] == sample.judgments_saved and judgments["waiting"] == 0
    assert [s["pooled"] for s in result["strata"]] == [s["pooled"] for s in sample.stratum_summary()]
    assert result["queries"] == ["q1", "q2", "q3"]
    assert Report.objects.get(pk=report.pk).pool == pool


def test_pairs_still_waiting_for_labels_count_as_unjudged(setting):
    dataset, ranked, runs, rater = setting
    pool = sampled_pool_create(dataset=dataset, name="s", runs=runs, strata=STRATA, seed=17, redundancy=0)
    label(pool, rater, keep=lambda pair: pair.pk % 2 == 0)
    labelled = {(p.caption.external_id, p.clip.external_id) for p in PooledPair.objects.filter(
        pool=pool, state=PooledPair.State.RESOLVED).select_related("caption", "clip")}
    report = infap_report_create(pool=pool)

    sample = build_sampled_pool(ranked, [tuple(s) for s in STRATA], seed=17)
    partial = judgments_of(sample, keep=lambda q, d: (q, d) in labelled or ORIGINAL[q] == d)
    qrels = sample.stratified_qrels(partial, missing="unjudged")
    for row in report.result["runs"]:
        assert row["per_query"]["xinfAP"] == pytest.approx(xinfap(ranked[row["run"]], qrels).per_query, abs=1e-12)
    assert report.result["judgments"]["waiting"] > 0


def test_the_original_positive_stays_relevant_whatever_raters_say(setting):
    dataset, ranked, runs, rater = setting
    pool = sampled_pool_create(dataset=dataset, name="s", runs=runs, strata=STRATA, seed=17, redundancy=0)
    label(pool, rater, verdict=lambda caption, clip: relevant(caption, clip) and ORIGINAL[caption] != clip)  # no to originals
    originals = PooledPair.objects.filter(pool=pool, is_original_positive=True)
    assert originals.exists() and not originals.filter(resolved_label="relevant").exists()
    report = infap_report_create(pool=pool)
    sample = build_sampled_pool(ranked, [tuple(s) for s in STRATA], seed=17)
    qrels = sample.stratified_qrels(judgments_of(sample))  # `relevant` counts the originals
    assert report.result["runs"][0]["per_query"]["xinfAP"] == pytest.approx(xinfap(ranked["A"], qrels).per_query,
                                                                               abs=1e-12)


def test_a_uniform_sample_also_reports_trec_eval_infap(setting):
    dataset, ranked, runs, rater = setting
    uniform = [[1, 20, 0.5]]
    pool = sampled_pool_create(dataset=dataset, name="u", runs=runs, strata=uniform, seed=2, redundancy=0)
    label(pool, rater)
    result = infap_report_create(pool=pool).result
    sample = build_sampled_pool(ranked, [tuple(s) for s in uniform], seed=2)
    judgments = judgments_of(sample)
    assert result["measure"] == "infAP" and result["measures"] == ["xinfAP", "infAP"]
    for row in result["runs"]:
        expected = infap_trec_eval(ranked[row["run"]], sample.trec_qrels(judgments))
        assert row["per_query"]["infAP"] == pytest.approx(expected.per_query, abs=1e-9)
        assert row["mean"]["infAP"] == pytest.approx(expected.mean, abs=1e-9)
        assert row["per_query"]["xinfAP"] == pytest.approx(
            xinfap(ranked[row["run"]], sample.stratified_qrels(judgments)).per_query, abs=1e-12)


def test_per_query_summary_holds_median_and_best_over_runs(setting):
    dataset, ranked, runs, rater = setting
    pool = sampled_pool_create(dataset=dataset, name="s", runs=runs, strata=STRATA, seed=17, redundancy=0)
    label(pool, rater)
    result = infap_report_create(pool=pool).result
    for query in result["queries"]:
        scores = sorted(row["per_query"]["xinfAP"][query] for row in result["runs"])
        summary = result["per_query_summary"][query]
        assert summary["median"] == pytest.approx(scores[1]) and summary["best"] == pytest.approx(scores[2])


def test_only_sampled_pools_and_clip_runs_are_scored(setting):
    dataset, ranked, runs, rater = setting
    from annotation.services.pools.build import pool_create

    plain = pool_create(dataset=dataset, name="plain", runs=runs[:1], depth=5)
    with pytest.raises(ReportError, match="not a sampled pool"):
        infap_report_create(pool=plain)
    pool = sampled_pool_create(dataset=dataset, name="s", runs=runs, strata=STRATA, seed=1)
    with pytest.raises(ReportError, match="do not exist"):
        infap_report_create(pool=pool, run_ids=[runs[0].pk, 999_999])
