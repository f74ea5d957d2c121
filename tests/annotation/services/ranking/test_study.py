"""Building a ranking study (services/ranking/study.py, and its start, operations.py): five
captions per clip and proxy checked by hand, seeded sampling, the checks made before a job exists,
the command. The study with every proxy skips without the NLP resources (fails with
REJUDGE_REQUIRE_NLP=1); the others use only BoW, which needs spaCy's stop-word list alone."""
from __future__ import annotations

import io

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from annotation.analysis.proxies import proxy_matrix
from annotation.analysis.ranking_study import select_five
from annotation.models import Caption, RankingStudy
from annotation.services.datasets.imports import dataset_import
from annotation.services.proxies.matrices import ProxyError
from annotation.services.ranking.operations import ranking_study_start
from annotation.services.ranking.study import ranking_study_create
from tests.annotation.services.proxies.test_proxy_matrices import require_nlp
from tests.annotation.services.ranking.helpers import CAPTIONS, make_benchmark, make_study

pytestmark = pytest.mark.django_db


def test_five_captions_by_hand():
    study = make_study()
    assert study.tasks.count() == 7  # every clip sampled (n_clips = all), one proxy
    task = study.tasks.get(clip__external_id="v1")
    assert task.proxy == "bow" and task.n_candidates == 6 and task.required_submissions == 3
    # Candidates by -score, ties by caption order: q2 .6, q3 .4, q4 1/6, q7 1/7, q5 0, q6 0.
    # n = 6: ranks round(q * 5) = 0, 1, 3 (2.5 rounds up), 4, 5 -> q2, q3, q7, q5, q6.
    rows = list(task.captions.select_related("caption").order_by("candidate_rank"))
    assert [r.caption.external_id for r in rows] == ["q2", "q3", "q7", "q5", "q6"]
    assert [r.candidate_rank for r in rows] == [0, 1, 3, 4, 5]
    assert [r.position for r in rows] == ["most", "rank_q1", "rank_median", "rank_q3", "least"]
    assert [r.score for r in rows] == pytest.approx([3 / 5, 2 / 5, 1 / 7, 0, 0])
    assert study.pipelines["bow"]["proxy"] == "bow" and study.pipelines["bow"]["versions"]["numpy"]


def test_sampling_is_seeded():
    a = make_study(n_clips=3, name="a")
    b = ranking_study_create(dataset=a.dataset, name="b", proxies=["bow"], n_clips=3, seed=0)
    clip_pks = list(a.dataset.clips.order_by("pk").values_list("pk", flat=True))
    want = [clip_pks[i] for i in np.sort(np.random.default_rng(0).choice(7, size=3, replace=False))]
    for study in (a, b):
        assert sorted(study.tasks.values_list("clip_id", flat=True)) == want
    assert sorted(a.tasks.values_list("queue_order", flat=True)) == [0, 1, 2]


def test_study_request_checked_up_front():
    dataset = make_benchmark()
    with pytest.raises(ProxyError, match="between 1 and 7"):
        ranking_study_start(dataset=dataset, name="s", proxies=["bow"], n_clips=8)
    with pytest.raises(ProxyError, match="parameter 'proxies' must be one of"):
        ranking_study_start(dataset=dataset, name="s", proxies=["nope"], n_clips=2)
    make_study(dataset, n_clips=2, name="taken")
    with pytest.raises(ProxyError, match="already exists"):
        ranking_study_start(dataset=dataset, name="taken", proxies=["bow"], n_clips=2)
    small = make_benchmark(CAPTIONS[:5], name="small")  # 4 candidates per clip
    with pytest.raises(ProxyError, match="too few captions"):
        ranking_study_start(dataset=small, name="s", proxies=["bow"], n_clips=2)


def test_study_with_every_proxy_on_youcook2_excerpt(fixtures_dir):
    """Only the sampled clips' rows are computed; each selection must equal the analysis's
    select_five on the full row of that clip."""
    require_nlp()
    dataset = dataset_import(path=fixtures_dir / "youcook2_val_excerpt.json", name="yc2", fmt="youcook2-json")
    study = ranking_study_create(dataset=dataset, name="all", proxies=["bow", "pos", "syn", "met"], n_clips=6, seed=3)
    assert study.tasks.count() == 24 and set(study.pipelines) == {"bow", "pos", "syn", "met"}
    captions = list(Caption.objects.filter(dataset=dataset).order_by("pk"))
    for task in study.tasks.select_related("clip"):
        rows = list(task.captions.order_by("candidate_rank"))
        assert task.n_candidates == 34 and len(rows) == 5
        assert all(r.caption.original_clip_id != task.clip_id for r in rows)
        assert [r.score for r in rows] == sorted((r.score for r in rows), reverse=True)
    task = study.tasks.filter(proxy="met").select_related("clip").first()
    own = [j for j, c in enumerate(captions) if c.original_clip_id == task.clip_id]
    row = proxy_matrix("met", [[captions[j].text for j in own]], [c.text for c in captions],
                       caption_owner=[0 if j in own else -1 for j in range(len(captions))])[0]
    five = select_five(row, own_captions=own)
    assert [captions[j].pk for j in five.caption_ids] == list(
        task.captions.order_by("candidate_rank").values_list("caption_id", flat=True))


def test_build_ranking_study_command():
    make_benchmark()
    out = io.StringIO()
    call_command("build_ranking_study", "--dataset", "bench", "--name", "cli", "--proxies", "bow", "--clips", "4",
                 stdout=out)
    study = RankingStudy.objects.get(name="cli")
    assert study.tasks.count() == 4 and study.raters_per_task == 3
    assert f"(id {study.pk}): 4 tasks" in out.getvalue()
    with pytest.raises(CommandError, match="already exists"):
        call_command("build_ranking_study", "--dataset", "bench", "--name", "cli", "--proxies", "bow", "--clips", "4")
