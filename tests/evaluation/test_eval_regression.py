"""Regression metrics: point estimates and bootstrap intervals against scikit-learn."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from modelgate.evaluation.regression import (
    REGRESSION_METRIC_NAMES,
    compare_regression,
    evaluate_regression,
)
from scipy import stats
from sklearn import metrics as skm
from support.row_bootstrap import agrees, interval_agrees, row_resamples


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


def _vectorised(y: np.ndarray, pred: np.ndarray) -> dict[str, np.ndarray]:
    """Every metric of each row of ``(resamples, n)`` arrays, written here."""
    e = pred - y
    total = ((y - y.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        r2 = np.where(total > 0, 1.0 - (e * e).sum(axis=1) / total, np.nan)
    return {"rmse": np.sqrt((e * e).mean(axis=1)), "mae": np.abs(e).mean(axis=1), "r2": r2,
            "mean_error": e.mean(axis=1)}


def _in_range(name: str, lower: float, value: float, upper: float) -> bool:
    low, high = {"rmse": (0.0, np.inf), "mae": (0.0, np.inf), "r2": (-np.inf, 1.0),
                 "mean_error": (-np.inf, np.inf)}[name]
    return low <= lower <= value <= upper <= high


@pytest.mark.parametrize("level", [0.8, 0.95])
def test_intervals_agree_with_a_row_bootstrap_written_here(level: float) -> None:
    y, pred = _data(2, n=200)
    report = evaluate_regression(y, pred, n_bootstrap=2000, seed=3, confidence_level=level)
    resamples = row_resamples(len(y), 4000, seed=515)
    oracle = _vectorised(y[resamples], pred[resamples])
    for i in resamples[:3]:  # the oracle itself, against scikit-learn
        assert _sklearn(y[i], pred[i]) == pytest.approx(
            {k: float(v[0]) for k, v in _vectorised(y[i][None], pred[i][None]).items()},
            rel=1e-9)
    for m in report.metrics:
        assert m.ci_upper - m.ci_lower > 0.01, m.name
        assert _in_range(m.name, m.ci_lower, m.value, m.ci_upper), m
    r2 = report.by_name()["r2"]  # the stretched percentile interval (the others: the next test)
    lower, upper = _r2_unstretched(r2, y, pred, level)
    assert interval_agrees(lower, upper, oracle["r2"], level, n_core=2000)


def _t_scale(e: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per metric, its value on the studentized scale and its standard error, for each row
    of the errors ``e`` ``(k, n)``: rmse as log(mean e^2), mae and mean_error as means."""
    n = e.shape[1]
    mse = (e * e).mean(axis=1)
    return {"rmse": (np.log(mse), (e * e).std(axis=1, ddof=1) / np.sqrt(n) / mse),
            "mae": (np.abs(e).mean(axis=1), np.abs(e).std(axis=1, ddof=1) / np.sqrt(n)),
            "mean_error": (e.mean(axis=1), e.std(axis=1, ddof=1) / np.sqrt(n))}


def _t_over_z_satterthwaite(e: np.ndarray) -> float:
    """Student's t quantile (97.5 %) with ``2 V^2 / (sum d^4 - V^2 / n)`` degrees of freedom,
    ``d`` the squared errors' deviations from their mean and ``V = sum d^2``
    (Satterthwaite 1946), over the normal quantile, at least 1."""
    d = e * e - (e * e).mean()
    v = float(np.sum(d**2))
    df = max(2 * v * v / (np.sum(d**4) - v * v / len(e)), 1.0)
    return max(stats.t.ppf(0.975, df) / stats.norm.ppf(0.975), 1.0)


@pytest.mark.parametrize("heavy", [False, True], ids=["normal-errors", "t3-errors"])
def test_rmse_mae_and_mean_error_are_bootstrap_t_intervals(heavy: bool) -> None:
    """The test's own studentized bootstrap: each end, put back on its scale as
    ``(value - end) / se``, must be within resampling noise of the t statistics' quantile;
    the rmse's after dividing its distance from the rmse by ``t_df / z`` (Satterthwaite's
    degrees of freedom of the squared errors' variance), which is below 1.03 for normal
    errors (about n / 7 degrees of freedom) and above 1.1 for t3's."""
    y, pred = _data(4, n=300)
    if heavy:
        pred = y + 0.4 + np.random.default_rng(8).standard_t(3, size=len(y))
    report = evaluate_regression(y, pred, n_bootstrap=2000, seed=5).by_name()
    e = pred - y
    resamples = row_resamples(len(y), 4000, seed=77)
    point, drawn = _t_scale(e[None, :]), _t_scale(e[resamples])
    to_scale = {"rmse": lambda v: np.log(v * v), "mae": lambda v: v, "mean_error": lambda v: v}
    factor = _t_over_z_satterthwaite(e)
    assert factor > 1.1 if heavy else factor < 1.03
    for name, scale in to_scale.items():
        value, se = float(point[name][0][0]), float(point[name][1][0])
        t = (drawn[name][0] - value) / drawn[name][1]
        m = report[name]
        assert m.value == pytest.approx(_sklearn(y, pred)[name], rel=1e-9)
        for end, q in ((m.ci_lower, 0.975), (m.ci_upper, 0.025)):
            if name == "rmse":  # the widening undone on the rmse's scale
                end = m.value + (end - m.value) / factor
            assert agrees((value - scale(end)) / se, t, q, n_core=2000), (name, end, q)
        assert _in_range(name, m.ci_lower, m.value, m.ci_upper), m
    if heavy:  # the squared errors' skew stretches the rmse's interval upwards
        rmse = report["rmse"]
        assert rmse.ci_upper - rmse.value > rmse.value - rmse.ci_lower


def _r2_unstretched(m: object, y: np.ndarray, pred: np.ndarray,
                    level: float = 0.95) -> tuple[float, float]:
    """r2's interval with the stretch undone: its ends' distances from the point divided by
    Student's t quantile (``1 - (1 - level) / 2``) with Satterthwaite's degrees of freedom of the rows'
    influence on r2, ``((1 - r2) q - e^2) / mean(q)``, over the normal one (at least 1); an
    upper end at 1 may be the cap (NaN then)."""
    value, lower, upper = m.value, m.ci_lower, m.ci_upper  # type: ignore[attr-defined]
    q = (y - y.mean()) ** 2
    d = ((1 - value) * q - (pred - y) ** 2) / q.mean()
    d = d - d.mean()
    v = float(np.sum(d**2))
    df = max(2 * v * v / (np.sum(d**4) - v * v / len(d)), 1.0)
    p = 1 - (1 - level) / 2
    f = max(stats.t.ppf(p, df) / stats.norm.ppf(p), 1.0)
    return value - (value - lower) / f, np.nan if upper == 1.0 else value + (upper - value) / f


def _r2_agrees(m: object, y: np.ndarray, pred: np.ndarray, oracle: np.ndarray, n_core: int) -> bool:
    """The unstretched r2 interval's ends agree with the oracle's percentile ends."""
    lower, upper = _r2_unstretched(m, y, pred)
    return agrees(lower, oracle, 0.025, n_core=n_core) and (
        np.isnan(upper) or agrees(upper, oracle, 0.975, n_core=n_core))


def test_r2_is_the_percentile_interval_stretched_by_t_df_over_z() -> None:
    """t3 errors: a few rows carry r2's influence, Satterthwaite's degrees of freedom are
    few and the stretch is about 1.3; undone, the ends are the test's own row bootstrap's
    percentile ends, and as reported the lower end lies about 1.3 times as far from the
    point as the oracle's (resampling noise: a few per cent)."""
    rng = np.random.default_rng(31)
    x = rng.normal(size=300)
    y, pred = x + 0.5 * rng.standard_t(3, size=300), 0.9 * x
    r2 = evaluate_regression(y, pred, n_bootstrap=2000, seed=2).by_name()["r2"]
    resamples = row_resamples(300, 4000, seed=32)
    oracle = _vectorised(y[resamples], pred[resamples])["r2"]
    lower, upper = _r2_unstretched(r2, y, pred)
    assert (r2.value - r2.ci_lower) / (r2.value - lower) > 1.25
    assert interval_agrees(lower, upper, oracle, 0.95, n_core=2000)
    ratio = (r2.value - r2.ci_lower) / (r2.value - np.quantile(oracle, 0.025))
    assert 1.15 < ratio < 1.45


def test_the_last_row_takes_part_in_the_resamples() -> None:
    """Only the last label differs from the others: r2 is defined in a resample that draws
    it (about 63 % of them) and undefined otherwise."""
    y = np.r_[np.zeros(40), 5.0]
    pred = np.r_[np.random.default_rng(4).normal(size=40), 4.0]
    r2 = evaluate_regression(y, pred, n_bootstrap=400, seed=0).by_name()["r2"]
    resamples = row_resamples(41, 4000, seed=6)
    oracle = _vectorised(y[resamples], pred[resamples])
    assert 0.55 < np.isfinite(oracle["r2"]).mean() < 0.72
    assert _r2_agrees(r2, y, pred, oracle["r2"], n_core=400)


def test_paired_delta_intervals_agree_with_a_row_bootstrap_written_here() -> None:
    """Both models on the same resamples of the test's own: the interval of the difference."""
    y, new = _data(3, n=200)
    old = y + np.random.default_rng(9).normal(loc=0.1, scale=1.2, size=len(y))
    report = compare_regression(y, new, old, n_bootstrap=2000, seed=5).by_name()
    resamples = row_resamples(len(y), 4000, seed=616)
    a, b = _vectorised(y[resamples], new[resamples]), _vectorised(y[resamples], old[resamples])
    for name in REGRESSION_METRIC_NAMES:
        d = report[name]
        assert d.delta == pytest.approx(_sklearn(y, new)[name] - _sklearn(y, old)[name], abs=1e-9)
        assert interval_agrees(d.ci_lower, d.ci_upper, a[name] - b[name], 0.95, n_core=2000), name


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


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 40))
def test_every_interval_is_in_range_and_holds_its_estimate(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    y = np.round(rng.normal(size=n), 1)
    pred = y + np.round(rng.standard_t(2, size=n), 1)
    for m in evaluate_regression(y, pred, n_bootstrap=40, seed=seed % 1000).metrics:
        if m.undefined_reason is None and np.isfinite(m.ci_lower):
            assert _in_range(m.name, m.ci_lower, m.value, m.ci_upper), m


def test_options_are_keyword_only_and_the_data_passable_by_keyword() -> None:
    y, pred, old = [1.0, 2.0, 4.0], [1.5, 2.0, 3.0], [1.0, 3.0, 4.0]
    m = evaluate_regression(y_true=y, prediction=pred, n_bootstrap=0).by_name()
    assert m["mae"].value == pytest.approx(0.5)  # (0.5 + 0 + 1) / 3
    d = compare_regression(y_true=y, candidate_prediction=pred, champion_prediction=old,
                           n_bootstrap=0).by_name()["mae"]
    assert (d.candidate, d.champion) == (pytest.approx(0.5), pytest.approx(1 / 3))  # (0+1+0)/3
    with pytest.raises(TypeError):
        evaluate_regression(y, pred, 0)  # type: ignore[misc]
    with pytest.raises(TypeError):
        compare_regression(y, pred, old, 0)  # type: ignore[misc]


@pytest.mark.parametrize(("y", "pred", "message"), [
    (1.0, 1.0, r"non-empty 1-D array; got shape \(\)"),
    ([[1.0, 2.0]], [[1.0, 2.0]], r"non-empty 1-D array; got shape \(1, 2\)"),
    ([1.0], [1.0, 2.0], r"shape of y_true \(1,\); got \(2,\)"),
    ([1.0, 2.0], [[1.0, 2.0]], r"shape of y_true \(2,\); got \(1, 2\)"),
    ([1.0, np.inf, np.nan], [1.0, 2.0, 3.0], "y_true must be finite; found 2 NaN or infinite"),
    ([1.0, 2.0, 3.0], [np.nan, 2.0, -np.inf], "prediction must be finite; found 2 NaN or"),
], ids=["0-d", "2-d", "longer-prediction", "2-d-prediction", "y-inf-and-nan", "prediction-nan"])
def test_more_bad_input_is_refused_with_its_message(y: object, pred: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        evaluate_regression(y, pred, n_bootstrap=0)  # type: ignore[arg-type]


@pytest.mark.parametrize("which", ["candidate", "champion"])
def test_compare_checks_both_predictions(which: str) -> None:
    y, good, bad = [1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [1.0, np.nan, 3.0]
    args = (good, bad) if which == "champion" else (bad, good)
    with pytest.raises(ValueError, match="prediction must be finite; found 1 NaN"):
        compare_regression(y, *args, n_bootstrap=0)
    with pytest.raises(ValueError, match="prediction must have the shape"):
        compare_regression(y, *((good, good[:2]) if which == "champion" else (good[:2], good)),
                           n_bootstrap=0)


def test_defaults_and_settings_are_reported() -> None:
    y, pred = _data(7, n=30)
    report = evaluate_regression(y, pred)
    assert (report.n, report.n_bootstrap, report.confidence_level, report.seed) == (
        30, 1000, 0.95, 0)
    assert report == evaluate_regression(y, pred, n_bootstrap=1000, confidence_level=0.95,
                                         seed=0)
    assert report != evaluate_regression(y, pred, seed=1)
    paired = compare_regression(y, pred, y + 0.5)
    assert (paired.n, paired.n_bootstrap, paired.confidence_level, paired.seed) == (
        30, 1000, 0.95, 0)
    assert paired == compare_regression(y, pred, y + 0.5, n_bootstrap=1000,
                                        confidence_level=0.95, seed=0)
    assert all(m.n == 30 for m in (*report.metrics, *paired.deltas))


def test_no_resample_gives_no_interval() -> None:
    y, pred = _data(8, n=20)
    for m in (*evaluate_regression(y, pred, n_bootstrap=0).metrics,
              *compare_regression(y, pred, y, n_bootstrap=0).deltas):
        assert np.isnan(m.ci_lower) and np.isnan(m.ci_upper), m


def test_an_undefined_metric_has_no_interval_and_the_report_is_frozen() -> None:
    import dataclasses

    report = evaluate_regression([2.0, 2.0, 2.0], [1.0, 2.0, 4.0], n_bootstrap=50)
    r2 = report.by_name()["r2"]
    assert np.isnan(r2.ci_lower) and np.isnan(r2.ci_upper)
    mae = report.by_name()["mae"]
    assert mae.undefined_reason is None and mae.ci_lower <= 1.0 <= mae.ci_upper  # (1+0+2)/3
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.n = 4  # type: ignore[misc]
    assert not hasattr(report, "__dict__")
    with pytest.raises(TypeError):
        report.by_name()["r2"] = r2  # type: ignore[index]


def test_r2_of_labels_with_a_small_spread_by_hand() -> None:
    """Total sum of squares 0.02, below 1: r2 is still defined."""
    m = evaluate_regression([0.0, 0.1, 0.2], [0.0, 0.2, 0.2], n_bootstrap=0).by_name()
    assert m["r2"].value == pytest.approx(1.0 - 0.01 / 0.02) and m["r2"].undefined_reason is None


@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["positive", "negative"])
def test_a_resample_of_equal_labels_has_no_r2(sign: float) -> None:
    """Forty labels 1.1 and one 2.0: a resample without the last row draws only 1.1, where r2
    is undefined and left out (it was about -1e16 in 13 % of the finite replicates, the
    lower end -2.3e16: the centred total sum of squares came out a few ulps above 0), so the
    interval agrees with the test's own row bootstrap. Negated, every drawn label is below 0
    (the rows not drawn must not count in the largest drawn label)."""
    y = sign * np.r_[np.full(40, 1.1), 2.0]
    pred = y + np.random.default_rng(11).normal(scale=0.05, size=41)
    r2 = evaluate_regression(y, pred, n_bootstrap=2000, seed=0).by_name()["r2"]
    resamples = row_resamples(41, 4000, seed=12)
    yy, pp = y[resamples], pred[resamples]
    oracle = _vectorised(yy, pp)["r2"]
    oracle[np.ptp(yy, axis=1) == 0] = np.nan  # all labels equal: undefined (its own total
    # sum of squares, from the rows' mean, can round a few ulps away from 0 there too)
    assert 0.55 < np.isfinite(oracle).mean() < 0.72
    assert -100.0 < r2.ci_lower <= r2.value <= r2.ci_upper <= 1.0
    assert _r2_agrees(r2, y, pred, oracle, n_core=2000)


def test_r2_interval_on_three_rows_by_hand() -> None:
    """Labels 0, 0, 1 and predictions 0.25, 0.25, 0.5. A resample draws either one label (no
    r2, 1/3 of them), or labels {0, 0, 1} (2/3 of the finite ones: total 2/3, squared error
    0.375, r2 0.4375, the point) or {0, 1, 1} (total 2/3, squared error 0.5625, r2 0.15625):
    the 2.5 % and 97.5 % quantiles of the finite replicates are those two values."""
    r2 = evaluate_regression([0.0, 0.0, 1.0], [0.25, 0.25, 0.5], n_bootstrap=1000,
                             seed=4).by_name()["r2"]
    assert (r2.value, r2.ci_lower, r2.ci_upper) == (
        pytest.approx(0.4375, abs=1e-12), pytest.approx(0.15625, abs=1e-12),
        pytest.approx(0.4375, abs=1e-12))


def test_r2_of_resamples_that_draw_only_a_tight_cluster_far_from_the_mean() -> None:
    """Two labels at 0 and six within 0.003 of 1e6: about 10 % of the resamples draw only the
    six, whose r2 (about 0.99) makes the lower end. Their labels' sum of squares is about
    1e-5; from sums of labels and squared labels centred on the mean of all eight rows
    (7.5e5, squares near 1e12) it cancels to rounding noise, and r2 came out NaN or 0.99995
    there. The test's own row bootstrap, r2 about each resample's own mean, is the oracle."""
    rng = np.random.default_rng(21)
    y = np.r_[0.0, 0.0, 1e6 + rng.normal(scale=1e-3, size=6)]
    pred = y + rng.normal(scale=1e-4, size=8)
    r2 = evaluate_regression(y, pred, n_bootstrap=2000, seed=3).by_name()["r2"]
    resamples = row_resamples(8, 4000, seed=22)
    oracle = _vectorised(y[resamples], pred[resamples])["r2"]
    oracle[np.ptp(y[resamples], axis=1) == 0] = np.nan
    cluster_only = (resamples >= 2).all(axis=1)
    assert 0.06 < cluster_only.mean() < 0.14 and np.nanmax(oracle[cluster_only]) < 0.9999
    assert interval_agrees(r2.ci_lower, r2.ci_upper, oracle, 0.95, n_core=2000)


def test_r2_is_undefined_where_the_labels_spread_underflows() -> None:
    """Labels 0 and 1e-200 differ, but their squared deviations from the mean (2.5e-401)
    are 0 in float64: r2 has no denominator and is NaN, not -inf."""
    r2 = evaluate_regression([0.0, 1e-200], [1.0, 1.0], n_bootstrap=0).by_name()["r2"]
    assert np.isnan(r2.value) and np.isnan(r2.ci_lower) and r2.undefined_reason is not None


def test_r2_of_equal_labels_whose_mean_rounds_is_undefined() -> None:
    """Three labels 0.1: their mean in float64 is 0.10000000000000002 (0.1 + 0.1 + 0.1 is
    0.30000000000000004), so the squared deviations are about 2e-34, not 0. r2 is still
    undefined (NaN, the labels are constant), not 1 - 0.01 / 6e-34."""
    r2 = evaluate_regression([0.1, 0.1, 0.1], [0.2, 0.1, 0.1], n_bootstrap=0).by_name()["r2"]
    assert np.isnan(r2.value) and r2.undefined_reason == "y_true is constant"
