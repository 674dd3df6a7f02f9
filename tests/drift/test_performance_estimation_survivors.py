"""Survivors of mutation testing of ``drift/performance_estimation.py``.

Expected values come from tiny cases worked by hand (the arithmetic is in the comments) and from
brute force written here from the documented model, never from the module's own results:

- the nearest fitted point of a score by ``argmin |x - s|`` over every fitted point;
- the delta-method standard errors by central finite differences of each metric, written as a
  function of the interval rows' expected labels: the label part perturbs one row at a time
  (each label a Bernoulli(``p_i``)), the calibrator part shifts every row of one isotonic block
  together (one shared fitted rate per block), and the two parts' standard errors are added.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable
from statistics import NormalDist

import numpy as np
import pytest
from modelgate.drift.performance_estimation import (
    IsotonicCalibrator,
    MulticlassReference,
    estimate_binary,
    estimate_multiclass,
    expected_roc_auc,
    fit_isotonic,
    fit_multiclass,
)

# Reference scores 0.1..0.4 with labels 0, 1, 0, 1: pool adjacent violators merges the middle
# two (rates 1 and 0 -> 0.5), so three blocks: {0.1} at 0 (m = 1), {0.2, 0.3} at 0.5 (m = 2),
# {0.4} at 1 (m = 1).
SMALL = fit_isotonic([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1])


def _z(confidence: float) -> float:
    """Two-sided normal quantile, from the standard library (not scipy, which the module uses)."""
    return NormalDist().inv_cdf(0.5 + confidence / 2)


# --- input checks ---------------------------------------------------------------------------------


def test_non_finite_count_in_the_message() -> None:
    # Two of the three scores are missing or infinite: the message counts those two, not the one
    # finite value.
    with pytest.raises(ValueError, match=r"^scores holds 2 missing or infinite values$"):
        expected_roc_auc([0.3, math.nan, math.inf], [0.5, 0.5, 0.5])


@pytest.mark.parametrize("confidence", [0.0, 1.0, -0.1, 1.5], ids=["zero", "one", "negative", "above-one"])
def test_confidence_outside_the_open_unit_interval_is_refused(confidence: float) -> None:
    # The documented range is (0, 1), both ends open: a 0 % interval (z = 0) is refused too.
    with pytest.raises(ValueError, match=r"confidence must be in \(0, 1\)"):
        estimate_binary(SMALL, [0.2, 0.3], threshold=0.25, confidence=confidence)


@pytest.mark.parametrize("call", [
    lambda: expected_roc_auc(0.5, 0.5),
    lambda: SMALL.apply(0.3),
    lambda: fit_isotonic(0.3, 1),
], ids=["expected_roc_auc", "apply", "fit_isotonic"])
def test_a_scalar_is_not_one_dimensional(call: Callable[[], object]) -> None:
    # A 0-d array is refused like a 2-d one: scores must be a one-dimensional array.
    with pytest.raises(ValueError, match=r"^(scores|probabilities) must be one-dimensional; got shape \(\)$"):
        call()


def test_a_matrix_of_scores_is_not_one_dimensional() -> None:
    with pytest.raises(ValueError, match=r"^scores must be one-dimensional; got shape \(1, 2\)$"):
        SMALL.apply([[0.1, 0.2]])


def test_fit_isotonic_refuses_more_labels_than_scores_and_no_rows() -> None:
    with pytest.raises(ValueError, match="non-empty and of one length; got 2 and 3"):
        fit_isotonic([0.1, 0.2], [0, 1, 1])
    with pytest.raises(ValueError, match="non-empty and of one length; got 0 and 0"):
        fit_isotonic([], [])


def test_bad_labels_message_lists_at_most_five_of_them() -> None:
    # Labels 0..6 (seven distinct values): the message shows the first five distinct ones.
    with pytest.raises(ValueError, match=r"^labels must be 0 or 1; got \[0, 1, 2, 3, 4\]$"):
        fit_isotonic(np.linspace(0, 1, 7), [0, 1, 2, 3, 4, 5, 6])


def test_metric_looked_up_by_an_equal_name_built_at_run_time() -> None:
    # A name read from a policy file is an equal string, not the same object as the literal.
    name = "".join(["ro", "c_auc"])
    est = estimate_binary(SMALL, [0.2, 0.3, 0.4], threshold=0.25)
    assert est.metric(name).metric == "roc_auc"
    with pytest.raises(KeyError, match="'brier' is not estimated"):
        est.metric("brier")


# --- the calibrator: blocks, their variances, the nearest block of a score ------------------------


def test_calibrator_arrays_are_read_only() -> None:
    # Documented read-only: a reference's calibrator is shared, so nothing may edit it in place.
    for arr in (SMALL.x, SMALL.y, SMALL.block, SMALL.block_variance):
        with pytest.raises(ValueError, match="read-only"):
            arr[0] = 0


def test_block_variance_is_laplace_smoothed_binomial_hand_case() -> None:
    # q = (m y + 1) / (m + 2), variance q (1 - q) / (m + 2):
    #   block 0: m = 1, y = 0   -> q = 1/3, var = (1/3)(2/3) / 3 = 2/27
    #   block 1: m = 2, y = 0.5 -> q = 2/4, var = (1/2)(1/2) / 4 = 1/16
    #   block 2: m = 1, y = 1   -> q = 2/3, var = (2/3)(1/3) / 3 = 2/27
    assert SMALL.x.tolist() == [0.1, 0.2, 0.3, 0.4]
    assert SMALL.y.tolist() == [0.0, 0.5, 0.5, 1.0]
    assert SMALL.block.tolist() == [0, 1, 1, 2]
    np.testing.assert_allclose(SMALL.block_variance, [2 / 27, 1 / 16, 2 / 27], rtol=1e-12)


def test_block_variance_of_larger_blocks_hand_case() -> None:
    # Scores 1..5 with labels 1, 0, 0, 1, 1: the first three pool at 1/3 (m = 3), the last two
    # at 1 (m = 2).
    #   m = 3, y = 1/3 -> q = (1 + 1) / 5 = 2/5, var = (2/5)(3/5) / 5 = 6/125
    #   m = 2, y = 1   -> q = (2 + 1) / 4 = 3/4, var = (3/4)(1/4) / 4 = 3/64
    cal = fit_isotonic([1.0, 2.0, 3.0, 4.0, 5.0], [1, 0, 0, 1, 1])
    assert cal.block.tolist() == [0, 0, 1, 1]  # first and last point of each block kept
    np.testing.assert_allclose(cal.block_variance, [6 / 125, 3 / 64], rtol=1e-12)


def _nearest_block(cal: IsotonicCalibrator, scores: np.ndarray) -> np.ndarray:
    """Brute force: the block of argmin |x - s| over every fitted point (the lower one on a tie)."""
    return np.array([cal.block[int(np.argmin(np.abs(cal.x - s)))] for s in scores])


def test_block_of_is_the_nearest_fitted_point_brute_force() -> None:
    # Scores below, between (nearer the left or the right point) and above the fitted points
    # 0.1 .. 0.4, whose blocks are 0, 1, 1, 2.
    probe = np.array([-1.0, 0.1, 0.11, 0.13, 0.17, 0.19, 0.2, 0.24, 0.29, 0.31, 0.36, 0.4, 0.6, 3.0])
    assert SMALL.block_of(probe).tolist() == _nearest_block(SMALL, probe).tolist()
    # by hand, the two scores next to 0.1: 0.11 is nearer 0.1 (block 0), 0.17 nearer 0.2 (block 1)
    assert SMALL.block_of(np.array([0.11, 0.17])).tolist() == [0, 1]
    # far below the first point (the distances to the first two round to one float): the first
    assert SMALL.block_of(np.array([-1e17, -math.inf])).tolist() == [0, 0]


def test_block_of_random_calibrator_brute_force() -> None:
    rng = np.random.default_rng(21)
    s = np.round(rng.uniform(size=80), 2)
    cal = fit_isotonic(s, (rng.uniform(size=80) < s).astype(int))
    probe = np.sort(rng.uniform(-0.1, 1.1, size=200))
    assert cal.block.max() >= 3  # several blocks, so a wrong neighbour shows
    assert cal.block_of(probe).tolist() == _nearest_block(cal, probe).tolist()


def test_single_point_calibrator_hand_case() -> None:
    # Every reference score 0.3, labels 0, 1, 1: one fitted point at 2/3, one block of m = 3,
    # q = (2 + 1) / 5 = 3/5, variance (3/5)(2/5) / 5 = 6/125. Interval 0.1, 0.5 at threshold 0.2:
    # p = 2/3 for both (clipped), both in block 0, the second predicted positive. Precision = 2/3,
    # gradient (1, 0): label part sqrt((2/3)(1/3)), calibrator part sqrt(1^2 * 6/125).
    cal = fit_isotonic([0.3, 0.3, 0.3], [0, 1, 1])
    assert (cal.x.tolist(), cal.block.tolist()) == ([0.3], [0])
    np.testing.assert_allclose(cal.block_variance, [6 / 125], rtol=1e-12)
    assert cal.block_of(np.array([0.1, 0.3, 0.5])).tolist() == [0, 0, 0]
    precision = estimate_binary(cal, [0.5, 0.1], threshold=0.2).metric("precision")
    assert precision.estimate == pytest.approx(2 / 3, rel=1e-12)
    assert precision.standard_error == pytest.approx(math.sqrt(2 / 9) + math.sqrt(6 / 125), rel=1e-12)


# --- expected ROC AUC edge cases ------------------------------------------------------------------


def test_expected_auc_of_no_rows_is_nan() -> None:
    # No rows: 0 expected positives and negatives, which the docstring says gives NaN.
    assert math.isnan(expected_roc_auc([], []))


@pytest.mark.parametrize("p", [1.0, 0.0], ids=["no-negative", "no-positive"])
def test_expected_auc_of_one_class_is_nan_without_dividing_by_zero(p: float) -> None:
    # Every p = 1 (or 0): no expected negative (positive), so NaN (documented), decided before
    # any 0/0.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(expected_roc_auc([0.2, 0.4, 0.4], [p, p, p]))


def test_expected_auc_refuses_mismatched_lengths() -> None:
    with pytest.raises(ValueError, match="one length; got 2 and 3"):
        expected_roc_auc([0.1, 0.2], [0.5, 0.5, 0.5])
    with pytest.raises(ValueError, match="one length; got 3 and 1"):
        expected_roc_auc([0.1, 0.2, 0.3], [0.5])


def test_auc_standard_error_at_chance() -> None:
    # A flat calibrator (every reference score 0.3, labels 0 and 1: p = 0.5 everywhere): six rows
    # give 3 expected positives and 3 negatives and an AUC of exactly 1/2. Hanley-McNeil at
    # A = 1/2: Q1 = (1/2) / (3/2) = 1/3, Q2 = 2 (1/4) / (3/2) = 1/3,
    # var = 1/4 + 2 (1/3 - 1/4) + 2 (1/3 - 1/4) = 7/12, SE = sqrt(7/12 / 9) = sqrt(7/108).
    flat = fit_isotonic([0.3, 0.3], [0, 1])
    m = estimate_binary(flat, [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], threshold=0.5).metric("roc_auc")
    assert m.estimate == 0.5
    assert m.standard_error == pytest.approx(math.sqrt(7 / 108), rel=1e-12)


def test_auc_standard_error_of_a_nearly_perfect_ranking() -> None:
    # 1,000 rows at p = 1 above rows at p = 1e-12 and 0: AUC = 1 - 1.5e-12 / 2000 (about 1 - 7e-16)
    # and by Hanley-McNeil a standard error of about sqrt(1e-15 / 2000) < 1e-8. In floating point
    # the variance rounds to about -1e-13; it is a variance, so it is taken as 0, not an error.
    s = np.array([0.0, 1e-12] + [1.0] * 1000)
    m = estimate_binary(IDENTITY, s, threshold=0.5).metric("roc_auc")
    assert m.estimate == pytest.approx(1.0, abs=1e-14)
    assert 0.0 <= m.standard_error < 1e-7


def test_expected_auc_with_fewer_than_one_expected_negative_hand_case() -> None:
    # Scores 0.1, 0.2 with p = 0.5, 0.9: 1.4 expected positives, 0.6 expected negatives (defined).
    # Pairs p_i (1 - p_j) weighted 1 when s_i > s_j, 1/2 when i = j:
    #   0.9 * 0.5 + 0.5 * (0.5 * 0.5 + 0.9 * 0.1) = 0.45 + 0.17 = 0.62; AUC = 0.62 / (1.4 * 0.6)
    assert expected_roc_auc([0.1, 0.2], [0.5, 0.9]) == pytest.approx(0.62 / 0.84, rel=1e-12)


def _hanley_mcneil_1982(auc: float, n_pos: float, n_neg: float) -> float:
    """Hanley & McNeil (1982), table/eq. 2, written out here."""
    q1, q2 = auc / (2 - auc), 2 * auc ** 2 / (1 + auc)
    return math.sqrt((auc * (1 - auc) + (n_pos - 1) * (q1 - auc ** 2) + (n_neg - 1) * (q2 - auc ** 2))
                     / (n_pos * n_neg))


IDENTITY = fit_isotonic([0.0, 1.0], [0, 1])  # p = score on [0, 1]


@pytest.mark.parametrize(("scores", "n_pos", "n_neg"), [
    ([0.1, 0.2, 0.3, 0.5, 0.6], 1.7, 3.3),
    ([0.4, 0.5, 0.7, 0.8, 0.9], 3.3, 1.7),
], ids=["1.7-positives", "1.7-negatives"])
def test_auc_standard_error_with_between_one_and_two_of_a_class(scores: list[float], n_pos: float,
                                                                n_neg: float) -> None:
    # p = scores: 1.7 expected positives and 3.3 negatives (or the other way round); the AUC by
    # pairs p_i (1 - p_j), weight 1 over s_i > s_j and 1/2 for a row with itself (its own tie),
    # its standard error by Hanley-McNeil at (n_pos, n_neg).
    s = np.array(scores)
    pairs = sum(s[i] * (1 - s[j]) * (1.0 if s[i] > s[j] else 0.5 if i == j else 0.0)
                for i in range(5) for j in range(5))
    auc = pairs / (n_pos * n_neg)
    m = estimate_binary(IDENTITY, s, threshold=0.5).metric("roc_auc")
    assert m.estimate == pytest.approx(auc, rel=1e-12)
    assert m.standard_error == pytest.approx(_hanley_mcneil_1982(auc, n_pos, n_neg), rel=1e-12)


@pytest.mark.parametrize("scores", [[0.1, 0.2, 0.3, 0.3], [0.7, 0.8, 0.9, 0.7], [0.25, 0.25, 0.5],
                                    [0.75, 0.75, 0.5]],
                         ids=["0.9-positives", "0.9-negatives", "1-positive", "1-negative"])
def test_auc_has_no_interval_with_at_most_one_expected_positive_or_negative(scores: list[float]) -> None:
    # 0.9 or exactly 1 expected positive (or negative; the sums are exact in floating point): the
    # AUC is estimated, but Hanley-McNeil needs more than one of each, so no standard error and no
    # interval.
    m = estimate_binary(IDENTITY, scores, threshold=0.5).metric("roc_auc")
    assert math.isfinite(m.estimate)
    assert all(math.isnan(v) for v in (m.standard_error, m.lower, m.upper))


# --- delta-method standard errors -----------------------------------------------------------------

# Interval scores 0.2, 0.3, 0.4 at threshold 0.25 with SMALL: p = 0.5, 0.5, 1 (exactly the fitted
# points), predicted = no, yes, yes; blocks 1, 1, 2 (block 1 straddles the threshold, so its
# shared error moves TP and FN together and the sign of each gradient part matters).
#   TP = 0.5 + 1 = 1.5, FN = 0.5, predicted positives 2, positives 2, n = 3
#   label variances: TP 0.25 + 0 = 0.25, FN 0.25; block variances 1/16 (block 1), 2/27 (block 2)
# A metric's calibrator part: sum over blocks of (d metric / d block rate)^2 * variance, where a
# block's derivative is (rows predicted) dM/dTP + (rows not predicted) dM/dFN.
#   recall = TP / (TP + FN) = 3/4; dR/dTP = FN/4 = 1/8, dR/dFN = -TP/4 = -3/8
#     label: (1/8)^2 / 4 + (3/8)^2 / 4 = 10/256; blocks: 1/8 - 3/8 = -1/4 and 1/8
#     calibrator: (1/16)(1/16) + (1/64)(2/27) = 1/256 + 1/864
#   F1 = 2 TP / (2 + TP + FN) = 3/4; dF/dTP = 2 (2 + FN) / 16 = 5/16, dF/dFN = -2 TP / 16 = -3/16
#     label: (25/256) / 4 + (9/256) / 4 = 34/1024; blocks: 5/16 - 3/16 = 1/8 and 5/16
#     calibrator: (1/64)(1/16) + (25/256)(2/27)
#   accuracy = (TP + (1 - FN)) / 3 = 2/3; d/dTP = 1/3, d/dFN = -1/3
#     label: (1/9)(1/4) + (1/9)(1/4) = 1/18; blocks: 0 and 1/3 -> calibrator (1/9)(2/27)
#   precision = TP / 2 = 3/4; d/dTP = 1/2, d/dFN = 0
#     label: (1/4)(1/4); blocks: 1/2 and 1/2 -> calibrator (1/4)(1/16) + (1/4)(2/27)
HAND = {
    "recall": (0.75, math.sqrt(10 / 256) + math.sqrt(1 / 256 + 1 / 864)),
    "f1": (0.75, math.sqrt(34 / 1024) + math.sqrt(1 / 1024 + 25 / 256 * 2 / 27)),
    "accuracy": (2 / 3, math.sqrt(1 / 18) + math.sqrt(2 / 243)),
    "precision": (0.75, math.sqrt(1 / 16) + math.sqrt(1 / 64 + 1 / 4 * 2 / 27)),
}


@pytest.mark.parametrize("metric", list(HAND), ids=list(HAND))
def test_delta_method_standard_errors_hand_case(metric: str) -> None:
    est = estimate_binary(SMALL, [0.4, 0.2, 0.3], threshold=0.25, confidence=0.9)
    value, se = HAND[metric]
    m = est.metric(metric)
    assert (est.expected_tp, est.expected_fn) == (pytest.approx(1.5), pytest.approx(0.5))
    assert m.estimate == pytest.approx(value, rel=1e-12)
    assert m.standard_error == pytest.approx(se, rel=1e-12)
    z = _z(0.9)
    assert (m.lower, m.upper) == (pytest.approx(max(0.0, value - z * se), abs=1e-12),
                                  pytest.approx(min(1.0, value + z * se), abs=1e-12))


# Each metric as a function of the interval rows' expected labels ``y`` (``pred``: predicted positive).
METRICS: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "accuracy": lambda y, pred: float((y[pred].sum() + (1 - y[~pred]).sum()) / y.size),
    "precision": lambda y, pred: float(y[pred].sum() / pred.sum()),
    "recall": lambda y, pred: float(y[pred].sum() / y.sum()),
    "f1": lambda y, pred: float(2 * y[pred].sum() / (pred.sum() + y.sum())),
}


def _finite_difference_se(metric: Callable[[np.ndarray, np.ndarray], float], p: np.ndarray,
                          pred: np.ndarray, blocks: np.ndarray, block_variance: np.ndarray) -> float:
    """Delta method by central differences: label part row by row, calibrator part block by block."""
    eps = 1e-6

    def slope(direction: np.ndarray) -> float:
        return (metric(p + eps * direction, pred) - metric(p - eps * direction, pred)) / (2 * eps)

    label = sum(slope(np.eye(p.size)[i]) ** 2 * p[i] * (1 - p[i]) for i in range(p.size))
    cal = sum(slope((blocks == b).astype(float)) ** 2 * v for b, v in enumerate(block_variance))
    return math.sqrt(label) + math.sqrt(cal)


@pytest.mark.parametrize("seed", [0, 1, 2], ids=lambda s: f"seed{s}")
def test_delta_method_standard_errors_by_finite_differences(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ref = np.round(rng.uniform(size=60), 1)  # ties, so blocks hold several rows
    cal = fit_isotonic(ref, (rng.uniform(size=60) < ref).astype(int))
    s = np.sort(rng.uniform(0.05, 0.95, size=17))
    p = np.interp(s, cal.x, cal.y)  # the documented calibrated value: linear between fitted points
    blocks = _nearest_block(cal, s)
    # threshold between the two middle-most neighbours of one block, so that block is on both
    # sides of it and TP and FN covary through the calibrator
    same = np.flatnonzero(blocks[1:] == blocks[:-1])
    i = same[np.argmin(np.abs(same - s.size // 2))]
    threshold = (s[i] + s[i + 1]) / 2
    pred = s >= threshold
    assert 3 <= pred.sum() <= s.size - 3 and set(blocks[pred]) & set(blocks[~pred])
    est = estimate_binary(cal, rng.permutation(s), threshold=threshold)
    for name, metric in METRICS.items():
        expected = _finite_difference_se(metric, p, pred, blocks, cal.block_variance)
        assert est.metric(name).estimate == pytest.approx(metric(p, pred), rel=1e-12), name
        assert est.metric(name).standard_error == pytest.approx(expected, rel=1e-6), name


# Six interval rows, all in SMALL's block 1 (fitted 0.5 on 0.2 .. 0.3), threshold 0.22: TP = 2.5,
# FN = 0.5. Recall's calibrator part is 0 (the block moves TP and FN in proportion:
# 5 * FN - 1 * TP = 0), so its standard error is the label part alone:
# gradient (FN, -TP) / 9 = (1/18, -5/18); 0.25 * (5 * (1/18)^2 + 1 * (5/18)^2) = 7.5/324.
ONE_BLOCK = [0.2, 0.22, 0.24, 0.26, 0.28, 0.3]


def test_interval_within_one_block_is_estimated_without_error() -> None:
    est = estimate_binary(SMALL, ONE_BLOCK, threshold=0.22)
    assert est.metric("recall").estimate == pytest.approx(5 / 6, rel=1e-12)
    assert est.metric("precision").estimate == pytest.approx(0.5, rel=1e-12)


def test_recall_standard_error_within_one_block_is_the_label_part() -> None:
    recall = estimate_binary(SMALL, ONE_BLOCK, threshold=0.22).metric("recall")
    assert recall.standard_error == pytest.approx(math.sqrt(7.5 / 324), rel=1e-9)


@pytest.mark.parametrize("cal", [SMALL, fit_isotonic([0.0, 1.0], [0, 1])], ids=["4-points", "2-points"])
def test_block_of_a_huge_score_is_the_last_block(cal: IsotonicCalibrator) -> None:
    assert cal.block_of(np.array([1e17])).tolist() == [int(cal.block[-1])]


# --- multiclass input checks and renormalisation --------------------------------------------------


def test_multiclass_apply_refuses_fewer_columns_than_classes() -> None:
    ref = fit_multiclass([[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.1, 0.2, 0.7]], [0, 1, 2], ("a", "b", "c"))
    with pytest.raises(ValueError, match=r"probabilities must have shape \(n, 3\)"):
        ref.apply([[0.5, 0.5]])
    with pytest.raises(ValueError, match=r"probabilities must have shape \(n, 3\)"):
        ref.apply([[0.5, 0.3, 0.1, 0.1]])
    with pytest.raises(ValueError, match=r"probabilities must have shape \(n, 3\)"):
        ref.apply(np.full((2, 3, 2), 1 / 3))  # three-dimensional, second axis = classes
    with pytest.raises(ValueError, match=r"probabilities must have shape \(n, 3\)"):
        ref.apply([0.5, 0.3, 0.2])  # one row, but not as a matrix


@pytest.mark.parametrize("probabilities", [
    [0.8, 0.2],                                     # one-dimensional
    [[[0.8, 0.1], [0.2, 0.9]], [[0.3, 0.6], [0.7, 0.4]]],  # three-dimensional, second axis = classes
], ids=["1d", "3d"])
def test_fit_multiclass_refuses_non_matrix_probabilities(probabilities: list) -> None:
    with pytest.raises(ValueError, match=r"probabilities must be \(n, 2\) with n labels"):
        fit_multiclass(probabilities, [0, 1], ("a", "b"))


def _zero_below_half() -> MulticlassReference:
    # Each class's calibrator maps scores <= 0.45 to 0 (fitted 0 at 0.45, 1 at 0.55).
    one = fit_isotonic([0.45, 0.55], [0, 1])
    return MulticlassReference(("a", "b", "c"), (one, one, one))


def test_row_every_calibrator_puts_at_zero_keeps_its_raw_probabilities() -> None:
    # Row 0: every column <= 0.45, calibrated to 0, 0, 0 -> kept raw. Row 1: 0.6 -> 1, the others
    # 0 -> (1, 0, 0) after dividing by the total 1.
    out = _zero_below_half().apply([[0.3, 0.3, 0.4], [0.6, 0.2, 0.2]])
    np.testing.assert_allclose(out, [[0.3, 0.3, 0.4], [1.0, 0.0, 0.0]], rtol=0, atol=1e-15)


def test_row_every_calibrator_puts_at_zero_divides_by_nothing() -> None:
    # The zero row is kept without a 0/0 along the way: no RuntimeWarning reaches the caller.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _zero_below_half().apply([[0.3, 0.3, 0.4]])


def test_fit_multiclass_refuses_columns_other_than_classes_and_labels_other_than_rows() -> None:
    with pytest.raises(ValueError, match=r"probabilities must be \(n, 2\) with n labels"):
        fit_multiclass([[0.6, 0.3, 0.1], [0.2, 0.7, 0.1]], [0, 1], ("a", "b"))
    with pytest.raises(ValueError, match=r"probabilities must be \(n, 3\) with n labels"):
        fit_multiclass([[0.6, 0.4], [0.2, 0.8]], [0, 1], ("a", "b", "c"))
    with pytest.raises(ValueError, match=r"probabilities must be \(n, 2\) with n labels"):
        fit_multiclass([[0.8, 0.2], [0.3, 0.7]], [0], ("a", "b"))
    with pytest.raises(ValueError, match=r"probabilities must be \(n, 2\) with n labels"):
        fit_multiclass([[0.8, 0.2], [0.3, 0.7]], [0, 1, 1], ("a", "b"))


def test_more_than_256_classes() -> None:
    # 257 classes (beyond CPython's cache of small ints, so the column count and the class count
    # are equal but distinct int objects). Row r of the reference is class r, with probability
    # 0.6 on its own column and 0.4 / 256 elsewhere; every calibrator then maps 0.6 to 1 and the
    # rest to 0, so a row is calibrated to the one-hot of its argmax.
    k = 257
    prob = np.full((k, k), 0.4 / (k - 1)) + np.eye(k) * (0.6 - 0.4 / (k - 1))
    classes = tuple(f"c{i}" for i in range(k))
    ref = fit_multiclass(prob, np.arange(k), classes)
    np.testing.assert_array_equal(ref.apply(prob[:3]), np.eye(k)[:3])


def test_calibrators_compare_by_identity_and_are_hashable() -> None:
    # Array fields have no single truth value: a calibrator is equal only to itself, and hashable
    # (a reference can key a cache), unlike a dataclass compared and hashed field by field.
    twin = fit_isotonic([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1])
    assert SMALL == SMALL and twin != SMALL
    assert len({SMALL, twin}) == 2


def test_results_and_calibrators_are_frozen_and_slotted() -> None:
    # House style: one frozen, slotted dataclass per result; a fitted calibrator is shared by every
    # interval of a reference, so it is frozen too.
    est = estimate_binary(SMALL, [0.2, 0.3, 0.4], threshold=0.25)
    ref = fit_multiclass([[0.8, 0.2], [0.3, 0.7]], [0, 1], ("a", "b"))
    for obj, field in ((est.metrics[0], "estimate"), (est, "n"), (SMALL, "n"), (ref, "classes")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, field, 0)
        assert not hasattr(obj, "__dict__"), type(obj).__name__


def test_references_compare_by_identity_like_their_calibrators() -> None:
    # A reference holds calibrators, which compare by identity (their arrays have no single truth
    # value); the reference does too, so a copy sharing the calibrators is a different reference.
    ref = fit_multiclass([[0.8, 0.2], [0.3, 0.7]], [0, 1], ("a", "b"))
    twin = MulticlassReference(ref.classes, ref.calibrators)
    assert ref == ref and ref != twin
    assert len({ref, twin}) == 2


def _pairwise_auc(s: np.ndarray, p: np.ndarray) -> float:
    """Expected AUC by pairs: p_i (1 - p_j), weight 1 over s_i > s_j and 1/2 over s_i = s_j."""
    w = np.where(s[:, None] > s[None, :], 1.0, np.where(s[:, None] == s[None, :], 0.5, 0.0))
    return float(p @ w @ (1 - p) / (p.sum() * (1 - p).sum()))


def test_multiclass_standard_errors_by_finite_differences() -> None:
    # Rows summing to 1 and identity calibrators (fitted 0 at 0 and 1 at 1, one row each, so both
    # blocks have variance 2/27): the calibrated probabilities are the raw ones. Each class is the
    # binary problem "predicted c (argmax) or not" on p = its column; the macro estimate and
    # standard error are the means over classes; accuracy is the mean probability of the argmax
    # class, its standard error the label part sqrt(sum p_right (1 - p_right)) plus the calibrator
    # part sqrt(sum over classes and blocks of (rows predicted c in the block)^2 * 2/27), over n.
    rng = np.random.default_rng(8)
    prob = rng.dirichlet([1.0, 1.5, 2.0], size=14)
    ident = fit_isotonic([0.0, 1.0], [0, 1])
    est = estimate_multiclass(MulticlassReference(("a", "b", "c"), (ident,) * 3), prob, confidence=0.9)
    z, n = _z(0.9), prob.shape[0]
    argmax = prob.argmax(axis=1)
    per_class, cal_var = dict(est.per_class), 0.0
    estimates: dict[str, list[float]] = {name: [] for name in (*METRICS, "roc_auc")}
    errors: dict[str, list[float]] = {name: [] for name in (*METRICS, "roc_auc")}
    for k, name in enumerate(("a", "b", "c")):
        p, pred = prob[:, k], argmax == k
        blocks = (p > 0.5).astype(int)  # the nearer of the fitted points 0 and 1
        got = {m.metric: m for m in per_class[name]}
        for metric, fn in METRICS.items():
            se = _finite_difference_se(fn, p, pred, blocks, np.full(2, 2 / 27))
            assert got[metric].estimate == pytest.approx(fn(p, pred), rel=1e-12), (name, metric)
            assert got[metric].standard_error == pytest.approx(se, rel=1e-6), (name, metric)
            estimates[metric].append(fn(p, pred))
            errors[metric].append(se)
        auc = _pairwise_auc(p, p)
        auc_se = _hanley_mcneil_1982(auc, p.sum(), n - p.sum())
        assert got["roc_auc"].estimate == pytest.approx(auc, rel=1e-12)
        assert got["roc_auc"].standard_error == pytest.approx(auc_se, rel=1e-12)
        estimates["roc_auc"].append(auc)
        errors["roc_auc"].append(auc_se)
        cal_var += 2 / 27 * sum(np.sum(pred & (blocks == b)) ** 2 for b in (0, 1))
    p_right = prob[np.arange(n), argmax]
    macro = {m.metric: m for m in est.metrics}
    acc_se = (math.sqrt(float(np.sum(p_right * (1 - p_right)))) + math.sqrt(cal_var)) / n
    expected = {name: (float(np.mean(estimates[name])), float(np.mean(errors[name])))
                for name in ("roc_auc", "precision", "recall", "f1")}
    expected["accuracy"] = (float(p_right.mean()), acc_se)
    for name, (value, se) in expected.items():
        assert macro[name].estimate == pytest.approx(value, rel=1e-9), name
        assert macro[name].standard_error == pytest.approx(se, rel=1e-6), name
        assert macro[name].lower == pytest.approx(max(0.0, value - z * se), rel=1e-6), name
        assert macro[name].upper == pytest.approx(min(1.0, value + z * se), rel=1e-6), name
    # the expected confusion matrix, summed over the one-vs-rest problems
    tp = sum(prob[argmax == k, k].sum() for k in range(3))
    fn_ = sum(prob[argmax != k, k].sum() for k in range(3))
    assert (est.expected_tp, est.expected_fp) == (pytest.approx(tp), pytest.approx(n - tp))
    assert (est.expected_fn, est.expected_tn) == (pytest.approx(fn_), pytest.approx(2 * n - fn_))


def test_options_are_keyword_only() -> None:
    # House style: data positional, options keyword-only.
    with pytest.raises(TypeError):
        estimate_binary(SMALL, [0.2, 0.3], 0.25)
    est = estimate_binary(calibrator=SMALL, scores=[0.2, 0.3], threshold=0.25)
    assert est.expected_tp == pytest.approx(0.5)  # the row at 0.3 (p = 0.5) is predicted positive
    ref = fit_multiclass([[0.8, 0.2], [0.3, 0.7]], [0, 1], ("a", "b"))
    with pytest.raises(TypeError):
        estimate_multiclass(ref, [[0.8, 0.2]], 0.9)
    est = estimate_multiclass(reference=ref, probabilities=[[0.8, 0.2], [0.3, 0.7]], confidence=0.9)
    assert (est.n, est.confidence) == (2, 0.9)


# --- probabilities outside [0, 1] are refused -------------------------------------------------------


@pytest.mark.parametrize(("p", "first"), [([0.2, 1.2], "1.2"), ([-0.1, 0.5], "-0.1"),
                                          ([1.0 + 1e-12, 0.5], "1.000000000001")])
def test_expected_roc_auc_refuses_probabilities_outside_zero_one(p: list[float], first: str) -> None:
    with pytest.raises(ValueError, match=rf"probabilities must lie in \[0, 1\]; 1 do not \(first: {first}"):
        expected_roc_auc([0.1, 0.2], p)


def test_expected_roc_auc_accepts_zero_and_one() -> None:
    # the positive (p = 1) ranked above the negative (p = 0): AUC 1
    assert expected_roc_auc([0.1, 0.2], [0.0, 1.0]) == 1.0


def test_multiclass_apply_refuses_probabilities_outside_zero_one() -> None:
    ref = fit_multiclass([[0.8, 0.2], [0.3, 0.7]], [0, 1], ("a", "b"))
    with pytest.raises(ValueError, match=r"probabilities must lie in \[0, 1\]; 2 do not \(first: 1.5\)"):
        ref.apply([[0.5, 0.5], [1.5, -0.5]])
    assert ref.apply([[1.0, 0.0]]).shape == (1, 2)  # the ends are probabilities
