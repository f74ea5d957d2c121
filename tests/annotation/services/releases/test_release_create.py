"""Releases of the hand-worked example pool (tests/annotation/services/reports/test_report_metrics.py):
the archive's layout and checksums, Croissant and CITATION.cff, immutability, and what changed
between two versions after an admin's adjudication."""
from __future__ import annotations

import hashlib
import io
import json
import zipfile

import pytest
import yaml
from django.contrib.auth import get_user_model
from django.db import DatabaseError, transaction

from annotation.models import PooledPair, Release
from annotation.models.releases import ReleaseImmutable
from annotation.services.queue.labels import pair_adjudicate
from annotation.services.releases.create import ReleaseError, release_create
from annotation.services.reports.create import report_create
from annotation.services.releases.diff import release_diff
from annotation.services.exports.labels import EXPORTS
from annotation.storage import stored_file_chunks
from annotation.services.pools.build import pool_create
from tests.annotation.services.reports.test_report_metrics import example_pool, load_example
from tests.factories import make_user

pytestmark = pytest.mark.django_db

LAYOUT = {"release.json", "SHA256SUMS", "qrels.txt", "fire.json", "labels.csv", "agreement.json", "changes.json",
          "README.md", "croissant.json", "CITATION.cff", "leaderboard.json", "leaderboard.csv", "leaderboard.svg"}


def release_archive_bytes(*, release: Release) -> bytes:
    return b"".join(stored_file_chunks(EXPORTS, release.archive))


def _members(release: Release) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(release_archive_bytes(release=release))) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def test_a_release_holds_the_documented_files_with_their_checksums(tmp_path):
    pool = example_pool(tmp_path)
    release = release_create(allow_unresolved=True, pools=[pool], name="example-fire", title="Example, corrected", licence="CC-BY-4.0",
                             authors=["A. Author", "B. Author"])
    assert (release.name, release.version, release.slug) == ("example-fire", 1, "example-fire@v1")
    data = release_archive_bytes(release=release)
    assert release.bytes == len(data) and release.sha256 == hashlib.sha256(data).hexdigest()
    members = _members(release)
    assert {name.split("/", 1)[0] for name in members} == {"example-fire-v1"}
    files = {name.split("/", 1)[1]: body for name, body in members.items()}
    assert set(files) >= LAYOUT
    # SHA256SUMS: every file but itself, `sha256sum -c` format; release.json: all but the two.
    sums = dict(line.split("  ", 1)[::-1] for line in files["SHA256SUMS"].decode().splitlines())
    assert set(sums) == set(files) - {"SHA256SUMS"}
    assert all(hashlib.sha256(files[path]).hexdigest() == digest for path, digest in sums.items())
    manifest = json.loads(files["release.json"])
    assert manifest["format"] == "rejudge-release/1" and manifest["slug"] == "example-fire@v1"
    assert {f["path"] for f in manifest["files"]} == set(files) - {"SHA256SUMS", "release.json"}
    assert all(f["bytes"] == len(files[f["path"]]) for f in manifest["files"])
    # The example's counts by hand: 17 pooled; 16 labelled and resolved; the disagreement q2 v4 (no
    # counted vote) unresolved; originals q1 v1, q2 v2, q3 v3 pooled.
    by_hand = {"pooled": 17, "judged": 16, "resolved": 16, "unresolved": 1, "original_positives": 3}
    assert manifest["sources"] == [{"kind": "pool", "id": pool.pk, "name": pool.name, "pairs": 17,
                                    "pair_counts": by_hand}]
    assert manifest["counts"]["pool_pairs"] == by_hand and manifest["counts"]["unresolved_allowed"] is True
    assert set(manifest["count_definitions"]) == set(by_hand)
    assert manifest["scoring"]["resolved_share"] == round(16 / 17, 4)
    assert "not relevant" in manifest["scoring"]["unresolved_pairs"]
    assert release.files == manifest["files"] + [f for f in release.files if f["path"] in ("release.json", "SHA256SUMS")]
    # The corrected qrels: resolved pairs plus originals (q3 v3 stays 1), the disagreement left out.
    assert files["qrels.txt"].decode() == (
        "q1 0 v1 1\nq1 0 v2 1\nq1 0 v3 0\nq1 0 v5 1\nq1 0 v6 0\n"
        "q2 0 v1 1\nq2 0 v2 1\nq2 0 v3 0\nq2 0 v6 0\n"
        "q3 0 v3 1\nq3 0 v4 1\nq3 0 v5 0\nq3 0 v6 0\n"
        "q4 0 v1 0\nq4 0 v5 0\nq4 0 v6 0\n")
    assert release.counts["qrels_pairs"] == 16 and release.counts["relevant"] == 7 and release.counts["queries"] == 4
    # Raters only as r001, r002... in labels.csv, FIRE JSON and agreement.json; never user names.
    usernames = set(get_user_model().objects.values_list("username", flat=True))
    labels = files["labels.csv"].decode()
    raters = {line.split(",")[13] for line in labels.splitlines()[1:]} - {""}
    assert raters and all(r.startswith("r") and len(r) == 4 for r in raters)
    for name in ("labels.csv", "fire.json", "agreement.json", "README.md"):
        assert not any(u in files[name].decode() for u in usernames if len(u) > 3), name
    fire = json.loads(files["fire.json"])
    assert {i for record in fire["annotations"] for i in record["annotator_ids"]} == raters
    assert json.loads(files["changes.json"]) == {"from": None, "to": "example-fire@v1",
                                                 "counts": {"added": 0, "changed": 0, "removed": 0},
                                                 "added": [], "changed": [], "removed": []}
    # The corrected leaderboard is the report kind's, over the same corrected labels as qrels.txt.
    board = json.loads(files["leaderboard.json"])
    assert {r["run"] for r in board["runs"]} == {"A", "B"} and release.leaderboard == board
    report = report_create(pool=pool, kind="corrected_leaderboard")
    assert [r["corrected"] for r in board["runs"]] == [r["corrected"] for r in report.result["runs"]]
    assert files["leaderboard.csv"].decode().splitlines()[0].startswith("run,run_id,measure,original")
    assert files["leaderboard.svg"].startswith(b"<svg")
    readme = files["README.md"].decode()
    assert "CC-BY-4.0" in readme and "Krippendorff" in readme and "A. Author" in readme
    # Issue 35 finding 2: the datasheet called every pooled pair judged.
    assert "judged pairs in the sources" not in readme
    assert "- pool `example pool`: 17 pooled, 16 judged, 16 resolved, 1 unresolved, 3 original positives" in readme
    assert "- unresolved pairs (pooled, no verdict yet" in readme and "): 1\n" in readme
    assert "16 of 17 pooled pairs resolved (94%); 1 unresolved pair was scored as not relevant." in readme
    assert "made with unresolved pairs allowed by the admin" in readme
    assert "- How runs were cut: " in readme and "- Judged@K: Judged@K is the share of a run's top K" in readme


def test_citation_cff_parses_with_the_required_keys(tmp_path):
    release = release_create(allow_unresolved=True, pools=[example_pool(tmp_path)], name="example-fire", licence="CC-BY-4.0",
                             authors=["A. Author"])
    cff = yaml.safe_load(_members(release)["example-fire-v1/CITATION.cff"])
    assert cff["cff-version"] == "1.2.0" and cff["message"] and cff["title"]
    assert cff["authors"] == [{"name": "A. Author"}] and cff["version"] == "example-fire@v1"
    assert cff["license"] == "CC-BY-4.0" and str(cff["date-released"]) == release.created_at.date().isoformat()


def test_croissant_validates_with_mlcroissant(tmp_path):
    mlc = pytest.importorskip("mlcroissant")
    release = release_create(allow_unresolved=True, pools=[example_pool(tmp_path)], name="example-fire", licence="CC-BY-4.0")
    folder = tmp_path / "unzipped"
    with zipfile.ZipFile(io.BytesIO(release_archive_bytes(release=release))) as archive:
        archive.extractall(folder)
    dataset = mlc.Dataset(jsonld=folder / "example-fire-v1" / "croissant.json")  # raises on an invalid file
    assert dataset.metadata.name == "example-fire-v1"
    records = list(dataset.records(record_set="labels"))
    assert len(records) == 17
    # The qrels record set gives qrels.txt's lines, field by field, as the client's reader does.
    qrels = [(r["qrels/query_id"], r["qrels/iteration"], r["qrels/clip_id"], r["qrels/relevance"])
             for r in dataset.records(record_set="qrels")]
    text = lambda v: v.decode() if isinstance(v, bytes) else str(v)  # noqa: E731 (mlcroissant gives bytes)
    lines = (folder / "example-fire-v1" / "qrels.txt").read_text().splitlines()
    assert [(text(q), text(i), text(d), int(r)) for q, i, d, r in qrels] == [
        (q, i, d, int(r)) for q, i, d, r in (line.split() for line in lines)]
    assert ("q1", "0", "v5", 1) in [(text(q), text(i), text(d), int(r)) for q, i, d, r in qrels]  # B's find


def test_a_second_version_says_what_an_adjudication_changed(tmp_path):
    pool = example_pool(tmp_path)
    first = release_create(allow_unresolved=True, pools=[pool], name="example-fire")
    admin = make_user("admin")
    disagreement = PooledPair.objects.get(pool=pool, caption__external_id="q2", clip__external_id="v4")
    flipped = PooledPair.objects.get(pool=pool, caption__external_id="q1", clip__external_id="v3")
    pair_adjudicate(pair_id=disagreement.pk, admin=admin, label="relevant", note="the red square is there")
    pair_adjudicate(pair_id=flipped.pk, admin=admin, label="relevant", note="on a second look")
    second = release_create(allow_unresolved=True, pools=[pool], name="example-fire")
    assert second.version == 2
    changes = json.loads(_members(second)["example-fire-v2/changes.json"])
    assert changes["from"] == "example-fire@v1" and changes["counts"] == {"added": 1, "changed": 1, "removed": 0}
    assert changes["added"] == [{"query_id": "q2", "clip_id": "v4", "old_relevance": None, "new_relevance": 1,
                                 "reason": "adjudication"}]
    assert changes["changed"] == [{"query_id": "q1", "clip_id": "v3", "old_relevance": 0, "new_relevance": 1,
                                   "reason": "adjudication"}]
    diff = release_diff(old=first, new=second)
    assert diff["counts"] == changes["counts"] and diff["changed"] == changes["changed"]


def test_a_release_never_changes(tmp_path):
    release = release_create(allow_unresolved=True, pools=[example_pool(tmp_path)], name="example-fire")
    release.title = "something else"
    with pytest.raises(ReleaseImmutable):
        release.save()
    release.refresh_from_db()
    assert release.title == "example-fire@v1"


@pytest.mark.postgres
def test_the_database_refuses_to_change_a_release_behind_the_model(tmp_path, require_postgres):
    release = release_create(allow_unresolved=True, pools=[example_pool(tmp_path)], name="example-fire")
    with pytest.raises(DatabaseError), transaction.atomic():
        Release.objects.filter(pk=release.pk).update(sha256="0" * 64)
    release.refresh_from_db()
    assert release.title == "example-fire@v1" and release.sha256 != "0" * 64


def test_sources_must_be_over_one_dataset_and_names_are_slugs(tmp_path):
    pool = example_pool(tmp_path)
    other_dataset, runs = load_example(tmp_path / "other", "other")
    other = pool_create(dataset=other_dataset, name="other pool", runs=runs, depth=3, redundancy=0.0)
    with pytest.raises(ReleaseError, match="one dataset"):
        release_create(allow_unresolved=True, pools=[pool, other], name="mixed")
    with pytest.raises(ReleaseError, match="slug"):
        release_create(allow_unresolved=True, pools=[pool], name="Not A Slug")
    assert not Release.objects.exists()
