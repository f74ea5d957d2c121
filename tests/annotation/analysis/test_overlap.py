import math

import numpy as np
import pytest

from annotation.analysis import overlap as O


def _rbo_ext_reference(S, L, p):
    """Eq. 32 of Webber et al. (2010) written out term by term with explicit prefix sets."""
    if len(S) > len(L):
        S, L = L, S
    s, l = len(S), len(L)

    def X(d):
        return len(set(S[: min(d, s)]) & set(L[:d]))

    total = sum(X(d) / d * p**d for d in range(1, l + 1))
    total += sum(X(s) * (d - s) / (s * d) * p**d for d in range(s + 1, l + 1))
    return (1 - p) / p * total + ((X(l) - X(s)) / l + X(s) / s) * p**l


def test_rbo_reference_values():
    ten = list("abcdefghij")
    swapped = ["b", "a"] + ten[2:]
    assert O.rbo(ten, swapped, p=0.9) == pytest.approx(0.9, abs=1e-12)
    assert round(O.rbo(list("abcdefg"), list("zcavwxy"), p=0.9), 6) == 0.288217
    assert O.rbo(ten, ten) == pytest.approx(1.0)
    assert O.rbo(ten, list("klmnopqrst")) == 0.0


def test_rbo_uneven_lengths_and_symmetry_match_term_by_term_formula():
    rng = np.random.default_rng(0)
    items = list(range(30))
    for _ in range(200):
        a = list(rng.permutation(items)[: rng.integers(1, 15)])
        b = list(rng.permutation(items)[: rng.integers(1, 15)])
        p = float(rng.uniform(0.5, 0.98))
        ref = _rbo_ext_reference(a, b, p)
        assert O.rbo(a, b, p=p) == pytest.approx(ref, abs=1e-12)
        assert O.rbo(b, a, p=p) == pytest.approx(ref, abs=1e-12)


def test_rbo_edge_cases():
    assert math.isnan(O.rbo([], []))
    assert O.rbo(["a"], []) == 0.0
    # duplicates count at their first rank
    assert O.rbo(["a", "a", "b"], ["a", "b"]) == pytest.approx(1.0)
    # the shorter list being a prefix of the longer extrapolates to full agreement
    assert O.rbo(list("abc"), list("abcdef")) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        O.rbo(["a"], ["a"], p=1.0)


def test_topk_overlap_by_hand():
    a = {"q1": list("abcdefghij"), "q2": list("abcdefghij"), "q3": list("abc")}
    b = {"q1": list("abcdefghij"), "q2": list("abcdeKLMNO"), "q4": list("xyz")}
    # q1: 10/10, q2: 5/10; q3, q4 are in one run only
    assert O.mean_overlap(a, b, k=10) == pytest.approx(0.75)
    # union: q3 and q4 count 0 -> (1 + 0.5 + 0 + 0)/4
    assert O.mean_overlap(a, b, k=10, captions="union") == pytest.approx(1.5 / 4)
    # top-5: q1 5/5, q2 5/5
    assert O.mean_overlap(a, b, k=5) == pytest.approx(1.0)
    caps, vals = O.overlap_per_caption(a, b, captions=["q2", "q3"])
    assert caps == ["q2", "q3"] and vals.tolist() == [0.5, 0.0]


def test_overlap_matrix():
    runs = {
        "A": {"q1": list("abcdefghij")},
        "B": {"q1": ["b", "a"] + list("cdefghij")},
        "C": {"q1": list("klmnopqrst")},
    }
    names, m = O.overlap_matrix(runs, measure="rbo", p=0.9)
    assert names == ["A", "B", "C"]
    np.testing.assert_allclose(m, [[1, 0.9, 0], [0.9, 1, 0], [0, 0, 1]], atol=1e-12)
    names, m = O.overlap_matrix(runs, measure="topk", k=10)
    np.testing.assert_allclose(m, [[1, 1, 0], [1, 1, 0], [0, 0, 1]])
    names, m = O.overlap_matrix(runs, measure="topk", k=1)
    assert m[0, 1] == 0.0


def test_rbo_batch_matches_single_calls_with_depth():
    rng = np.random.default_rng(1)
    a = {f"q{i}": list(rng.permutation(50)[:20]) for i in range(100)}
    b = {f"q{i}": list(rng.permutation(50)[: rng.integers(5, 25)]) for i in range(100)}
    caps, vals = O.overlap_per_caption(a, b, measure="rbo", p=0.8, depth=10)
    for q, v in zip(caps, vals):
        assert v == pytest.approx(_rbo_ext_reference(a[q][:10], b[q][:10], 0.8), abs=1e-12)
