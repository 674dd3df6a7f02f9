"""Survivors of mutation testing of ``drift/regression_estimation.py``: the nanny error model.

Expected values come from brute force over the reference rows (the documented holdout split,
group means, the spline model refitted by :func:`fit_additive_splines`), scikit-learn and
:class:`statistics.NormalDist` for ``z``, never from the module's own results. The binned
error model's cases are in ``test_regression_estimation_survivors.py``.
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


def _z(confidence: float) -> float:
    """Two-sided normal quantile, from the standard library (not scipy, which the module uses)."""
    return NormalDist().inv_cdf(0.5 + confidence / 2)


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


def test_nanny_model_is_frozen_slotted_and_compared_by_identity() -> None:
    feats = pd.DataFrame({"x": np.arange(20.0)})
    a = fit_nanny_model(feats, np.arange(20.0), np.arange(20.0) + 1)
    b = fit_nanny_model(feats, np.arange(20.0), np.arange(20.0) + 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.n = 1  # type: ignore[misc]
    assert not hasattr(a, "__dict__")  # slots
    assert a == a and a != b and len({a, b}) == 2  # hashable, identity equality (arrays inside)
