"""The exports and a release's labels.csv / fire.json, byte for byte, on content that is awkward to
write (awkward_world.py): each file equals what csv.writer / json.dumps make of the documented rows
(export_label_records, FIRE records), whatever shortcuts the writers take (issue 40: pieces of CSV
rows made once per pair, FIRE records encoded without a JSONEncoder per record, the archive's
members deflated on a thread). Runs on SQLite and on PostgreSQL (the test script's database),
whose drivers hand over label times differently. Files are read as bytes: a caption's lone \r
must stay one."""
from __future__ import annotations

import csv
import io
import json
import zipfile
from collections import Counter

import pytest

from annotation.formats.csv_safe import csv_cell
from annotation.models import Label, PooledPair
from annotation.selectors.releases import release_rater_pseudonyms
from annotation.selectors.reports import pool_raters_without_profile
from annotation.services.accounts.raters import rater_profile
from annotation.services.exports.labels import (EXPORTS, LABEL_COLUMNS, artefact_file, export_create,
                                                export_label_records, export_params_clean)
from annotation.services.releases.create import release_create
from annotation.storage import stored_file_chunks
from tests.annotation.services.exports.awkward_world import awkward_pool

pytestmark = pytest.mark.django_db


@pytest.fixture
def pool(db):
    return awkward_pool()


def _csv_of_records(records) -> str:
    """The labels CSV as csv.writer writes the documented records, each cell through csv_cell."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(LABEL_COLUMNS)
    for record in records:
        record = record | {"proposed_by": ";".join(f"{p['run']}@{p['rank']}" for p in record["proposed_by"])}
        writer.writerow([csv_cell(record[column]) for column in LABEL_COLUMNS])
    return out.getvalue()


def _fire_layout(data: dict) -> str:
    """A FIRE file as FireJsonWriter lays it out, each record and value by json.dumps."""
    text = '{"annotations": ['
    for section in ("annotations", "disagreements"):
        text += "".join(("\n" if n == 0 else ",\n") + json.dumps(record, ensure_ascii=False)
                        for n, record in enumerate(data[section]))
        text += '\n], "disagreements": [' if section == "annotations" else "\n]"
    text += "".join(f", {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}" for key, value in data.items()
                    if key not in ("annotations", "disagreements"))
    return text + "}\n"


def _records(pool, aggregation="majority") -> list[dict]:
    for user in pool_raters_without_profile(pool=pool):  # as export_create does first
        rater_profile(user=user)
    params = export_params_clean(fmt="csv", params={"aggregation": aggregation}, pool=pool)
    return list(export_label_records(pool, lambda done: None, params))


def test_the_documented_records_hold_every_label_as_stored(pool):
    """The rows the files are checked against, against the labels read through the ORM: every
    label once, its time as ISO 8601 (microseconds only when there are some), a pair without
    labels once with empty label fields."""
    records = _records(pool)
    stored = Counter()
    for label in Label.objects.filter(pair__pool=pool).select_related("rater__rater_profile"):
        stored[(label.pair_id, label.pk, label.rater.rater_profile.pseudonym, label.value, label.counted,
                label.sequence or None, label.surplus_reason or None, label.seconds, label.created_at.isoformat())] += 1
    for pair in PooledPair.objects.filter(pool=pool, role="pool").exclude(labels__isnull=False):
        stored[(pair.pk, None, None, None, None, None, None, None, None)] += 1
    assert Counter((r["pair_id"], r["label_id"], r["rater"], r["value"], r["counted"], r["vote_number"],
                    r["surplus_reason"], r["seconds"], r["created_at"]) for r in records) == stored
    assert {r["created_at"] for r in records} == {None, "2026-03-04T05:06:07.123456+00:00",
                                                  "2026-03-04T05:06:08+00:00", "2026-03-04T05:06:09.000500+00:00"}
    assert {r["resolved_by"] for r in records} == {None, "majority", "admin", "imported"}


@pytest.mark.parametrize("aggregation", ["majority", "dawid_skene"])
def test_csv_and_jsonl_exports_are_the_csv_module_and_json_dumps_of_the_records(pool, aggregation):
    records = _records(pool, aggregation)
    text = artefact_file(artefact=export_create(pool=pool, fmt="csv", params={"aggregation": aggregation})
                         ).read_bytes().decode("utf-8")
    assert text == _csv_of_records(records)
    assert "'=1+2" in text and "'-run@" in text and "'=surplus, late" in text  # formulas escaped
    lines = artefact_file(artefact=export_create(pool=pool, fmt="jsonl", params={"aggregation": aggregation})
                          ).read_bytes().decode("utf-8")
    assert lines == "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)


@pytest.mark.parametrize("aggregation", ["majority", "dawid_skene"])
def test_fire_json_export_is_json_dumps_of_its_records(pool, aggregation):
    text = artefact_file(artefact=export_create(pool=pool, fmt="fire_json", params={"aggregation": aggregation})
                         ).read_bytes().decode("utf-8")
    data = json.loads(text)
    assert text == _fire_layout(data)
    imported = [r for r in data["annotations"] if r["annotator_ids"][:1] == [7]]
    assert imported and imported[0]["annotator_ids"] == [7, "ä-\"x\"", 1.5, True, None, "=r", ["nested", 1]]
    assert {r["query"] for r in data["annotations"] + data["disagreements"]} >= {"=1+2", "cr\rlf\nboth\r\nend"}


def test_a_releases_labels_csv_and_fire_json_are_the_csv_module_and_json_dumps_of_the_records(pool):
    release = release_create(allow_unresolved=True, pools=[pool], name="awkward", licence="CC")
    with zipfile.ZipFile(io.BytesIO(b"".join(stored_file_chunks(EXPORTS, release.archive)))) as archive:
        files = {name.split("/", 1)[1]: archive.read(name).decode("utf-8") for name in archive.namelist()}
    names = {pseudonym: f"r{n:03d}" for n, pseudonym in enumerate(release_rater_pseudonyms(pools=[pool]), start=1)}
    # Raters by their release ids (r001...), pairs without labels without one.
    renamed = [r | {"rater": None if r["rater"] is None else names.get(r["rater"])} for r in _records(pool)]
    assert files["labels.csv"] == _csv_of_records(renamed)
    assert files["fire.json"] == _fire_layout(json.loads(files["fire.json"]))
    listed = {f["path"]: f for f in release.files}
    assert listed["labels.csv"]["bytes"] == len(files["labels.csv"].encode("utf-8"))


def test_a_following_stream_gives_each_pair_its_rows_and_refuses_rows_out_of_the_pairs_order():
    """The FIRE and CSV writers merge the votes and proposing runs into the pairs' stream by pair
    id (labels._Following): a pair's rows in order, none for a pair without any; a row of a pair the
    driving stream never reached would stop the merge there, so finish() names it rather than the
    file silently losing the rows after it."""
    from annotation.services.exports.labels import _Following

    votes = _Following(iter([(1, "a"), (1, "b"), (3, "c")]), "votes")
    assert votes.take(1) == [(1, "a"), (1, "b")]
    assert votes.take(2) == []
    assert votes.take(3) == [(3, "c")]
    votes.finish()  # every row taken

    stuck = _Following(iter([(1, "a"), (9, "x"), (2, "b")]), "votes")
    assert stuck.take(1) == [(1, "a")]
    assert stuck.take(2) == []  # 9 comes before 2: not the pairs' order
    with pytest.raises(RuntimeError, match="the votes of pair 9 came out of the pairs' order"):
        stuck.finish()
