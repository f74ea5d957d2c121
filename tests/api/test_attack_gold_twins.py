"""An attacker's pass over issue 12, gold that cannot be spotted: the demo's two gold pairs repeat
pool pairs, and a rater was shown both copies (found against the running platform)."""
from __future__ import annotations

import pytest

from annotation.models import Label, PooledPair
from annotation.services.pools.build import known_pairs_add
from annotation.services.accounts.raters import memberships_grant
from tests.api.test_attack_gates import answer, client_for, next_assignment
from tests.factories import make_pool_with_runs, make_rater

pytestmark = pytest.mark.django_db


def test_a_rater_is_never_shown_the_same_caption_and_clip_twice_in_a_pool():
    """Before: a gold pair that repeats a pool pair (the demo's two gold pairs do) was shown to a
    rater as well as its pool twin, so the pair seen twice was gold or its twin: a rater who
    remembered captions and clips could spot gold. Now gold is only handed out when its pool twin
    no longer needs labels, never to a rater who has seen or holds the twin, and a pool pair is
    not handed to a rater who answered or holds its gold twin."""
    pool, _ = make_pool_with_runs(captions=4, clips=6, depth=3, gold_rate=0.5)
    twins = list(PooledPair.objects.filter(pool=pool, role="pool").select_related("caption", "clip")[:3])
    known_pairs_add(pool=pool, items=[{"caption": p.caption.external_id, "clip": p.clip.external_id,
                                       "answer": "relevant", "role": "gold"} for p in twins])
    raters = [make_rater() for _ in range(3)]
    memberships_grant(pool=pool, users=raters)
    shown = {rater.pk: [] for rater in raters}
    # Raters take turns, so gold pairs whose twins others resolved do come up.
    active = list(raters)
    while active:
        for rater in list(active):
            c = client_for(rater)
            a = next_assignment(c, pool)
            if a is None:
                active.remove(rater)
                continue
            shown[rater.pk].append((a["caption"]["text"], a["clip"]["id"]))
            assert answer(c, a["lease_id"], "relevant", f"c{len(shown[rater.pk])}").status_code == 201
    for rater in raters:
        assert len(shown[rater.pk]) == len(set(shown[rater.pk])), shown[rater.pk]
    # Gold was still handed out, and every pool pair was still judged.
    assert Label.objects.filter(pair__role="gold").exists()
    assert not PooledPair.objects.filter(pool=pool, role="pool", state="open").exists()
