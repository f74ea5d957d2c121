"""Data for the browser tests and the latency benchmark: real H.264 clips under MEDIA_ROOT, a pool
built by the real services from a run, training pairs and a rater."""
from __future__ import annotations

import dataclasses
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from annotation.demo.scenes import SCENES, demo_captions
from annotation.demo.video import render_clip
from annotation.models import Caption, Clip, Dataset, Pool, RankingStudy, RankingTask, RankingTaskCaption
from annotation.services.pools.build import known_pairs_add, pool_create
from annotation.services.ranking.study import ranking_memberships_grant
from annotation.services.accounts.raters import memberships_grant, rater_create
from annotation.services.datasets.runs import run_import
from annotation.services.accounts.users import user_create

PASSWORD = "browser-pw-123"
TRAINING_EXPLANATIONS = {
    "relevant": "Every element the caption names is in the clip: shape, colour and motion.",
    "not_relevant": "The caption names something the clip does not show; every element must be present.",
}


def render_clips(count: int = 6, *, seconds: float = 4.0, folder: str = "browser") -> list[str]:
    """Renders `count` distinct demo scenes (a fraction of a second each) and returns their paths
    relative to MEDIA_ROOT; clips may share them."""
    paths = []
    for scene in SCENES[:count]:
        relative = f"{folder}/{scene.clip_id}-{seconds:g}s.mp4"
        target = Path(settings.MEDIA_ROOT) / relative
        if not target.exists():
            render_clip(dataclasses.replace(scene, seconds=seconds), target)
        paths.append(relative)
    return paths


@dataclass
class JudgingSetup:
    pool: Pool
    rater: object
    password: str
    training_answers: dict[str, str] = field(default_factory=dict)  # caption text -> right answer


def judging_setup(*, pairs: int = 24, training: int = 2, span: tuple[float, float] | None = None,
                  clip_seconds: float = 4.0, lease_seconds: int = 300, username: str = "rater",
                  pool_name: str = "Browser pool", redundancy: float = 0.0) -> JudgingSetup:
    """A pool of `pairs` caption–clip pairs (caption i with clip i), `training` training pairs
    alternating relevant / not relevant, and a rater who is a member."""
    paths = render_clips(seconds=clip_seconds)
    texts = [c.text for c in demo_captions()]
    dataset = Dataset.objects.create(name=f"{pool_name} data")
    start, end = span if span else (None, None)
    clips = [Clip.objects.create(dataset=dataset, external_id=f"v{i}", video_id=f"v{i}", media=paths[i % len(paths)],
                                 start=start, end=end, duration=clip_seconds) for i in range(pairs)]
    for i, clip in enumerate(clips):
        Caption.objects.create(dataset=dataset, external_id=f"q{i}", text=texts[i % len(texts)], original_clip=clip)
    training_answers, items = {}, []
    for j in range(training):
        answer = "relevant" if j % 2 == 0 else "not_relevant"
        text = f"training {j + 1}: {texts[j % len(texts)]}"
        Caption.objects.create(dataset=dataset, external_id=f"t{j}", text=text, original_clip=clips[j])
        items.append({"caption": f"t{j}", "clip": clips[j].external_id, "answer": answer, "role": "training",
                      "explanation": TRAINING_EXPLANATIONS[answer]})
        training_answers[text] = answer
    with tempfile.TemporaryDirectory() as tmp:
        run_file = Path(tmp) / "browser.trec"
        run_file.write_text("".join(f"q{i} Q0 v{i} 1 {1.0 - i / 1000:.4f} browser\n" for i in range(pairs)))
        run = run_import(dataset=dataset, path=run_file, name="browser-run").run
    pool = pool_create(dataset=dataset, name=pool_name, runs=[run], depth=1, redundancy=redundancy,
                       lease_seconds=lease_seconds)
    if items:
        known_pairs_add(pool=pool, items=items)
    rater = rater_create(username=username, password=PASSWORD)
    memberships_grant(pool=pool, users=[rater])
    return JudgingSetup(pool=pool, rater=rater, password=PASSWORD, training_answers=training_answers)


def admin_user(username: str = "boss"):
    return user_create(username=username, password=PASSWORD, role="admin")


@dataclass
class RankingSetup:
    study: RankingStudy
    rater: object
    password: str


def ranking_setup(*, tasks: int = 2, username: str = "ranker") -> RankingSetup:
    """A study with `tasks` tasks (a clip and five captions each, as a proxy would have picked
    them) and a rater who is a member. Rows are written directly: choosing captions by proxy is
    the proxies area's business and needs its NLP data."""
    paths = render_clips()
    texts = [c.text for c in demo_captions()]
    dataset = Dataset.objects.create(name="Ranking data")
    study = RankingStudy.objects.create(dataset=dataset, name="Proxy check", proxies=["bow"], n_clips=tasks,
                                        raters_per_task=2, lease_seconds=600)
    positions = list(RankingTaskCaption.Position.values)
    for t in range(tasks):
        clip = Clip.objects.create(dataset=dataset, external_id=f"v{t}", video_id=f"v{t}", media=paths[t % len(paths)],
                                   duration=4.0)
        task = RankingTask.objects.create(study=study, clip=clip, proxy="bow", n_candidates=10, required_submissions=2,
                                          queue_order=t)
        for k, position in enumerate(positions):
            caption = Caption.objects.create(dataset=dataset, external_id=f"q{t}-{k}",
                                             text=texts[(t * 5 + k) % len(texts)], original_clip=clip)
            RankingTaskCaption.objects.create(task=task, caption=caption, position=position, candidate_rank=k * 2,
                                              score=1.0 - k / 5)
    rater = rater_create(username=username, password=PASSWORD)
    ranking_memberships_grant(study=study, users=[rater])
    return RankingSetup(study=study, rater=rater, password=PASSWORD)


def pair_of_item(item_id: str) -> int:
    """The pair behind the opaque item id a rater's page shows (the page never sees pair ids)."""
    from annotation.models import PooledPair
    from annotation.services.queue.leases import item_id_for

    return next(pk for pk in PooledPair.objects.values_list("pk", flat=True) if item_id_for("pair", pk) == item_id)
