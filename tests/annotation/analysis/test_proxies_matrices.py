"""Sparse IoU matrices and the clip-level fraction rule (no NLP resources needed)."""

import itertools
import random

import numpy as np
import pytest

from annotation.analysis.proxies.matrices import (
    binary_matrix,
    fraction_sets,
    iou_matrix,
    min_count,
    vocabulary,
)


def test_iou_of_two_empty_sets_is_zero():
    m = iou_matrix([set(), {"a"}], [set(), {"a"}])
    # empty/empty -> 0 (not NaN, not 1); empty/{a} -> 0/1; {a}/{a} -> 1
    assert m.tolist() == [[0.0, 0.0], [0.0, 1.0]]
    assert m.dtype == np.float32


def test_iou_hand_example():
    # {cut, tuna, slices} vs {cut, tuna, smaller, sections}: 2 shared of 5 distinct -> 0.4
    # {cut, tuna, slices} vs {pour, salad}: 0 shared -> 0
    m = iou_matrix(
        [{"cut", "tuna", "slices"}],
        [{"cut", "tuna", "smaller", "sections"}, {"pour", "salad"}],
    )
    assert m.shape == (1, 2)
    assert m[0, 0] == pytest.approx(0.4)
    assert m[0, 1] == 0.0


def test_iou_matches_naive_double_loop():
    rng = random.Random(7)
    words = [f"w{k}" for k in range(30)]
    a = [set(rng.sample(words, rng.randint(0, 6))) for _ in range(40)]
    b = [set(rng.sample(words, rng.randint(0, 6))) for _ in range(55)]
    got = iou_matrix(a, b, block_rows=7)  # several blocks, uneven last block
    for i, j in itertools.product(range(len(a)), range(len(b))):
        union = len(a[i] | b[j])
        want = len(a[i] & b[j]) / union if union else 0.0
        assert got[i, j] == pytest.approx(want, abs=1e-7)


def test_iou_progress_reports_rows():
    calls = []
    iou_matrix([{"a"}] * 5, [{"a"}], block_rows=2, progress=lambda d, t: calls.append((d, t)))
    assert calls == [(2, 5), (4, 5), (5, 5)]


def test_binary_matrix_collapses_duplicates():
    vocab = vocabulary([["x", "y", "x"]])
    m = binary_matrix([["x", "y", "x"]], vocab)
    assert m.toarray().tolist() == [[1.0, 1.0]]


def test_fraction_rule_25_percent():
    # Four captions: 25% of 4 = 1, so a word in one caption is kept.
    four = [{"cut", "onion"}, {"cut"}, {"slice"}, {"cut", "knife"}]
    assert fraction_sets([four])[0] == {"cut", "onion", "slice", "knife"}
    # Five captions: 25% of 5 = 1.25, so a word needs two captions.
    five = [{"cut", "onion"}, {"cut"}, {"slice", "onion"}, {"knife"}, {"cut"}]
    assert fraction_sets([five])[0] == {"cut", "onion"}
    # One caption: everything is kept.
    assert fraction_sets([[{"a", "b"}]])[0] == {"a", "b"}
    # No captions: empty set.
    assert fraction_sets([[]])[0] == set()


def test_fraction_rule_parameter_and_float_tolerance():
    five = [{"cut", "onion"}, {"cut"}, {"slice", "onion"}, {"knife"}, {"cut"}]
    # 50% of 5 = 2.5 -> 3 needed: only "cut" (3 captions)
    assert fraction_sets([five], 0.5)[0] == {"cut"}
    # 0.3 * 10 = 3.0000000000000004 in floating point; 3 of 10 must still qualify
    ten = [{"x"}] * 3 + [set()] * 7
    assert fraction_sets([ten], 0.3)[0] == {"x"}
    assert min_count(10, 0.3) == 3
    assert min_count(5, 0.25) == 2
    assert min_count(4, 0.25) == 1
    with pytest.raises(ValueError):
        fraction_sets([five], 1.5)
