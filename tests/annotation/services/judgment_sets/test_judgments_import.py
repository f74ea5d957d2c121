"""Importing published judgments (FIRE JSON, TREC qrels) for a dataset, and the round trip
export -> import -> identical metrics report."""
from __future__ import annotations

import json
import shutil

import pytest
from django.contrib.auth import get_user_model

from annotation.formats.errors import ImportRejected
from annotation.models import Clip, Dataset, Label, PooledPair
from annotation.models.judgment_sets import ImportedJudgment, JudgmentSet
from annotation.services.exports.labels import artefact_file, export_create
from annotation.services.judgment_sets.imports import judgments_import
from annotation.services.pools.build import pool_create
from annotation.services.reports.create import report_create
from tests.annotation.services.reports.test_report_metrics import example_pool, load_example

pytestmark = pytest.mark.django_db


def _fire(path, annotations, disagreements=()):
    """A FIRE file with one record a line: annotation i is on line i + 2."""
    lines = ",\n".join(json.dumps(a) for a in annotations)
    path.write_text(f'{{"annotations": [\n{lines}\n],\n"disagreements": {json.dumps(list(disagreements))},\n'
                    f'"datasets": ["MSRVTT"]}}\n')
    return path


def _ann(query, video, label=None, labels=("relevant",), ids=(7,), models=("A",), dataset=None):
    record = {"query": query, "video_id": video, "annotator_labels": list(labels), "annotator_ids": list(ids),
              "models": list(models)}
    if label:
        record["label"] = label
    if dataset:
        record["dataset"] = dataset
    return record


def _judged(dataset):
    return {(j.caption.external_id, j.clip.external_id): j.label
            for j in ImportedJudgment.objects.filter(dataset=dataset).select_related("caption", "clip")}


def test_qrels_are_imported_by_caption_and_clip_id(tmp_path):
    dataset, _ = load_example(tmp_path / "files")
    path = tmp_path / "published.qrels"
    path.write_text("q1 0 v2 1\nq1 0 v3 0\nq3 0 v4 2\nq3 0 v5 -1\nq1 0 v2 1\n")
    outcome = judgments_import(dataset=dataset, path=path)
    assert outcome.created and outcome.judgment_set.name == "published"
    assert outcome.judgment_set.source_format == "qrels"
    assert _judged(dataset) == {("q1", "v2"): "relevant", ("q1", "v3"): "not_relevant", ("q3", "v4"): "relevant"}
    assert outcome.judgment_set.counts == {"records": 5, "relevant": 2, "not_relevant": 1, "not_judged_lines": 1,
                                           "repeated_pairs_merged": 1}
    again = judgments_import(dataset=dataset, path=path)
    assert not again.created and again.judgment_set.pk == outcome.judgment_set.pk
    assert ImportedJudgment.objects.filter(dataset=dataset).count() == 3


def test_fire_records_join_on_caption_text_and_reach_every_caption_with_that_text(tmp_path):
    dataset, _ = load_example(tmp_path / "files")
    path = _fire(tmp_path / "fire.json", [
        _ann("a man is cooking", "v3", "irrelevant", labels=("irrelevant", "irrelevant"), ids=(1, 2)),
        _ann("a dog runs", "v4", "relevant", models=("A", "B")),
        _ann("a cat sleeps", "v5", "relevant", dataset="MSVD"),
    ], disagreements=[_ann("a dog runs", "v6", labels=("relevant", "irrelevant"))])
    outcome = judgments_import(dataset=dataset, path=path, only_dataset="MSRVTT")
    # q1 and q2 share the text "a man is cooking": the one record judges both caption rows.
    assert _judged(dataset) == {("q1", "v3"): "not_relevant", ("q2", "v3"): "not_relevant",
                                ("q3", "v4"): "relevant", ("q3", "v6"): "disagreement"}
    assert outcome.judgment_set.counts == {"records": 4, "records_of_other_datasets": 1, "not_relevant": 2,
                                           "relevant": 1, "disagreement": 1, "extra_captions_sharing_text": 1,
                                           "file_datasets": ["MSRVTT"]}
    judgment = ImportedJudgment.objects.get(dataset=dataset, caption__external_id="q3", clip__external_id="v4")
    assert judgment.models_proposing == ["A", "B"] and judgment.annotator_ids == [7]
    assert judgment.source_record == "annotations[1] (line 3)"


def test_video_ids_match_clips_by_video_when_one_clip_has_it(tmp_path):
    dataset, _ = load_example(tmp_path / "files")
    Clip.objects.filter(dataset=dataset, external_id="v4").update(video_id="video4")
    Clip.objects.filter(dataset=dataset, external_id__in=["v5", "v6"]).update(video_id="shared")
    path = _fire(tmp_path / "fire.json", [_ann("a dog runs", "video4", "relevant"),
                                          _ann("a dog runs", "shared", "relevant")])
    with pytest.raises(ImportRejected) as caught:
        judgments_import(dataset=dataset, path=path)
    # 'video4' names one clip; 'shared' names two, so it is not a clip id.
    assert [str(i) for i in caught.value.issues] == [
        f"fire.json, line 3, field 'annotations[1].video_id': no clip 'shared' in '{dataset.name}'"]


def test_bad_records_are_all_reported_and_nothing_is_written(tmp_path):
    dataset, _ = load_example(tmp_path / "files")
    path = _fire(tmp_path / "fire.json", [
        _ann("a man is cooking", "v1", "relevant"),
        _ann("nobody wrote this", "v1", "relevant"),
        _ann("a dog runs", "v99", "relevant"),
        _ann("a man is cooking", "v1", "irrelevant"),
        _ann("a dog runs", "v2", "sometimes"),
    ])
    with pytest.raises(ImportRejected) as caught:
        judgments_import(dataset=dataset, path=path)
    assert [str(i) for i in caught.value.issues] == [
        f"fire.json, line 3, field 'annotations[1].query': no caption of '{dataset.name}' has the text "
        f"'nobody wrote this'",
        f"fire.json, line 4, field 'annotations[2].video_id': no clip 'v99' in '{dataset.name}'",
        # Both caption rows sharing the text contradict the first record.
        "fire.json, line 5, field 'annotations[3].label': says 'irrelevant' but annotations[0] (line 2) says "
        "'relevant' for the same pair",
        "fire.json, line 5, field 'annotations[3].label': says 'irrelevant' but annotations[0] (line 2) says "
        "'relevant' for the same pair",
        "fire.json, line 6, field 'annotations[4].label': 'sometimes' is not 'relevant' or 'irrelevant'",
    ]
    assert not JudgmentSet.objects.exists() and not ImportedJudgment.objects.exists()


def test_qrels_problems_name_line_and_field(tmp_path):
    dataset, _ = load_example(tmp_path / "files")
    path = tmp_path / "bad.qrels"
    path.write_text("q1 0 v1 1\nq9 0 v1 1\nq1 0 v77 0\nq1 0 v1 0\n")
    with pytest.raises(ImportRejected) as caught:
        judgments_import(dataset=dataset, path=path)
    assert [str(i) for i in caught.value.issues] == [
        f"bad.qrels, line 2, field 'query_id': no caption 'q9' in '{dataset.name}'",
        f"bad.qrels, line 3, field 'doc_id': no clip 'v77' in '{dataset.name}'",
        "bad.qrels, line 4, field 'relevance': says 'irrelevant' but line 1 says 'relevant' for the same pair",
    ]
    assert not JudgmentSet.objects.exists()


def test_a_second_file_may_not_contradict_an_earlier_import(tmp_path):
    dataset, _ = load_example(tmp_path / "files")
    first = tmp_path / "first.qrels"
    first.write_text("q1 0 v2 1\n")
    judgments_import(dataset=dataset, path=first)
    second = tmp_path / "second.qrels"
    second.write_text("q1 0 v3 1\nq1 0 v2 0\n")
    with pytest.raises(ImportRejected) as caught:
        judgments_import(dataset=dataset, path=second)
    assert str(caught.value.issues[0]) == ("second.qrels, line 2, field 'relevance': says 'irrelevant' but the earlier "
                                           "import 'first' says 'relevant' for the same pair")
    agreeing = tmp_path / "agreeing.qrels"
    agreeing.write_text("q1 0 v2 1\nq1 0 v3 1\n")
    outcome = judgments_import(dataset=dataset, path=agreeing)
    assert outcome.judgment_set.counts["already_imported"] == 1 and outcome.judgment_set.counts["relevant"] == 1


def test_empty_and_unknown_inputs_are_refused(tmp_path):
    dataset, _ = load_example(tmp_path / "files")
    empty = tmp_path / "empty.qrels"
    empty.write_text("\n")
    with pytest.raises(ImportRejected, match="the file is empty"):
        judgments_import(dataset=dataset, path=empty)
    with pytest.raises(ImportRejected, match="unknown judgments format 'xml'"):
        judgments_import(dataset=dataset, path=empty, fmt="xml")


def test_round_trip_fire_export_then_import_gives_the_same_metrics_report(tmp_path):
    pool = example_pool(tmp_path / "first")
    before = report_create(pool=pool, kind="metrics").result
    exported = export_create(pool=pool, fmt="fire_json")
    published = tmp_path / "published.json"
    shutil.copy(artefact_file(artefact=exported), published)

    # A fresh start: nothing of the first dataset, its pool, labels or raters is left.
    Dataset.objects.all().delete()
    get_user_model().objects.all().delete()
    assert not (PooledPair.objects.exists() or Label.objects.exists() or ImportedJudgment.objects.exists())

    dataset, runs = load_example(tmp_path / "second")
    judgments_import(dataset=dataset, path=published)
    rebuilt = pool_create(dataset=dataset, name="rebuilt", runs=runs, depth=3, redundancy=0.0)
    assert not PooledPair.objects.filter(pool=rebuilt, role="pool", state="open").exists()
    after = report_create(pool=rebuilt, kind="metrics").result
    assert after == before
