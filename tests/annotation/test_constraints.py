"""The database enforces what must always hold, whatever code writes the rows."""
from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from annotation.models import Caption, Clip, Prediction, Run
from tests.factories import make_dataset

pytestmark = pytest.mark.django_db


def refused(**kwargs):
    with pytest.raises(IntegrityError), transaction.atomic():
        kwargs.pop("model").objects.create(**kwargs)


def test_clip_and_caption_ids_unique_per_dataset():
    ds = make_dataset()
    refused(model=Clip, dataset=ds, external_id="v1", video_id="v1")
    refused(model=Caption, dataset=ds, external_id="q1", text="again")
    other = make_dataset()
    assert Clip.objects.filter(external_id="v1").count() == 2 and other.pk != ds.pk


@pytest.mark.parametrize("start, end", [(5, 5), (6, 2), (-1, 3), (1, None), (None, 2)])
def test_clip_spans(start, end):
    refused(model=Clip, dataset=make_dataset(), external_id="x", video_id="x", start=start, end=end)


def test_prediction_rank_and_span_rules():
    ds = make_dataset()
    run = Run.objects.create(dataset=ds, name="r", checksum="c")
    caption, clip = ds.captions.first(), ds.clips.first()
    Prediction.objects.create(run=run, caption=caption, clip=clip, rank=1, score=1)
    refused(model=Prediction, run=run, caption=caption, clip=clip, rank=1, score=0.5)
    refused(model=Prediction, run=run, caption=caption, clip=clip, rank=0, score=0.5)
    refused(model=Prediction, run=run, caption=caption, clip=clip, rank=2, score=0.5, start=3, end=3)
    refused(model=Run, dataset=ds, name="r", checksum="other")
    refused(model=Run, dataset=ds, name="r2", checksum="c")
