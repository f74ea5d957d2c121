"""Issue 14 item 11: the demo leaves a report and an export to download, and a second load says
how many pairs are left, not the pool's size."""
from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from annotation.models import Artefact, PooledPair, Report
from annotation.demo.load import demo_load

pytestmark = pytest.mark.django_db


def test_demo_makes_one_report_and_one_export_once():
    first = demo_load()
    assert first["report"].kind == "agreement" and first["report"].pool_id == first["pool"].pk
    assert first["export"].kind == "qrels" and first["export"].size > 0
    again = demo_load()
    assert (again["report"].pk, again["export"].pk) == (first["report"].pk, first["export"].pk)
    assert (Report.objects.count(), Artefact.objects.count()) == (1, 1)


def test_second_load_prints_pairs_left_not_the_pool_size():
    out = io.StringIO()
    call_command("load_demo", "--force", stdout=out)
    pool = demo_load()["pool"]
    size = PooledPair.objects.filter(pool=pool, role="pool").count()
    assert f"{size} of {size} pairs left to judge, 3 training pairs first" in out.getvalue()
    # Six pairs decided between the runs: 6 fewer are left, the pool is as large as before.
    decided = PooledPair.objects.filter(pool=pool, role="pool").order_by("pk")[:6].values_list("pk", flat=True)
    PooledPair.objects.filter(pk__in=list(decided)).update(state="resolved", resolved_label="relevant", available=False)
    out = io.StringIO()
    call_command("load_demo", "--force", stdout=out)
    assert f"{size - 6} of {size} pairs left to judge" in out.getvalue()
    assert "/reports/" in out.getvalue()
