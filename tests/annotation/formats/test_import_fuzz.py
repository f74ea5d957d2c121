"""Property: whatever bytes an import is given, it either succeeds or is refused with every problem
naming the file (and, where there is one, the line), and a refusal writes nothing. No other exception
may escape: the job would fail with a bare error text and no file, line or field.

Each format's files are generated valid (or nearly: ids may repeat or be unknown), and then half of
them get one awkward value put in, are cut short, or get bytes that are not UTF-8. The awkward values:
NUL and control characters, quotes and separators, NaN, infinity and huge numbers, ids longer than
their columns, a field over the csv module's limit, deep JSON, paths out of MEDIA_ROOT. Each test
also checks that both outcomes happened, so the generators keep reaching the success path. A fixed
seed (derandomize) keeps CI reproducible."""
from __future__ import annotations

import itertools
import json
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.formats.errors import ImportRejected
from annotation.models import Dataset, PooledPair, Prediction
from annotation.models.judgment_sets import ImportedJudgment
from annotation.services.datasets.imports import dataset_import
from annotation.services.judgment_sets.imports import judgments_import
from annotation.services.pools.build import known_pairs_import_csv
from annotation.services.accounts.raters import raters_import_csv
from annotation.services.datasets.runs import run_import
from tests.factories import make_dataset, make_pool_with_runs

pytestmark = pytest.mark.django_db

FUZZ = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))

AWKWARD = st.sampled_from([
    "", " ", "0", "-1", "1e309", "nan", "NaN", "inf", "-inf", "99999999999999999999", "25:61:61", "a\x00b", "\x00",
    "x\ry", 'say "hi"', '"', '""', ",", "\t", " Q0 ", "é", "../x.mp4", "/etc/passwd", "javascript:alert(1)",
    "//evil.example/x", "{video_id.__class__}", "[" * 40, "{}", "[]", "null", "x" * 201, "y" * 131_073, "\n\n",
    "\\ud800",  # inside a JSON string, the escape of half a surrogate pair
])
IDS = st.sampled_from(["c1", "c2", "c3", "v1", "v2", "v3", "q1", "q2", "q3"])
TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=20).map(str.strip).filter(bool)
TIMES = st.tuples(st.integers(0, 5), st.integers(1, 5)).map(lambda t: (t[0], t[0] + t[1]))


def _csv_cell(value: str) -> str:
    return '"' + value.replace('"', '""') + '"' if any(ch in value for ch in ',"\n') else value


def _table(header: str | None, row, sep: str = ",", quote=_csv_cell):
    rows = st.lists(row, min_size=1, max_size=6).map(
        lambda rs: "".join(sep.join(quote(str(v)) for v in r) + "\n" for r in rs))
    return rows.map(lambda body: (header + "\n" if header else "") + body)


def _jsonl(obj):
    return st.lists(obj, min_size=1, max_size=6).map(lambda os: "".join(json.dumps(o) + "\n" for o in os))


CLIP = st.builds(lambda i, t: {"kind": "clip", "id": i, "path": f"v/{i}.mp4", "start": t[0], "end": t[1]}, IDS, TIMES)
CAPTION = st.builds(lambda i, c, t: {"kind": "caption", "id": i, "text": t, "clip": c}, IDS, IDS, TEXT)
# Files that are valid, or nearly: ids may repeat or be unknown, which the importers must refuse.
VALID_DATASETS = {
    "manifest-jsonl": ("m.jsonl", _jsonl(st.one_of(CLIP, CAPTION))),
    "manifest-csv": ("m.csv", _table("kind,id,path,text,clip", st.one_of(
        CLIP.map(lambda c: ["clip", c["id"], c["path"], "", ""]),
        CAPTION.map(lambda c: ["caption", c["id"], "", c["text"], c["clip"]])))),
    "msrvtt-csv": ("m.csv", _table("key,vid_key,video_id,sentence",
                                   st.tuples(IDS, IDS, IDS, TEXT).map(lambda t: [f"ret{t[0]}", t[1], t[2], t[3]]))),
    "msvd-tsv": ("m.tsv", _table(None, st.tuples(st.lists(TEXT.filter(lambda t: "," not in t), min_size=1, max_size=3),
                                                 IDS).map(lambda t: [", ".join(t[0]) + ", ", t[1]]),
                                 sep="\t", quote=str)),
    "youcook2-json": ("y.json", st.dictionaries(IDS, st.fixed_dictionaries({
        "duration": st.integers(5, 20), "annotations": st.lists(st.builds(
            lambda t, n, x: {"segment": list(t), "id": n, "sentence": x}, TIMES, st.integers(0, 3), TEXT),
            max_size=3)}), min_size=1, max_size=3).map(lambda d: json.dumps({"database": d}))),
    "epic100-csv": ("e.csv", _table("narration_id,video_id,start_timestamp,stop_timestamp,narration", st.builds(
        lambda n, v, t, x: [n, v, f"00:00:{t[0]:02d}.00", f"00:00:{t[1]:02d}.50", x], IDS, IDS, TIMES, TEXT))),
}
RANKED = st.tuples(st.sampled_from(["q1", "q2"]), st.sampled_from(["v1", "v2", "v3"]), st.integers(1, 3),
                   st.floats(0, 1, allow_nan=False).map(lambda x: round(x, 3)))
VALID_RUNS = {
    "trec": ("r.trec", _table(None, RANKED.map(lambda r: [r[0], "Q0", r[1], r[2], r[3], "tag"]), sep=" ", quote=str)),
    "csv": ("r.csv", _table("caption_id,clip_id,rank,score", RANKED.map(list))),
    "jsonl": ("r.jsonl", _jsonl(RANKED.map(lambda r: dict(zip(["caption_id", "clip_id", "rank", "score"], r))))),
    "json": ("r.json", st.dictionaries(st.sampled_from(["q1", "q2"]), st.lists(st.builds(
        lambda c, x: {"clip_id": c, "score": x}, st.sampled_from(["v1", "v2", "v3"]), st.floats(0, 1)),
        max_size=3)).map(json.dumps)),
}


@st.composite
def mutated(draw, valid):
    """A valid file, or one with an awkward value put in, a cut, or bytes that are not UTF-8."""
    data = draw(valid).encode()
    how = draw(st.sampled_from(["as is", "as is", "insert", "replace", "cut", "bytes"]))
    if how == "as is" or not data:
        return data
    at = draw(st.integers(0, len(data)))
    if how == "cut":
        return data[:at]
    if how == "bytes":
        return data[:at] + draw(st.binary(min_size=1, max_size=4)) + b"\xff" + data[at:]
    awkward = draw(AWKWARD).encode()
    end = at + (draw(st.integers(1, 8)) if how == "replace" else 0)
    return data[:at] + awkward + data[end:]


_names = itertools.count()


def assert_refusal_names_the_file(refused: ImportRejected, display: str):
    assert refused.issues, "a refusal must list at least one problem"
    for issue in refused.issues:
        assert issue.file == display and issue.message
        assert issue.line is None or issue.line >= 1
    json.dumps(refused.as_list())  # stored on the job as JSON


def assert_both_paths_taken(outcomes: Counter):
    """Guards the generators: a property that only ever saw refusals (or acceptances) tests little."""
    assert outcomes["accepted"] >= 3 and outcomes["refused"] >= 3, dict(outcomes)


@pytest.mark.parametrize("fmt", sorted(VALID_DATASETS))
def test_dataset_imports_succeed_or_name_the_file(fmt, tmp_path):
    name, valid = VALID_DATASETS[fmt]
    outcomes = Counter()

    @FUZZ
    @given(data=mutated(valid))
    def check(data):
        path = tmp_path / name
        path.write_bytes(data)
        dataset_name = f"fuzz{next(_names)}"
        try:
            dataset_import(path=path, name=dataset_name, fmt=fmt, media_template="v/{video_id}.mp4")
            outcomes["accepted"] += 1
        except ImportRejected as refused:
            outcomes["refused"] += 1
            assert_refusal_names_the_file(refused, name)
            assert not Dataset.objects.filter(name=dataset_name).exists()

    check()
    assert_both_paths_taken(outcomes)


@pytest.mark.parametrize("fmt", sorted(VALID_RUNS))
def test_run_imports_succeed_or_name_the_file(fmt, tmp_path):
    name, valid = VALID_RUNS[fmt]
    dataset = make_dataset(clips=3, captions=2)
    outcomes = Counter()

    @FUZZ
    @given(data=mutated(valid))
    def check(data):
        path = tmp_path / name
        path.write_bytes(data)
        before = Prediction.objects.count()
        try:
            run_import(dataset=dataset, path=path, fmt=fmt, name=f"run{next(_names)}")
            outcomes["accepted"] += 1
        except ImportRejected as refused:
            outcomes["refused"] += 1
            assert_refusal_names_the_file(refused, name)
            assert Prediction.objects.count() == before

    check()
    assert_both_paths_taken(outcomes)


QRELS = _table(None, RANKED.map(lambda r: [r[0], 0, r[1], r[2] - 2]), sep=" ", quote=str)
FIRE = st.lists(st.builds(lambda q, v, l: {"query": q, "video_id": v, "label": l, "annotator_labels": [l],
                                           "annotator_ids": [1], "models": ["m"]},
                          st.sampled_from(["caption 1", "caption 2", "nope"]), st.sampled_from(["v1", "v2", "v3"]),
                          st.sampled_from(["relevant", "irrelevant"])), min_size=1, max_size=4).map(
    lambda records: json.dumps({"annotations": records, "disagreements": [], "license": "x"}, indent=1))


@pytest.mark.parametrize(("fmt", "name", "valid"), [("qrels", "j.qrels", QRELS), ("fire_json", "j.json", FIRE)])
def test_judgment_imports_succeed_or_name_the_file(tmp_path, fmt, name, valid):
    dataset = make_dataset(clips=3, captions=2)
    outcomes = Counter()

    @FUZZ
    @given(data=mutated(valid))
    def check(data):
        path = tmp_path / name
        path.write_bytes(data)
        before = ImportedJudgment.objects.count()
        try:
            judgments_import(dataset=dataset, path=path, fmt=fmt, name=f"j{next(_names)}")
            outcomes["accepted"] += 1
        except ImportRejected as refused:
            outcomes["refused"] += 1
            assert_refusal_names_the_file(refused, name)
            assert ImportedJudgment.objects.count() == before

    check()
    assert_both_paths_taken(outcomes)


USERNAMES = st.from_regex(r"[a-z][a-z0-9._@+-]{0,12}", fullmatch=True)
RATERS = _table("username,email,password", st.builds(lambda u, n: [u, f"{n}@example.org", "pw-123456"], USERNAMES,
                                                       USERNAMES))
KNOWN = _table("caption,clip,answer,role,explanation", st.builds(
    lambda q, v, a, r, x: [q, v, a, r, x], st.sampled_from(["q1", "q2", "q9"]), st.sampled_from(["v1", "v2"]),
    st.sampled_from(["relevant", "not_relevant"]), st.sampled_from(["gold", "training", ""]), TEXT))


def test_rater_and_known_pair_csvs_succeed_or_name_the_file():
    pool, _ = make_pool_with_runs()
    outcomes = Counter()

    @FUZZ
    @given(raters=mutated(RATERS), known=mutated(KNOWN))
    def check(raters, known):
        try:
            raters_import_csv(content=raters, source_name="raters.csv")
            outcomes["accepted"] += 1
        except ImportRejected as refused:
            outcomes["refused"] += 1
            assert_refusal_names_the_file(refused, "raters.csv")
        before = PooledPair.objects.count()
        try:
            known_pairs_import_csv(pool=pool, content=known, source_name="gold.csv")
            outcomes["accepted"] += 1
        except ImportRejected as refused:
            outcomes["refused"] += 1
            assert_refusal_names_the_file(refused, "gold.csv")
            assert PooledPair.objects.count() == before

    check()
    assert_both_paths_taken(outcomes)
