"""Property: a release's leaderboard.json equals the official tools on the release's own qrels.txt and
the FULL run files (issue 35, "a measure means its name").

Hypothesis draws small pools: one to three runs deeper than the pool, tied scores stored in any
order, captions a run leaves out, pairs left unjudged. Each is built through the platform's own
services (dataset and run import from files, pool_create, labels through leases, release_create),
and the archive's leaderboard.json is checked per run against pytrec_eval (C@1/5/10 = success_1/5/10,
AP = map, nDCG@10 = ndcg_cut_10) and ir_measures (Judged@10) on qrels.txt and the run files this
test wrote, never on anything the platform read back. Each example makes fresh names, so examples
never meet inside the test's one transaction.

A moment pool's leaderboard gets the weaker check the brief allows: its predictions deeper than the
pool still count (video R@K beyond the pool's depth), nothing is cut silently.
"""
from __future__ import annotations

import csv
import io
import json
import tempfile
import zipfile
from pathlib import Path
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.models import PooledPair
from annotation.services.accounts.raters import memberships_grant
from annotation.services.datasets.imports import dataset_import
from annotation.services.datasets.runs import run_import
from annotation.services.exports.labels import EXPORTS
from annotation.services.pools.build import pool_create
from annotation.services.releases.create import release_create
from annotation.services.reports.kinds import corrected_leaderboard
from annotation.services.reports.kinds.corrected_leaderboard import QUERY_BLOCK
from annotation.storage import stored_file_chunks
from tests.factories import label_pair, make_user, unique

pytestmark = pytest.mark.django_db

TREC_NAMES = {"C@1": "success_1", "C@5": "success_5", "C@10": "success_10", "AP": "map", "nDCG@10": "ndcg_cut_10"}


@st.composite
def pools(draw):
    """(clips, captions -> original clip, pool depth, runs, verdicts). A run: caption -> [(clip,
    score)] in the stored rank order, scores never rising, ties in whatever order was drawn."""
    n_clips = draw(st.integers(6, 14))
    clips = [f"c{i:02d}" for i in range(n_clips)]
    n_captions = draw(st.integers(1, 4))
    captions = {f"q{i}": draw(st.sampled_from(clips)) for i in range(1, n_captions + 1)}
    depth = draw(st.integers(1, 4))
    runs = {}
    for r in range(draw(st.integers(1, 3))):
        run = {}
        answered = draw(st.lists(st.sampled_from(sorted(captions)), min_size=1, unique=True))
        for q in sorted(answered):
            length = draw(st.integers(depth + 1, min(n_clips, depth + 8)))
            ranked = draw(st.permutations(clips))[:length]
            # Few score levels, so ties are common; sorted descending, a stable sort keeps the
            # drawn (not id) order among equal scores.
            levels = draw(st.lists(st.integers(0, 4), min_size=length, max_size=length))
            scores = sorted((level / 4 for level in levels), reverse=True)
            run[q] = list(zip(ranked, scores))
        runs[f"run{r}"] = run
    verdict = st.sampled_from(["relevant", "not_relevant", None])
    verdicts = draw(st.lists(verdict, min_size=64, max_size=64))
    return clips, captions, depth, runs, verdicts


def _build(folder: Path, clips, captions, depth, runs, verdicts):
    (folder / "manifest.jsonl").write_text(
        "".join(f'{{"kind": "clip", "id": "{c}"}}\n' for c in clips)
        + "".join(f'{{"kind": "caption", "id": "{q}", "text": "caption {q}", "clip": "{c}"}}\n'
                  for q, c in captions.items()))
    for name, run in runs.items():
        (folder / f"{name}.trec").write_text("".join(
            f"{q} Q0 {clip} {rank} {score!r} {name}\n" for q, ranked in run.items()
            for rank, (clip, score) in enumerate(ranked, start=1)))
    dataset = dataset_import(path=folder / "manifest.jsonl", name=unique("prop"))
    stored = [run_import(dataset=dataset, path=folder / f"{name}.trec").run for name in runs]
    pool = pool_create(dataset=dataset, name=unique("prop pool"), runs=stored, depth=depth, redundancy=0.0)
    rater = make_user("rater")
    memberships_grant(pool=pool, users=[rater])
    pairs = PooledPair.objects.filter(pool=pool, role="pool").order_by("caption__external_id", "clip__external_id")
    for pair, value in zip(pairs, verdicts):
        if value is not None:
            label_pair(rater, pair, value=value, seconds=2.0)
    return pool


def _archive(release) -> dict[str, bytes]:
    data = b"".join(stored_file_chunks(EXPORTS, release.archive))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name.split("/", 1)[1]: archive.read(name) for name in archive.namelist()}


def _qrels(text: str) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        q, _, doc, grade = line.split()
        qrels.setdefault(q, {})[doc] = int(grade)
    return qrels


def _trec_eval_means(qrels: dict, run: dict, queries: list[str]) -> dict[str, float]:
    """pytrec_eval per query on the full run (its own ordering: score, then id, both descending),
    averaged over ``queries`` (a query trec_eval has no value for, e.g. no relevant clip, is 0)."""
    import pytrec_eval

    per_query = pytrec_eval.RelevanceEvaluator({q: qrels.get(q, {}) for q in queries},
                                               {"success.1,5,10", "map", "ndcg_cut.10"}).evaluate(
        {q: run[q] for q in queries})
    return {name: sum(per_query.get(q, {}).get(name, 0.0) for q in queries) / len(queries)
            for name in TREC_NAMES.values()}


def _judged_at_10(qrels: dict, run: dict, queries: list[str]) -> float:
    """ir_measures' Judged@10 over the judged queries the run answered (as `evaluate` asks it),
    each list given strictly decreasing scores in trec_eval's order: score descending, then id
    descending (ir_measures' judged provider would break ties by id ascending)."""
    import ir_measures
    from ir_measures import Judged

    ordered = {q: sorted(run[q], key=lambda doc: (run[q][doc], doc), reverse=True) for q in queries}
    te_run = {q: {doc: float(len(docs) - i) for i, doc in enumerate(docs)} for q, docs in ordered.items()}
    return ir_measures.calc_aggregate([Judged @ 10], {q: qrels[q] for q in queries}, te_run)[Judged @ 10]


@settings(max_examples=30, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(pools(), st.sampled_from([1, 2, 3, QUERY_BLOCK]))
def test_the_release_leaderboard_equals_trec_eval_on_qrels_and_full_runs(drawn, block):
    """`block`: captions the leaderboard reads at a time (1 to 3: the values of blocks joined must be
    the whole's)."""
    clips, captions, depth, runs, verdicts = drawn
    with tempfile.TemporaryDirectory() as folder:
        pool = _build(Path(folder), clips, captions, depth, runs, verdicts)
    with patch.object(corrected_leaderboard, "QUERY_BLOCK", block):
        release = release_create(pools=[pool], name=unique("prop-release"), allow_unresolved=True)
    files = _archive(release)
    board = json.loads(files["leaderboard.json"])
    qrels = _qrels(files["qrels.txt"].decode())
    originals = {q: {c: 1} for q, c in captions.items()}
    assert board["depth"] is None and board["params"]["depth"] is None
    assert board["measures"] == list(TREC_NAMES)
    assert board["judged_of"]["C@10"] == board["judged_of"]["nDCG@10"] == "Judged@10"
    rows = {row["run"]: row for row in board["runs"]}
    assert set(rows) == set(runs)
    for name, run in runs.items():
        full = {q: dict(ranked) for q, ranked in run.items()}
        queries = sorted(q for q in full if q in qrels)
        row = rows[name]
        assert row["queries_scored"] == len(queries)
        if not queries:
            assert all(row["corrected"][m]["value"] is None for m in TREC_NAMES)
            continue
        corrected = _trec_eval_means(qrels, full, queries)
        original = _trec_eval_means(originals, full, queries)
        for measure, trec_name in TREC_NAMES.items():
            assert row["corrected"][measure]["value"] == pytest.approx(corrected[trec_name], abs=1e-12), measure
            assert row["original"][measure]["value"] == pytest.approx(original[trec_name], abs=1e-12), measure
        assert row["judged"]["Judged@10"] == pytest.approx(_judged_at_10(qrels, full, queries), abs=1e-12)
    # The CSV carries the same Judged@10 beside C@10 and nDCG@10.
    columns, *lines = csv.reader(io.StringIO(files["leaderboard.csv"].decode()))
    assert columns[-6:] == ["judged_measure", "judged", "provenance", "provenance_at", "provenance_by", "submission"]
    for line in lines:
        fields = dict(zip(columns, line))
        if fields["measure"] in ("C@10", "nDCG@10") and fields["judged"]:
            assert float(fields["judged"]) == pytest.approx(rows[fields["run"]]["judged"]["Judged@10"])
