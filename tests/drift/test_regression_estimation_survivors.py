"""Survivors of mutation testing of ``drift/regression_estimation.py``: the binned error model
and the result dataclasses.

Expected values come from hand computation (tiny reference sets whose per-bin errors are
written out), :class:`statistics.NormalDist` for ``z`` and scikit-learn's regression metrics,
never from the module's own results. The nanny error model's cases are in
``test_regression_estimation_nanny.py``.
"""

from __future__ import annotations

import dataclasses
import math
from statistics import NormalDist

import numpy as np
import pytest
from modelgate.drift.regression_estimation import (
    RegressionEstimate,
    estimate_regression,
    fit_error_model,
)
from sklearn.metrics import mean_absolute_error


def _z(confidence: float) -> float:
    """Two-sided normal quantile, from the standard library (not scipy, which the module uses)."""
    return NormalDist().inv_cdf(0.5 + confidence / 2)


# --- the binned error model ----------------------------------------------------------------------

# Reference: predictions 1..4, targets (1.5, 1.5, 3, 6), two bins split at 3.
#   bin 0 (predictions 1, 2): errors 0.5, -0.5 -> |e| 0.5, 0.5 (mean 0.5, var 0);
#                                                e^2 0.25, 0.25 (mean 0.25, var 0)
#   bin 1 (predictions 3, 4): errors 0, 2     -> |e| 0, 2 (mean 1, var 1); e^2 0, 4 (mean 2, var 4)
# Interval (1, 1, 4): two rows in bin 0, one in bin 1.
_MAE = (0.5 + 0.5 + 1.0) / 3
_MAE_SE = math.sqrt(0 + 0 + 1) / 3
_MSE = (0.25 + 0.25 + 2.0) / 3
_MSE_SE = math.sqrt(0 + 0 + 4) / 3
_RMSE = math.sqrt(_MSE)
_RMSE_SE = _MSE_SE / (2 * _RMSE)


@pytest.mark.parametrize("confidence", [0.9, 0.5, 0.99], ids=["c90", "c50", "c99-floored"])
def test_binned_hand_case_every_field(confidence: float) -> None:
    m = fit_error_model([1.0, 2.0, 3.0, 4.0], [1.5, 1.5, 3.0, 6.0], n_bins=2)
    est = estimate_regression(m, [1.0, 1.0, 4.0], confidence=confidence)
    z = _z(confidence)
    assert (est.n, est.confidence, est.n_outside_reference) == (3, confidence, 0)
    assert est.mae == pytest.approx(_MAE, rel=1e-12)
    assert est.mae_standard_error == pytest.approx(_MAE_SE, rel=1e-12)
    assert est.mae_lower == pytest.approx(max(0.0, _MAE - z * _MAE_SE), abs=1e-12)
    assert est.mae_upper == pytest.approx(_MAE + z * _MAE_SE, rel=1e-12)
    assert est.rmse == pytest.approx(_RMSE, rel=1e-12)
    assert est.rmse_standard_error == pytest.approx(_RMSE_SE, rel=1e-12)
    assert est.rmse_lower == pytest.approx(max(0.0, _RMSE - z * _RMSE_SE), abs=1e-12)
    assert est.rmse_upper == pytest.approx(_RMSE + z * _RMSE_SE, rel=1e-12)


def test_binned_lower_ends_floored_at_zero() -> None:
    # At 99 % the lower ends (2/3 - 2.58 / 3 and 0.913 - 2.58 * 0.365) are negative: floored at 0
    m = fit_error_model([1.0, 2.0, 3.0, 4.0], [1.5, 1.5, 3.0, 6.0], n_bins=2)
    est = estimate_regression(m, [1.0, 1.0, 4.0], confidence=0.99)
    assert _MAE - _z(0.99) * _MAE_SE < 0 and _RMSE - _z(0.99) * _RMSE_SE < 0
    assert (est.mae_lower, est.rmse_lower) == (0.0, 0.0)


def test_binned_standard_errors_of_a_larger_case_against_brute_force() -> None:
    # Per bin, the loss's population variance; SE = sqrt(sum over rows of their bin's variance) / n
    rng = np.random.default_rng(5)
    pred = rng.normal(size=300)
    y = pred + rng.normal(size=300) * (0.5 + np.abs(pred))
    m = fit_error_model(pred, y, n_bins=4)
    interval = rng.normal(0.3, 1.2, size=57)
    edges = np.sort(pred)[[75, 150, 225]]  # "higher" quantiles at 1/4, 2/4, 3/4 of 300 rows
    ref_bin = np.searchsorted(edges, pred, "right")
    int_bin = np.searchsorted(edges, interval, "right")
    abs_e, sq_e = np.abs(y - pred), (y - pred) ** 2
    mae = np.mean([abs_e[ref_bin == b].mean() for b in int_bin])
    mse = np.mean([sq_e[ref_bin == b].mean() for b in int_bin])
    mae_se = math.sqrt(sum(abs_e[ref_bin == b].var() for b in int_bin)) / 57
    mse_se = math.sqrt(sum(sq_e[ref_bin == b].var() for b in int_bin)) / 57
    est = estimate_regression(m, interval)
    np.testing.assert_allclose(m.sq_var, [sq_e[ref_bin == b].var() for b in range(4)], rtol=1e-10)
    assert est.mae == pytest.approx(mae, rel=1e-10)
    assert est.mae_standard_error == pytest.approx(mae_se, rel=1e-10)
    assert est.rmse == pytest.approx(math.sqrt(mse), rel=1e-10)
    assert est.rmse_standard_error == pytest.approx(mse_se / (2 * math.sqrt(mse)), rel=1e-10)


def test_binned_perfect_model_has_zero_rmse_and_zero_spread() -> None:
    # every reference error is 0: RMSE 0, whose delta-method SE is taken as 0 (no division)
    m = fit_error_model([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], n_bins=2)
    est = estimate_regression(m, [1.5, 2.5])
    assert (est.mae, est.rmse, est.mae_standard_error, est.rmse_standard_error) == (0, 0, 0, 0)
    assert (est.rmse_lower, est.rmse_upper, est.mae_lower, est.mae_upper) == (0, 0, 0, 0)


def test_binned_empty_interval_counts_no_row_outside() -> None:
    m = fit_error_model([1.0, 2.0, 3.0], [1.0, 2.5, 3.0])
    est = estimate_regression(m, [])
    assert (est.n, est.n_outside_reference) == (0, 0)
    assert all(math.isnan(v) for v in (est.mae, est.mae_standard_error, est.rmse))


def test_binned_single_row_interval_is_estimated() -> None:
    m = fit_error_model([1.0, 2.0, 3.0, 4.0], [1.5, 1.5, 3.0, 6.0], n_bins=2)
    est = estimate_regression(m, [4.0])
    assert (est.n, est.mae, est.rmse) == (1, 1.0, pytest.approx(math.sqrt(2.0)))


def test_binned_outside_count_at_the_reference_ends() -> None:
    # the smallest and largest reference predictions (1 and 4) are inside; beyond them outside
    m = fit_error_model([1.0, 2.0, 3.0, 4.0], [1.5, 1.5, 3.0, 6.0], n_bins=2)
    assert estimate_regression(m, [1.0, 4.0, 2.5]).n_outside_reference == 0
    assert estimate_regression(m, [0.5, 1.0, 4.0]).n_outside_reference == 1
    assert estimate_regression(m, [1.0, 4.0, 4.5]).n_outside_reference == 1
    assert estimate_regression(m, [0.0, 5.0, 6.0, 2.0]).n_outside_reference == 3


def test_binned_ties_at_the_minimum_make_no_empty_bin() -> None:
    # the upper median of (1, 1, 1, 2) is the minimum 1: no edge there, one bin of mean |e| 0.5
    m = fit_error_model([1.0, 1.0, 1.0, 2.0], [1.5, 0.5, 1.5, 1.5], n_bins=2)
    assert m.edges.tolist() == [] and m.abs_mean.tolist() == [0.5]
    assert estimate_regression(m, [0.0, 3.0]).mae == 0.5


def test_binned_bins_are_edges_plus_one() -> None:
    # 7 distinct predictions, 4 bins: edges at the "higher" quantiles 1/4, 2/4, 3/4 (3, 4, 6)
    pred = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    m = fit_error_model(pred, [p + 1 for p in pred], n_bins=4)
    assert m.edges.tolist() == [3.0, 4.0, 6.0]
    for arr in (m.abs_mean, m.abs_var, m.sq_mean, m.sq_var):
        assert arr.shape == (4,) and np.isfinite(arr).all()


def test_binned_one_bin_is_the_overall_error() -> None:
    pred, y = [1.0, 2.0, 3.0, 4.0], [1.5, 1.5, 3.0, 6.0]
    m = fit_error_model(pred, y, n_bins=1)
    assert m.edges.size == 0
    assert estimate_regression(m, [9.0]).mae == pytest.approx(mean_absolute_error(y, pred))


def test_binned_default_is_twenty_bins() -> None:
    # 200 distinct predictions: the default 20 bins have 19 edges, the order statistics at
    # ceil(k / 20 * 199), k = 1..19
    pred = np.random.default_rng(3).normal(size=200)
    m = fit_error_model(pred, pred + 1.0)
    k = np.arange(1, 20)
    np.testing.assert_array_equal(m.edges, np.sort(pred)[np.ceil(k / 20 * 199).astype(int)])


def test_binned_arrays_are_read_only() -> None:
    m = fit_error_model([1.0, 2.0, 3.0, 4.0], [1.5, 1.5, 3.0, 6.0], n_bins=2)
    for arr in (m.edges, m.abs_mean, m.abs_var, m.sq_mean, m.sq_var):
        assert not arr.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            arr[0] = 1.0


@pytest.mark.parametrize(("pred", "target"), [([1.0], [1.0, 2.0]), ([1.0, 2.0], [1.0]),
                                              ([], [])], ids=["short-pred", "long-pred", "empty"])
def test_binned_rejects_mismatched_or_empty(pred: list[float], target: list[float]) -> None:
    with pytest.raises(ValueError, match="non-empty and of one length"):
        fit_error_model(pred, target)


def test_binned_accepts_one_row() -> None:
    m = fit_error_model([2.0], [3.0])
    assert estimate_regression(m, [2.0]).mae == 1.0


@pytest.mark.parametrize("n_bins", [0, -1], ids=["zero", "negative"])
def test_binned_rejects_fewer_than_one_bin(n_bins: int) -> None:
    with pytest.raises(ValueError, match="n_bins must be at least 1"):
        fit_error_model([1.0, 2.0], [1.0, 2.0], n_bins=n_bins)


@pytest.mark.parametrize("bad", [np.ones((2, 2)), np.float64(1.0)], ids=["2-d", "0-d"])
def test_predictions_must_be_one_dimensional(bad: np.ndarray) -> None:
    with pytest.raises(ValueError, match="predictions must be one-dimensional"):
        fit_error_model(bad, bad)
    m = fit_error_model([1.0, 2.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="predictions must be one-dimensional"):
        estimate_regression(m, bad)


def test_non_finite_values_are_counted_in_the_message() -> None:
    with pytest.raises(ValueError, match="targets holds 2 missing or infinite values"):
        fit_error_model([1.0, 2.0, 3.0, 4.0, 5.0], [1.0, np.nan, 3.0, np.inf, 5.0])


@pytest.mark.parametrize("confidence", [0.0, 1.0, -0.5, 1.5], ids=["0", "1", "neg", "above-1"])
def test_confidence_outside_zero_one_is_rejected(confidence: float) -> None:
    m = fit_error_model([1.0, 2.0], [1.0, 2.0])
    with pytest.raises(ValueError, match=r"confidence must be in \(0, 1\)"):
        estimate_regression(m, [1.0], confidence=confidence)


def test_default_confidence_is_95_percent() -> None:
    m = fit_error_model([1.0, 2.0, 3.0, 4.0], [1.5, 1.5, 3.0, 6.0], n_bins=2)
    est = estimate_regression(m, [1.0, 1.0, 4.0])
    assert est.confidence == 0.95
    assert est.mae_upper == pytest.approx(_MAE + _z(0.95) * _MAE_SE, rel=1e-12)


# --- the dataclasses -----------------------------------------------------------------------------

def _frozen_slotted(obj: object, field: str) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(obj, field, 1)
    assert not hasattr(obj, "__dict__")  # slots


def test_binned_model_is_frozen_slotted_and_compared_by_identity() -> None:
    a = fit_error_model([1.0, 2.0, 3.0], [1.0, 2.5, 3.0])
    b = fit_error_model([1.0, 2.0, 3.0], [1.0, 2.5, 3.0])
    _frozen_slotted(a, "n")
    assert a == a and a != b and len({a, b}) == 2  # hashable, identity equality (arrays inside)


def test_estimate_is_frozen_slotted_and_compared_by_value() -> None:
    m = fit_error_model([1.0, 2.0, 3.0], [1.0, 2.5, 3.0])
    est = estimate_regression(m, [2.0])
    _frozen_slotted(est, "mae")
    assert est == estimate_regression(m, [2.0]) and isinstance(est, RegressionEstimate)
