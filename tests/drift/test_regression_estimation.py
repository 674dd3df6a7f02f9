"""Binned error model (DLE-style): hand cases, brute-force bins and resampling as oracles."""

from __future__ import annotations

import math

import numpy as np
import pytest
from modelgate.drift.regression_estimation import estimate_regression, fit_error_model


def test_hand_case() -> None:
    # Bins split at 3 (the upper median): errors (0.5, -0.5) below, (0, 2) from 3 up.
    m = fit_error_model([1.0, 2.0, 3.0, 4.0], [1.5, 1.5, 3.0, 6.0], n_bins=2)
    est = estimate_regression(m, [1.0, 1.0, 4.0])  # two rows below, one above
    assert est.mae == pytest.approx((0.5 + 0.5 + 1.0) / 3)
    assert est.rmse == pytest.approx(math.sqrt((0.25 + 0.25 + 2.0) / 3))
    # |e| varies only above the split (0 and 2: variance 1), so SE(MAE) = sqrt(1) / 3.
    assert est.mae_standard_error == pytest.approx(1 / 3)
    assert est.n_outside_reference == 0
    assert estimate_regression(m, [9.0]).n_outside_reference == 1


def test_bins_match_brute_force() -> None:
    rng = np.random.default_rng(0)
    pred = rng.normal(size=2000)
    y = pred + rng.normal(size=2000) * (1 + pred ** 2)
    m = fit_error_model(pred, y, n_bins=5)
    edges = np.sort(pred)[[400, 800, 1200, 1600]]  # order statistics at ceil(q (n - 1))
    np.testing.assert_allclose(m.edges, edges)
    bounds = np.concatenate([[-np.inf], edges, [np.inf]])
    for b in range(5):
        inside = (pred >= bounds[b]) & (pred < bounds[b + 1])
        err = np.abs(y[inside] - pred[inside])
        assert m.abs_mean[b] == pytest.approx(err.mean())
        assert m.abs_var[b] == pytest.approx(err.var())
        assert m.sq_mean[b] == pytest.approx((err ** 2).mean())


def test_standard_error_matches_resampling() -> None:
    # An interval whose rows draw their errors from their bin's reference errors: the spread
    # of the realised MAE over many such intervals is what the standard error claims.
    rng = np.random.default_rng(1)
    pred = rng.normal(size=5000)
    y = pred + rng.normal(size=5000) * (0.3 + np.abs(pred))
    m = fit_error_model(pred, y, n_bins=4)
    interval = rng.normal(0.5, 1.0, size=400)
    est = estimate_regression(m, interval)
    ref_bin, int_bin = m.bin_of(pred), m.bin_of(interval)
    err = np.abs(y - pred)
    draws = np.zeros((2000, interval.size))
    for b in range(4):
        pool, rows = err[ref_bin == b], np.flatnonzero(int_bin == b)
        draws[:, rows] = rng.choice(pool, size=(2000, rows.size))
    maes = draws.mean(axis=1)
    assert est.mae == pytest.approx(maes.mean(), rel=0.01)
    assert est.mae_standard_error == pytest.approx(maes.std(), rel=0.1)


def test_constant_predictions_make_one_bin() -> None:
    m = fit_error_model([2.0] * 5, [1.0, 2.0, 3.0, 2.0, 2.0])
    assert m.edges.size == 0
    assert estimate_regression(m, [2.0]).mae == pytest.approx(0.4)


def test_more_bins_than_values_leaves_none_empty() -> None:
    m = fit_error_model([1.0, 2.0], [1.5, 2.0])
    assert m.edges.tolist() == [2.0] and m.abs_mean.tolist() == [0.5, 0.0]


def test_empty_interval_and_validation() -> None:
    m = fit_error_model([1.0, 2.0], [1.0, 2.0])
    est = estimate_regression(m, [])
    assert est.n == 0 and est.to_record()["mae"] is None
    with pytest.raises(ValueError, match="one length"):
        fit_error_model([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="n_bins"):
        fit_error_model([1.0], [1.0], n_bins=0)
    with pytest.raises(ValueError, match="missing or infinite"):
        estimate_regression(m, [np.nan])
