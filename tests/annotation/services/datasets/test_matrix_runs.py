"""Score-matrix runs (.npz): import, rankings with trec_eval's tie rule, pools, reports and proxy nDCG
read from the matrix, every refusal with the file and the array named and nothing left behind, and
per-run --max-depth (a matrix cut at N; a TREC run deeper than 1,000 kept whole with `all`)."""
from __future__ import annotations

import io
import math
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from annotation.formats.errors import ImportRejected
from annotation.models import Caption, Clip, Dataset, PairProvenance, PooledPair, Prediction, Run
from annotation.selectors.reports import run_rankings
from annotation.services.pools.build import pool_create
from annotation.services.proxies.matrices import proxy_matrices_compute, proxy_ndcg_report_create
from annotation.services.datasets.runs import ALL_RANKS, run_import
from annotation.services.pools.sampled import sampled_pool_create

pytestmark = pytest.mark.django_db
L3 = math.log2(3)


@pytest.fixture(autouse=True)
def runs_root(settings, tmp_path):
    settings.RUNS_ROOT = tmp_path / "runs"
    return settings.RUNS_ROOT


def stored_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


# The dataset: captions q1..q3 written for clips v1..v3; clip v4 has no caption. BoW (modern) of
# the captions: q1 {dog, runs}, q2 {dog, sleeps}, q3 {cat, sleeps}.
TEXTS = ["The dog runs", "dog sleeps", "cat sleeps"]


@pytest.fixture
def dataset():
    ds = Dataset.objects.create(name="m")
    clips = [Clip.objects.create(dataset=ds, external_id=f"v{i}", video_id=f"v{i}") for i in range(1, 5)]
    for i, text in enumerate(TEXTS, start=1):
        Caption.objects.create(dataset=ds, external_id=f"q{i}", text=text, original_clip=clips[i - 1])
    return ds


# The run, captions x clips (rows q1..q3, columns v1..v4):
#         v1    v2    v3    v4
#   q1   0.2   0.9   0.5   0.9     v2 and v4 tie
#   q2   0.1   0.1   0.1   0.7     v1, v2 and v3 tie
#   q3  -1.0   3.0   0.0   2.0
# Rankings by trec_eval's rule (score descending, ties by clip id descending):
#   q1: v4 (0.9), v2 (0.9), v3, v1      q2: v4, v3, v2, v1 (the tie in reverse id order)
#   q3: v2, v4, v3, v1
SCORES = {"q1": [0.2, 0.9, 0.5, 0.9], "q2": [0.1, 0.1, 0.1, 0.7], "q3": [-1.0, 3.0, 0.0, 2.0]}
RANKED = {"q1": ["v4", "v2", "v3", "v1"], "q2": ["v4", "v3", "v2", "v1"], "q3": ["v2", "v4", "v3", "v1"]}


def write_npz(path: Path, *, captions=("q1", "q2", "q3"), clips=("v1", "v2", "v3", "v4"), scores=...,
              compressed: bool = False, **arrays) -> Path:
    """The matrix with its rows and columns listed in the given order (any order is allowed); an
    array given as None is left out."""
    if scores is ...:
        full = {q: dict(zip(("v1", "v2", "v3", "v4"), SCORES[q])) for q in SCORES}
        scores = np.array([[full[q][v] for v in clips] for q in captions], dtype=np.float32)
    arrays = {"scores": scores, "caption_ids": np.array(captions), "clip_ids": np.array(clips)} | arrays
    with path.open("wb") as fh:  # a file handle: np.savez would add .npz to any other name
        (np.savez_compressed if compressed else np.savez)(fh, **{k: v for k, v in arrays.items() if v is not None})
    return path


def trec_equivalent(path: Path, depth: int = 4) -> Path:
    """The same run as a TREC file, ranked as RANKED says."""
    score = {(q, v): SCORES[q][int(v[1]) - 1] for q in SCORES for v in ("v1", "v2", "v3", "v4")}
    path.write_text("".join(f"{q} Q0 {v} {r} {score[(q, v)]} trec\n" for q in RANKED
                            for r, v in enumerate(RANKED[q][:depth], start=1)))
    return path


def ext_rankings(run: Run, depth: int) -> dict[str, list[str]]:
    caption = dict(Caption.objects.values_list("pk", "external_id"))
    clip = dict(Clip.objects.values_list("pk", "external_id"))
    return {caption[q]: [clip[v] for v in clips] for q, clips in run_rankings(run=run, depth=depth).items()}


# --- import ----------------------------------------------------------------------------------------

def test_matrix_run_is_kept_as_a_file_with_no_prediction_rows(tmp_path, dataset, runs_root):
    # Rows and columns in a shuffled order: the ids, not the positions, say which is which.
    path = write_npz(tmp_path / "model-a.npz", captions=("q3", "q1", "q2"), clips=("v3", "v1", "v4", "v2"), compressed=True)
    outcome = run_import(dataset=dataset, path=path)
    run = outcome.run
    assert outcome.created and run.name == "model-a" and run.kind == Run.Kind.CLIP and run.source_format == "npz"
    assert (run.depth, run.prediction_count, run.caption_count) == (4, 12, 3)
    assert Prediction.objects.count() == 0
    (kept,) = stored_files(runs_root)
    assert kept.name == f"{run.checksum}.npz" and run.scores_file == f"{run.checksum[:2]}/{run.checksum}.npz"
    assert kept.read_bytes() == path.read_bytes()
    assert ext_rankings(run, 4) == RANKED
    assert ext_rankings(run, 2) == {q: clips[:2] for q, clips in RANKED.items()}
    again = run_import(dataset=dataset, path=path, name="other")
    assert not again.created and again.run.pk == run.pk and len(stored_files(runs_root)) == 1


def test_zip_magic_makes_a_matrix_whatever_the_name(tmp_path, dataset):
    path = tmp_path / "scores.bin"
    write_npz(tmp_path / "x.npz").rename(path)
    assert run_import(dataset=dataset, path=path).run.source_format == "npz"


def test_other_key_names_and_integer_ids(tmp_path):
    ds = Dataset.objects.create(name="ints")
    for i in (10, 20):
        clip = Clip.objects.create(dataset=ds, external_id=str(i), video_id=str(i))
        Caption.objects.create(dataset=ds, external_id=str(i + 1), text="t", original_clip=clip)
    path = tmp_path / "r.npz"
    np.savez(path, sims=np.array([[1, 2], [4, 3]], dtype=np.int32), query_ids=np.array([11, 21]),
             video_ids=np.array([10, 20]), extra=np.zeros(3))
    run = run_import(dataset=ds, path=path).run
    assert {Caption.objects.get(pk=q).external_id: [Clip.objects.get(pk=v).external_id for v in clips]
            for q, clips in run_rankings(run=run, depth=2).items()} == {"11": ["20", "10"], "21": ["10", "20"]}


def test_max_depth_cuts_a_matrix_run(tmp_path, dataset):
    run = run_import(dataset=dataset, path=write_npz(tmp_path / "r.npz"), max_depth=2).run
    assert (run.depth, run.prediction_count) == (2, 6)
    assert ext_rankings(run, 10) == {q: clips[:2] for q, clips in RANKED.items()}
    full = run_import(dataset=dataset, path=write_npz(tmp_path / "r2.npz", compressed=True), max_depth=ALL_RANKS).run
    assert full.depth == 4  # 'all' (0) and no option both keep every clip of a matrix


# --- refusals: file, array and index named; no run, no file ---------------------------------------

def refused(path: Path, dataset, **options) -> ImportRejected:
    with pytest.raises(ImportRejected) as caught:
        run_import(dataset=dataset, path=path, **options)
    assert Run.objects.count() == 0
    return caught.value


def one_issue(exc: ImportRejected):
    assert len(exc.issues) == 1, [str(i) for i in exc.issues]
    return exc.issues[0]


@pytest.mark.parametrize("bad, field, words", [
    (math.nan, "scores[1, 2]", "nan for caption 'q2' and clip 'v3': scores must be finite"),
    (math.inf, "scores[1, 2]", "inf for caption 'q2' and clip 'v3'"),
    (-math.inf, "scores[1, 2]", "-inf"),
])
def test_non_finite_scores_are_named_by_row_and_column(tmp_path, dataset, runs_root, bad, field, words):
    scores = np.array([SCORES[q] for q in ("q1", "q2", "q3")])
    scores[1, 2] = bad
    issue = one_issue(refused(write_npz(tmp_path / "bad.npz", scores=scores), dataset))
    assert (issue.file, issue.line, issue.field) == ("bad.npz", None, field) and words in issue.message
    assert stored_files(runs_root) == []


def test_many_non_finite_scores_are_summed_up(tmp_path, dataset):
    scores = np.full((3, 4), np.nan)
    issues = refused(write_npz(tmp_path / "nan.npz", scores=scores), dataset).issues
    assert [i.field for i in issues[:3]] == ["scores[0, 0]", "scores[0, 1]", "scores[0, 2]"]
    assert len(issues) == 11 and issues[-1].message.startswith("12 scores are not finite in all (10 listed above)")


@pytest.mark.parametrize("arrays, field, words", [
    ({"caption_ids": np.array(["q1", "qX", "q3"])}, "caption_ids[1]", "unknown caption id 'qX'"),
    ({"clip_ids": np.array(["v1", "v2", "v9", "v4"])}, "clip_ids[2]", "unknown clip id 'v9'"),
    ({"clip_ids": np.array(["v1", "v2", "v3", "v1"])}, "clip_ids[3]", "id 'v1' repeats clip_ids[0]"),
    ({"caption_ids": np.array(["q1", " ", "q3"])}, "caption_ids[1]", "the id is empty"),
    ({"scores": np.zeros((4, 3))}, "scores", "has shape (4, 3) but caption_ids lists 3 and clip_ids 4 ids: expected "
                                             "(3, 4) (rows must be captions and columns clips: transpose it?)"),
    ({"scores": np.zeros((3, 4, 1))}, "scores", "must be a 2-D array (captions x clips), not 3-D"),
    ({"clip_ids": np.array([["v1", "v2", "v3", "v4"]])}, "clip_ids", "must be a 1-D array, not 2-D"),
    ({"scores": np.full((3, 4), "0.5")}, "scores", "must hold numbers (float or integer), not <U3"),
    ({"scores": np.zeros((3, 4), dtype=complex)}, "scores", "must hold numbers"),
    ({"clip_ids": np.array([0.5, 1.5, 2.5, 3.5])}, "clip_ids", "must hold strings or integers, not float64"),
    ({"scores": None}, "scores", "missing array 'scores' (also accepted: similarity, sims); the file holds: "
                                 "caption_ids, clip_ids"),
    ({"similarity": np.zeros((3, 4))}, "similarity", "arrays scores and similarity both present; keep one"),
    ({"scores": np.zeros((0, 4)), "caption_ids": np.array([], dtype=str)}, "scores", "is empty (shape (0, 4))"),
])
def test_refused_matrices(tmp_path, dataset, runs_root, arrays, field, words):
    issue = one_issue(refused(write_npz(tmp_path / "bad.npz", **arrays), dataset))
    assert (issue.file, issue.field) == ("bad.npz", field)
    assert words in issue.message
    assert stored_files(runs_root) == []


def test_pickled_object_arrays_are_refused_and_never_unpickled(tmp_path, dataset, runs_root):
    marker = tmp_path / "unpickled"

    class Trap:
        def __reduce__(self):
            return os.mkdir, (str(marker),)  # what unpickling this element would run

    ids = np.empty(3, dtype=object)
    ids[:] = ["q1", Trap(), "q3"]
    path = write_npz(tmp_path / "evil.npz", caption_ids=ids)  # np.savez pickles object arrays
    issue = one_issue(refused(path, dataset))
    assert (issue.field, issue.file) == ("caption_ids", "evil.npz") and "Python objects" in issue.message
    assert not marker.exists() and stored_files(runs_root) == []


def test_a_header_claiming_more_than_the_file_holds_is_refused_before_reading(tmp_path, dataset):
    path = write_npz(tmp_path / "huge.npz", scores=None)
    body = io.BytesIO()
    # 3 x 2**40 float64 would be 24 TiB; the array holds 64 bytes.
    np.lib.format.write_array_header_1_0(body, {"descr": "<f8", "fortran_order": False, "shape": (3, 2**40)})
    body.write(b"\0" * 64)
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("similarity.npy", body.getvalue())
    issue = one_issue(refused(path, dataset))
    assert issue.field == "similarity" and "claims shape (3, 1099511627776) of float64, more than the file holds" in issue.message


def test_not_a_zip_and_negative_depth(tmp_path, dataset):
    text = tmp_path / "t.npz"
    text.write_text("q1 Q0 v1 1 1 s\n")
    issue = one_issue(refused(text, dataset))
    assert issue.file == "t.npz" and "not a NumPy .npz file" in issue.message
    issue = one_issue(refused(write_npz(tmp_path / "r.npz"), dataset, max_depth=-1))
    assert issue.field == "max_depth" and "--max-depth all" in issue.message


def test_a_failed_run_row_leaves_no_file(tmp_path, dataset, runs_root, monkeypatch):
    def fail(*args, **kwargs):
        raise RuntimeError("database went away")

    monkeypatch.setattr(Run.objects, "create", fail)
    with pytest.raises(RuntimeError):
        run_import(dataset=dataset, path=write_npz(tmp_path / "r.npz"))
    assert stored_files(runs_root) == []


# --- max depth of line files --------------------------------------------------------------------

def test_trec_run_deeper_than_1000_needs_max_depth_all(tmp_path):
    ds = Dataset.objects.create(name="deep")
    for i in range(1100):
        Clip.objects.create(dataset=ds, external_id=f"v{i}", video_id=f"v{i}")
    Caption.objects.create(dataset=ds, external_id="q", text="t")
    path = tmp_path / "deep.trec"
    path.write_text("".join(f"q Q0 v{r - 1} {r} {1 - r / 2000} deep\n" for r in range(1, 1101)))
    with pytest.raises(CommandError) as caught:
        call_command("import_run", str(path), "--dataset", "deep", stdout=io.StringIO())
    text = str(caught.value)
    assert "deep.trec, line 1001, field 'rank': rank 1001 is deeper than the maximum run depth 1000 (the default, " \
           "from REJUDGE_MAX_RUN_DEPTH); import with --max-depth N (REST: max_depth), or --max-depth all" in text
    assert Run.objects.count() == 0
    with pytest.raises(CommandError, match="rank 1051 is deeper than the maximum run depth 1050 \\(as asked\\)"):
        call_command("import_run", str(path), "--dataset", "deep", "--max-depth", "1050", stdout=io.StringIO())
    with pytest.raises(CommandError, match="'deep' is not a positive whole number or 'all'"):
        call_command("import_run", str(path), "--dataset", "deep", "--max-depth", "deep", stdout=io.StringIO())
    out = io.StringIO()
    call_command("import_run", str(path), "--dataset", "deep", "--max-depth", "all", stdout=out)
    run = Run.objects.get()
    assert (run.depth, run.prediction_count) == (1100, 1100) and Prediction.objects.filter(run=run).count() == 1100
    assert "1,100 predictions for 1 captions, depth 1100" in out.getvalue()


def test_import_run_command_with_format_npz(tmp_path, dataset):
    path = write_npz(tmp_path / "m.data")
    out = io.StringIO()
    call_command("import_run", str(path), "--dataset", "m", "--format", "npz", "--max-depth", "3", stdout=out)
    assert "9 predictions for 3 captions, depth 3 (a score matrix" in out.getvalue()
    run = Run.objects.get()
    assert (run.depth, run.prediction_count) == (3, 9)
    with pytest.raises(CommandError, match="import refused, nothing was written:\n  bad.npz, field 'caption_ids\\[0\\]'"):
        call_command("import_run", str(write_npz(tmp_path / "bad.npz", caption_ids=np.array(["x", "q2", "q3"]))),
                     "--dataset", "m", stdout=io.StringIO())


# --- pools and reports read the matrix -------------------------------------------------------------

def pool_content(pool) -> tuple[set, set]:
    pairs = set(PooledPair.objects.filter(pool=pool).values_list("caption__external_id", "clip__external_id"))
    prov = set(PairProvenance.objects.filter(pair__pool=pool).values_list(
        "pair__caption__external_id", "pair__clip__external_id", "rank"))
    return pairs, prov


def test_pool_from_a_matrix_run_equals_the_pool_from_its_trec_run(tmp_path, dataset):
    matrix = run_import(dataset=dataset, path=write_npz(tmp_path / "r.npz")).run
    trec = run_import(dataset=dataset, path=trec_equivalent(tmp_path / "r.trec")).run
    from_matrix = pool_content(pool_create(dataset=dataset, name="pm", runs=[matrix], depth=2))
    from_trec = pool_content(pool_create(dataset=dataset, name="pt", runs=[trec], depth=2))
    # depth 2: q1 {v4 (1), v2 (2)}, q2 {v4 (1), v3 (2)}, q3 {v2 (1), v4 (2)}
    assert from_matrix == from_trec == (
        {("q1", "v4"), ("q1", "v2"), ("q2", "v4"), ("q2", "v3"), ("q3", "v2"), ("q3", "v4")},
        {("q1", "v4", 1), ("q1", "v2", 2), ("q2", "v4", 1), ("q2", "v3", 2), ("q3", "v2", 1), ("q3", "v4", 2)})
    # Both runs in one pool: the matrix run adds nothing new and is recorded on every pair.
    both = pool_create(dataset=dataset, name="pb", runs=[trec, matrix], depth=2)
    assert PooledPair.objects.filter(pool=both).count() == 6
    assert PairProvenance.objects.filter(pair__pool=both, run=matrix).count() == 6


def test_sampled_pool_from_a_matrix_run_equals_the_one_from_its_trec_run(tmp_path, dataset):
    matrix = run_import(dataset=dataset, path=write_npz(tmp_path / "r.npz")).run
    trec = run_import(dataset=dataset, path=trec_equivalent(tmp_path / "r.trec")).run
    strata = [[1, 1, 1.0], [2, 4, 0.5]]
    a = sampled_pool_create(dataset=dataset, name="sm", runs=[matrix], strata=strata, seed=3)
    b = sampled_pool_create(dataset=dataset, name="st", runs=[trec], strata=strata, seed=3)
    assert pool_content(a) == pool_content(b) and a.sampled_design.full_pool_size == 12


# --- graded nDCG from the matrix ---------------------------------------------------------------------

def test_proxy_ndcg_of_a_matrix_run_by_hand(tmp_path, dataset):
    (bow,) = proxy_matrices_compute(dataset=dataset, proxies=["bow"])
    run = run_import(dataset=dataset, path=write_npz(tmp_path / "r.npz", captions=("q2", "q3", "q1"))).run
    r = proxy_ndcg_report_create(run=run, artefact=bow).result
    # S (rows clips, columns captions):  v1 [1, 1/3, 0]  v2 [1/3, 1, 1/3]  v3 [0, 1/3, 1]  v4 [0, 0, 0]
    # nDCG sorts each query's items stably, so tied scores keep the matrix's id order (v2 before v4
    # for q1), unlike the pool's trec_eval order. Only the first |R_q| ranks count.
    # text-to-video:
    #   q1 ranks v2, v4 (0.9 tie), v3, v1; R = {v1, v2}: DCG 1/3 + 0; IDCG 1 + (1/3)/log2 3
    #   q2 ranks v4, v1, v2, v3 (0.1 tie); R = {v1, v2, v3}: DCG 0 + (1/3)/log2 3 + 1/2; IDCG 1 + (1/3)/log2 3 + (1/3)/2
    #   q3 ranks v2, v4, v3, v1; R = {v2, v3}: DCG 1/3 + 0; IDCG 1 + (1/3)/log2 3
    ideal2, ideal3 = 1 + 1 / 3 / L3, 1 + 1 / 3 / L3 + 1 / 6
    t2v = ((1 / 3) / ideal2 + (1 / 3 / L3 + 1 / 2) / ideal3 + (1 / 3) / ideal2) / 3
    # video-to-text (columns of the run):
    #   v1: q1 .2, q2 .1, q3 -1 -> q1, q2, q3: ideal -> 1
    #   v2: q1 .9, q2 .1, q3 3 -> q3 (1/3), q1 (1/3), q2 (1): DCG 1/3 + (1/3)/log2 3 + 1/2; IDCG as ideal3
    #   v3: q1 .5, q2 .1, q3 0 -> q1 (0), q2 (1/3) within |R| = 2: DCG (1/3)/log2 3; IDCG ideal2
    #   v4: no caption, S = 0 everywhere: no nDCG, skipped
    v2t = (1 + (1 / 3 + 1 / 3 / L3 + 1 / 2) / ideal3 + (1 / 3 / L3) / ideal2) / 3
    assert r["text_to_video"] == pytest.approx(t2v) and r["video_to_text"] == pytest.approx(v2t)
    assert (r["video_to_text_empty_queries"], r["text_to_video_empty_queries"]) == (1, 0)
    assert r["run"] == {"predictions": 12, "captions_ranked": 3, "clips_ranked": 4, "score_source": "score"}
    # The same scores as stored predictions give the same numbers.
    trec = run_import(dataset=dataset, path=trec_equivalent(tmp_path / "r.trec")).run
    stored = proxy_ndcg_report_create(run=trec, artefact=bow).result
    assert (stored["text_to_video"], stored["video_to_text"]) == pytest.approx((r["text_to_video"], r["video_to_text"]))


def test_proxy_ndcg_of_a_cut_matrix_run_equals_its_cut_trec_run(tmp_path, dataset):
    (bow,) = proxy_matrices_compute(dataset=dataset, proxies=["bow"])
    cut = run_import(dataset=dataset, path=write_npz(tmp_path / "r.npz"), max_depth=2).run
    trec = run_import(dataset=dataset, path=trec_equivalent(tmp_path / "r.trec", depth=2)).run
    a = proxy_ndcg_report_create(run=cut, artefact=bow).result
    b = proxy_ndcg_report_create(run=trec, artefact=bow).result
    assert a["run"] == b["run"] == {"predictions": 6, "captions_ranked": 3, "clips_ranked": 3, "score_source": "score"}
    assert (a["text_to_video"], a["video_to_text"]) == pytest.approx((b["text_to_video"], b["video_to_text"]))
