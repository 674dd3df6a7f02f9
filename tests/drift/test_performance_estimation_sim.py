"""Estimates against realised metrics on simulated shifted intervals with known labels.

The truth is P(y = 1 | x) = sigmoid(2x); the model scores sigmoid(1.2x + 0.4), monotone but
miscalibrated, so the calibrator has work to do. Intervals shift x (covariate shift: P(y | x)
stays), the setting where confidence-based estimation is meant to hold. Realised metrics come
from scikit-learn on the sampled labels.
"""

from __future__ import annotations

import numpy as np
import pytest
from modelgate.drift.performance_estimation import (
    BINARY_METRICS,
    estimate_binary,
    estimate_multiclass,
    fit_isotonic,
    fit_multiclass,
)
from modelgate.drift.regression_estimation import estimate_regression, fit_error_model
from sklearn.metrics import (
    accuracy_score,
    f1_score,
    mean_absolute_error,
    roc_auc_score,
    root_mean_squared_error,
)


def _realised(y: np.ndarray, s: np.ndarray, yhat: np.ndarray) -> dict[str, float]:
    # Counted here (sklearn's per-call checks cost more than the whole estimate); ROC AUC from sklearn.
    tp, fp = int(np.sum(yhat & (y == 1))), int(np.sum(yhat & (y == 0)))
    fn = int(np.sum(~yhat & (y == 1)))
    return {"roc_auc": roc_auc_score(y, s), "accuracy": float(np.mean(yhat == (y == 1))),
            "precision": tp / (tp + fp) if tp + fp else np.nan, "recall": tp / (tp + fn),
            "f1": 2 * tp / (2 * tp + fp + fn)}


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def _draw(rng: np.random.Generator, n: int, mu: float, sd: float) -> tuple[np.ndarray, np.ndarray]:
    x = rng.normal(mu, sd, size=n)
    y = (rng.uniform(size=n) < _sigmoid(2 * x)).astype(int)
    return _sigmoid(1.2 * x + 0.4), y


def _binary_coverage(seed: int, n_intervals: int, n_rows: int,
                     n_reference: int = 50_000) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    cal = fit_isotonic(*_draw(rng, n_reference, 0.0, 1.0))
    hits = {m: 0 for m in BINARY_METRICS}
    for mu, sd in zip(rng.uniform(-1, 1, n_intervals), rng.uniform(0.5, 1.5, n_intervals),
                      strict=True):
        s, y = _draw(rng, n_rows, mu, sd)
        realised = _realised(y, s, s >= 0.5)
        for m in estimate_binary(cal, s, threshold=0.5).metrics:
            hits[m.metric] += m.lower <= realised[m.metric] <= m.upper
    return {m: h / n_intervals for m, h in hits.items()}


def test_binary_intervals_cover_realised_metrics() -> None:
    coverage = _binary_coverage(seed=10, n_intervals=30, n_rows=2000)
    assert min(coverage.values()) >= 0.9, coverage


@pytest.mark.e2e
def test_binary_intervals_cover_realised_metrics_many_intervals() -> None:
    coverage = _binary_coverage(seed=11, n_intervals=300, n_rows=5000, n_reference=200_000)
    assert min(coverage.values()) >= 0.9, coverage


@pytest.mark.e2e
def test_binary_intervals_cover_with_an_unlucky_small_reference() -> None:
    # Seed 11's 50,000-row reference gives a calibrator 1.6 of its standard errors off, shared by
    # every interval; with the calibrator part in quadrature accuracy covered 86.5 % here.
    coverage = _binary_coverage(seed=11, n_intervals=200, n_rows=5000, n_reference=50_000)
    assert min(coverage.values()) >= 0.9, coverage


def test_estimate_follows_a_real_drop() -> None:
    # Rows move to where the model is unsure (x near 0): accuracy really falls.
    rng = np.random.default_rng(12)
    cal = fit_isotonic(*_draw(rng, 50_000, 0.0, 1.0))
    s_ref, y_ref = _draw(rng, 5000, 0.0, 1.0)
    s_low, y_low = _draw(rng, 5000, 0.0, 0.25)
    before = estimate_binary(cal, s_ref, threshold=0.5).metric("accuracy")
    after = estimate_binary(cal, s_low, threshold=0.5).metric("accuracy")
    realised_before = accuracy_score(y_ref, s_ref >= 0.5)
    realised_after = accuracy_score(y_low, s_low >= 0.5)
    assert realised_before - realised_after > 0.1  # the drop is real
    assert after.upper < before.lower  # and the estimates see it
    assert after.lower <= realised_after <= after.upper


def test_multiclass_intervals_cover_realised_accuracy_and_macro_f1() -> None:
    rng = np.random.default_rng(13)
    centers = np.array([[0.0, 0.0], [1.5, 0.0], [0.0, 1.5]])

    def draw(n: int, shift: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = rng.normal(size=(n, 2)) + shift
        logits = -((x[:, None, :] - centers) ** 2).sum(axis=2)
        true = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        y = (rng.uniform(size=(n, 1)) > np.cumsum(true, axis=1)).sum(axis=1)
        model = np.exp(0.6 * logits)
        return model / model.sum(axis=1, keepdims=True), y

    ref = fit_multiclass(*draw(30_000, np.zeros(2)), ("a", "b", "c"))
    hits, n_intervals = {"accuracy": 0, "f1": 0}, 20
    for shift in rng.uniform(-0.7, 0.7, size=(n_intervals, 2)):
        prob, y = draw(3000, shift)
        est = estimate_multiclass(ref, prob)
        yhat = prob.argmax(axis=1)
        realised = {"accuracy": accuracy_score(y, yhat), "f1": f1_score(y, yhat, average="macro")}
        for name in hits:
            m = est.metric(name)
            hits[name] += m.lower <= realised[name] <= m.upper
    assert min(hits.values()) / n_intervals >= 0.9, hits


def test_regression_intervals_cover_realised_mae_and_rmse() -> None:
    # The error grows with |prediction|, so a shift in where predictions fall moves MAE.
    rng = np.random.default_rng(14)

    def draw(n: int, mu: float, sd: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
        pred = rng.normal(mu, sd, size=n)
        return pred, pred + rng.normal(size=n) * (0.2 + 0.5 * np.abs(pred))

    model = fit_error_model(*draw(50_000, 0.0))
    # Shifts that keep most predictions inside the reference's range: a binned model cannot
    # know the error where the reference had no predictions (see the module docstring).
    hits, n_intervals = {"mae": 0, "rmse": 0}, 60
    for mu in np.linspace(-0.75, 0.75, n_intervals):
        pred, y = draw(2000, float(mu))
        est = estimate_regression(model, pred)
        mae, rmse = mean_absolute_error(y, pred), root_mean_squared_error(y, pred)
        hits["mae"] += est.mae_lower <= mae <= est.mae_upper
        hits["rmse"] += est.rmse_lower <= rmse <= est.rmse_upper
    assert min(hits.values()) / n_intervals >= 0.9, hits
    # Predictions gather near 0, where the model errs least: MAE really falls, and the estimate sees it.
    pred, y = draw(5000, 0.0, 0.3)
    narrow, wide = estimate_regression(model, pred), estimate_regression(model, draw(5000, 0.0)[0])
    assert wide.mae - mean_absolute_error(y, pred) > 0.1
    assert narrow.mae_upper < wide.mae_lower
    assert narrow.mae_lower <= mean_absolute_error(y, pred) <= narrow.mae_upper
