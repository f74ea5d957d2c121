"""A small pool with training and gold pairs on clips no run proposed (so no gold pair has a
pool twin), and crowd studies over it."""
from __future__ import annotations

import re

from annotation.models import Pool, PooledPair
from annotation.services.crowd.studies import study_save
from annotation.services.pools.build import known_pairs_add
from tests.factories import make_dataset, unique

CAPTIONS, CLIPS, DEPTH, POOL_CLIPS_PER_CAPTION = 6, 16, 2, 3


def crowd_pool(*, gold: int = 12, training: int = 2, gold_rate: float = 0.0, **pool_options):
    """Pool pairs (18): each caption q with clips v(q+2)..v(q+4). Known pairs: caption q with clips
    v(q+8).. (never pooled); training first, then gold, answers alternating."""
    # Pool pairs written directly, as a build leaves them (one label each, seeded order): these
    # tests are about what happens after the build.
    dataset = make_dataset(clips=CLIPS, captions=CAPTIONS)
    pool = Pool.objects.create(dataset=dataset, name=unique("crowd-pool"), depth=DEPTH, redundancy=0, gold_rate=gold_rate,
                               **pool_options)
    captions = {c.external_id: c for c in dataset.captions.all()}
    clips = {v.external_id: v for v in dataset.clips.all()}
    PooledPair.objects.bulk_create([
        PooledPair(pool=pool, caption=captions[f"q{q}"], clip=clips[f"v{(q + r) % CLIPS + 1}"], queue_order=q * 10 + r)
        for q in range(1, CAPTIONS + 1) for r in range(1, 1 + POOL_CLIPS_PER_CAPTION)])
    items = []
    for n in range(training + gold):
        q = n % CAPTIONS + 1
        clip = (q + 8 + n // CAPTIONS) % CLIPS + 1
        items.append({"caption": f"q{q}", "clip": f"v{clip}", "answer": "relevant" if n % 2 == 0 else "not_relevant",
                      "role": "training" if n < training else "gold", "explanation": "because" if n < training else ""})
    known_pairs_add(pool=pool, items=items)
    assert PooledPair.objects.filter(pool=pool, role="gold").count() == gold
    return pool


def prolific_study(pool, **options):
    settings = {"platform": "prolific", "title": "Judge clips", "completion_code": "C0DE123",
                "quota_pairs": 5, "consent_text": "I agree to take part.", "training_required": False} | options
    return study_save(pool=pool, **settings)


def mturk_study(pool, **options):
    settings = {"platform": "mturk", "title": "Judge clips", "description": "Say whether a caption fits a clip.",
                "quota_pairs": 4, "consent_text": "I agree to take part.", "training_required": False} | options
    return study_save(pool=pool, **settings)


def ticket_of(page) -> str:
    """The signed entry ticket of a study link's page (entry, resume or choice form)."""
    found = re.search(rb'name="ticket" value="([^"]+)"', page.content)
    assert found, page.content[:500]
    return found.group(1).decode()


def arrive_by_form(client, study, query: str, *, action: str = "agree", **fields):
    """Opens the study link (a GET: the entry page) and posts its form, as a browser does;
    returns the POST's response."""
    page = client.get(f"/study/{study.token}/?{query}")
    assert page.status_code == 200, (page.status_code, page.content[:300])
    csrf = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page.content)
    form = {"ticket": ticket_of(page), "action": action, **fields}
    if csrf:
        form["csrfmiddlewaretoken"] = csrf.group(1).decode()
    return client.post(f"/study/{study.token}/enter/", form)
