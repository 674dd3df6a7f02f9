"""Regression metrics: point estimates and bootstrap intervals against scikit-learn."""

from __future__ import annotations

import numpy as np
import pytest
from modelgate.evaluation.metrics import bootstrap_indices
from modelgate.evaluation.regression import REGRESSION_METRIC_NAMES, evaluate_regression
from sklearn import metrics as skm


def _data(seed: int, n: int = 500, offset: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = offset + rng.normal(scale=3.0, size=n)
    return y, y + rng.normal(loc=0.4, scale=1.0, size=n)


def _sklearn(y: np.ndarray, pred: np.ndarray) -> dict[str, float]:
    return {"rmse": skm.root_mean_squared_error(y, pred), "mae": skm.mean_absolute_error(y, pred),
            "r2": skm.r2_score(y, pred), "mean_error": float(np.mean(pred - y))}


@pytest.mark.parametrize("offset", [0.0, 1e6], ids=["centred", "large-offset"])
def test_point_estimates_equal_sklearn(offset: float) -> None:
    y, pred = _data(1, offset=offset)
    got = evaluate_regression(y, pred, n_bootstrap=0).by_name()
    assert tuple(got) == REGRESSION_METRIC_NAMES
    for name, value in _sklearn(y, pred).items():
        assert got[name].value == pytest.approx(value, rel=1e-9, abs=1e-9), name


def test_bootstrap_intervals_equal_sklearn_on_each_resample() -> None:
    y, pred = _data(2, n=200)
    report = evaluate_regression(y, pred, n_bootstrap=50, seed=3)
    (idx,) = list(bootstrap_indices(len(y), n_bootstrap=50, seed=3))
    per_resample = [_sklearn(y[i], pred[i]) for i in idx]
    for m in report.metrics:
        lower, upper = np.quantile([r[m.name] for r in per_resample], [0.025, 0.975])
        assert (m.ci_lower, m.ci_upper) == pytest.approx((lower, upper), abs=1e-9), m.name


def test_mean_error_is_the_bias_by_hand() -> None:
    m = evaluate_regression([0.0, 0.0, 0.0], [1.0, 2.0, 3.0], n_bootstrap=0).by_name()
    assert m["mean_error"].value == 2.0 and m["mae"].value == 2.0
    assert m["rmse"].value == pytest.approx(np.sqrt(14 / 3))
    assert np.isnan(m["r2"].value) and m["r2"].undefined_reason == "y_true is constant"


@pytest.mark.parametrize(("y", "pred", "message"), [
    ([1.0, np.nan], [1.0, 2.0], "y_true must be finite"),
    ([1.0, 2.0], [1.0], "prediction must have the shape"),
    ([], [], "non-empty"),
], ids=["nan", "length", "empty"])
def test_bad_input_names_the_argument(y: list, pred: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        evaluate_regression(y, pred, n_bootstrap=0)
