"""Reader of score-matrix runs: a NumPy .npz holding a captions x clips score array and its ids.

This is what a retrieval model produces for full-ranking evaluation (every caption scored against
every clip, as the graded nDCG of Wray et al. needs), without writing one line per pair. Arrays:

    scores        2-D, numbers (float or integer), rows = captions, columns = clips; higher = better.
                  Also accepted under the name `similarity` or `sims`.
    caption_ids   1-D, the dataset's caption ids of the rows (strings; integers are read as their
                  decimal text). Also accepted as `query_ids` or `text_ids`.
    clip_ids      1-D, the dataset's clip ids of the columns. Also `video_ids` or `doc_ids`.

Other arrays in the file are ignored. Each role must be present under exactly one of its names.
Written e.g. by ``np.savez(path, scores=s, caption_ids=np.array(qids), clip_ids=np.array(vids))``.

Nothing in the file is ever unpickled (``allow_pickle=False``): an object array is refused by
name before it is read. Array headers (the zip members' .npy headers: shape and dtype) are checked
before any data is decompressed, so a file claiming an absurd shape, or a zip bomb (a few hundred
KB that decompress to gigabytes), fails on its header instead of allocating memory: the cells are
limited by `max_cells` (the import passes REJUDGE_SCORE_MATRIX_MAX_CELLS). Then only the ids are
decompressed and handed to `check_ids` (the import checks them against the dataset), and the
scores are decompressed last, once everything else is known to be right. Reading the scores
peaks at the matrix kept plus a boolean mask of it (an integer matrix: plus its float64 copy). Problems are reported like a line
file's, with the array (and row/column index) in place of the line: `caption_ids[3]`,
`scores[2, 7]`. Checks against the dataset (unknown ids) belong to the import service.
"""
from __future__ import annotations

import math
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.lib import format as npy_format

from annotation.analysis.storable_text import text_problem

from .errors import IssueCollector
from .fields import MAX_ID_LENGTH, shown

ZIP_MAGIC = b"PK\x03\x04"
SCORE_KEYS = ("scores", "similarity", "sims")
CAPTION_KEYS = ("caption_ids", "query_ids", "text_ids")
CLIP_KEYS = ("clip_ids", "video_ids", "doc_ids")
#: Run.prediction_count (rows x columns) is a 32-bit integer column: no setting goes beyond it.
MAX_CELLS = 2**31 - 1
#: Ids longer than this many characters are refused by text_problem; a dtype wider than that is
#: refused from its header, before an id array (itself possibly a bomb) is decompressed.
MAX_ID_BYTES = 4 * MAX_ID_LENGTH
#: How many non-finite scores are listed one by one before a summary line.
LISTED_BAD_CELLS = 10


@dataclass(frozen=True)
class ScoreMatrix:
    scores: np.ndarray  # float32 or float64, (len(caption_ids), len(clip_ids))
    caption_ids: list[str]
    clip_ids: list[str]


@dataclass(frozen=True)
class _Header:
    member: str
    shape: tuple[int, ...]
    dtype: np.dtype
    data_bytes: int  # the member's uncompressed size minus its header


def is_npz(path: Path) -> bool:
    """True for a file that starts like a zip archive (what np.savez writes)."""
    with Path(path).open("rb") as fh:
        return fh.read(4) == ZIP_MAGIC


def _headers(path: Path, issues: IssueCollector) -> dict[str, _Header] | None:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        issues.add(None, None, f"not a NumPy .npz file (a zip archive of .npy arrays): {exc}")
        return None
    headers: dict[str, _Header] = {}
    with archive:
        for info in archive.infolist():
            if not info.filename.endswith(".npy"):
                continue
            key = info.filename[:-4]
            try:
                with archive.open(info) as fh:
                    version = npy_format.read_magic(fh)
                    if version == (1, 0):
                        shape, _, dtype = npy_format.read_array_header_1_0(fh)
                    elif version in ((2, 0), (3, 0)):
                        shape, _, dtype = npy_format.read_array_header_2_0(fh)
                    else:
                        raise ValueError(f"unsupported .npy version {version}")
                    header_size = fh.tell()
            except (ValueError, OSError, EOFError, zipfile.BadZipFile, RuntimeError) as exc:
                issues.add(None, key, f"the array cannot be read: {exc}")
                continue
            headers[key] = _Header(info.filename, tuple(shape), dtype, info.file_size - header_size)
    return headers


def _pick(headers: dict[str, _Header], names: tuple[str, ...], issues: IssueCollector) -> str | None:
    present = [n for n in names if n in headers]
    if len(present) == 1:
        return present[0]
    if present:
        issues.add(None, present[1], f"arrays {' and '.join(present)} both present; keep one")
        return None
    found = ", ".join(sorted(headers)) or "none"
    issues.add(None, names[0], f"missing array '{names[0]}' (also accepted: {', '.join(names[1:])}); "
                               f"the file holds: {found}")
    return None


def _check_header(key: str, header: _Header, ndim: int, issues: IssueCollector) -> bool:
    dtype = header.dtype
    if dtype.hasobject:
        issues.add(None, key, "is an array of Python objects, which would need unpickling; refused "
                              "(save numbers and strings as plain NumPy arrays)")
        return False
    if len(header.shape) != ndim:
        what = "a 2-D array (captions x clips)" if ndim == 2 else "a 1-D array"
        issues.add(None, key, f"must be {what}, not {len(header.shape)}-D with shape {header.shape}")
        return False
    cells = math.prod(header.shape)
    if cells * dtype.itemsize > header.data_bytes:
        issues.add(None, key, f"its header claims shape {header.shape} of {dtype}, more than the file holds "
                              "(truncated or corrupt)")
        return False
    return True


def _ids_header_ok(key: str, header: _Header, issues: IssueCollector) -> bool:
    if header.dtype.kind not in "USiu":
        issues.add(None, key, f"must hold strings or integers, not {header.dtype}")
        return False
    if header.dtype.itemsize > MAX_ID_BYTES:
        issues.add(None, key, f"holds ids of {header.dtype} (up to {header.dtype.itemsize:,} bytes each); ids are at "
                              f"most {MAX_ID_LENGTH} characters")
        return False
    return True


def _ids(data, key: str, issues: IssueCollector) -> list[str] | None:
    values = data[key]
    ids: list[str] = []
    first_at: dict[str, int] = {}
    ok = True
    for i, raw in enumerate(values.tolist()):
        if isinstance(raw, bytes):
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError:
                issues.add(None, f"{key}[{i}]", f"{shown(str(raw))} is not UTF-8 text")
                ok = False
                continue
        value = str(raw).strip()
        problem = "is empty" if not value else text_problem(value, max_length=MAX_ID_LENGTH)
        if problem:
            issues.add(None, f"{key}[{i}]", f"the id {problem}")
            ok = False
        elif value in first_at:
            issues.add(None, f"{key}[{i}]", f"id {shown(value)} repeats {key}[{first_at[value]}]")
            ok = False
        else:
            first_at[value] = i
        ids.append(value)
        if issues.full:
            return None
    return ids if ok else None


def _check_finite(scores: np.ndarray, key: str, caption_ids: list[str], clip_ids: list[str],
                  issues: IssueCollector) -> bool:
    bad_rows = np.flatnonzero(~np.isfinite(scores).all(axis=1))
    if not bad_rows.size:
        return True
    total = 0
    listed = 0
    for i in bad_rows.tolist():
        columns = np.flatnonzero(~np.isfinite(scores[i]))
        total += columns.size
        for j in columns.tolist():
            if listed < LISTED_BAD_CELLS:
                issues.add(None, f"{key}[{i}, {j}]", f"{scores[i, j]} for caption {shown(caption_ids[i])} and clip "
                                                     f"{shown(clip_ids[j])}: scores must be finite (no NaN or infinity)")
                listed += 1
    if total > listed:
        issues.add(None, key, f"{total:,} scores are not finite in all ({listed} listed above), in "
                              f"{bad_rows.size:,} row(s)")
    return False


def read_score_matrix(path: Path, issues: IssueCollector, *, max_cells: int = MAX_CELLS,
                      check_ids: Callable[[list[str], list[str], IssueCollector], None] | None = None
                      ) -> ScoreMatrix | None:
    """Reads and checks the file; None (with the problems in `issues`) when it is refused.

    `max_cells`: the largest captions x clips accepted, checked on the header. `check_ids(caption_ids,
    clip_ids, issues)` runs after the ids are read and before the scores are decompressed; any issue
    it adds refuses the file."""
    headers = _headers(Path(path), issues)
    if headers is None:
        return None
    keys = [_pick(headers, names, issues) for names in (SCORE_KEYS, CAPTION_KEYS, CLIP_KEYS)]
    if None in keys or issues:
        return None
    score_key, caption_key, clip_key = keys
    ok = all([_check_header(score_key, headers[score_key], 2, issues),
              _check_header(caption_key, headers[caption_key], 1, issues),
              _check_header(clip_key, headers[clip_key], 1, issues)])
    if not ok:
        return None
    shape = headers[score_key].shape
    n_captions, n_clips = headers[caption_key].shape[0], headers[clip_key].shape[0]
    if shape != (n_captions, n_clips):
        hint = " (rows must be captions and columns clips: transpose it?)" if shape == (n_clips, n_captions) else ""
        issues.add(None, score_key, f"has shape {shape} but {caption_key} lists {n_captions:,} and {clip_key} "
                                    f"{n_clips:,} ids: expected ({n_captions:,}, {n_clips:,}){hint}")
        return None
    if 0 in shape:
        issues.add(None, score_key, f"is empty (shape {shape}): a run needs at least one caption and one clip")
        return None
    limit = min(max_cells, MAX_CELLS)
    if math.prod(shape) > limit:
        issues.add(None, score_key, f"has {math.prod(shape):,} cells ({shape[0]:,} captions x {shape[1]:,} clips); at "
                                    f"most {limit:,} are accepted (REJUDGE_SCORE_MATRIX_MAX_CELLS); refused before "
                                    "decompressing it")
        return None
    kind = headers[score_key].dtype.kind
    if kind not in "fiu":
        issues.add(None, score_key, f"must hold numbers (float or integer), not {headers[score_key].dtype}")
        return None
    if not all([_ids_header_ok(caption_key, headers[caption_key], issues),
                _ids_header_ok(clip_key, headers[clip_key], issues)]):
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            caption_ids = _ids(data, caption_key, issues)
            clip_ids = _ids(data, clip_key, issues)
            if caption_ids is None or clip_ids is None:
                return None
            if check_ids is not None:
                check_ids(caption_ids, clip_ids, issues)
                if issues:
                    return None
            scores = data[score_key]
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        issues.add(None, None, f"the arrays cannot be read: {exc}")
        return None
    if scores.dtype not in (np.float32, np.float64):
        # Integers, float16 and long doubles are ranked as float64 (an integer past 2**53 may then
        # tie with its neighbour).
        scores = scores.astype(np.float64)
    if not _check_finite(scores, score_key, caption_ids, clip_ids, issues):
        return None
    return ScoreMatrix(scores, caption_ids, clip_ids)


def load_score_matrix(path: Path, display: str | None = None) -> ScoreMatrix:
    """A stored matrix run (checked when it was imported), read the same careful way."""
    issues = IssueCollector(display or Path(path).name)
    matrix = read_score_matrix(path, issues)
    issues.raise_if_any()
    if matrix is None:  # pragma: no cover - a refusal always leaves an issue
        raise ValueError(f"{path}: not a score matrix")
    return matrix
