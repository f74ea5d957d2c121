"""Loads the demo benchmark through the same import services that real files go through."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path


from annotation.demo.scenes import SCENES, demo_captions, demo_run_rows
from annotation.demo.video import render_clip
from annotation.models import Artefact, Dataset, Pool, RankingStudy
from annotation.services.datasets.imports import dataset_import
from annotation.services.exports.labels import export_create
from annotation.services.pools.build import known_pairs_add, pool_create
from annotation.services.ranking.study import ranking_memberships_grant, ranking_study_create
from annotation.services.accounts.raters import memberships_grant
from annotation.services.reports.create import report_create
from annotation.storage import stored_file_copy_in, stored_file_exists, stored_file_size
from annotation.services.datasets.runs import run_import
from annotation.services.accounts.users import api_token_for, user_ensure

DEMO_DATASET = "demo"
DEMO_ACCOUNTS = (
    ("admin", "rejudge-admin", "admin"),
    ("rater1", "rejudge-rater", "rater"),
    ("rater2", "rejudge-rater", "rater"),
    ("rater3", "rejudge-rater", "rater"),
    ("researcher", "rejudge-researcher", "researcher"),
)
DEMO_RUNS = (("model-good", "good", 1), ("model-medium", "medium", 2), ("model-weak", "weak", 3))


def demo_load() -> dict:
    """Idempotent: clips are rendered only if missing, data and accounts only created once."""
    for scene in SCENES:
        name = f"demo/{scene.clip_id}.mp4"
        if not stored_file_exists("media", name) or stored_file_size("media", name) == 0:
            # ffmpeg writes a file on this host; the media storage area (a folder, or a bucket) keeps it.
            with tempfile.TemporaryDirectory() as tmp:
                rendered = Path(tmp) / f"{scene.clip_id}.mp4"
                render_clip(scene, rendered)
                stored_file_copy_in("media", name, rendered)

    dataset = Dataset.objects.filter(name=DEMO_DATASET).first()
    with tempfile.TemporaryDirectory() as tmp:
        if dataset is None:
            manifest = Path(tmp) / "demo-manifest.jsonl"
            with manifest.open("w") as out:
                for scene in SCENES:
                    out.write(json.dumps({"kind": "clip", "id": scene.clip_id, "path": f"demo/{scene.clip_id}.mp4",
                                          "duration": scene.seconds}) + "\n")
                for caption in demo_captions():
                    out.write(json.dumps({"kind": "caption", "id": caption.caption_id, "text": caption.text,
                                          "clip": caption.original_clip}) + "\n")
            dataset = dataset_import(path=manifest, name=DEMO_DATASET, description="Synthetic shapes: the demo benchmark.")
        runs = []
        for name, quality, seed in DEMO_RUNS:
            path = Path(tmp) / f"{name}.trec"
            path.write_text("".join(f"{c} Q0 {v} {r} {s} {name}\n" for c, v, r, s in demo_run_rows(quality, seed=seed)))
            runs.append(run_import(dataset=dataset, path=path, name=name).run)

    accounts, raters = [], []
    for username, password, role in DEMO_ACCOUNTS:
        user, _ = user_ensure(username=username, password=password, role=role)
        entry = {"username": username, "password": password, "role": role}
        if role == "researcher":
            entry["api_token"] = api_token_for(user=user)
        if role == "rater":
            raters.append(user)
        accounts.append(entry)
    pool = _demo_pool(dataset, runs, raters)
    study = _demo_ranking_study(dataset, raters)
    report, export = _demo_report_and_export(pool)
    return {"dataset": dataset, "runs": runs, "accounts": accounts, "pool": pool, "study": study,
            "report": report, "export": export}


def _demo_report_and_export(pool):
    """One report and one export of the demo pool, so that the researcher's first look at the
    reports page (or GET /api/v1/reports/ with the token) finds something to open and download.
    Made once; admins make fresh ones as labels come in."""
    report = pool.reports.filter(kind="agreement").first() or report_create(pool=pool, kind="agreement")
    export = (Artefact.objects.filter(dataset=pool.dataset_id, kind="qrels", report__isnull=True,
                                      params__pool_id=pool.pk).first()
              or export_create(pool=pool, fmt="qrels"))
    return report, export


# Known pairs name their caption by its text, not its id: ids are numbered by position in
# demo_captions(), and pairs keyed by id once slipped by one (a blue shape x the blue triangle
# was taught as "not relevant"). tests/annotation/test_demo_known_pairs.py checks every answer
# against what the clip shows and the caption says.
DEMO_TRAINING = (
    ("a red circle moves from left to right on a white background", "demo01", "relevant",
     "Every element is present: a red circle, moving left to right, on a white background."),
    ("a red circle moves from left to right on a white background", "demo04", "not_relevant",
     "The shape is a square, not a circle: one element missing is enough to say no."),
    ("a triangle rises up", "demo07", "not_relevant",
     "The triangle moves left to right, not up: the activity must match too."),
)
DEMO_GOLD = (("a green shape moves", "demo05", "relevant"), ("something falls down", "demo08", "not_relevant"))


def _caption_id(text: str) -> str:
    ids = [c.caption_id for c in demo_captions() if c.text == text]
    if len(ids) != 1:
        raise ValueError(f"demo known pair names caption '{text}', which {len(ids)} demo captions have")
    return ids[0]


def _demo_pool(dataset, runs, raters):
    """A pool over the three runs (top 5, 30% double-labelled so agreement shows early), with
    a short training queue and a few gold pairs; the demo raters are members."""
    pool = Pool.objects.filter(dataset=dataset, name="demo-pool").first()
    if pool is None:
        pool = pool_create(dataset=dataset, name="demo-pool", runs=runs, depth=5, redundancy=0.3, seed=1,
                           gold_rate=0.1, training_pass_mark=0.66)
        known_pairs_add(pool=pool, items=[{"caption": _caption_id(t), "clip": v, "answer": a, "role": "training",
                                           "explanation": e} for t, v, a, e in DEMO_TRAINING]
                        + [{"caption": _caption_id(t), "clip": v, "answer": a, "role": "gold"} for t, v, a in DEMO_GOLD])
    memberships_grant(pool=pool, users=raters)
    return pool


def _demo_ranking_study(dataset, raters):
    """A five-caption ranking study on the bag-of-words proxy, which needs no language model."""
    study = RankingStudy.objects.filter(dataset=dataset, name="demo-ranking").first()
    if study is None:
        study = ranking_study_create(dataset=dataset, name="demo-ranking", proxies=["bow"], n_clips=6, seed=1)
    ranking_memberships_grant(study=study, users=raters)
    return study
