"""The demo benchmark: loads, is idempotent, its clips are real videos of the stated length."""
from __future__ import annotations

import imageio_ffmpeg
import pytest
from django.conf import settings

from annotation.demo.scenes import SCENES, demo_captions, ground_truth
from annotation.models import Caption, Clip, Dataset, Prediction, Run
from annotation.demo.load import demo_load

pytestmark = pytest.mark.django_db


def test_demo_loads_twice_without_duplicates():
    first = demo_load()
    counts = (Dataset.objects.count(), Clip.objects.count(), Caption.objects.count(), Run.objects.count(),
              Prediction.objects.count())
    demo_load()
    assert counts == (Dataset.objects.count(), Clip.objects.count(), Caption.objects.count(), Run.objects.count(),
                      Prediction.objects.count())
    assert counts[:4] == (1, len(SCENES), len(demo_captions()), 3)
    assert {a["role"] for a in first["accounts"]} == {"admin", "rater", "researcher"}
    assert sum(a["role"] == "rater" for a in first["accounts"]) == 3


def test_demo_clips_are_playable_h264_of_the_stated_length():
    demo_load()
    for clip in Clip.objects.all():
        path = settings.MEDIA_ROOT / clip.media
        frames, seconds = imageio_ffmpeg.count_frames_and_secs(str(path))
        assert seconds == pytest.approx(clip.duration, abs=0.1)
        assert frames == 60
        assert path.read_bytes()[4:8] == b"ftyp"  # an MP4 container


def test_demo_captions_match_several_clips_and_runs_differ_in_quality():
    truth = ground_truth()
    assert max(len(v) for v in truth.values()) >= 3  # some captions match several clips
    demo_load()
    hits = {}
    for run in Run.objects.all():
        top1 = Prediction.objects.filter(run=run, rank=1).values_list("caption__external_id", "clip__external_id")
        hits[run.name] = sum(clip in truth[caption] for caption, clip in top1)
    assert hits["model-good"] > hits["model-weak"]


def test_demo_pool_is_ready_to_judge():
    from annotation.models import PooledPair, PoolMembership
    from annotation.services.queue.leases import lease_next

    summary = demo_load()
    pool = summary["pool"]
    counts = PooledPair.objects.filter(pool=pool).count()
    demo_load()
    assert PooledPair.objects.filter(pool=pool).count() == counts  # no duplicates on a second run
    assert PooledPair.objects.filter(pool=pool, role="training").count() == 3
    raters = [m.rater for m in PoolMembership.objects.filter(pool=pool)]
    assert sorted(r.username for r in raters) == ["rater1", "rater2", "rater3"]
    assert lease_next(pool=pool, rater=raters[0]).mode == "training"
    assert summary["study"].tasks.count() == 6
