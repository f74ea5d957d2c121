"""A pool whose every exported field is awkward to write: captions, ids and run names a spreadsheet
would run as formulas, tabs, CR/LF, quotes, commas, non-ASCII and control characters, two captions
sharing a text, imported judgments with ids of every JSON type, an admin's decision, surplus votes,
labels with and without seconds, timestamps with and without microseconds, a span pair. The
byte-level tests of the exports and the release (test_export_bytes.py) write it."""
from __future__ import annotations

from datetime import datetime, timezone

from annotation.models import Caption, Clip, Label, PooledPair, Run
from annotation.models.judgment_sets import ImportedJudgment, JudgmentSet
from tests.factories import make_pool_with_runs, make_rater, make_user, unique

# Captions q1 and q4 share a text (one FIRE record); PostgreSQL text holds no NUL, so none here.
TEXTS = {"q1": "=1+2", "q2": "-x, \"quoted\"", "q3": "@a\ttab", "q4": "=1+2",
         "q5": "cr\rlf\nboth\r\nend", "q6": "café – 日本 😀 \x01\x1f\x7f\u2028 +", "q7": "\t=lead tab",
         "q8": "\rreturn first"}
CAPTION_IDS = {"q2": "-q2", "q3": "@q3"}
CLIPS = {"v3": ("@v3", "v3,\"x\".mp4"), "v5": ("=v5", "+v5\n.mp4")}
RUN_NAMES = ("-run", "=B,\"x\"", "plain ü")
WHEN = [datetime(2026, 3, 4, 5, 6, 7, 123456, tzinfo=timezone.utc), datetime(2026, 3, 4, 5, 6, 8, tzinfo=timezone.utc),
        datetime(2026, 3, 4, 5, 6, 9, 500, tzinfo=timezone.utc)]
SECONDS = [2.5, None, 0.1 + 0.2, 3.0, 1e-05]


def _runs(captions: int, clips: int):
    ranked = []
    for offset in range(len(RUN_NAMES)):
        rows = []
        for q in range(1, captions + 1):
            # q4 ranks q1's clips, so the shared text has pairs on the same clips.
            base = 1 if q == 4 else q
            rows.append((f"q{q}", [f"v{(base + offset + r) % clips + 1}" for r in range(3)]))
        ranked.append((RUN_NAMES[offset], rows))
    return tuple(ranked)


def awkward_pool():
    """The pool (its dataset's caption/clip rows and runs renamed as above), its pairs in one state
    each, labelled by four raters (one of them without a rater profile yet)."""
    pool, runs = make_pool_with_runs(captions=len(TEXTS), clips=7, depth=3, runs=_runs(len(TEXTS), 7))
    dataset = pool.dataset
    for external_id, text in TEXTS.items():
        Caption.objects.filter(dataset=dataset, external_id=external_id).update(
            text=text, external_id=CAPTION_IDS.get(external_id, external_id))
    for external_id, (new_id, video) in CLIPS.items():
        Clip.objects.filter(dataset=dataset, external_id=external_id).update(external_id=new_id, video_id=video)
    raters = [make_rater() for _ in range(3)] + [make_user("rater")]
    pairs = list(PooledPair.objects.filter(pool=pool, role="pool").order_by("pk"))
    judged = JudgmentSet.objects.create(dataset=dataset, name=unique("set"), source_format="fire_json",
                                        checksum=unique("sum"))
    made = 0

    def label(pair, rater, value, n, **fields):
        nonlocal made
        made += 1
        row = Label.objects.create(pair=pair, rater=raters[rater], value=value, client_id=unique("c"),
                                   seconds=SECONDS[made % len(SECONDS)], sequence=n, **fields)
        Label.objects.filter(pk=row.pk).update(created_at=WHEN[made % len(WHEN)])

    for n, pair in enumerate(pairs):
        case = n % 8
        if case == 0:  # resolved by three votes, one of them against
            for r, value in enumerate(("relevant", "not_relevant", "relevant")):
                label(pair, r, value, r + 1)
            PooledPair.objects.filter(pk=pair.pk).update(state="resolved", resolved_label="relevant", vote_count=3)
        elif case == 1:  # an admin's decision over one vote
            label(pair, 3, "relevant", 1)
            PooledPair.objects.filter(pk=pair.pk).update(state="resolved", resolved_label="not_relevant",
                                                         vote_count=1, resolved_by_admin=True)
        elif case == 2:  # no majority
            label(pair, 0, "relevant", 1)
            label(pair, 1, "not_relevant", 2)
            PooledPair.objects.filter(pk=pair.pk).update(state="disagreement", vote_count=2)
        elif case == 3:  # a counted vote and a surplus one
            label(pair, 1, "not_relevant", 1)
            label(pair, 2, "relevant", 0, counted=False, surplus_reason="=surplus, late")
            PooledPair.objects.filter(pk=pair.pk).update(state="resolved", resolved_label="not_relevant", vote_count=1)
        elif case == 4:  # open, not labelled
            pass
        elif case == 5:  # resolved from an imported judgment (no votes)
            ImportedJudgment.objects.get_or_create(
                dataset=dataset, caption_id=pair.caption_id, clip_id=pair.clip_id, defaults={
                    "judgment_set": judged, "label": "relevant",
                    "annotator_labels": ["relevant", "not_relevant", "relevant"],
                    "annotator_ids": [7, "ä-\"x\"", 1.5, True, None, "=r", ["nested", 1]],
                    "models_proposing": ["-run", "ext,run"]})
            PooledPair.objects.filter(pk=pair.pk).update(state="resolved", resolved_label="relevant", vote_count=0)
        elif case == 6:  # a span pair with a vote that escalated
            label(pair, 0, "ambiguous", 1)
            PooledPair.objects.filter(pk=pair.pk).update(state="adjudication", start=0.5, end=2.25)
        else:  # resolved not relevant by two votes
            label(pair, 2, "not_relevant", 1)
            label(pair, 3, "not_relevant", 2)
            PooledPair.objects.filter(pk=pair.pk).update(state="resolved", resolved_label="not_relevant",
                                                         vote_count=2)
    assert Run.objects.filter(dataset=dataset).count() == len(RUN_NAMES)
    return pool
