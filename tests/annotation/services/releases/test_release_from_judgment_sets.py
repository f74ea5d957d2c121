"""A release made from judgment sets alone (issue 35 finding 4: `release_pair_rows` named no
columns in its first branch when no pool was given, and every such release failed with
"no such column: v.q"). Its qrels hold the set's verdicts and each caption's original clip."""
from __future__ import annotations

import io
import json
import zipfile

import pytest

from annotation.services.judgment_sets.imports import judgments_import
from annotation.services.releases.create import release_create
from tests.annotation.services.releases.test_release_create import release_archive_bytes
from tests.annotation.services.reports.test_report_metrics import load_example

pytestmark = pytest.mark.django_db

#: The set judges q1 v2 and q3 v4 relevant, q1 v3 not, and q3's original clip v3 not relevant
#: (the original stays relevant whatever a source says); -1 lines are not verdicts.
PUBLISHED = "q1 0 v2 1\nq1 0 v3 0\nq3 0 v4 2\nq3 0 v3 0\nq4 0 v5 -1\n"


def judgment_set_of_example(tmp_path):
    dataset, _ = load_example(tmp_path / "files")
    path = tmp_path / "published.qrels"
    path.write_text(PUBLISHED)
    return judgments_import(dataset=dataset, path=path).judgment_set


def files_of(release) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(release_archive_bytes(release=release))) as archive:
        return {name.split("/", 1)[1]: archive.read(name) for name in archive.namelist()}


def test_a_release_of_one_judgment_set_holds_its_verdicts_and_the_originals(tmp_path):
    judgment_set = judgment_set_of_example(tmp_path)
    release = release_create(judgment_sets=[judgment_set], name="published-only")
    files = files_of(release)
    # Originals: q1 v1, q2 v2, q3 v3 (q4 has none); the set's three verdicts beside them.
    assert files["qrels.txt"].decode() == "q1 0 v1 1\nq1 0 v2 1\nq1 0 v3 0\nq2 0 v2 1\nq3 0 v3 1\nq3 0 v4 1\n"
    assert (release.counts["qrels_pairs"], release.counts["relevant"], release.counts["queries"]) == (6, 5, 3)
    manifest = json.loads(files["release.json"])
    assert manifest["sources"] == [{"kind": "judgment_set", "id": judgment_set.pk, "name": "published",
                                    "format": "qrels", "checksum": judgment_set.checksum, "judgments": 4,
                                    "relevant": 2, "not_relevant": 2, "disagreement": 0}]
    readme = files["README.md"].decode()
    assert "judgment set `published`: 4 judgments (2 relevant, 2 not relevant)" in readme
    assert "leaderboard.json" not in files  # no pool, no runs to rank



def test_a_release_of_a_pool_and_a_set_scores_its_leaderboard_against_its_whole_qrels(tmp_path):
    """BROKEN before: the leaderboard scored the first pool's verdicts only, while qrels.txt (and the
    datasheet's Judged@K, "with a verdict in qrels.txt") merge every source: `evaluate` on the
    archive's files disagreed with leaderboard.json wherever the set judged what the pool had not."""
    from annotation.services.pools.build import pool_create
    from tests.annotation.services.releases.test_leaderboard_property import (TREC_NAMES, _judged_at_10, _qrels,
                                                                              _trec_eval_means)
    from tests.annotation.services.reports.test_report_metrics import RUN_A, RUN_B, trec

    dataset, runs = load_example(tmp_path / "files")
    path = tmp_path / "published.qrels"
    path.write_text(PUBLISHED)
    judgment_set = judgments_import(dataset=dataset, path=path).judgment_set
    pool = pool_create(dataset=dataset, name="top one", runs=runs, depth=1, redundancy=0.0)  # nothing judged
    release = release_create(pools=[pool], judgment_sets=[judgment_set], name="pool-and-set", allow_unresolved=True)
    files = files_of(release)
    board = json.loads(files["leaderboard.json"])
    assert board["scored_against"] == "qrels.txt: every source of the release"
    qrels = _qrels(files["qrels.txt"].decode())
    assert qrels["q1"]["v2"] == 1 and qrels["q3"]["v4"] == 1  # the set's verdicts, which no pool pair has
    rows = {row["run"]: row for row in board["runs"]}
    for name, ranked, tied in (("A", RUN_A, None), ("B", RUN_B, "q1")):
        full = {}
        for line in trec(ranked, name, tied=tied).splitlines():
            q, _, doc, _, score, _ = line.split()
            full.setdefault(q, {})[doc] = float(score)
        queries = sorted(q for q in full if q in qrels)
        expected = _trec_eval_means(qrels, full, queries)
        for measure, trec_name in TREC_NAMES.items():
            assert rows[name]["corrected"][measure]["value"] == pytest.approx(expected[trec_name], abs=1e-12), measure
        assert rows[name]["judged"]["Judged@10"] == pytest.approx(_judged_at_10(qrels, full, queries), abs=1e-12)
