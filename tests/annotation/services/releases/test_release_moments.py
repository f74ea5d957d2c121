"""A release of a moment pool: QVHighlights ground truth read back with the project's reader and
scored with `evaluate --judgments-format qvhighlights` equal to the release's corrected leaderboard
(checked by hand too), TVR left out with its reason, and qrels.txt over clips as the qrels export
writes it (a clip relevant when one of its judged spans is)."""
from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.core.management import call_command

from annotation.formats.moment_files import load_qvhighlights_ground_truth, load_tvr_ground_truth
from annotation.models import Caption, Clip, Dataset, PooledPair
from annotation.selectors.exports import export_qrels_rows
from annotation.services.accounts.raters import memberships_grant
from annotation.services.exports.labels import EXPORTS
from annotation.services.pools.moments import moment_pool_create
from annotation.services.releases.create import release_create
from annotation.storage import stored_file_chunks
from tests.annotation.services.pools.test_moment_pools import moment_run
from tests.factories import label_pair, make_user, unique

pytestmark = pytest.mark.django_db

RUNS = {  # (caption, clip, start, end) in rank order; scores 0.99, 0.98 (moment_run)
    "A": [("q1", "v1", 40, 50), ("q1", "v1", 10, 19), ("q2", "v2", 1, 9), ("q2", "v2", 30, 40)],
    "B": [("q1", "v1", 10, 20), ("q1", "v1", 60, 70), ("q2", "v2", 50, 60), ("q2", "v2", 30, 40)],
}
#: evaluate's QVHighlights names (percent) and the leaderboard's (fractions) for the same numbers.
SAME = {"MR-full-R1@0.5": "R@1 IoU=0.5", "MR-full-R1@0.7": "R@1 IoU=0.7", "MR-full-mAP": "mAP"}


def _moment_pool(relevant: set[tuple[str, float]]):
    """QVHighlights' shape: each query's runs predict in its own video. q1 was written for [10, 20]
    of v1, q2 for [0, 10] of v2. Pool (depth 2, IoU 0.7): q1 v1 [40, 50] (A and B), [10, 20] (A's
    [10, 19] and B's [10, 20], IoU 0.9), [60, 70]; q2 v2 [1, 9], [30, 40] (A and B), [50, 60].
    Raters find the spans `relevant` names (caption, start) relevant, everything else not."""
    dataset = Dataset.objects.create(name=unique("qvh"))
    for video in ("v1", "v2"):
        Clip.objects.create(dataset=dataset, external_id=video, video_id=video, duration=150)
    seg1 = Clip.objects.create(dataset=dataset, external_id="v1-seg", video_id="v1", start=10, end=20)
    seg2 = Clip.objects.create(dataset=dataset, external_id="v2-seg", video_id="v2", start=0, end=10)
    Caption.objects.create(dataset=dataset, external_id="q1", text="a man opens the door", original_clip=seg1)
    Caption.objects.create(dataset=dataset, external_id="q2", text="a dog runs", original_clip=seg2)
    runs = [moment_run(dataset, name, rows) for name, rows in RUNS.items()]
    pool = moment_pool_create(dataset=dataset, name="mp", runs=runs, depth=2, iou_threshold=0.7, redundancy=0)
    rater = make_user("rater")
    memberships_grant(pool=pool, users=[rater])
    for pair in PooledPair.objects.filter(pool=pool).select_related("caption"):
        label_pair(rater, pair, value="relevant" if (pair.caption.external_id, pair.start) in relevant
                   else "not_relevant")
    return pool


@pytest.fixture
def qvh_pool():
    return _moment_pool({("q1", 40.0), ("q2", 30.0)})


def _files(release) -> dict[str, bytes]:
    data = b"".join(stored_file_chunks(EXPORTS, release.archive))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name.split("/", 1)[1]: archive.read(name) for name in archive.namelist()}


def _qvh_run(path, name: str) -> None:
    """The run as Moment-DETR's prediction file: windows in rank order with the run's scores."""
    lines = {}
    for rank, (caption, video, start, end) in enumerate(RUNS[name]):
        lines.setdefault(caption, {"qid": caption, "vid": video, "pred_relevant_windows": []})
        lines[caption]["pred_relevant_windows"].append([start, end, 1 - (len(lines[caption]["pred_relevant_windows"]) + 1) / 100])
    path.write_text("".join(json.dumps(line) + "\n" for line in lines.values()))


def test_a_moment_release_carries_qvhighlights_truth_that_scores_as_its_leaderboard(qvh_pool, tmp_path):
    release = release_create(allow_unresolved=True, pools=[qvh_pool], name="qvh-fire", licence="CC-BY-4.0")
    files = _files(release)
    assert "qvhighlights.jsonl" in files and "tvr.jsonl" not in files
    assert release.counts["moment_files"] == {"qvhighlights.jsonl": 2}
    assert "q1" in release.counts["moment_files_left_out"]["tvr.jsonl"]  # two positives: not one ts window
    sums = dict(line.split("  ", 1)[::-1] for line in files["SHA256SUMS"].decode().splitlines())
    assert "qvhighlights.jsonl" in sums

    truth_path = tmp_path / "qvhighlights.jsonl"
    truth_path.write_bytes(files["qvhighlights.jsonl"])
    truth = load_qvhighlights_ground_truth(truth_path)
    # The original moment stays positive whatever raters said, and the relevant spans join it.
    assert {q: (t.video, t.windows) for q, t in truth.items()} == {
        "q1": ("v1", ((10.0, 20.0), (40.0, 50.0))), "q2": ("v2", ((0.0, 10.0), (30.0, 40.0)))}
    assert truth["q1"].query == "a man opens the door"

    board = {row["run"]: row["corrected"] for row in release.leaderboard["runs"]}
    scored = {}
    for name in RUNS:
        run_path = tmp_path / f"{name}.jsonl"
        _qvh_run(run_path, name)
        out = io.StringIO()
        call_command("evaluate", str(run_path), "--judgments", str(truth_path), "--judgments-format", "qvhighlights",
                     "--run-format", "qvhighlights", "--output", "json", stdout=out)
        scored[name] = json.loads(out.getvalue())["measures"]
        for ours, theirs in SAME.items():
            assert scored[name][ours] / 100 == pytest.approx(board[name][theirs]["value"], abs=1e-9), (name, ours)
    # By hand (AP at IoU 0.50, 0.55, ..., 0.95). A: q1 [40, 50] exact then [10, 19] (IoU 0.9 with
    # [10, 20]): AP 1 at 9 thresholds, 0.5 at 0.95, so 0.95; q2 [1, 9] (IoU 0.8) then [30, 40]
    # exact: 1 at 7 thresholds, 0.25 (recall 1/2 at precision 1/2) at 3, so 0.775. B: q1 [10, 20]
    # exact then a miss, 0.5; q2 a miss then [30, 40], 0.25. R@1 at 0.7: A 2/2, B 1/2.
    assert scored["A"]["MR-full-mAP"] == pytest.approx(100 * (0.95 + 0.775) / 2)
    assert scored["B"]["MR-full-mAP"] == pytest.approx(100 * (0.5 + 0.25) / 2)
    assert (scored["A"]["MR-full-R1@0.7"], scored["B"]["MR-full-R1@0.7"]) == (pytest.approx(100), pytest.approx(50))


def test_a_moment_release_qrels_are_the_qrels_export_over_clips(qvh_pool):
    release = release_create(allow_unresolved=True, pools=[qvh_pool], name="qvh-fire")
    qrels = [tuple(line.split()) for line in _files(release)["qrels.txt"].decode().splitlines()]
    # q1's clip v1 holds a relevant span and two not relevant ones: the clip is relevant.
    assert sorted(qrels) == [("q1", "0", "v1", "1"), ("q1", "0", "v1-seg", "1"), ("q2", "0", "v2", "1"),
                             ("q2", "0", "v2-seg", "1")]
    assert sorted((q, "0", d, str(r)) for q, d, r in export_qrels_rows(pool=qvh_pool, originals=True)) == sorted(qrels)


def test_a_moment_release_with_one_positive_a_caption_carries_tvr_truth_that_scores_as_its_leaderboard(tmp_path):
    """Nothing judged relevant: each caption keeps its original moment only, so TVR's one `ts`
    window holds it. VCMR R@1 at IoU t (the first prediction in the right video with IoU >= t) is
    the leaderboard's R@1 IoU=t: A's q1 [40, 50] misses [10, 20], q2 [1, 9] has IoU 0.8 with [0, 10]
    (1/2 at 0.5 and 0.7); B's q1 [10, 20] is exact, q2 [50, 60] misses (1/2)."""
    pool = _moment_pool(set())
    release = release_create(allow_unresolved=True, pools=[pool], name="tvr-fire")
    files = _files(release)
    assert release.counts["moment_files"] == {"qvhighlights.jsonl": 2, "tvr.jsonl": 2}
    truth_path = tmp_path / "tvr.jsonl"
    truth_path.write_bytes(files["tvr.jsonl"])
    truth = load_tvr_ground_truth(truth_path)
    assert {q: (t.video, t.windows) for q, t in truth.items()} == {"q1": ("v1", ((10.0, 20.0),)),
                                                                   "q2": ("v2", ((0.0, 10.0),))}
    board = {row["run"]: row["corrected"] for row in release.leaderboard["runs"]}
    videos = {"v1": 0, "v2": 1}
    for name in RUNS:
        vcmr = {}
        for caption, video, start, end in RUNS[name]:
            vcmr.setdefault(caption, []).append([videos[video], start, end, 1 - len(vcmr[caption]) / 100])
        run_path = tmp_path / f"{name}.json"
        run_path.write_text(json.dumps({"video2idx": videos, "VCMR": [{"desc_id": q, "predictions": p}
                                                                       for q, p in vcmr.items()]}))
        out = io.StringIO()
        call_command("evaluate", str(run_path), "--judgments", str(truth_path), "--judgments-format", "tvr",
                     "--run-format", "tvr", "--measures", "VCMR-0.5-r1", "VCMR-0.7-r1", "--output", "json", stdout=out)
        scored = json.loads(out.getvalue())["measures"]
        assert scored == pytest.approx({"VCMR-0.5-r1": 50.0, "VCMR-0.7-r1": 50.0})
        assert scored["VCMR-0.5-r1"] / 100 == pytest.approx(board[name]["R@1 IoU=0.5"]["value"])
        assert scored["VCMR-0.7-r1"] / 100 == pytest.approx(board[name]["R@1 IoU=0.7"]["value"])
