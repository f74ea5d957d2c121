"""Exports with `aggregation`: Dawid–Skene decides the pairs whose voting is over, from the same
human votes, and the file says which rule made its labels (column, field, file name, params)."""
from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from annotation.models import Artefact, Job, Label, PooledPair
from annotation.services.exports.labels import ExportError, artefact_file, export_create
from annotation.services.accounts.raters import memberships_grant
from tests.annotation.services.reports.test_report_agreement import _pool_of_pairs
from tests.factories import make_user, unique

pytestmark = pytest.mark.django_db

# The hand-worked case of test_aggregation.py with the codes swapped (1 relevant):
#   t1: a=0 b=0 c=1   t2: a=0 b=0 c=1   t3: a=1 b=1 c=0   t4: a=1 c=0 (a tie: no majority)
# Dawid-Skene reads c as flipping every label, so t4 -> relevant. Strict majority leaves it a
# disagreement. t3 was decided by an admin (not relevant, against its votes): it stays so.
VOTES = [(0, 0, 0), (0, 1, 0), (0, 2, 1), (1, 0, 0), (1, 1, 0), (1, 2, 1), (2, 0, 1), (2, 1, 1), (2, 2, 0),
         (3, 0, 1), (3, 2, 0)]


@pytest.fixture
def world(settings, tmp_path):
    settings.EXPORT_ROOT = str(tmp_path / "exports")
    pool, pairs = _pool_of_pairs(4, 1)
    raters = [make_user("rater") for _ in range(3)]
    memberships_grant(pool=pool, users=raters)
    word = {1: "relevant", 0: "not_relevant"}
    Label.objects.bulk_create([Label(pair=pairs[p], rater=raters[r], value=word[v], client_id=unique("c"),
                                     sequence=i + 1) for i, (p, r, v) in enumerate(VOTES)])
    for unit, label in ((0, "not_relevant"), (1, "not_relevant")):
        PooledPair.objects.filter(pk=pairs[unit].pk).update(state="resolved", resolved_label=label, vote_count=3)
    PooledPair.objects.filter(pk=pairs[2].pk).update(state="resolved", resolved_label="not_relevant", vote_count=3,
                                                     resolved_by_admin=True)
    PooledPair.objects.filter(pk=pairs[3].pk).update(state="disagreement", vote_count=2)
    return pool, pairs


def _rows(artefact: Artefact) -> list[dict]:
    return list(csv.DictReader(io.StringIO(artefact_file(artefact=artefact).read_text(encoding="utf-8"))))


def test_csv_and_jsonl_name_the_aggregation_and_take_its_labels(world):
    pool, pairs = world
    majority = export_create(pool=pool, fmt="csv")
    ds = export_create(pool=pool, fmt="csv", params={"aggregation": "dawid_skene"})
    assert "dawid-skene" in ds.name and "dawid" not in majority.name
    assert ds.params["aggregation"] == "dawid_skene" and majority.params["aggregation"] == "majority"
    by_pair = {}
    for row in _rows(ds):
        by_pair.setdefault(int(row["pair_id"]), set()).add((row["resolved_label"], row["resolved_by"], row["aggregation"]))
    assert by_pair[pairs[3].pk] == {("relevant", "dawid_skene", "dawid_skene")}
    assert by_pair[pairs[0].pk] == {("not_relevant", "dawid_skene", "dawid_skene")}
    assert by_pair[pairs[2].pk] == {("not_relevant", "admin", "dawid_skene")}  # the admin's decision stays
    plain = {(int(r["pair_id"]), r["resolved_label"], r["aggregation"]) for r in _rows(majority)}
    assert (pairs[3].pk, "", "majority") in plain
    jsonl = export_create(pool=pool, fmt="jsonl", params={"aggregation": "dawid_skene"})
    records = [json.loads(line) for line in artefact_file(artefact=jsonl).read_text().splitlines()]
    assert {r["resolved_label"] for r in records if r["pair_id"] == pairs[3].pk} == {"relevant"}


def test_qrels_and_fire_json_with_dawid_skene(world):
    pool, pairs = world
    caption, clip = pairs[3].caption.external_id, pairs[3].clip.external_id
    majority = artefact_file(artefact=export_create(pool=pool, fmt="qrels")).read_text().splitlines()
    ds = artefact_file(artefact=export_create(pool=pool, fmt="qrels", params={"aggregation": "dawid_skene"})
                       ).read_text().splitlines()
    assert f"{caption} 0 {clip} 1" in ds and not any(line.startswith(f"{caption} 0 {clip} ") for line in majority)
    # Everything else is the same file: originals, the other resolved pairs, the admin's decision.
    assert sorted(set(ds) - set(majority)) == [f"{caption} 0 {clip} 1"] and set(majority) <= set(ds)
    fire = json.loads(artefact_file(artefact=export_create(pool=pool, fmt="fire_json",
                                                           params={"aggregation": "dawid_skene"})).read_text())
    assert fire["aggregation"] == "dawid_skene" and "Dawid-Skene" in fire["resolution"]
    record = [a for a in fire["annotations"] if a["video_id"] == clip and a["query"] == pairs[3].caption.text]
    assert record and record[0]["label"] == "relevant"
    with pytest.raises(ExportError, match="parameter 'aggregation' must be one of majority, dawid_skene, mace"):
        export_create(pool=pool, fmt="qrels", params={"aggregation": "glad"})


def test_command_and_rest_take_the_aggregation(world, capsys, settings):
    pool, pairs = world
    call_command("export_labels", "--pool", str(pool.pk), "--format", "csv", "--aggregation", "mace")
    assert Artefact.objects.get(params__aggregation="mace").name.startswith(pool.name.replace(" ", "-"))
    settings.CELERY_TASK_ALWAYS_EAGER = True
    client = APIClient()
    client.force_authenticate(make_user("admin"))
    response = client.post(f"/api/v1/pools/{pool.pk}/exports/", {"format": "qrels", "aggregation": "dawid_skene"},
                           format="json", secure=True)
    assert response.status_code == 202, response.content
    assert Job.objects.get(pk=response.data["id"]).params["params"]["aggregation"] == "dawid_skene"
    refused = client.post(f"/api/v1/pools/{pool.pk}/exports/", {"format": "qrels", "aggregation": "glad"},
                          format="json", secure=True)
    assert refused.status_code == 400
