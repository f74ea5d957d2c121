"""Taking a rater's ordering (services/ranking/submissions.py): idempotent and one per task,
invalid orderings and other refusals naming their field, and what a rater is shown."""
from __future__ import annotations

import pytest

from annotation.models import Caption, RankingSubmission
from annotation.selectors.ranking import ranking_task_display
from annotation.services.ranking.leases import ranking_lease_next
from annotation.services.ranking.submissions import RankingRefused, ranking_submission_create
from tests.annotation.services.ranking.helpers import make_study, order_of, raters, submit
from tests.factories import lease_task_for

pytestmark = pytest.mark.django_db


def test_submission_is_idempotent_and_one_per_task():
    (r1,) = raters(1)
    study = make_study(n_clips=1, raters=[r1])
    task = study.tasks.get()
    ranking_lease_next(study=study, rater=r1)
    first = submit(r1, task, client_id="abc", seconds=12.5)
    again = submit(r1, task, client_id="abc", order=list(reversed(order_of(task))))
    assert first.created and not again.created and again.submission.pk == first.submission.pk
    assert again.submission.order == order_of(task)  # the stored ordering, not the replayed one
    with pytest.raises(RankingRefused) as refused:
        submit(r1, task, client_id="other")
    assert refused.value.code == "conflict"
    task.refresh_from_db()
    assert task.submission_count == 1 and RankingSubmission.objects.count() == 1


@pytest.mark.parametrize("bad", ["missing", "duplicate", "foreign", "extra", "empty"])
def test_invalid_orders_are_refused_naming_the_field(bad):
    (r1,) = raters(1)
    study = make_study(n_clips=1, raters=[r1])
    task = study.tasks.get()
    ids = order_of(task)
    own_caption = Caption.objects.get(original_clip=task.clip).pk  # a real caption, not one of the five
    order = {"missing": ids[:4], "duplicate": ids[:4] + ids[:1], "foreign": ids[:4] + [own_caption],
             "extra": ids + [own_caption], "empty": []}[bad]
    lease = ranking_lease_next(study=study, rater=r1).lease
    with pytest.raises(RankingRefused) as refused:
        submit(r1, task, order=order)
    assert refused.value.code == "invalid" and refused.value.field == "order"
    lease.refresh_from_db()
    assert lease.state == "active" and RankingSubmission.objects.count() == 0


def test_other_refusals():
    member, outsider = raters(2)
    study = make_study(n_clips=1, raters=[member])
    task = study.tasks.get()
    for kwargs, code, field in [({"client_id": ""}, "invalid", "client_id"), ({"seconds": -1}, "invalid", "seconds")]:
        with pytest.raises(RankingRefused) as refused:
            submit(member, task, **kwargs)
        assert (refused.value.code, refused.value.field) == (code, field)
    member_lease = lease_task_for(member, task)
    with pytest.raises(RankingRefused) as refused:  # another rater's lease is no lease at all
        ranking_submission_create(rater=outsider, client_id="x", lease=member_lease.token, order=order_of(task))
    assert refused.value.code == "not_found"
    with pytest.raises(RankingRefused) as refused:
        ranking_submission_create(rater=member, client_id="x", lease="no-such-lease", order=[1, 2, 3, 4, 5])
    assert refused.value.code == "not_found"


def test_raters_see_ids_and_texts_in_their_own_stable_shuffle():
    rs = raters(4)
    study = make_study(n_clips=1, raters=rs)
    task = study.tasks.get()
    shown = [ranking_task_display(task=task, rater=r) for r in rs]
    for captions in shown:
        assert all(set(c) == {"id", "text"} for c in captions)
        assert sorted(c["id"] for c in captions) == sorted(order_of(task))
    assert shown[0] == ranking_task_display(task=task, rater=rs[0])  # a reload shows the same order
    assert len({tuple(c["id"] for c in captions) for captions in shown}) > 1
