"""Edge cases of the interval methods in modelgate/intervals.py (BCa, bootstrap-t, logit-scale
Wald), each against a value worked out by hand from the method's formula."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import ndtr, ndtri

from modelgate.intervals import (
    bca_interval,
    logit_wald_interval,
    mover_difference,
    percentile_interval,
    phi_correlation,
    studentized_interval,
    wilson_interval,
)

REPLICATES = np.arange(1.0, 101.0)  # 100 replicates, median 50.5: no bias correction at 50.5


def test_bca_with_a_constant_jackknife_has_no_acceleration() -> None:
    # every leave-one-out value equal: acceleration 0, so with z0 = 0 BCa is the percentile interval
    got = bca_interval(REPLICATES, 50.5, np.full(4, 3.0), np.ones(4), 0.9)
    assert got == pytest.approx(percentile_interval(REPLICATES, 0.9), abs=1e-12)


def test_bca_end_goes_to_the_extreme_replicate_when_one_minus_a_z_is_not_positive() -> None:
    # jackknife (0, 0, 100) with weights 1e-4: a = sum w u^3 / (6 (sum w u^2)^1.5), by hand
    w, t = np.full(3, 1e-4), np.array([0.0, 0.0, 100.0])
    u = (w * t).sum() / w.sum() - t
    a = (w * u**3).sum() / (6.0 * (w * u**2).sum() ** 1.5)
    assert a < -1.0 / 1.96  # so 1 - a z < 0 at the lower end (z = -1.645 at 90 %)
    lower, upper = bca_interval(REPLICATES, 50.5, t, w, 0.9)
    assert lower == REPLICATES.min()  # 1 - a z <= 0 with z < 0: level 0
    z = ndtri(0.95)
    assert upper == pytest.approx(np.quantile(REPLICATES, ndtr(z / (1.0 - a * z))), abs=1e-9)


def test_bootstrap_t_counts_a_zero_se_resample_at_the_point_as_t_zero() -> None:
    # resample 0 equals the point with se 0: t = 0 (not 0/0); the others give t = -2..2 by 0.5
    theta = np.r_[10.0, 10.0 + 0.5 * np.arange(-4, 5)]
    se = np.r_[0.0, np.ones(9)]
    t = np.r_[0.0, 0.5 * np.arange(-4, 5)]
    t_low, t_high = np.quantile(t, [0.25, 0.75])
    got = studentized_interval(10.0, 2.0, theta, se, 0.5)
    assert got == pytest.approx((10.0 - 2.0 * t_high, 10.0 - 2.0 * t_low), abs=1e-12)


@pytest.mark.parametrize("auc", [0.7, 0.9, 0.1, 0.123])
def test_logit_wald_with_zero_variance_is_the_point_itself(auc: float) -> None:
    # all scores tied within each class: nothing can move the AUC; exactly the point, no round trip
    assert logit_wald_interval(auc, 0.0, 10, 10, 0.95) == (auc, auc)


def _acceleration_by_hand(t: np.ndarray, w: np.ndarray) -> float:
    # Efron and Tibshirani (1993) eq. 14.15, each value repeated by its weight
    u = (w * t).sum() / w.sum() - t
    return float((w * u**3).sum() / (6.0 * (w * u**2).sum() ** 1.5))


@pytest.mark.parametrize("weight", [1e-4, 9e-4], ids=["a-6.8", "a-2.3"])
@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["upper-end", "lower-end"])
def test_bca_end_goes_to_its_extreme_at_a_level_whose_z_is_under_one(sign: float, weight: float) -> None:
    # at 50 % with z0 = 0 the ends have z = -+0.674, inside (-1, 1); |a| = 6.8 (a z = 4.6) or
    # 2.3 (a z = 1.5, between 1 and 2) puts 1 - a z below 0 at one end, which goes to the
    # largest (z > 0) or smallest (z < 0) replicate
    w, t = np.full(3, weight), np.array([0.0, 0.0, -sign * 100.0])
    a = _acceleration_by_hand(t, w)
    z = ndtri(0.75)
    assert sign * a * z > 1.0
    lower, upper = bca_interval(REPLICATES, 50.5, t, w, 0.5)
    if sign > 0:  # a > 0: the upper end saturates, the lower one is moved
        assert upper == REPLICATES.max()
        assert lower == pytest.approx(np.quantile(REPLICATES, ndtr(-z / (1.0 + a * z))), abs=1e-9)
    else:
        assert lower == REPLICATES.min()
        assert upper == pytest.approx(np.quantile(REPLICATES, ndtr(z / (1.0 - a * z))), abs=1e-9)


def test_bca_with_an_acceleration_near_one_moves_both_ends_by_the_formula() -> None:
    # a = 0.96 at 50 % (z = -+0.674): a z = 0.65 < 1, so neither end saturates; the upper end
    # goes up to ndtr(z / (1 - a z)) = ndtr(1.92), the lower one to ndtr(-z / (1 + a z))
    w, t = np.full(3, 5e-3), np.array([0.0, 0.0, -100.0])
    a = _acceleration_by_hand(t, w)
    z = ndtri(0.75)
    assert 0.9 < a < 1.0
    expected = np.quantile(REPLICATES, ndtr(np.array([-z / (1.0 + a * z), z / (1.0 - a * z)])))
    assert bca_interval(REPLICATES, 50.5, t, w, 0.5) == pytest.approx(tuple(expected), abs=1e-9)


@pytest.mark.parametrize("point", [0.0, 11.0], ids=["below-all", "above-all"])
def test_bca_bias_share_is_clipped_to_half_a_replicate_from_either_end(point: float) -> None:
    # 10 replicates all above (below) the point: share 0 (1) clipped to 1/20 (19/20)
    replicates = np.arange(1.0, 11.0)
    z0 = ndtri(0.05 if point < 1.0 else 0.95)
    levels = ndtr(z0 + (ndtri(np.array([0.25, 0.75])) + z0))  # a = 0: constant jackknife
    expected = np.quantile(replicates, levels)
    got = bca_interval(replicates, point, np.full(3, 2.0), np.ones(3), 0.5)
    assert got == pytest.approx(tuple(expected), abs=1e-12)


def test_bca_ties_with_the_point_count_one_half() -> None:
    # the point 3 among 10 replicates: 2 below and 2 ties, share (2 + 2 / 2) / 10
    replicates = np.array([1.0, 2.0, 3.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])
    z0 = ndtri(0.3)
    expected = np.quantile(replicates, ndtr(z0 + ndtri(np.array([0.1, 0.9])) + z0))
    got = bca_interval(replicates, 3.0, np.full(2, 1.0), np.ones(2), 0.8)
    assert got == pytest.approx(tuple(expected), abs=1e-12)


def test_bca_leaves_out_nan_replicates_and_jackknife_values_and_weights_not_positive() -> None:
    t, w = np.array([0.0, 1.0, 5.0]), np.array([1.0, 2.0, 1.0])
    a = _acceleration_by_hand(t, w)
    z = ndtri(np.array([0.05, 0.95]))
    expected = np.quantile(REPLICATES, ndtr(z / (1.0 - a * z)))
    got = bca_interval(np.r_[REPLICATES, np.nan], 50.5, np.r_[t, np.nan, 7.0, 3.0, 9.0],
                       np.r_[w, 1.0, 0.0, np.inf, -0.5], 0.9)
    assert got == pytest.approx(tuple(expected), abs=1e-12)


@pytest.mark.parametrize("scale", [1.0, 1e120, 1e200, 1e307])
def test_bca_acceleration_does_not_overflow_on_a_huge_jackknife_spread(scale: float) -> None:
    # a is a ratio of a third moment to the 1.5 power of a second: scaling t leaves it as it is,
    # so the hand value on (0, 0.2, 1) holds at any scale (cubes past 5.6e102 overflowed to NaN)
    t, w = np.array([0.0, 0.2, 1.0]), np.array([1.0, 2.0, 1.0])
    a = _acceleration_by_hand(t, w)
    z = ndtri(np.array([0.05, 0.95]))
    expected = np.quantile(REPLICATES, ndtr(z / (1.0 - a * z)))
    got = bca_interval(REPLICATES, 50.5, t * scale, w, 0.9)
    assert got == pytest.approx(tuple(expected), abs=1e-9)


@pytest.mark.parametrize("factor", [4.0, 1e300])
def test_bca_acceleration_shrinks_as_one_over_the_root_of_the_weights(factor: float) -> None:
    # every weight times c: a / sqrt(c) (the hand formula at c = 4; at 1e300 it is about 1e-151)
    t, w = np.array([0.0, 0.2, 1.0]), np.array([1.0, 2.0, 1.0])
    a = _acceleration_by_hand(t, w) / np.sqrt(factor)
    if factor == 4.0:
        assert a == pytest.approx(_acceleration_by_hand(t, 4.0 * w), rel=1e-12)
    z = ndtri(np.array([0.05, 0.95]))
    expected = np.quantile(REPLICATES, ndtr(z / (1.0 - a * z)))
    got = bca_interval(REPLICATES, 50.5, t, w * factor, 0.9)
    assert got == pytest.approx(tuple(expected), abs=1e-9)


def test_bca_acceleration_with_weights_summing_to_one() -> None:
    t, w = np.array([0.0, 0.2, 1.0]), np.array([0.25, 0.5, 0.25])
    a = _acceleration_by_hand(t, w)
    z = ndtri(np.array([0.05, 0.95]))
    expected = np.quantile(REPLICATES, ndtr(z / (1.0 - a * z)))
    assert bca_interval(REPLICATES, 50.5, t, w, 0.9) == pytest.approx(tuple(expected), abs=1e-9)


def test_bca_without_a_finite_jackknife_value_has_no_acceleration() -> None:
    got = bca_interval(REPLICATES, 50.5, np.full(3, np.nan), np.ones(3), 0.9)
    assert got == pytest.approx(percentile_interval(REPLICATES, 0.9), abs=1e-12)


@pytest.mark.parametrize(("resampled", "point"), [
    (np.full(4, np.nan), 1.0), (np.arange(4.0), np.nan), (np.arange(4.0), np.inf)],
    ids=["no-finite-replicate", "nan-point", "infinite-point"])
def test_bca_is_nan_without_a_finite_replicate_or_point(resampled: np.ndarray, point: float) -> None:
    lower, upper = bca_interval(resampled, point, np.arange(3.0), np.ones(3), 0.9)
    assert np.isnan(lower) and np.isnan(upper)


def test_bootstrap_t_quantiles_that_lean_on_zero_se_resamples_are_student_t() -> None:
    # t* of 5 resamples: -1e6 (below the point, se 0), -1, 0, 1, +1e6 (above, se 0): at 90 %
    # both quantiles fall between a cap and its neighbour, a number the data do not give
    # (once 8e5 standard errors); each end is Student's t of the rows instead, and without
    # the rows the statistic's limit
    theta = np.array([9.0, 9.5, 10.0, 10.5, 11.0])
    se = np.array([0.0, 0.5, 0.5, 0.5, 0.0])
    t4 = 2.131846786326649  # Student's t, 95th percentile, 4 degrees of freedom (tables)
    got = studentized_interval(10.0, 1e-3, theta, se, 0.9, rows=5)
    assert got == pytest.approx((10.0 - t4 * 1e-3, 10.0 + t4 * 1e-3), abs=1e-12)
    assert studentized_interval(10.0, 1e-3, theta, se, 0.9) == (-np.inf, np.inf)
    assert studentized_interval(10.0, 1e-3, theta, se, 0.9, lower_limit=0.0,
                                upper_limit=36.0) == (0.0, 36.0)


def test_bootstrap_t_keeps_its_own_quantile_on_a_side_the_caps_do_not_reach() -> None:
    # one zero-se resample below the point among 20: at 90 % the upper end's quantile (the
    # 5 % one) is of real t values; only a side that leans on the cap changes
    theta = np.concatenate([[9.0], 10.0 + np.linspace(-1.0, 1.0, 19)])
    se = np.concatenate([[0.0], np.full(19, 0.5)])
    t = np.concatenate([[-1e6], np.linspace(-2.0, 2.0, 19)])
    lo_q, hi_q = np.quantile(t, [0.05, 0.95])
    assert -1e6 < lo_q < -2.0  # leans on the cap
    got = studentized_interval(10.0, 0.1, theta, se, 0.9, rows=20)
    t19 = 1.729132811521367  # Student's t, 95th percentile, 19 degrees of freedom
    assert got == pytest.approx((10.0 - hi_q * 0.1, 10.0 + t19 * 0.1), abs=1e-12)


def test_bootstrap_t_counts_a_negative_resample_se_as_zero() -> None:
    # a standard error that is not positive gets the capped t of its side, as 0 does: the
    # resample above the point with se -1 counts as t = +1e6, not as (11 - 10) / -1 = -1
    theta = np.array([9.0, 9.5, 10.0, 10.5, 11.0])
    se = np.array([0.0, 0.5, 0.5, 0.5, -1.0])
    t4 = 2.131846786326649
    got = studentized_interval(10.0, 1e-3, theta, se, 0.9, rows=5)
    assert got == pytest.approx((10.0 - t4 * 1e-3, 10.0 + t4 * 1e-3), abs=1e-12)


@pytest.mark.parametrize(("point", "se"), [(10.0, -1.0), (10.0, 0.0), (10.0, np.inf), (10.0, np.nan),
                                           (np.nan, 1.0), (np.inf, 1.0)],
                         ids=["negative-se", "zero-se", "infinite-se", "nan-se", "nan-point",
                              "infinite-point"])
def test_bootstrap_t_is_the_percentile_interval_without_a_usable_standard_error(
        point: float, se: float) -> None:
    theta = np.array([8.0, 9.0, 10.0, 11.0, 13.0, np.nan])
    got = studentized_interval(point, se, theta, np.ones(6), 0.5)
    assert got == pytest.approx(percentile_interval(theta, 0.5), abs=1e-12)


def test_bootstrap_t_leaves_out_a_resample_with_a_nan_estimate_or_standard_error() -> None:
    # kept: t = -1, 0, 1 (se 1); the resample at 30 (se NaN) and the NaN one are left out
    theta = np.array([9.0, 10.0, 11.0, 30.0, np.nan])
    se = np.array([1.0, 1.0, 1.0, np.nan, 1.0])
    assert studentized_interval(10.0, 2.0, theta, se, 0.5) == pytest.approx((9.0, 11.0), abs=1e-12)
    lower, upper = studentized_interval(10.0, 2.0, np.full(2, np.nan), np.ones(2), 0.5)
    assert np.isnan(lower) and np.isnan(upper)


def test_bootstrap_t_clips_both_ends_at_the_lower_limit() -> None:
    t = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])  # 50 %: t quantiles -1 and 1, ends 9.5 and 10.5
    assert studentized_interval(10.0, 0.5, 10.0 + t, np.ones(5), 0.5, lower_limit=9.75) == (9.75, 10.5)
    assert studentized_interval(10.0, 0.5, 10.0 + t, np.ones(5), 0.5, lower_limit=11.0) == (11.0, 11.0)


@pytest.mark.parametrize("auc", [0.8, 0.3])
def test_logit_wald_by_its_formula_and_nan_for_a_nan_auc(auc: float) -> None:
    # expit(logit(A) -+ z sqrt(v) / (A (1 - A))), z the 95 % normal quantile
    half = ndtri(0.975) * 0.05 / (auc * (1.0 - auc))
    centre = np.log(auc / (1.0 - auc))
    expected = (1.0 / (1.0 + np.exp(-(centre - half))), 1.0 / (1.0 + np.exp(-(centre + half))))
    assert logit_wald_interval(auc, 0.0025, 30, 40, 0.95) == pytest.approx(expected, abs=1e-12)
    lower, upper = logit_wald_interval(float("nan"), 0.01, 30, 40, 0.95)
    assert np.isnan(lower) and np.isnan(upper)


@pytest.mark.parametrize("variance", [0.0, -1e-18, -0.5])
def test_logit_wald_without_a_positive_variance_is_the_point(variance: float) -> None:
    # a variance that is 0, or below it by rounding: every score tied, nothing moves the AUC
    assert logit_wald_interval(0.3, variance, 10, 10, 0.95) == (0.3, 0.3)


def test_logit_wald_reads_an_auc_rounded_past_a_bound_as_at_that_bound() -> None:
    # an AUC one float past 1 (or below 0) gets the exact bound of the perfect separation
    above, below = np.nextafter(1.0, 2.0), np.nextafter(0.0, -1.0)
    assert logit_wald_interval(above, 0.0, 5, 9, 0.9) == (0.05 ** (1 / 5), above)
    assert logit_wald_interval(below, 0.0, 5, 9, 0.9) == (below, 1.0 - 0.05 ** (1 / 5))


@pytest.mark.parametrize(("n_pos", "n_neg"), [(5, 9), (9, 5)])
def test_logit_wald_at_an_auc_of_zero_has_the_exact_upper_bound_of_its_smaller_class(
        n_pos: int, n_neg: int) -> None:
    # A = 0: every pair ordered wrong; the upper end is 1 - (a/2)**(1/m), m = 5
    assert logit_wald_interval(0.0, 0.0, n_pos, n_neg, 0.9) == (0.0, 1.0 - 0.05 ** (1 / 5))


def test_logit_wald_with_one_pair_has_the_bound_alpha_over_two() -> None:
    # m = 1: the one pair is ordered right with probability AUC, so the bound is a/2 itself
    assert logit_wald_interval(1.0, 0.0, 1, 7, 0.5) == (0.25, 1.0)
    assert logit_wald_interval(0.0, 0.0, 7, 1, 0.5) == (0.0, 0.75)


@pytest.mark.parametrize("auc", [0.0, 1.0])
@pytest.mark.parametrize(("n_pos", "n_neg"), [(0, 4), (4, 0)])
def test_logit_wald_without_a_pair_spans_zero_to_one(auc: float, n_pos: int, n_neg: int) -> None:
    # m = 0: no pair bounds anything
    assert logit_wald_interval(auc, 0.0, n_pos, n_neg, 0.95) == (0.0, 1.0)


def _wilson_by_hand(k: int, n: int, level: float) -> tuple[float, float]:
    # Wilson (1927): (p + z^2/2n -+ z sqrt(p(1 - p)/n + z^2/4n^2)) / (1 + z^2/n)
    z, p = ndtri(1.0 - (1.0 - level) / 2), k / n
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n * n)) / (1 + z**2 / n)
    return centre - half, centre + half


@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 1), (3, 10), (10, 10)])
def test_wilson_is_the_score_interval_from_one_trial_on(k: int, n: int) -> None:
    assert wilson_interval(k, n, 0.9) == pytest.approx(_wilson_by_hand(k, n, 0.9), abs=1e-12)


@pytest.mark.parametrize("trials", [0, -1])
def test_wilson_is_nan_without_trials(trials: int) -> None:
    lower, upper = wilson_interval(0, trials, 0.95)
    assert np.isnan(lower) and np.isnan(upper)


def test_mover_clips_the_correlation_to_one_and_minus_one_and_reads_nan_as_zero() -> None:
    # symmetric half-widths 0.3 and 0.4 around a difference of 0.4: sqrt(0.25 - 0.24 r)
    args = (0.5, (0.2, 0.8), 0.1, (-0.3, 0.5))
    assert mover_difference(*args, 1.5) == pytest.approx((0.3, 0.5))  # r = 1: 0.1
    assert mover_difference(*args, -1.5) == pytest.approx((-0.3, 1.1))  # r = -1: 0.7
    assert mover_difference(*args, float("nan")) == pytest.approx((-0.1, 0.9))  # r = 0: 0.5


@pytest.mark.parametrize("ends_1", [(float("nan"), 0.8), (0.2, float("nan"))], ids=["lower", "upper"])
def test_mover_is_nan_at_both_ends_when_one_end_is_nan(ends_1: tuple[float, float]) -> None:
    lower, upper = mover_difference(0.5, ends_1, 0.1, (-0.3, 0.5), 0.0)
    assert np.isnan(lower) and np.isnan(upper)


def test_mover_with_r_one_and_near_equal_terms_is_the_difference_not_nan() -> None:
    # r = 1, point_1 = b1 above 0 and point_2 = 0 below a2, a2 the next float after b1: the
    # lower radicand (b1 - a2)^2 ~ 1e-34 can round to a negative, clamped to 0; the upper one is
    # b1^2 + b1^2 - 2 b1 b1 = 0 exactly. Both ends are then the difference b1 itself (and the
    # same at the upper end in the mirror case).
    found = 0
    for k in range(1, 200):
        b1 = 0.1 * k / 7.0
        a2 = np.nextafter(b1, 1.0)
        if b1**2 + a2**2 - 2.0 * 1.0 * b1 * a2 < 0:
            found += 1
            assert mover_difference(b1, (0.0, 2.0 * b1), 0.0, (-b1, a2), 1.0) == (b1, b1)
            # the mirror case at the upper end: above_1 = b1 against below_2 = a2
            assert mover_difference(0.0, (-b1, b1), 0.0, (-a2, b1), 1.0) == (0.0, 0.0)
    assert found  # the rounding case occurs


def test_phi_of_a_table_with_an_empty_margin_is_zero_in_every_position() -> None:
    # each margin empty in turn: both + only_1, only_2 + neither, both + only_2, only_1 + neither
    for table in [(0, 0, 3, 4), (3, 4, 0, 0), (0, 3, 0, 4), (3, 0, 4, 0)]:
        assert phi_correlation(*table) == 0.0
    # a negative association: (1 * 1 - 4 * 4) / sqrt(5 * 5 * 5 * 5) = -15 / 25
    assert phi_correlation(1, 4, 4, 1) == pytest.approx(-0.6)


def test_phi_of_the_smallest_tables_with_every_margin_filled() -> None:
    # every margin 1: (1 * 1 - 0 * 0) / sqrt(1 * 1 * 1 * 1) = 1, and the mirror -1
    assert phi_correlation(1, 0, 0, 1) == 1.0
    assert phi_correlation(0, 1, 1, 0) == -1.0
    # resampling weights can be fractional: margins of 0.5 give a product of 1/16
    assert phi_correlation(0.5, 0.0, 0.0, 0.5) == 1.0


def test_bootstrap_t_lower_limit_is_keyword_only_and_the_data_passable_by_keyword() -> None:
    theta = 10.0 + np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    got = studentized_interval(point=10.0, se=0.5, resampled=theta, resampled_se=np.ones(5),
                               confidence_level=0.5)
    assert got == (9.5, 10.5)
    with pytest.raises(TypeError):
        studentized_interval(10.0, 0.5, theta, np.ones(5), 0.5, 9.75)  # type: ignore[misc]
