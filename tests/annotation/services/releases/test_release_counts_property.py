"""Property (issue 35, "counts that agree and say what they count"): whatever state a pool's pairs
are in, a release made with unresolved pairs allowed states in release.json and in its datasheet
the pooled, judged, resolved, unresolved and original-positive counts that this test knows from
what it did to the pairs, never from pool_pair_counts.

Hypothesis draws a dataset, one to three runs (captions ranked in any order, originals among the
pooled clips or not) and, for each pool pair, what happens to it: nothing; one rater's vote that
decides it; one vote of the two it needs (judged, still open); an admin's decision without a label
(resolved, not judged); or a state that is not a verdict (escalated, no majority, set aside,
stopped, not sampled). Sometimes a second, untouched pool is released with it, and the totals add up.
"""
from __future__ import annotations

import io
import json
import re
import zipfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.models import Caption, PooledPair
from annotation.services.accounts.raters import memberships_grant
from annotation.services.exports.labels import EXPORTS
from annotation.services.pools.build import pool_create
from annotation.services.queue.labels import pair_adjudicate
from annotation.services.releases.create import release_create
from annotation.storage import stored_file_chunks
from tests.factories import label_pair, make_pool_with_runs, make_user, unique

pytestmark = pytest.mark.django_db

FATES = ["none", "decided", "half", "admin", "adjudication", "disagreement", "set_aside", "stopped", "not_sampled"]


@st.composite
def campaigns(draw):
    clips = draw(st.integers(3, 7))
    captions = draw(st.integers(1, 4))
    depth = draw(st.integers(1, 3))
    names = [f"v{i}" for i in range(1, clips + 1)]
    runs = tuple((f"R{r}", [(f"q{q}", draw(st.permutations(names))[:depth]) for q in range(1, captions + 1)])
                 for r in range(draw(st.integers(1, 3))))
    fates = draw(st.lists(st.sampled_from(FATES), min_size=clips * captions, max_size=clips * captions))
    return clips, captions, depth, runs, fates, draw(st.booleans())


def _files(release) -> dict[str, str]:
    data = b"".join(stored_file_chunks(EXPORTS, release.archive))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name.split("/", 1)[1]: archive.read(name).decode() for name in archive.namelist()}


def _give_fates(pool, fates) -> dict[str, int]:
    """Does to each pool pair what `fates` says; returns the counts this implies, kept by hand."""
    rater, admin = make_user("rater"), make_user("admin")
    memberships_grant(pool=pool, users=[rater])
    truth = {"pooled": 0, "judged": 0, "resolved": 0}
    for pair, fate in zip(PooledPair.objects.filter(pool=pool, role="pool").order_by("pk"), fates):
        truth["pooled"] += 1
        if fate == "decided":
            label_pair(rater, pair, value="relevant", seconds=2.0)
            truth["judged"] += 1
            truth["resolved"] += 1
        elif fate == "half":
            PooledPair.objects.filter(pk=pair.pk).update(required_labels=2)
            label_pair(rater, PooledPair.objects.get(pk=pair.pk), value="not_relevant", seconds=2.0)
            truth["judged"] += 1
        elif fate == "admin":
            pair_adjudicate(pair_id=pair.pk, admin=admin, label="not_relevant")
            truth["resolved"] += 1
        elif fate != "none":
            PooledPair.objects.filter(pk=pair.pk).update(state=fate, available=False)
    return truth


def _originals_pooled(pool) -> int:
    """Pool pairs whose clip is their caption's original clip, counted from the captions."""
    originals = dict(Caption.objects.filter(dataset=pool.dataset).values_list("pk", "original_clip_id"))
    return sum(1 for caption, clip in PooledPair.objects.filter(pool=pool, role="pool").values_list("caption_id", "clip_id")
               if originals.get(caption) == clip)


@settings(max_examples=20, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(campaigns())
def test_release_json_and_the_datasheet_state_the_counts_the_pairs_were_given(drawn):
    clips, captions, depth, runs, fates, second = drawn
    pool, made = make_pool_with_runs(captions=captions, clips=clips, depth=depth, runs=runs)
    truth = _give_fates(pool, fates)
    truth["unresolved"] = truth["pooled"] - truth["resolved"]
    truth["original_positives"] = _originals_pooled(pool)
    pools, expected = [pool], {pool.name: truth}
    if second:
        other = pool_create(dataset=pool.dataset, name=unique("untouched"), runs=made, depth=1, redundancy=0.0)
        pooled = PooledPair.objects.filter(pool=other, role="pool").count()
        pools.append(other)
        expected[other.name] = {"pooled": pooled, "judged": 0, "resolved": 0, "unresolved": pooled,
                                "original_positives": _originals_pooled(other)}
    total = {key: sum(counts[key] for counts in expected.values()) for key in truth}

    release = release_create(pools=pools, name=unique("counted"), allow_unresolved=True)
    files = _files(release)
    manifest = json.loads(files["release.json"])
    assert {s["name"]: s["pair_counts"] for s in manifest["sources"]} == expected
    assert manifest["counts"]["pool_pairs"] == total == release.counts["pool_pairs"]
    assert manifest["counts"]["unresolved_allowed"] is bool(total["unresolved"])
    assert manifest["scoring"]["resolved_share"] == round(total["resolved"] / total["pooled"], 4)

    readme = files["README.md"]
    for name, counts in expected.items():
        assert (f"- pool `{name}`: {counts['pooled']} pooled, {counts['judged']} judged, {counts['resolved']} "
                f"resolved, {counts['unresolved']} unresolved, {counts['original_positives']} original positives"
                ) in readme
    stated = {match.group(1): int(match.group(2)) for match in
              re.finditer(r"^- (pooled|judged|resolved|unresolved) pairs \(.*\): (\d+)$", readme, re.MULTILINE)}
    stated["original_positives"] = int(re.search(r"^- original positives among .*: (\d+)$", readme, re.MULTILINE)[1])
    assert stated == total
    assert f"{total['resolved']} of {total['pooled']} pooled pairs resolved (" in readme
    assert ("made with unresolved pairs allowed by the admin" in readme) is bool(total["unresolved"])
    # Without the admin's leave, a pool with an unresolved pair is refused.
    if total["unresolved"]:
        with pytest.raises(ValueError, match="allow unresolved pairs"):
            release_create(pools=pools, name=unique("refused"))
