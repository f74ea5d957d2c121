"""Score-matrix uploads are checked from their headers and ids before the scores are decompressed
(issue 22, finding 8): a 0.30 MB .npz took the server from 318 MB to 619 MB before its job failed
on an unknown caption id, and the 2**31-cell limit admitted ~17 GB of float64.

Memory is measured with tracemalloc, which NumPy reports its array buffers to: the figures are
bytes allocated, independent of the machine's speed."""
from __future__ import annotations

import io
import struct
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

from annotation.formats.errors import IssueCollector
from annotation.formats.score_matrix import read_score_matrix
from annotation.models import Run
from tests.annotation.services.datasets.test_matrix_runs import dataset, one_issue, refused, runs_root, write_npz  # noqa: F401
from annotation.services.datasets.runs import run_import

pytestmark = pytest.mark.django_db
MB = 1 << 20


def peak_bytes(call):
    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def forged_bomb(path: Path, shape: tuple[int, int], n_ids: tuple[int, int]) -> Path:
    """An .npz whose scores member declares `shape` of float64 (header and zip sizes agree, as a
    real zip bomb's do) while the archive holds a few hundred bytes: what a zip of zeros looks like
    to a reader that trusts the sizes, without spending the time to compress gigabytes."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": shape})
    body = header.getvalue() + b"\0" * 64
    declared = len(header.getvalue()) + shape[0] * shape[1] * 8
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("caption_ids.npy", _npy(np.array([f"q{i}" for i in range(n_ids[0])])))
        archive.writestr("clip_ids.npy", _npy(np.array([f"v{i}" for i in range(n_ids[1])])))
        archive.writestr("scores.npy", body)
    data = bytearray(path.read_bytes())
    # Patch the uncompressed size of scores.npy in its local header (offset 22) and its central
    # directory entry (offset 24) to the size the header's shape needs.
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("scores.npy")
    struct.pack_into("<I", data, info.header_offset + 22, declared)
    central = data.rindex(b"PK\x01\x02\x14", 0, data.rindex(b"scores.npy"))
    struct.pack_into("<I", data, central + 24, declared)
    path.write_bytes(bytes(data))
    return path


def _npy(array) -> bytes:
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


def test_a_zip_bomb_is_refused_by_its_header_without_decompressing(tmp_path, settings):
    """3,000 x 50,000 float64 (1.2 GB) declared in a file of a few hundred bytes; the default limit
    is set to 100 million cells, so this must fail on the cell limit alone."""
    settings.REJUDGE = {**settings.REJUDGE, "SCORE_MATRIX_MAX_CELLS": 100_000_000}
    path = forged_bomb(tmp_path / "bomb.npz", (3_000, 50_000), (3_000, 50_000))
    assert path.stat().st_size < 200_000
    issues = IssueCollector("bomb.npz")
    result, peak = peak_bytes(lambda: read_score_matrix(path, issues, max_cells=100_000_000))
    assert result is None
    (issue,) = issues.issues
    assert (issue.file, issue.field) == ("bomb.npz", "scores")
    assert "150,000,000 cells" in issue.message and "100,000,000" in issue.message
    assert "SCORE_MATRIX_MAX_CELLS" in issue.message
    assert peak < 8 * MB, peak


def test_the_cell_limit_is_the_setting_through_the_import(tmp_path, dataset, settings):  # noqa: F811
    settings.REJUDGE = {**settings.REJUDGE, "SCORE_MATRIX_MAX_CELLS": 11}
    issue = one_issue(refused(write_npz(tmp_path / "m.npz"), dataset))
    assert issue.field == "scores" and "12 cells" in issue.message and "at most 11" in issue.message
    settings.REJUDGE = {**settings.REJUDGE, "SCORE_MATRIX_MAX_CELLS": 12}
    assert run_import(dataset=dataset, path=tmp_path / "m.npz").created


def test_unknown_ids_are_refused_before_the_scores_are_decompressed(tmp_path, dataset):  # noqa: F811
    """The finding's case: a compressed matrix of zeros (tiny file, big array) with an unknown id.
    2,000 x 4,000 float64 is 61 MB once decompressed; the refusal must come from the ids alone."""
    n_captions, n_clips = 2_000, 4_000
    captions = ["q1", "q2", "q3"] + [f"nope{i}" for i in range(n_captions - 3)]
    clips = ["v1", "v2", "v3", "v4"] + [f"x{i}" for i in range(n_clips - 4)]
    path = write_npz(tmp_path / "z.npz", captions=captions, clips=clips,
                     scores=np.zeros((n_captions, n_clips)), compressed=True)
    assert path.stat().st_size < 2 * MB
    exc, peak = peak_bytes(lambda: refused(path, dataset))
    assert exc.issues[0].field == "caption_ids[3]" and "unknown caption id 'nope0'" in exc.issues[0].message
    assert peak < 16 * MB, f"peak {peak / MB:.1f} MB for a refusal by ids (the scores are {n_captions * n_clips * 8 / MB:.0f} MB)"


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_reading_a_matrix_peaks_within_twice_the_matrix_kept(tmp_path, dtype):
    n_captions, n_clips = 1_000, 2_000
    scores = np.arange(n_captions * n_clips, dtype=dtype).reshape(n_captions, n_clips)
    path = write_npz(tmp_path / "big.npz", captions=[f"q{i}" for i in range(n_captions)],
                     clips=[f"v{i}" for i in range(n_clips)], scores=scores, compressed=True)
    del scores
    issues = IssueCollector("big.npz")
    matrix, peak = peak_bytes(lambda: read_score_matrix(path, issues))
    assert matrix is not None, [str(i) for i in issues.issues]
    kept = matrix.scores.nbytes
    print(f"score matrix {np.dtype(dtype).name} {n_captions}x{n_clips}: kept {kept / MB:.1f} MB, "
          f"peak {peak / MB:.1f} MB ({peak / kept:.2f}x)")
    assert peak <= 2.2 * kept, (peak / MB, kept / MB)
    assert Run.objects.count() == 0
