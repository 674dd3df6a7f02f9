"""Survivors of mutation testing of ``drift/regression_estimation.py``.

Expected values come from hand computation (tiny reference sets whose per-bin errors are
written out), :class:`statistics.NormalDist` for ``z``, scikit-learn's regression metrics, and
brute force over the reference rows (the documented holdout split, group means, the spline
model refitted by :func:`fit_additive_splines`), never from the module's own results.
"""

from __future__ import annotations

import dataclasses
import math
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest
from modelgate.drift.additive_splines import fit_additive_splines
from modelgate.drift.regression_estimation import (
    RegressionEstimate,
    estimate_regression,
    fit_error_model,
    fit_nanny_model,
)
from sklearn.ensemble import HistGradientBoostingRegressor
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


def test_nanny_model_is_frozen_slotted_and_compared_by_identity() -> None:
    feats = pd.DataFrame({"x": np.arange(20.0)})
    a = fit_nanny_model(feats, np.arange(20.0), np.arange(20.0) + 1)
    b = fit_nanny_model(feats, np.arange(20.0), np.arange(20.0) + 1)
    _frozen_slotted(a, "n")
    assert a == a and a != b and len({a, b}) == 2


# --- the nanny error model -----------------------------------------------------------------------

@pytest.fixture(autouse=True)
def _one_thread() -> object:
    """The tree nanny's OpenMP threads, oversubscribed on a busy machine, take seconds."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield


def _held(n: int, holdout: float, seed: int) -> np.ndarray:
    """The documented split: ``round(holdout * n)`` rows (at least 1, at most n - 1) drawn
    without replacement by ``numpy.random.default_rng(random_state)``."""
    held = np.zeros(n, dtype=bool)
    n_hold = min(n - 1, max(1, round(holdout * n)))
    held[np.random.default_rng(seed).choice(n, size=n_hold, replace=False)] = True
    return held


def _group_excess(resid: np.ndarray, col: np.ndarray) -> float:
    """Brute force of the systematic error of one column: rows sorted by the column, cut into
    10 consecutive groups of near-equal size (larger first), groups of one row left out; per
    group mean ** 2 - (sample variance) / size; averaged weighted by size."""
    order = sorted(range(resid.size), key=lambda i: (math.isnan(col[i]), col[i], i))
    k = min(10, resid.size)
    sizes = [resid.size // k + (1 if g < resid.size % k else 0) for g in range(k)]
    total = weight = 0.0
    start = 0
    for size in sizes:
        rows = resid[order[start:start + size]]
        start += size
        if size < 2:
            continue
        mean = sum(rows) / size
        var = sum((r - mean) ** 2 for r in rows) / (size - 1)
        total += size * (mean ** 2 - var / size)
        weight += size
    return total / weight if weight else -math.inf


def _model_var_oracle(resid: np.ndarray, columns: list[np.ndarray]) -> float:
    return max([0.0] + [_group_excess(resid, c) for c in columns])


def _reference(n: int, seed: int,
               size: float = 1.0) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Two numeric features; the model predicts x1; its error grows with |x2|."""
    rng = np.random.default_rng(seed)
    feats = pd.DataFrame({"x1": rng.normal(size=n), "x2": rng.uniform(-2, 2, n)})
    pred, x2 = feats["x1"].to_numpy(), feats["x2"].to_numpy()
    return feats, pred, pred + size * (0.3 * x2 + (0.2 + np.abs(x2)) * rng.normal(size=n))


def _design(feats: pd.DataFrame, pred: np.ndarray) -> np.ndarray:
    return np.column_stack([feats[c].to_numpy(np.float64) for c in feats.columns] + [pred])


@pytest.mark.parametrize("size", [1.0, 0.05], ids=["errors-1", "errors-0.05"])
@pytest.mark.parametrize("kind", ["spline", "trees"])
def test_nanny_fitted_parts_against_brute_force(kind: str, size: float) -> None:
    # The losses model is fitted on the rows not held back (trees: that is the stored model;
    # splines: refitted on every row afterwards); the held-back rows give sq_scale and the two
    # systematic error variances. Kinds are spelled at run time (an `is` comparison fails).
    # With errors of size 0.05 the sum of the squared predicted e^2 is below 1.
    feats, pred, y = _reference(300, seed=11, size=size)
    kind_at_run_time = "".join(list(kind))
    m = fit_nanny_model(feats, pred, y, kind=kind_at_run_time)  # type: ignore[arg-type]
    x, err = _design(feats, pred), y - pred
    losses = np.column_stack([np.abs(err), err * err])
    held = _held(300, 0.25, seed=0)
    if kind == "trees":
        fitted = [HistGradientBoostingRegressor(early_stopping=False, random_state=0,
                                                categorical_features=np.zeros(3, dtype=bool))
                  .fit(x[~held], losses[~held, j]) for j in (0, 1)]
        a_hat, s_hat = (np.maximum(f.predict(x[held]), 0.0) for f in fitted)
        assert m.sq_model is not None
        for f, stored in zip(fitted, (m.abs_model, m.sq_model), strict=True):
            np.testing.assert_allclose(stored.predict(x), f.predict(x), rtol=1e-12)
    else:
        part = fit_additive_splines(x[~held], losses[~held]).predict(x[held])
        a_hat, s_hat = np.maximum(part[:, 0], 0.0), np.maximum(part[:, 1], 0.0)
        assert m.sq_model is None
        every_row = fit_additive_splines(x, losses).predict(x)
        np.testing.assert_allclose(m.abs_model.predict(x), every_row, rtol=1e-9, atol=1e-12)
    a_res, s_res = np.abs(err[held]) - a_hat, err[held] ** 2 - s_hat
    assert m.sq_scale == pytest.approx(np.sum(s_res ** 2) / np.sum(s_hat ** 2), rel=1e-9)
    assert (np.sum(s_hat ** 2) < 1) == (size < 1)
    cols = [x[held, j] for j in range(3)]
    assert m.abs_model_var == pytest.approx(_model_var_oracle(a_res, [a_hat, *cols]), rel=1e-9)
    assert m.sq_model_var == pytest.approx(_model_var_oracle(s_res, [s_hat, *cols]), rel=1e-9)
    assert m.abs_model_var > 0 and m.sq_model_var > 0
    assert (m.n, m.n_holdout, m.features) == (300, 75, ("x1", "x2"))
    assert m.low == {"x1": feats["x1"].min(), "x2": feats["x2"].min(), "": pred.min()}
    assert m.high == {"x1": feats["x1"].max(), "x2": feats["x2"].max(), "": pred.max()}


def _expected(m: object, feats: pd.DataFrame, pred: np.ndarray,
              confidence: float) -> dict[str, float]:
    """The module docstring's estimate, from the fitted loss model's per-row predictions:
    MAE and MSE the mean predicted |e| and e^2 (splines: mean of the raw predictions, floored
    at 0); (a) from rows 0, k, 2k, ... (k = ceil(n / 65536)) scaled by n / their count;
    (b) the larger of the spline's fitting variance and the held-back systematic error."""
    x = _design(feats, pred)
    n = pred.size
    rows = x[::-(-n // 65536)]
    if m.sq_model is None:  # type: ignore[attr-defined]
        raw = m.abs_model.predict(x)  # type: ignore[attr-defined]
        mae, mse = max(raw[:, 0].mean(), 0.0), max(raw[:, 1].mean(), 0.0)
        fit_var = m.abs_model.mean(x)[1]  # type: ignore[attr-defined]
        both = np.maximum(m.abs_model.predict(rows), 0.0)  # type: ignore[attr-defined]
        a, s = both[:, 0], both[:, 1]
    else:
        a = np.maximum(m.abs_model.predict(rows), 0.0)  # type: ignore[attr-defined]
        s = np.maximum(m.sq_model.predict(rows), 0.0)  # type: ignore[attr-defined]
        mae, mse, fit_var = a.mean(), s.mean(), (0.0, 0.0)
    scale = n / rows.shape[0]
    mae_se = math.sqrt(scale * np.sum(np.maximum(s - a * a, 0.0)) / n / n
                       + max(fit_var[0], m.abs_model_var))  # type: ignore[attr-defined]
    mse_se = math.sqrt(scale * m.sq_scale * np.sum(s * s) / n / n  # type: ignore[attr-defined]
                       + max(fit_var[1], m.sq_model_var))  # type: ignore[attr-defined]
    rmse = math.sqrt(mse)
    rmse_se = mse_se / 2 / rmse if rmse > 0 else 0.0
    z = _z(confidence)
    return {"mae": mae, "mae_standard_error": mae_se, "mae_lower": max(0.0, mae - z * mae_se),
            "mae_upper": mae + z * mae_se, "rmse": rmse, "rmse_standard_error": rmse_se,
            "rmse_lower": max(0.0, rmse - z * rmse_se), "rmse_upper": rmse + z * rmse_se}


def _assert_estimate(est: RegressionEstimate, expected: dict[str, float]) -> None:
    for key, value in expected.items():
        assert getattr(est, key) == pytest.approx(value, rel=1e-9, abs=1e-15), key


def _interval(where: str, n: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    low, high = {"inside": (-2.0, 2.0), "tail": (1.5, 3.0), "near-zero": (-0.3, 0.3)}[where]
    feats = pd.DataFrame({"x1": rng.normal(size=n), "x2": rng.uniform(low, high, n)})
    return feats, feats["x1"].to_numpy()


_FITTED: dict[str, object] = {}


def _fitted(kind: str) -> object:
    if kind not in _FITTED:
        feats, pred, y = _reference(300, seed=11)
        _FITTED[kind] = fit_nanny_model(feats, pred, y, kind=kind)  # type: ignore[arg-type]
    return _FITTED[kind]


@pytest.mark.parametrize("kind", ["spline", "trees"])
@pytest.mark.parametrize(("where", "confidence"), [("inside", 0.9), ("tail", 0.8),
                                                   ("near-zero", 0.99)])
def test_nanny_estimate_matches_the_documented_formula(kind: str, where: str,
                                                       confidence: float) -> None:
    m = _fitted(kind)
    feats, pred = _interval(where, 150, seed=4)
    est = estimate_regression(m, pred, features=feats, confidence=confidence)
    assert (est.n, est.confidence) == (150, confidence)
    _assert_estimate(est, _expected(m, feats, pred, confidence))


@pytest.mark.parametrize("n", [65_536, 65_537, 65_538],
                         ids=["all-rows", "every-second-odd-n", "every-second-even-n"])
def test_nanny_row_variance_of_a_large_interval(n: int) -> None:
    # Up to 65,536 rows the per-row sums take every row; above, rows 0, 2, 4, ... scaled by
    # n / their count.
    # The interval alternates a quiet (x2 = 0.1) and a noisy (x2 = 1.9) row, so taking the
    # other half of the rows (or a different spacing) changes the sums by a factor of ~5.
    m = _fitted("spline")
    x2 = np.tile([0.1, 1.9], n // 2 + 1)[:n]
    feats = pd.DataFrame({"x1": np.linspace(-1.0, 1.0, n), "x2": x2})
    pred = feats["x1"].to_numpy()
    est = estimate_regression(m, pred, features=feats, confidence=0.9)
    _assert_estimate(est, _expected(m, feats, pred, 0.9))


def test_nanny_extrapolated_losses_below_zero_are_floored() -> None:
    # e = 1 - x on x in [0, 1]: beyond x = 1 the fitted |e| (and e^2) continue along a falling
    # line below 0. The per-row losses and the interval's MAE and RMSE are floored at 0, and a
    # zero RMSE has a zero standard error.
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, 300)
    pred = rng.normal(size=300)
    m = fit_nanny_model(pd.DataFrame({"x": x}), pred, pred + 1 - x)
    far = pd.DataFrame({"x": [3.0, 3.5]})
    raw = m.abs_model.predict(np.column_stack([far["x"], [0.0, 0.1]]))
    assert (raw < -0.1).all()  # both losses of both rows fall below 0 there
    a_hat, s_hat = m.losses(far, [0.0, 0.1])
    assert a_hat.tolist() == [0.0, 0.0] and s_hat.tolist() == [0.0, 0.0]
    est = estimate_regression(m, [0.0, 0.1], features=far, confidence=0.95)
    assert (est.mae, est.rmse, est.rmse_standard_error, est.mae_lower) == (0, 0, 0, 0)
    assert (est.rmse_lower, est.rmse_upper) == (0, 0)
    _assert_estimate(est, _expected(m, far, np.array([0.0, 0.1]), 0.95))
    assert est.n_outside_reference == 2


@pytest.mark.parametrize("kind", ["spline", "trees"])
def test_nanny_constant_error_below_one(kind: str) -> None:
    # every error is -0.5: |e| = 0.5 and e^2 = 0.25 whatever the features, so MAE = RMSE = 0.5
    rng = np.random.default_rng(2)
    feats = pd.DataFrame({"x": rng.normal(size=200)})
    pred = feats["x"].to_numpy() * 2
    m = fit_nanny_model(feats, pred, pred - 0.5, kind=kind)  # type: ignore[arg-type]
    a_hat, s_hat = m.losses(feats.head(3), pred[:3])
    np.testing.assert_allclose(a_hat, 0.5, atol=1e-6)
    np.testing.assert_allclose(s_hat, 0.25, atol=1e-6)
    est = estimate_regression(m, pred[:40], features=feats.head(40))
    assert (est.mae, est.rmse) == (pytest.approx(0.5, abs=1e-6), pytest.approx(0.5, abs=1e-6))


@pytest.mark.parametrize("kind", ["spline", "trees"])
def test_nanny_empty_and_single_row(kind: str) -> None:
    m = _fitted(kind)
    feats, pred = _interval("inside", 1, seed=9)
    empty = estimate_regression(m, [], features=feats.head(0))
    assert (empty.n, empty.n_outside_reference) == (0, 0) and math.isnan(empty.mae)
    a_hat, s_hat = m.losses(feats.head(0), [])  # type: ignore[attr-defined]
    assert a_hat.shape == (0,) and s_hat.shape == (0,)
    one = estimate_regression(m, pred, features=feats, confidence=0.9)
    assert one.n == 1
    _assert_estimate(one, _expected(m, feats, pred, 0.9))


def test_nanny_outside_count_at_the_reference_ends() -> None:
    # numeric features and the prediction at their reference minimum or maximum are inside,
    # beyond either end outside; a missing value or a categorical feature never counts
    feats = pd.DataFrame({"a": [0.0, 1.0, 2.0, 3.0] * 5, "b": [5.0, 6.0, 7.0, 8.0, 9.0] * 4,
                          "c": ["u", "v"] * 10})
    pred = np.linspace(10.0, 20.0, 20)
    m = fit_nanny_model(feats, pred, pred + np.arange(20) % 3, categorical=["c"])

    def outside(a: float, b: float, p: float, c: str = "u") -> int:
        row = pd.DataFrame({"a": [a], "b": [b], "c": [c]})
        return estimate_regression(m, [p], features=row).n_outside_reference

    assert outside(0.0, 5.0, 10.0) == 0 and outside(3.0, 9.0, 20.0) == 0
    assert outside(np.nan, 7.0, 15.0, "zzz") == 0
    assert outside(1.0, 7.0, 9.9) == 1 and outside(1.0, 7.0, 20.1) == 1
    assert outside(-0.1, 7.0, 15.0) == 1 and outside(3.1, 7.0, 15.0) == 1
    assert outside(1.0, 4.9, 15.0) == 1 and outside(1.0, 9.1, 15.0) == 1
    rows = pd.DataFrame({"a": [0.0, 3.0, 1.0, 4.0], "b": [9.0, 5.0, 7.0, 7.0], "c": ["u"] * 4})
    assert estimate_regression(m, [20.0, 10.0, 25.0, 15.0], features=rows).n_outside_reference == 2


def test_model_var_of_pairs_is_the_mean_product() -> None:
    # 20 rows sorted by the column form 10 groups of 2 rows (a, b), whose excess
    # ((a + b) / 2) ** 2 - ((a - b) ** 2 / 2) / 2 is a * b: the result is the mean of a * b,
    # the largest over the columns, and 0 when every column's is negative.
    from modelgate.drift.regression_estimation import _model_var

    pairs = np.array([[1.0, 3.0], [2.0, 2.0], [0.5, 4.0], [1.0, 1.0], [3.0, 1.0],
                      [2.0, 5.0], [1.5, 1.5], [0.0, 7.0], [4.0, 0.5], [1.0, 2.0]])
    resid = pairs.ravel()
    by_position = np.arange(20.0)
    assert _model_var(resid, [by_position]) == pytest.approx(np.mean(pairs[:, 0] * pairs[:, 1]))
    # a second column pairing the rows differently (reversed) cannot lower the result
    assert _model_var(resid, [by_position, by_position[::-1]]) == pytest.approx(
        np.mean(pairs[:, 0] * pairs[:, 1]))
    alternating = pairs * np.array([1.0, -1.0])  # every product negative
    assert _model_var(alternating.ravel(), [by_position]) == 0.0
    # 15 rows: 5 groups of 2, then 5 single rows that carry no variance and are left out
    assert _model_var(resid[:15], [np.arange(15.0)]) == pytest.approx(
        np.mean(pairs[:5, 0] * pairs[:5, 1]))
    assert _model_var(resid[:15], [np.arange(15.0)]) == pytest.approx(
        _model_var_oracle(resid[:15], [np.arange(15.0)]))


@pytest.mark.parametrize(("n", "holdout", "n_hold"), [(40, 0.25, 10), (10, 0.96, 9),
                                                       (10, 0.01, 1), (7, 0.5, 4)],
                         ids=["quarter", "capped-at-n-1", "at-least-1", "half"])
def test_nanny_rows_held_back(n: int, holdout: float, n_hold: int) -> None:
    feats = pd.DataFrame({"x": np.arange(float(n))})
    m = fit_nanny_model(feats, np.arange(float(n)), np.arange(float(n)) + 1, holdout=holdout)
    assert (m.n, m.n_holdout) == (n, n_hold)


def test_nanny_two_rows_suffice_one_does_not() -> None:
    m = fit_nanny_model(pd.DataFrame({"x": [0.0, 1.0]}), [0.0, 1.0], [1.0, 1.0])
    assert (m.n, m.n_holdout) == (2, 1)
    with pytest.raises(ValueError, match="one length of at least 2; got 1 and 1"):
        fit_nanny_model(pd.DataFrame({"x": [0.0]}), [0.0], [1.0])


@pytest.mark.parametrize(("n_pred", "n_target"), [(3, 4), (4, 3)], ids=["short", "long"])
def test_nanny_rejects_mismatched_lengths(n_pred: int, n_target: int) -> None:
    feats = pd.DataFrame({"x": np.arange(4.0)})
    with pytest.raises(ValueError, match=f"got {n_pred} and {n_target}"):
        fit_nanny_model(feats.head(n_pred), np.zeros(n_pred), np.zeros(n_target))


@pytest.mark.parametrize("holdout", [0.0, 1.0, -0.5, 1.5], ids=["0", "1", "neg", "above-1"])
def test_nanny_holdout_outside_zero_one_is_rejected(holdout: float) -> None:
    feats = pd.DataFrame({"x": np.arange(10.0)})
    with pytest.raises(ValueError, match=r"holdout must be in \(0, 1\)"):
        fit_nanny_model(feats, np.arange(10.0), np.arange(10.0), holdout=holdout)


@pytest.mark.parametrize(("n_rows", "n_pred"), [(3, 2), (2, 3)], ids=["more-rows", "fewer-rows"])
def test_nanny_interval_rows_must_match_predictions(n_rows: int, n_pred: int) -> None:
    m = _fitted("spline")
    feats, _ = _interval("inside", n_rows, seed=1)
    with pytest.raises(ValueError, match=f"features have {n_rows} rows but there are {n_pred}"):
        estimate_regression(m, np.zeros(n_pred), features=feats)


def test_nanny_numeric_feature_holding_objects_is_rejected() -> None:
    # pandas raises TypeError (not ValueError) for a dict in a numeric column
    feats = pd.DataFrame({"x": pd.Series([{"a": 1}] + [0.5] * 9, dtype=object)})
    with pytest.raises(ValueError, match="numeric feature 'x' holds non-numeric values"):
        fit_nanny_model(feats, np.arange(10.0), np.arange(10.0))


def test_nanny_keeps_the_254_most_frequent_categories() -> None:
    # 254 categories seen twice and two seen once (listed first): the rare two count as missing
    rare, common = ["r0", "r1"], [f"c{i:03d}" for i in range(254)]
    values = rare + common + common
    feats = pd.DataFrame({"c": values})
    pred = np.zeros(len(values))
    m = fit_nanny_model(feats, pred, pred + 1.0, categorical=["c"])
    assert m.categories == {"c": tuple(common)}


def test_nanny_categorical_numbers_match_as_text() -> None:
    # a categorical column of integers: the error is 0.1 for 1, 1 for 2 and 3 for 3 (exactly);
    # the interval's integers find their categories (matched as text)
    rng = np.random.default_rng(3)
    codes = rng.choice([1, 2, 3], 600)
    pred = rng.normal(size=600)
    err = np.select([codes == 1, codes == 2], [0.1, 1.0], 3.0)
    m = fit_nanny_model(pd.DataFrame({"k": codes}), pred, pred + err, categorical=["k"])
    assert m.categories == {"k": ("1", "2", "3")}
    a_hat, _ = m.losses(pd.DataFrame({"k": [1, 2, 3]}), [0.0, 0.0, 0.0])
    np.testing.assert_allclose(a_hat, [0.1, 1.0, 3.0], atol=0.01)


def test_nanny_missing_value_is_not_the_text_nan() -> None:
    # a reference category spelled "nan" (error 5) beside "x" (error 1), none missing: a
    # missing live value takes the column's mean effect (3, equal counts), not the "nan" one's
    feats = pd.DataFrame({"c": ["nan", "x"] * 100})
    pred = np.linspace(0.0, 1.0, 200)
    m = fit_nanny_model(feats, pred, pred + np.where(feats["c"] == "nan", 5.0, 1.0),
                        categorical=["c"])
    a_hat, _ = m.losses(pd.DataFrame({"c": ["nan", "x", np.nan]}), [0.5, 0.5, 0.5])
    np.testing.assert_allclose(a_hat, [5.0, 1.0, 3.0], atol=0.05)


@pytest.mark.parametrize("kind", ["spline", "trees"])
def test_nanny_perfect_model_has_zero_everything(kind: str) -> None:
    # targets equal the predictions: every loss is 0, so c (0 / 0) is taken as 0, the
    # systematic error variances are 0 and the interval's estimates and their spreads are 0
    feats = pd.DataFrame({"x": np.linspace(-1.0, 1.0, 80)})
    pred = np.sin(feats["x"].to_numpy())
    m = fit_nanny_model(feats, pred, pred, kind=kind)  # type: ignore[arg-type]
    assert (m.sq_scale, m.abs_model_var, m.sq_model_var) == (0.0, 0.0, 0.0)
    est = estimate_regression(m, pred[:10], features=feats.head(10))
    assert (est.mae, est.rmse, est.rmse_standard_error, est.rmse_lower) == (0.0, 0.0, 0.0, 0.0)
    assert est.mae_standard_error == 0.0


def test_signatures_keyword_only_options_and_keyword_data() -> None:
    # the data may be passed by name; the options (after `*`) only by name
    m = fit_error_model(predictions=[1.0, 2.0, 3.0, 4.0], targets=[1.5, 1.5, 3.0, 6.0], n_bins=2)
    assert estimate_regression(model=m, predictions=[4.0]).mae == 1.0
    with pytest.raises(TypeError):
        fit_error_model([1.0, 2.0], [1.0, 2.0], 2)  # type: ignore[misc]
    with pytest.raises(TypeError):
        estimate_regression(m, [4.0], None, 0.9)  # type: ignore[misc]
    feats = pd.DataFrame({"x": np.arange(10.0)})
    nanny = fit_nanny_model(features=feats, predictions=np.arange(10.0), targets=np.arange(10.0))
    assert nanny.n == 10
    with pytest.raises(TypeError):
        fit_nanny_model(feats, np.arange(10.0), np.arange(10.0), ())  # type: ignore[misc]


def test_tree_nanny_losses_below_zero_are_floored() -> None:
    # |e| = 10 only where x1 = x2 = 1 (15 rows per corner). Leaves of at least 20 rows cannot
    # isolate a corner, so the boosted trees add up effects of x1 and x2 alone and go below 0
    # at x1 = x2 = 0 (the additive least-squares fit of an AND). The per-row losses are floored.
    x1 = np.repeat([0.0, 0.0, 1.0, 1.0], 15)
    x2 = np.repeat([0.0, 1.0, 0.0, 1.0], 15)
    err = np.where((x1 == 1) & (x2 == 1), 10.0, 0.0)
    feats = pd.DataFrame({"x1": x1, "x2": x2})
    m = fit_nanny_model(feats, np.zeros(60), err, kind="trees")
    corner = np.array([[0.0, 0.0, 0.0]])
    assert m.abs_model.predict(corner)[0] < -1 and m.sq_model.predict(corner)[0] < -1
    a_hat, s_hat = m.losses(pd.DataFrame({"x1": [0.0], "x2": [0.0]}), [0.0])
    assert (a_hat.tolist(), s_hat.tolist()) == ([0.0], [0.0])
    rows = pd.DataFrame({"x1": [0.0, 1.0], "x2": [0.0, 1.0]})
    est = estimate_regression(m, [0.0, 0.0], features=rows)
    _assert_estimate(est, _expected(m, rows, np.zeros(2), 0.95))
