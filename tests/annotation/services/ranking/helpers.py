"""A small benchmark whose five captions per clip are worked out by hand, and a ranking study built
on it, for the ranking tests here and the API and page tests of ranking studies."""
from __future__ import annotations

from annotation.models import Caption, Clip, Dataset
from annotation.services.ranking.study import ranking_memberships_grant, ranking_study_create
from annotation.services.ranking.submissions import ranking_submission_create
from tests.factories import lease_task_for, make_user

# One caption per clip, written for it. BoW sets (no stop words among these words):
# c1 {red, dog, runs, fast}; against it: c2 {red, dog, runs, slowly} 3/5, c3 {red, dog, sleeps} 2/5,
# c4 {red, cat, sleeps} 1/6, c7 {red, bird, sings, loudly} 1/7, c5 and c6 share nothing: 0.
CAPTIONS = ["red dog runs fast", "red dog runs slowly", "red dog sleeps", "red cat sleeps", "blue cat sleeps",
            "green bird sings", "red bird sings loudly"]


def make_benchmark(captions=CAPTIONS, name="bench") -> Dataset:
    dataset = Dataset.objects.create(name=name)
    for i, text in enumerate(captions, start=1):
        clip = Clip.objects.create(dataset=dataset, external_id=f"v{i}", video_id=f"v{i}", media=f"v{i}.mp4")
        Caption.objects.create(dataset=dataset, external_id=f"q{i}", text=text, original_clip=clip)
    return dataset


def make_study(dataset=None, *, n_clips=7, raters_per_task=3, lease_seconds=600, raters=(), name="study"):
    study = ranking_study_create(dataset=dataset or make_benchmark(), name=name, proxies=["bow"], n_clips=n_clips,
                                 raters_per_task=raters_per_task, lease_seconds=lease_seconds)
    ranking_memberships_grant(study=study, users=list(raters))
    return study


def raters(n):
    return [make_user("rater") for _ in range(n)]


def order_of(task):
    return list(task.captions.values_list("caption_id", flat=True))


def submit(rater, task, client_id=None, order=None, **kw):
    return ranking_submission_create(rater=rater, client_id=f"{rater.pk}-{task.pk}" if client_id is None else client_id,
                                     lease=lease_task_for(rater, task).token,
                                     order=order if order is not None else order_of(task), **kw)
