"""Regression paired deltas of rmse and r2: studentized bootstrap with delta-method standard
errors, stretched by t_df / z (Satterthwaite's df of the rows' influence); the oracle is a
bootstrap-t written here on this test's own row resamples."""

from __future__ import annotations

import numpy as np
import pytest
from modelgate.evaluation.regression import compare_regression
from scipy import stats
from sklearn import metrics as skm
from support.row_bootstrap import row_resamples


def _rows(seed: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = x + 0.5 * rng.standard_t(5, size=n)
    return y, 0.9 * x + 0.1, 0.7 * x + 0.3 * rng.normal(size=n)


def _deltas(y: np.ndarray, new: np.ndarray, old: np.ndarray) -> tuple[float, float]:
    """By the textbook formulas (checked against scikit-learn on the data below)."""
    a, b, total = ((new - y) ** 2).sum(), ((old - y) ** 2).sum(), ((y - y.mean()) ** 2).sum()
    return np.sqrt(a / len(y)) - np.sqrt(b / len(y)), (b - a) / total


def _influence(y: np.ndarray, new: np.ndarray, old: np.ndarray) -> list[np.ndarray]:
    a, b = (new - y) ** 2, (old - y) ** 2
    q = (y - y.mean()) ** 2
    return [(a - a.mean()) / (2 * np.sqrt(a.mean())) - (b - b.mean()) / (2 * np.sqrt(b.mean())),
            (b - a - (b.mean() - a.mean()) / q.mean() * q) / q.mean()]


def _stretch(influence: np.ndarray) -> float:
    """t_df / z at 97.5 %, df = 2 V^2 / (sum d^4 - V^2 / n) (Satterthwaite 1946)."""
    d = influence - influence.mean()
    v = (d**2).sum()
    df = max(2 * v**2 / ((d**4).sum() - v**2 / len(d)), 1.0)
    return max(stats.t.ppf(0.975, df) / stats.norm.ppf(0.975), 1.0)


def _standard_errors(y: np.ndarray, new: np.ndarray, old: np.ndarray) -> tuple[float, float]:
    """Delta method: the rmse delta's gradient (1 / 2 rmse_new, -1 / 2 rmse_old) on the
    covariance of the mean squared errors; the r2 delta's per-row influence."""
    n = len(y)
    a, b = (new - y) ** 2, (old - y) ** 2
    grad = np.array([0.5 / np.sqrt(a.mean()), -0.5 / np.sqrt(b.mean())])
    cov = np.cov(np.vstack([a, b]), ddof=0) / (n - 1)
    q = (y - y.mean()) ** 2
    d = (b.mean() - a.mean()) / q.mean()
    influence = (b - a - d * q) / q.mean()
    return float(np.sqrt(grad @ cov @ grad)), float(np.sqrt(np.mean(influence**2) / (n - 1)))


def test_rmse_and_r2_deltas_agree_with_a_bootstrap_t_written_here() -> None:
    y, new, old = _rows(21, 300)
    report = compare_regression(y, new, old, n_bootstrap=2000, seed=3).by_name()
    point, se = _deltas(y, new, old), _standard_errors(y, new, old)
    assert point == pytest.approx(
        (skm.root_mean_squared_error(y, new) - skm.root_mean_squared_error(y, old),
         skm.r2_score(y, new) - skm.r2_score(y, old)), abs=1e-12)
    t = []
    for i in row_resamples(len(y), 1000, 31):
        p, s = _deltas(y[i], new[i], old[i]), _standard_errors(y[i], new[i], old[i])
        t.append([(p[j] - point[j]) / s[j] for j in range(2)])
    lo, hi = np.quantile(np.array(t), [0.025, 0.975], axis=0)
    for j, name in enumerate(("rmse", "r2")):
        d = report[name]
        assert d.delta == pytest.approx(point[j], abs=1e-12)
        k = _stretch(_influence(y, new, old)[j])
        assert k > 1.0  # t5 errors: the stretch matters here
        expected = (point[j] - k * hi[j] * se[j], point[j] - k * lo[j] * se[j])
        assert (d.ci_lower, d.ci_upper) == pytest.approx(expected, abs=0.2 * se[j]), name


def test_a_candidate_off_by_one_row_gets_an_interval_holding_its_delta() -> None:
    """The two models differ on one row only (by hand: rmse delta sqrt(1/n) - 0)."""
    rng = np.random.default_rng(4)
    y = rng.normal(size=100)
    old = y.copy()
    new = y.copy()
    new[0] += 1.0
    d = compare_regression(y, new, old, n_bootstrap=300, seed=5).by_name()["rmse"]
    assert d.delta == pytest.approx(np.sqrt(1 / 100), abs=1e-12)
    assert d.ci_lower <= d.delta <= d.ci_upper
