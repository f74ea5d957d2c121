"""Property: whatever a raw label file holds, `agreement` either computes or refuses it with
problems naming the file (and the line when there is one); no other exception escapes."""
from __future__ import annotations

import json
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.formats.errors import ImportRejected
from annotation.services.judgment_sets.agreement import AgreementOptionsError, agreement_file_compute

FUZZ = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))
AWKWARD = st.sampled_from([
    "", " ", "0", "-1", "1e309", "nan", "inf", "-inf", "99999999999999999999", "a\x00b", "x\ry", '"', ",",
    "é", "[]", "{}", "null", "x" * 201, "2024-01-01", "2024-01-01T00:00:00+01:00", "0.1234567", "1e-300", "1e300",
    "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00",
])
ROW = st.tuples(st.sampled_from(["p1", "p2", "p3"]), st.sampled_from(["a", "b", "c"]),
                st.sampled_from(["0", "1", "2", "3", "4", "0.5"]), st.sampled_from(["1", "2", "3"]))
# Valid rows, half of the files then get one awkward cell somewhere.
ROWS = st.tuples(st.lists(ROW, min_size=1, max_size=8), st.booleans(), st.integers(0, 100), st.integers(0, 3),
                 AWKWARD).map(lambda t: [list(r) for r in t[0]] if not t[1] else
                              [[t[4] if (i == t[2] % len(t[0]) and j == t[3]) else c for j, c in enumerate(r)]
                               for i, r in enumerate(t[0])])
JSON_SCALAR = st.one_of(st.integers(-10**400, 10**400), st.floats(allow_nan=True), st.booleans(), st.none(),
                        st.text(max_size=5), st.lists(st.integers(), max_size=2))


def _check(tmp_path, name: str, data: bytes, **options) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    try:
        agreement_file_compute(path=path, n_boot=5, **options)
    except ImportRejected as exc:
        assert exc.issues and all(i.file == name for i in exc.issues)
        return "refused"
    except AgreementOptionsError:
        return "options"
    return "computed"


def test_csv_files_compute_or_are_refused(tmp_path_factory):
    seen: Counter = Counter()

    @FUZZ
    @given(rows=ROWS,
           level=st.sampled_from(["nominal", "ordinal", "interval"]),
           repeats=st.sampled_from(["first", "last", "all"]), binarize=st.sampled_from([None, 2.0]))
    def run(rows, level, repeats, binarize):
        body = "".join(",".join('"' + c.replace('"', '""') + '"' for c in row) + "\n" for row in rows)
        seen[_check(tmp_path_factory.mktemp("fuzz"), "labels.csv", ("unit,rater,value,time\n" + body).encode(),
                    level=level, repeats=repeats, binarize_at=binarize)] += 1

    run()
    assert seen["computed"] and seen["refused"], seen


def test_jsonl_files_compute_or_are_refused(tmp_path_factory):
    seen: Counter = Counter()

    @FUZZ
    @given(records=st.lists(st.dictionaries(st.sampled_from(["unit", "rater", "value", "time", "query", "item"]),
                                            JSON_SCALAR), min_size=0, max_size=6),
           level=st.sampled_from(["nominal", "ordinal", "interval"]))
    def run(records, level):
        body = "".join(json.dumps(r) + "\n" for r in records)
        seen[_check(tmp_path_factory.mktemp("fuzz"), "labels.jsonl", body.encode(), level=level)] += 1

    run()
    assert seen["refused"], seen


def test_both_outcomes_are_reached(tmp_path):
    assert _check(tmp_path, "ok.csv", b"unit,rater,value\n1,a,1\n1,b,0\n") == "computed"
    assert _check(tmp_path, "bad.csv", b"unit,rater,value\n1,a,\n") == "refused"
