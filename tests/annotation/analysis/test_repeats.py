"""Same-rater repeats resolved by first / last / all, on hand-worked arrays."""
import numpy as np
import pytest

from annotation.analysis.agreement import krippendorff_alpha, percent_agreement
from annotation.analysis.repeats import resolve_repeats

# Units 0..5, raters A=0, B=1, labels in input order (1 = relevant):
#   u0: A1 B1          u1: A0 B0
#   u2: A1 B0 A0       (A repeats, 1 then 0: not identical)
#   u3: A1 B1 B0       (B repeats, 1 then 0: not identical)
#   u4: A0 A0          (A repeats identically; nobody else labelled u4)
#   u5: A1 B1
UNIT = np.array([0, 0, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 5, 5])
RATER = np.array([0, 1, 0, 1, 0, 1, 0, 0, 1, 1, 0, 0, 0, 1])
VALUE = np.array([1, 1, 0, 0, 1, 0, 0, 1, 1, 0, 0, 0, 1, 1])


def _alpha_and_pa(rule, order=None):
    rep = resolve_repeats(UNIT, RATER, VALUE, rule=rule, order=order)
    u, v = UNIT[rep.keep], VALUE[rep.keep]
    return rep, krippendorff_alpha(u, v, level="nominal"), percent_agreement(u, v)


def test_counts_repeated_cells_and_identical_ones():
    rep = resolve_repeats(UNIT, RATER, VALUE, rule="last")
    # Cells (u2, A) [1, 0], (u3, B) [1, 0], (u4, A) [0, 0]: three repeated, one identical.
    assert rep.repeated_cells == 3
    assert rep.repeated_cells_identical == 1
    assert rep.labels_set_aside == 3
    assert rep.repeated_cells_per_rater.tolist() == [2, 1]


def test_first_last_all_give_the_hand_worked_alphas():
    # first: u0 (1,1) u1 (0,0) u2 (1,0) u3 (1,1) u5 (1,1); u4 keeps one label, not pairable.
    #   o11 = 6, o00 = 2, o01 = o10 = 1; n1 = 7, n0 = 3, n = 10
    #   D_o = 2/10, D_e = 2*7*3/(10*9) = 42/90, alpha = 1 - 18/42 = 4/7; agreement 4/5
    rep, alpha, pa = _alpha_and_pa("first")
    assert rep.keep.tolist() == [1, 1, 1, 1, 1, 1, 0, 1, 1, 0, 1, 0, 1, 1]
    assert alpha == pytest.approx(4 / 7) and pa == pytest.approx(4 / 5)
    # last: u2 becomes (B0, A0), u3 (A1, B0): o11 = 4, o00 = 4, o01 = o10 = 1; n0 = n1 = 5
    #   D_e = 2*25/90, alpha = 1 - 0.2 * 90/50 = 16/25; agreement 4/5
    rep, alpha, pa = _alpha_and_pa("last")
    assert rep.keep.tolist() == [1, 1, 1, 1, 0, 1, 1, 1, 0, 1, 0, 1, 1, 1]
    assert alpha == pytest.approx(16 / 25) and pa == pytest.approx(4 / 5)
    # all: u2 (1,0,0) and u3 (1,1,0) hold three labels, u4 (0,0) pairs A with themself.
    #   u2: o00 += 1, o01 += 1, o10 += 1; u3: o11 += 1, o01 += 1, o10 += 1; u4: o00 += 2
    #   o00 = 5, o11 = 5, o01 = o10 = 2; n0 = n1 = 7, n = 14
    #   D_o = 4/14, D_e = 2*49/(14*13) = 7/13, alpha = 1 - 52/98 = 23/49; agreement 4/6
    rep, alpha, pa = _alpha_and_pa("all")
    assert rep.keep.all() and rep.labels_set_aside == 0 and rep.repeated_cells == 3
    assert alpha == pytest.approx(23 / 49) and pa == pytest.approx(4 / 6)


def test_order_decides_which_label_is_last_and_ties_fall_back_to_input_position():
    # A's labels of u2 given times 20 then 10: by time the 1 is the last one.
    order = np.array([1, 2, 3, 4, 20, 6, 10, 8, 9, 11, 12, 12, 14, 15], dtype=float)
    rep = resolve_repeats(UNIT, RATER, VALUE, rule="last", order=order)
    assert rep.keep[4] and not rep.keep[6]
    # u4's two labels share the time 12: the later input position is the last one.
    assert rep.keep[11] and not rep.keep[10]
    # u2 (B0, A1) and u3 (A1, B0) now both disagree: o11 = 4, o00 = 2, o01 = o10 = 2,
    #   n1 = 6, n0 = 4, n = 10; D_o = 4/10, D_e = 48/90, alpha = 1 - 36/48 = 0.25
    u, v = UNIT[rep.keep], VALUE[rep.keep]
    assert krippendorff_alpha(u, v, level="nominal") == pytest.approx(0.25)
    first = resolve_repeats(UNIT, RATER, VALUE, rule="first", order=order)
    assert first.keep[6] and not first.keep[4] and first.keep[10]


def test_no_repeats_keeps_everything_and_bad_input_is_refused():
    rep = resolve_repeats([0, 0, 1], [0, 1, 0], [1, 0, 1], rule="first")
    assert rep.keep.all() and rep.repeated_cells == 0 and rep.repeated_cells_identical == 0
    empty = resolve_repeats([], [], [], rule="last")
    assert empty.keep.size == 0 and empty.repeated_cells == 0
    with pytest.raises(ValueError, match="rule"):
        resolve_repeats([0], [0], [1], rule="median")
    with pytest.raises(ValueError, match="same length"):
        resolve_repeats([0, 1], [0], [1, 1])
