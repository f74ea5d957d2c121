"""Small builders for test data (plain functions, no factory library needed)."""
from __future__ import annotations

from annotation.models import Caption, Clip, Dataset
from annotation.services.users import user_create

_counter = [0]


def unique(prefix: str) -> str:
    _counter[0] += 1
    return f"{prefix}{_counter[0]}"


def make_user(role: str, username: str | None = None, password: str = "pw-123456"):
    return user_create(username=username or unique(role), password=password, role=role)


def make_dataset(name: str | None = None, clips: int = 5, captions: int = 3) -> Dataset:
    dataset = Dataset.objects.create(name=name or unique("ds"))
    made = [Clip.objects.create(dataset=dataset, external_id=f"v{i}", video_id=f"v{i}") for i in range(1, clips + 1)]
    for i in range(1, captions + 1):
        Caption.objects.create(dataset=dataset, external_id=f"q{i}", text=f"caption {i}", original_clip=made[(i - 1) % clips])
    return dataset
