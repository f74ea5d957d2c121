"""Sampled pools build on imported judgments (issue 13): a pooled pair that imported judgments cover
is resolved from them, not queued, and is a judged document with inclusion probability 1; the
sample is drawn from the rest; xinfAP weights each judged pair by its own inclusion probability.

The setting, worked by hand throughout (TRECVID-like: no original positives):

    strata [1-2: rate 1], [3-6: rate 0.5]; runs over caption q1
      A: v1 v2 v3 v4 v5 v6
      B: v2 v1 v7 v8 v5 v6
    best ranks: v1 1, v2 1 | v3 3, v7 3, v4 4, v8 4, v5 5, v6 6
    imported qrels (run A's top 4): v1 relevant, v2 not, v3 relevant, v4 not
    truth of the rest: v5 relevant, v6 not, v7 not, v8 relevant

Stratum 0 holds v1, v2, both imported. Stratum 1 holds v3, v4 (imported: the census cell) and
v7, v8, v5, v6 (open): ceil(0.5 * 4) = 2 drawn, each with pi = 2/4; seed 3 draws v7 and v5.
"""
from __future__ import annotations

import pytest

from annotation.analysis.infap import SAMPLE_EVAL_EPSILON as EPS
from annotation.models import Caption, Clip, Dataset, PooledPair, Report, SampledDocument
from annotation.selectors.pools import pool_pairs_left
from annotation.services.judgment_sets.imports import judgments_import
from annotation.services.reports.kinds.infap import infap_report_create
from annotation.services.accounts.raters import memberships_grant
from annotation.services.pools.sampled import sampled_pool_create
from tests.annotation.analysis.test_infap import sample_eval_reference
from tests.annotation.services.pools.test_sampled_pools import clip_run
from tests.factories import label_pair, make_user

pytestmark = pytest.mark.django_db

STRATA = [[1, 2, 1.0], [3, 6, 0.5]]
RUN_A = ["v1", "v2", "v3", "v4", "v5", "v6"]
RUN_B = ["v2", "v1", "v7", "v8", "v5", "v6"]
RELEVANT = {"v1", "v3", "v5", "v8"}
SEED = 3


@pytest.fixture
def setting(tmp_path):
    dataset = Dataset.objects.create(name="trecvid-like")
    for i in range(1, 9):
        Clip.objects.create(dataset=dataset, external_id=f"v{i}", video_id=f"v{i}")
    Caption.objects.create(dataset=dataset, external_id="q1", text="a person cooking outdoors", original_clip=None)
    runs = [clip_run(dataset, "A", {"q1": RUN_A}), clip_run(dataset, "B", {"q1": RUN_B})]
    return dataset, runs, tmp_path


def publish(tmp_path, dataset, clips) -> None:
    path = tmp_path / "published.qrels"
    path.write_text("".join(f"q1 0 {clip} {int(clip in RELEVANT)}\n" for clip in clips))
    judgments_import(dataset=dataset, path=path)


def rows(pool) -> dict[str, SampledDocument]:
    return {d.clip.external_id: d for d in SampledDocument.objects.filter(pool=pool).select_related("clip", "pair")}


def xinfap_of(report) -> dict[str, float]:
    return {row["run"]: row["mean"]["xinfAP"] for row in report.result["runs"]}


def label_truth(pool) -> None:
    rater = make_user("rater")
    memberships_grant(pool=pool, users=[rater])
    for pair in PooledPair.objects.filter(pool=pool, state=PooledPair.State.OPEN).select_related("clip"):
        label_pair(rater, pair, value="relevant" if pair.clip.external_id in RELEVANT else "not_relevant")


def test_pairs_covered_by_imports_are_resolved_and_the_rest_is_sampled(setting):
    dataset, runs, tmp_path = setting
    publish(tmp_path, dataset, ["v1", "v2", "v3", "v4"])
    pool = sampled_pool_create(dataset=dataset, name="s", runs=runs, strata=STRATA, seed=SEED, redundancy=1.0)
    docs = rows(pool)
    for clip in ("v1", "v2", "v3", "v4"):
        d = docs[clip]
        assert (d.sampled, d.inclusion_probability) == (True, 1.0)
        assert (d.pair.state, d.pair.vote_count, d.pair.available) == ("resolved", 0, False)
        assert d.pair.resolved_label == ("relevant" if clip in RELEVANT else "not_relevant")
        assert d.pair.required_labels == 1  # an imported verdict needs no second label
    # The open part of stratum 1 is sampled at its rate: 2 of v7, v8, v5, v6, each with pi = 1/2.
    assert {c: (docs[c].sampled, docs[c].inclusion_probability) for c in ("v7", "v8", "v5", "v6")} == {
        "v7": (True, 0.5), "v8": (False, 0.5), "v5": (True, 0.5), "v6": (False, 0.5)}
    assert {p.clip.external_id for p in PooledPair.objects.filter(pool=pool, state="open").select_related("clip")} == \
        {"v7", "v5"}
    assert pool_pairs_left(pool=pool) == 2
    design = pool.sampled_design
    # Raters are asked for 2 judgments of 8 pooled; the 4 imported and the 2 left out are saved.
    assert (design.full_pool_size, design.sampled_count, design.judgments_saved) == (8, 2, 6)


def test_xinfap_builds_on_the_imported_judgments(setting):
    dataset, runs, tmp_path = setting
    publish(tmp_path, dataset, ["v1", "v2", "v3", "v4"])
    pool = sampled_pool_create(dataset=dataset, name="s", runs=runs, strata=STRATA, seed=SEED, redundancy=0)

    # Before any rater label (the finding was 0.0 for both runs here). Cells: stratum 0
    # {v1 R, v2 N} all judged; census of stratum 1 {v3 R, v4 N}; open {v7, v8, v5, v6} nothing
    # judged yet. R_hat = 1/1 + 1/1 = 2.
    # A: v1 at rank 1 -> P = 1; v3 at rank 3, above it v1, v2 (cell 0: D 2, m 2, q 1) ->
    #    P = (1 + 2 (1 + eps) / (2 + 3 eps)) / 3, about 2/3. xinfAP = (1 + P) / 2, about 0.8333.
    # B: v1 at rank 2, above it v2 (cell 0: D 1, m 1, q 0) -> P = (1 + eps / (1 + 3 eps)) / 2.
    #    xinfAP = P / 2, about 0.25.
    report = infap_report_create(pool=pool)
    p3 = (1 + 2 * (1 + EPS) / (2 + 3 * EPS)) / 3
    expected = {"A": (1 + p3) / 2, "B": (1 + EPS / (1 + 3 * EPS)) / 2 / 2}
    assert xinfap_of(report) == pytest.approx(expected, abs=1e-12)
    assert xinfap_of(report)["A"] == pytest.approx(0.8333325, abs=1e-6)
    judgments = report.result["judgments"]
    assert (judgments["from_imports"], judgments["judged"], judgments["waiting"], judgments["final"]) == (4, 4, 2, False)
    assert report.result["measure"] == "xinfAP" and report.result["measures"] == ["xinfAP"]

    # Raters judge the two drawn pairs: v7 not relevant, v5 relevant. Open cell: N 4, n 2, r 1,
    # pi = 1/2, so R_hat = 1 + 1 + 1 / (1/2) = 4.
    # A: v1 (rank 1) P = 1, pi 1; v3 (rank 3) P as above, pi 1; v5 (rank 5), above it cell 0
    #    (D 2, m 2, q 1) and the census cell (v3, v4: D 2, m 2, q 1) -> P = (1 + 2 x 2 (1 + eps) /
    #    (2 + 3 eps)) / 5, about 3/5, pi 1/2. xinfAP = (1 + p3 + P / (1/2)) / 4, about 0.7167.
    # B: v1 (rank 2) P as above; v5 (rank 5), above it cell 0 (v2, v1: D 2, m 2, q 1) and the open
    #    cell (v7 judged not relevant, v8 unjudged: D 2, m 1, q 0) -> P = (1 + 2 (1 + eps) /
    #    (2 + 3 eps) + 2 eps / (1 + 3 eps)) / 5, about 2/5, pi 1/2. xinfAP = (P2 + P5 / (1/2)) / 4,
    #    about 0.325.
    label_truth(pool)
    report = infap_report_create(pool=pool)
    a5 = (1 + 2 * 2 * (1 + EPS) / (2 + 3 * EPS)) / 5
    b2 = (1 + EPS / (1 + 3 * EPS)) / 2
    b5 = (1 + 2 * (1 + EPS) / (2 + 3 * EPS) + 2 * EPS / (1 + 3 * EPS)) / 5
    expected = {"A": (1 + p3 + a5 / 0.5) / 4, "B": (b2 + b5 / 0.5) / 4}
    assert xinfap_of(report) == pytest.approx(expected, abs=1e-12)
    assert xinfap_of(report) == pytest.approx({"A": 0.716667, "B": 0.325}, abs=1e-4)
    # Parity with NIST's sample_eval.pl (its infAP loop, transliterated in test_infap.py): the
    # 5-column qrels of this pool, the census of stratum 1 written as a stratum of its own.
    qrels = {"v1": ("0", 1), "v2": ("0", 0), "v3": ("1c", 1), "v4": ("1c", 0),
             "v7": ("1", 0), "v5": ("1", 1), "v8": ("1", -1), "v6": ("1", -1)}
    assert xinfap_of(report) == pytest.approx({"A": sample_eval_reference(RUN_A, qrels)[0],
                                               "B": sample_eval_reference(RUN_B, qrels)[0]}, abs=1e-12)
    judgments = report.result["judgments"]
    assert (judgments["judged"], judgments["waiting"], judgments["final"]) == (6, 0, True)
    assert [(s["pooled"], s["sampled"], s["from_imports"], s["judged"], s["relevant"]) for s in report.result["strata"]] \
        == [(2, 2, 2, 2, 1), (6, 4, 2, 4, 2)]


def test_a_pool_all_covered_by_imports_queues_nothing_and_its_report_is_final(setting):
    dataset, runs, tmp_path = setting
    publish(tmp_path, dataset, [f"v{i}" for i in range(1, 9)])
    pool = sampled_pool_create(dataset=dataset, name="s", runs=runs, strata=STRATA, seed=SEED)
    assert pool_pairs_left(pool=pool) == 0 and not PooledPair.objects.filter(pool=pool, state="open").exists()
    assert pool.sampled_design.sampled_count == 0
    assert set(SampledDocument.objects.filter(pool=pool).values_list("sampled", "inclusion_probability")) == {(True, 1.0)}
    report = infap_report_create(pool=pool)
    # Every pair judged: xinfAP is textbook AP up to the smoothing. R = 4 (v1, v3, v5, v8).
    # A: relevant at ranks 1, 3, 5 -> (1 + 2/3 + 3/5) / 4 = 0.5667; B: at 2, 4, 5 -> (1/2 + 2/4 + 3/5) / 4 = 0.4.
    assert xinfap_of(report) == pytest.approx({"A": (1 + 2 / 3 + 3 / 5) / 4, "B": 0.4}, abs=1e-4)
    judgments = report.result["judgments"]
    assert (judgments["from_imports"], judgments["waiting"], judgments["final"], judgments["saved"]) == (8, 0, True, 8)
    assert Report.objects.filter(pool=pool).count() == 1


def test_without_imports_the_pool_is_the_one_it_always_was(setting):
    dataset, runs, tmp_path = setting
    pool = sampled_pool_create(dataset=dataset, name="s", runs=runs, strata=STRATA, seed=SEED)
    docs = rows(pool)
    # Stratum 1 now holds 6 open documents: ceil(0.5 * 6) = 3 drawn, pi = 1/2; stratum 0 fully.
    assert sum(docs[c].sampled for c in ("v3", "v4", "v5", "v6", "v7", "v8")) == 3
    assert {docs[c].inclusion_probability for c in ("v3", "v4", "v5", "v6", "v7", "v8")} == {0.5}
    assert pool.sampled_design.sampled_count == PooledPair.objects.filter(pool=pool, state="open").count() == 5


def test_the_build_command_says_how_many_pairs_imports_judged(setting):
    from io import StringIO

    from django.core.management import call_command

    dataset, runs, tmp_path = setting
    publish(tmp_path, dataset, ["v1", "v2", "v3", "v4"])
    out = StringIO()
    call_command("build_sampled_pool", "--dataset", dataset.name, "--name", "cli", "--run", "A", "--run", "B",
                 "--strata", "1-2:1,3-6:0.5", "--seed", str(SEED), stdout=out)
    assert "2 pairs to judge of 8 pooled" in out.getvalue()
    assert "4 already judged by imported judgments" in out.getvalue()
