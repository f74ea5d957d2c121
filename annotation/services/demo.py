"""Loads the demo benchmark through the same import services that real files go through."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

from django.conf import settings

from annotation.demo.scenes import SCENES, demo_captions, demo_run_rows
from annotation.demo.video import render_clip
from annotation.models import Dataset
from annotation.services.dataset_import import dataset_import
from annotation.services.run_import import run_import
from annotation.services.users import api_token_for, user_ensure

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
    media_dir = Path(settings.MEDIA_ROOT) / "demo"
    for scene in SCENES:
        target = media_dir / f"{scene.clip_id}.mp4"
        if not target.exists() or target.stat().st_size == 0:
            render_clip(scene, target)

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

    accounts = []
    for username, password, role in DEMO_ACCOUNTS:
        user, _ = user_ensure(username=username, password=password, role=role)
        entry = {"username": username, "password": password, "role": role}
        if role == "researcher":
            entry["api_token"] = api_token_for(user=user)
        accounts.append(entry)
    return {"dataset": dataset, "runs": runs, "accounts": accounts}
