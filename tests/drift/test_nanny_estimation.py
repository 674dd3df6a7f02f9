"""Nanny error model (DLE): closed-form cases, a shift the prediction cannot show, coverage."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pandas as pd
import pytest
from modelgate.drift.regression_estimation import estimate_regression, fit_error_model, fit_nanny_model


def test_constant_error_has_closed_form() -> None:
    # Every error is 2: MAE = RMSE = 2 and no spread, so the standard errors are 0.
    rng = np.random.default_rng(0)
    feats = pd.DataFrame({"x": rng.normal(size=500), "c": rng.choice(["a", "b", "c"], 500)})
    pred = feats["x"].to_numpy() * 3
    m = fit_nanny_model(feats, pred, pred + 2.0, categorical=["c"])
    est = estimate_regression(m, pred[:50], features=feats.head(50))
    assert (est.n, est.mae, est.rmse) == (50, pytest.approx(2.0), pytest.approx(2.0))
    # zero up to rounding: a standard error is the square root of a sum of ~1e-16 terms
    assert est.mae_standard_error == pytest.approx(0.0, abs=1e-6)
    assert est.rmse_standard_error == pytest.approx(0.0, abs=1e-6)
    assert (est.mae_lower, est.mae_upper) == (pytest.approx(2.0), pytest.approx(2.0))


def test_error_in_the_model_space_is_estimated_exactly() -> None:
    # e = 1 + x2 exactly (x2 ~ U(0, 1) on the reference): |e| is linear and e ** 2 quadratic in
    # x2, both in the additive spline space. On an interval with x2 ~ U(0.5, 1) the estimates
    # are the interval's realised MAE and RMSE, computed here by hand from its rows.
    rng = np.random.default_rng(6)
    ref = pd.DataFrame({"x1": rng.normal(size=5000), "x2": rng.uniform(0, 1, 5000)})
    m = fit_nanny_model(ref, ref["x1"], ref["x1"] + 1 + ref["x2"])
    cur = pd.DataFrame({"x1": rng.normal(size=2000), "x2": rng.uniform(0.5, 1.0, 2000)})
    est = estimate_regression(m, cur["x1"], features=cur)
    e = 1 + cur["x2"].to_numpy()
    assert est.mae == pytest.approx(float(np.mean(e)), abs=1e-4)
    assert est.rmse == pytest.approx(float(np.sqrt(np.mean(e * e))), abs=1e-4)
    # Beyond the reference's x2 (up to 1) the error keeps growing along the fitted line (trees
    # would stay at the edge's 2.0): x2 = 1.5 gives |e| = 2 + 1 * 0.5 = 2.5.
    far = pd.DataFrame({"x1": [0.0], "x2": [1.5]})
    a_hat, _ = m.losses(far, [0.0])
    assert a_hat[0] == pytest.approx(2.5, abs=0.01)
    assert estimate_regression(m, [0.0], features=far).n_outside_reference == 1


def test_large_interval_mean_is_exact_and_its_row_variance_sampled() -> None:
    # Over 65,536 rows the mean comes from the mean basis row (exact) and the per-row variance
    # sum from evenly spaced rows: compare both with the per-row losses of every row.
    rng = np.random.default_rng(8)
    ref = pd.DataFrame({"x": rng.normal(size=4000)})
    m = fit_nanny_model(ref, ref["x"], ref["x"] + (1 + np.abs(ref["x"])) * rng.normal(size=4000))
    cur = pd.DataFrame({"x": rng.normal(0.5, 1.2, 150_000)})
    a_hat, s_hat = m.losses(cur, cur["x"])
    raw = m.abs_model.predict(m.design(cur, cur["x"]))  # the means are not floored row by row
    est = estimate_regression(m, cur["x"], features=cur)
    assert est.mae == pytest.approx(float(raw[:, 0].mean()), rel=1e-9)
    assert est.rmse == pytest.approx(float(np.sqrt(raw[:, 1].mean())), rel=1e-9)
    n = cur.shape[0]
    row_var = float(np.sum(np.maximum(s_hat - a_hat ** 2, 0.0))) / n ** 2
    # the nanny's own part does not depend on the sampling: recover it from the reported error
    own = est.mae_standard_error ** 2 - row_var
    assert own == pytest.approx(est.mae_standard_error ** 2, rel=0.05)  # row part is small here
    assert own >= 0.0


def test_former_tree_nanny_model_still_estimates() -> None:
    # References stored before the spline model hold two gradient-boosted trees (kind="trees");
    # they unpickle and estimate as before. Every error is 2: MAE = RMSE = 2.
    rng = np.random.default_rng(7)
    feats = pd.DataFrame({"x": rng.normal(size=400)})
    m = fit_nanny_model(feats, feats["x"], feats["x"] + 2.0, kind="trees")
    again = pickle.loads(pickle.dumps(m, protocol=5))  # noqa: S301 - our own bytes
    est = estimate_regression(again, feats["x"][:50], features=feats.head(50))
    assert (est.mae, est.rmse) == (pytest.approx(2.0), pytest.approx(2.0))
    with pytest.raises(ValueError, match="kind must be 'spline' or 'trees'"):
        fit_nanny_model(feats, feats["x"], feats["x"], kind="forest")  # type: ignore[arg-type]


def test_follows_a_shift_in_a_feature_the_model_ignores() -> None:
    # The model predicts x1 and ignores x2; the error is 0.5 * x2 exactly. Reference x2 ~ U(-1, 1)
    # (MAE 0.25); the interval's x2 ~ U(0.5, 1): MAE = 0.5 * 0.75 = 0.375, RMSE = 0.5 *
    # sqrt(E[x2^2]) = 0.5 * sqrt(7 / 12). Its predictions look like the reference's.
    rng = np.random.default_rng(1)
    ref = pd.DataFrame({"x1": rng.normal(size=20_000), "x2": rng.uniform(-1, 1, 20_000)})
    m = fit_nanny_model(ref, ref["x1"], ref["x1"] + 0.5 * ref["x2"])
    cur = pd.DataFrame({"x1": rng.normal(size=4000), "x2": rng.uniform(0.5, 1.0, 4000)})
    est = estimate_regression(m, cur["x1"], features=cur)
    assert est.mae == pytest.approx(0.375, abs=0.01)
    assert est.rmse == pytest.approx(0.5 * math.sqrt(7 / 12), abs=0.01)
    realised = float(np.mean(np.abs(0.5 * cur["x2"])))
    assert est.mae_lower <= realised <= est.mae_upper
    # The prediction-only binned model stays at the reference's error.
    binned = estimate_regression(fit_error_model(ref["x1"], ref["x1"] + 0.5 * ref["x2"]), cur["x1"])
    assert binned.mae == pytest.approx(0.25, abs=0.01)


def test_categorical_feature_sets_the_noise() -> None:
    # e ~ N(0, 0.1) for "a", N(0, 1) for "b": an all-"b" interval has MAE sqrt(2 / pi), RMSE 1.
    rng = np.random.default_rng(2)
    c = rng.choice(["a", "b"], 20_000)
    pred = rng.normal(size=20_000)
    y = pred + np.where(c == "a", 0.1, 1.0) * rng.normal(size=20_000)
    m = fit_nanny_model(pd.DataFrame({"c": c}), pred, y, categorical=["c"])
    est = estimate_regression(m, pred[:3000], features=pd.DataFrame({"c": ["b"] * 3000}))
    assert est.mae == pytest.approx(math.sqrt(2 / math.pi), abs=0.03)
    assert est.rmse == pytest.approx(1.0, abs=0.03)
    # An unseen category and a missing value count as missing: estimated, no error.
    odd = estimate_regression(m, [0.0, 0.0], features=pd.DataFrame({"c": ["zzz", None]}))
    assert math.isfinite(odd.mae)


def _coverage(seed: int, n_reference: int, n_intervals: int, n_rows: int) -> dict[str, float]:
    """The bench's simulation: error 0.5 x2 + (0.3 + 0.5 |x1|) eps, shifts in x1 and x2."""
    rng = np.random.default_rng(seed)

    def draw(n: int, mu1: float, sd1: float, mu2: float,
             sd2: float) -> tuple[pd.DataFrame, np.ndarray]:
        x1, x2 = rng.normal(mu1, sd1, n), rng.normal(mu2, sd2, n)
        y = x1 + 0.5 * x2 + (0.3 + 0.5 * np.abs(x1)) * rng.normal(size=n)
        return pd.DataFrame({"x1": x1, "x2": x2}), y

    ref, y = draw(n_reference, 0, 1, 0, 1)
    m = fit_nanny_model(ref, ref["x1"], y)
    covered: dict[str, list[bool]] = {"mae": [], "rmse": []}
    for _ in range(n_intervals):
        mu, sd = rng.uniform(-1, 1, 2), rng.uniform(0.5, 1.5, 2)
        cur, y_cur = draw(n_rows, mu[0], sd[0], mu[1], sd[1])
        est = estimate_regression(m, cur["x1"], features=cur)
        err = y_cur - cur["x1"].to_numpy()
        covered["mae"].append(est.mae_lower <= float(np.mean(np.abs(err))) <= est.mae_upper)
        covered["rmse"].append(est.rmse_lower <= float(np.sqrt(np.mean(err ** 2))) <= est.rmse_upper)
    return {k: float(np.mean(v)) for k, v in covered.items()}


def test_interval_covers_under_covariate_shift() -> None:
    coverage = _coverage(seed=3, n_reference=30_000, n_intervals=30, n_rows=3000)
    assert min(coverage.values()) >= 0.9, coverage


@pytest.mark.e2e
def test_interval_covers_under_covariate_shift_many_intervals() -> None:
    for seed in (11, 21):
        coverage = _coverage(seed=seed, n_reference=50_000, n_intervals=200, n_rows=5000)
        assert min(coverage.values()) >= 0.9, (seed, coverage)


def test_pickle_round_trip_and_outside_count() -> None:
    rng = np.random.default_rng(4)
    feats = pd.DataFrame({"x": rng.uniform(0, 1, 400)})
    m = fit_nanny_model(feats, feats["x"], feats["x"] + rng.normal(size=400))
    again = pickle.loads(pickle.dumps(m, protocol=5))  # noqa: S301 - our own bytes
    cur = pd.DataFrame({"x": [0.5, 2.0, -1.0]})
    a = estimate_regression(m, [0.5, 0.5, 0.5], features=cur)
    b = estimate_regression(again, [0.5, 0.5, 0.5], features=cur)
    assert a == b
    assert a.n_outside_reference == 2  # x beyond the reference's [0, 1]
    assert estimate_regression(m, [], features=cur.head(0)).n == 0
    # A number column holding text in live data: the text counts as missing (the quality checks
    # report the type mismatch), the estimate goes on.
    texty = pd.DataFrame({"x": ["text", 0.5]}, dtype=object)
    assert math.isfinite(estimate_regression(m, [0.5, 0.5], features=texty).mae)


def test_errors_name_what_is_wrong() -> None:
    feats = pd.DataFrame({"x": np.arange(10.0), "s": list("abcdefghij")})
    with pytest.raises(ValueError, match=r"numeric feature 's'"):
        fit_nanny_model(feats, np.arange(10.0), np.arange(10.0))
    with pytest.raises(ValueError, match=r"\['k'\] are not among the features"):
        fit_nanny_model(feats, np.arange(10.0), np.arange(10.0), categorical=["k"])
    with pytest.raises(ValueError, match="holdout"):
        fit_nanny_model(feats[["x"]], np.arange(10.0), np.arange(10.0), holdout=1.0)
    m = fit_nanny_model(feats, np.arange(10.0), np.arange(10.0), categorical=["s"])
    with pytest.raises(ValueError, match=r"lack column\(s\) \['s'\]"):
        estimate_regression(m, [1.0], features=feats[["x"]].head(1))
    with pytest.raises(ValueError, match="needs the interval's feature columns"):
        estimate_regression(m, [1.0])
    with pytest.raises(ValueError, match="1 rows but there are 2 predictions"):
        estimate_regression(m, [1.0, 2.0], features=feats.head(1))
