"""Small demo worlds for the machine-judge runner: clips rendered from demo scenes, their captions,
a pool of every caption–clip pair, and the judge server as a process."""
from __future__ import annotations

import pytest
from django.conf import settings

from annotation.demo.scenes import SCENES, demo_captions
from annotation.demo.video import render_clip
from annotation.formats.judge_chat import DEFAULT_PROMPT
from annotation.models import Caption, Clip, Dataset, JudgeEndpoint, Pool, PooledPair
from tests.annotation.demo_truth import true_answer
from tests.factories import unique
from tests.judge_server import JudgeServerProcess


@pytest.fixture
def judge_server():
    server = JudgeServerProcess()
    try:
        yield server
    finally:
        server.stop()


def mini_pool(clips: tuple[str, ...] = ("demo01", "demo04", "demo08"),
              captions: tuple[str, ...] = ("cap01", "cap04", "cap08", "cap13")) -> Pool:
    """A pool of every pair of the named demo clips and captions (12 pairs by default)."""
    dataset = Dataset.objects.create(name=unique("judge"))
    made = {}
    for scene in SCENES:
        if scene.clip_id in clips:
            target = settings.MEDIA_ROOT / "demo" / f"{scene.clip_id}.mp4"
            if not target.exists():
                render_clip(scene, target)
            made[scene.clip_id] = Clip.objects.create(dataset=dataset, external_id=scene.clip_id, video_id=scene.clip_id,
                                                      media=f"demo/{scene.clip_id}.mp4", duration=scene.seconds)
    texts = {c.caption_id: c for c in demo_captions()}
    pool = Pool.objects.create(dataset=dataset, name="judge pool")
    for caption_id in captions:
        caption = Caption.objects.create(dataset=dataset, external_id=caption_id, text=texts[caption_id].text)
        for clip in made.values():
            PooledPair.objects.create(pool=pool, caption=caption, clip=clip)
    return pool


def endpoint_for(server, *, model: str = "demo-vl", name: str | None = None, **options) -> JudgeEndpoint:
    values = {"frames_per_clip": 4, "concurrency": 4, "max_retries": 1, "timeout_seconds": 30,
              "prompt_version": DEFAULT_PROMPT} | options
    return JudgeEndpoint.objects.create(name=name or unique("judge"), base_url=server.url, model=model, **values)


def agreement(judge) -> float:
    judgments = list(judge.judgments.select_related("caption", "clip"))
    right = sum(j.label == true_answer(j.caption.text, j.clip.external_id) for j in judgments)
    return right / len(judgments)
