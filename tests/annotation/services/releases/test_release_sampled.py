"""A release of a sampled pool carries TRECVID sample_eval qrels: every pooled document with its
stratum, the resolved label of judged ones and -1 for the rest, readable by the sample_eval reader."""
from __future__ import annotations

import io
import zipfile

import pytest

from annotation.formats.errors import IssueCollector
from annotation.formats.sample_eval_qrels import load_sample_eval_qrels
from annotation.formats.text_lines import LineSource
from annotation.models import PooledPair, SampledDocument
from annotation.services.exports.labels import EXPORTS
from annotation.services.pools.sampled import sampled_pool_create
from annotation.services.releases.create import release_create
from annotation.storage import stored_file_chunks
from tests.annotation.services.reports.test_report_corrected_leaderboard import _pool as leaderboard_pool
from tests.annotation.services.pools.test_sampled_pools import STRATA, dataset, runs  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db


def test_a_sampled_pools_release_has_sample_eval_qrels(dataset, runs, tmp_path):  # noqa: F811
    pool = sampled_pool_create(dataset=dataset, name="s", runs=runs, strata=STRATA, seed=3)
    judged = list(PooledPair.objects.filter(pool=pool, role="pool").order_by("pk")[:2])
    for pair, label in zip(judged, ("relevant", "not_relevant")):
        PooledPair.objects.filter(pk=pair.pk).update(state="resolved", resolved_label=label)
    release = release_create(allow_unresolved=True, pools=[pool], name="sampled")
    with zipfile.ZipFile(io.BytesIO(b"".join(stored_file_chunks(EXPORTS, release.archive)))) as archive:
        text = archive.read("sampled-v1/sample_eval_qrels.txt").decode()
    path = tmp_path / "sample_eval.qrels"
    path.write_text(text)
    issues = IssueCollector(str(path))
    qrels = load_sample_eval_qrels(LineSource(path, issues), issues)
    assert not issues.issues
    documents = SampledDocument.objects.filter(pool=pool).select_related("caption", "clip", "pair")
    assert sum(len(shots) for shots in qrels.values()) == documents.count()
    expected = {pair.pk: int(label == "relevant") for pair, label in zip(judged, ("relevant", "not_relevant"))}
    for d in documents:
        stratum, rel = qrels[d.caption.external_id][d.clip.external_id]
        assert stratum == str(d.stratum + 1)
        assert rel == (expected[d.pair_id] if d.pair_id in expected else -1)



def test_a_sampled_designs_datasheet_says_its_runs_were_cut_at_the_pool_depth(tmp_path):
    """BROKEN before: the datasheet read the leaderboard's `depth` parameter (none asked for) and
    said "Not cut", while a pool judged by a sampled design is scored (both sides) at the pool's
    depth, where its judging estimates are defined."""
    pool = leaderboard_pool(tmp_path)
    PooledPair.objects.filter(pool=pool, role="pool", caption__external_id="q2", clip__external_id="z").update(
        inclusion_probability=0.5)
    pool.judging_strategy = "sampled"  # a probability sample: the corrected values are the estimates
    pool.save(update_fields=["judging_strategy"])
    release = release_create(allow_unresolved=True, pools=[pool], name="sampled-cut")
    assert release.leaderboard["depth"] == pool.depth == 3
    with zipfile.ZipFile(io.BytesIO(b"".join(stored_file_chunks(EXPORTS, release.archive)))) as archive:
        readme = archive.read("sampled-cut-v1/README.md").decode()
    assert "- How runs were cut: Cut at depth 3" in readme and "Not cut" not in readme
    # BROKEN before too: its pairs without a verdict were said to count as not relevant, but the
    # leaderboard's corrected values are the design's estimates, which estimate them.
    assert "sampled-design estimates (Horvitz-Thompson), which estimate those pairs" in readme
    assert "count as not relevant (trec_eval's convention" not in readme


def test_a_pool_judged_whole_says_its_runs_were_not_cut(tmp_path):
    pool = leaderboard_pool(tmp_path)
    release = release_create(allow_unresolved=True, pools=[pool], name="whole")
    assert release.leaderboard["depth"] is None
    with zipfile.ZipFile(io.BytesIO(b"".join(stored_file_chunks(EXPORTS, release.archive)))) as archive:
        readme = archive.read("whole-v1/README.md").decode()
    assert "- How runs were cut: Not cut" in readme
