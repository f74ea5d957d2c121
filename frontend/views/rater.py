"""The rater's pages: judging pairs of a pool, and ordering captions in a ranking study.

Both pages are shells: the page script leases work, plays clips and sends answers through the
API, keeping unacknowledged answers in the browser until the server has them."""
from __future__ import annotations

from django.shortcuts import get_object_or_404, render

from annotation import roles
from annotation.models import PoolMembership
from annotation.page_access import page_for


@page_for(roles.RATER)
def judge(request, pool_id: int):
    membership = get_object_or_404(PoolMembership.objects.select_related("pool__dataset"), pool_id=pool_id,
                                   rater=request.user)
    return render(request, "frontend/rater/judge.html", {"pool": membership.pool})


@page_for(roles.RATER)
def rank(request, study_id: int):
    """Access to the study is checked by the API the page calls (it answers 404 for others)."""
    return render(request, "frontend/rater/rank.html", {"study_id": study_id})
