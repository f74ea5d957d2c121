"""One grade per unit from several raters' values (annotation/analysis/grades.py), worked by hand."""
import numpy as np
import pytest

from annotation.analysis.grades import aggregate_grades, round_half_up

# unit 0: 4, 3          mean 3.5 -> 4; median 3.5 -> 4; majority tie 3/4 -> 3 (the lower)
# unit 1: 0, 2, 2, 1    mean 1.25 -> 1; median (1 + 2) / 2 = 1.5 -> 2; majority 2
# unit 2: 1             1 under every rule
# unit 3: 2, 0, 1       mean 1 -> 1; median 1; majority three-way tie -> 0
# unit 4: 2.5, 2.5      mean 2.5 -> 3 (half up, where round() would give 2); majority 2.5 -> 3
UNIT = [0, 1, 0, 1, 2, 1, 3, 1, 3, 3, 4, 4]
VALUE = [4, 0, 3, 2, 1, 2, 2, 1, 0, 1, 2.5, 2.5]


@pytest.mark.parametrize("rule, expected", [
    ("mean", [4, 1, 1, 1, 3]),
    ("median", [4, 2, 1, 1, 3]),
    ("majority", [3, 2, 1, 0, 3]),
])
def test_aggregate_grades_by_hand(rule, expected):
    assert aggregate_grades(UNIT, VALUE, rule=rule).tolist() == expected


def test_input_order_does_not_matter():
    order = np.random.default_rng(0).permutation(len(UNIT))
    for rule in ("mean", "median", "majority"):
        assert aggregate_grades(np.asarray(UNIT)[order], np.asarray(VALUE)[order], rule=rule).tolist() == \
            aggregate_grades(UNIT, VALUE, rule=rule).tolist()


def test_round_half_up_is_not_bankers_rounding():
    assert round_half_up([0.5, 1.5, 2.5, 3.49, 0.0]).tolist() == [1, 2, 3, 3, 0]
    assert round(2.5) == 2  # what the rule avoids


def test_a_unit_without_labels_and_an_unknown_rule_are_errors():
    with pytest.raises(ValueError, match="unit 1 has no label"):
        aggregate_grades([0, 2], [1, 1], rule="mean")
    with pytest.raises(ValueError, match="rule must be one of"):
        aggregate_grades([0], [1], rule="max")
    assert aggregate_grades([], [], rule="mean").tolist() == []
