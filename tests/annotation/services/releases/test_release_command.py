"""`manage.py release create | list | diff`: the diff prints the counts and each pair with its reason."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import PooledPair
from annotation.services.queue.labels import pair_adjudicate
from tests.annotation.services.reports.test_report_metrics import example_pool
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def _run(*args) -> str:
    out = StringIO()
    call_command("release", *args, stdout=out)
    return out.getvalue()


def test_create_list_and_diff(tmp_path):
    pool = example_pool(tmp_path)
    # The example's disagreement (q2 v4) is unresolved: refused until the admin allows it.
    with pytest.raises(CommandError) as refused:
        _run("create", "--pool", str(pool.pk), "--name", "example-fire")
    assert str(refused.value).startswith("pool 'example pool': 16 of 17 pooled pairs resolved (94%); 1 unresolved "
                                         "pair will be scored as not relevant.")
    assert "--allow-unresolved" in str(refused.value)
    created = _run("create", "--pool", str(pool.pk), "--name", "example-fire", "--licence", "CC-BY-4.0",
                   "--allow-unresolved")
    assert "release example-fire@v1" in created and "16 qrels pairs over 4 queries" in created
    pair = PooledPair.objects.get(pool=pool, caption__external_id="q1", clip__external_id="v3")
    pair_adjudicate(pair_id=pair.pk, admin=make_user("admin"), label="relevant")
    assert "1 changed" in _run("create", "--pool", pool.name, "--name", "example-fire", "--allow-unresolved")
    listed = _run("list")
    assert listed.index("example-fire@v2") < listed.index("example-fire@v1")
    diff = _run("diff", "example-fire@v1", "example-fire@v2")
    assert diff.splitlines() == ["example-fire@v1 -> example-fire@v2: 0 added, 1 changed, 0 removed",
                                 "changed  q1 v3 0 -> 1  (adjudication)"]
    # --limit lists at most that many of each kind and says how many more there are; both directions
    # (v2 -> v1 changes the pair back).
    assert _run("diff", "example-fire@v1", "example-fire@v2", "--limit", "0").splitlines() == [
        "example-fire@v1 -> example-fire@v2: 0 added, 1 changed, 0 removed", "changed  ... 1 more"]
    assert _run("diff", "example-fire@v2", "example-fire@v1", "--limit", "1").splitlines() == [
        "example-fire@v2 -> example-fire@v1: 0 added, 1 changed, 0 removed", "changed  q1 v3 1 -> 0  (now decided by labels (was adjudication))"]
    with pytest.raises(CommandError, match="no release 'example-fire@v9'"):
        _run("diff", "example-fire@v1", "example-fire@v9")
    with pytest.raises(CommandError, match="DATASET:NAME"):
        _run("create", "--pool", str(pool.pk), "--judgment-set", "nocolon", "--name", "x")
