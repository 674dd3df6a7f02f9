"""Intervals on one, two or a handful of rows, for every task: none collapses to its point,
none reaches past what the metric can be, and where the bootstrap has too few distinct
resamples to give a tail the end is the metric's limit (the losses) or the textbook one
(Student's t for the regression errors, Clopper-Pearson for a loss seen once), computed
here with scipy."""

from __future__ import annotations

import numpy as np
import pytest
from modelgate.evaluation import evaluate, evaluate_multiclass, evaluate_regression
from scipy import stats
from support.binary_oracles import LOSS_MAX  # a row's largest log loss: no mean exceeds it


def _one_row_ends(value: float, most: float) -> tuple[float, float]:
    """A mean of values in [0, most] seen once: the share of the population unlike the row
    is at most the Clopper-Pearson upper bound of 0 events in 1 (beta quantile), and the
    mean lies between the row's value with that share at 0 and with it at ``most``."""
    share = stats.beta.ppf(0.975, 1, 1)
    return value * (1 - share), value + (most - value) * share


def test_one_row_of_a_binary_model_gives_loss_intervals_not_points() -> None:
    m = evaluate([1], [0.8], n_bootstrap=200, seed=1).by_name()
    loss, brier = -np.log(0.8), 0.2**2
    assert (m["log_loss"].ci_lower, m["log_loss"].ci_upper) == pytest.approx(
        _one_row_ends(loss, LOSS_MAX), rel=1e-12)
    assert (m["brier"].ci_lower, m["brier"].ci_upper) == pytest.approx(
        _one_row_ends(brier, 1.0), rel=1e-12)


def test_one_row_of_a_multiclass_model_gives_a_log_loss_interval_not_a_point() -> None:
    proba = np.array([[0.7, 0.2, 0.1]])
    m = evaluate_multiclass([0], proba, classes=["a", "b", "c"], n_bootstrap=200,
                            seed=1).by_name()
    assert (m["log_loss"].ci_lower, m["log_loss"].ci_upper) == pytest.approx(
        _one_row_ends(-np.log(0.7), LOSS_MAX), rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_two_rows_of_a_regression_give_student_t_for_the_mean_error(seed: int) -> None:
    # half the resamples draw one row twice (no spread): the bootstrap-t has no tail of its
    # own, and the mean error's interval is Student's t with one degree of freedom
    rng = np.random.default_rng(seed)
    y, pred = rng.normal(size=2) * 10, rng.normal(size=2) * 10
    e = pred - y
    m = evaluate_regression(y, pred, n_bootstrap=500, seed=seed).by_name()
    expected = stats.t.interval(0.95, 1, loc=e.mean(), scale=stats.sem(e))
    assert (m["mean_error"].ci_lower, m["mean_error"].ci_upper) == pytest.approx(expected,
                                                                               rel=1e-9)
    mae_expected = stats.t.interval(0.95, 1, loc=np.abs(e).mean(), scale=stats.sem(np.abs(e)))
    assert m["mae"].ci_upper == pytest.approx(mae_expected[1], rel=1e-9)
    assert m["mae"].ci_lower == pytest.approx(max(mae_expected[0], 0.0), abs=1e-12)


def test_two_rows_give_a_loss_its_whole_range_where_the_resamples_have_no_tail() -> None:
    # half the resamples draw one row twice: the bootstrap-t's quantiles are those counts,
    # and on two rows the honest interval of a loss is its range (Student's t covered
    # 60-92 % of simulated sets there)
    m = evaluate([1, 0], [0.3, 0.6], n_bootstrap=300, seed=2).by_name()
    assert (m["log_loss"].ci_lower, m["log_loss"].ci_upper) == (0.0, LOSS_MAX)
    assert (m["brier"].ci_lower, m["brier"].ci_upper) == (0.0, 1.0)


def test_a_log_loss_carried_by_one_row_stays_below_the_largest_possible_loss() -> None:
    # three rows, one scored 1e-20 on its own class (loss -log(eps)): the bootstrap-t's upper
    # end alone would be hundreds; a mean of these rows cannot pass LOSS_MAX
    m = evaluate([1, 0, 1], [1e-20, 0.2, 0.9], n_bootstrap=300, seed=4).by_name()
    assert m["log_loss"].ci_lower <= m["log_loss"].value <= m["log_loss"].ci_upper <= LOSS_MAX
    assert m["log_loss"].ci_upper > m["log_loss"].value + 1.0  # wide, as three rows are


def test_mostly_alike_errors_give_a_finite_interval_of_the_data_s_scale() -> None:
    # 200 rows, 198 predicted exactly: about 13 % of resamples draw neither of the two errors,
    # so the mean error's lower tail leans on resamples without spread; its end is Student's
    # t with 199 degrees of freedom there, not once a million standard errors
    y = np.zeros(200)
    pred = y.copy()
    pred[[3, 150]] = [4.0, 6.0]
    m = evaluate_regression(y, pred, n_bootstrap=1000, seed=2).by_name()["mean_error"]
    e = pred - y
    student = stats.t.interval(0.95, 199, loc=e.mean(), scale=stats.sem(e))
    assert m.ci_upper == pytest.approx(student[1], rel=1e-9)
    assert -1.0 < m.ci_lower <= m.value


def test_a_segment_of_one_row_gives_loss_intervals_not_points() -> None:
    # the segments' closed-form intervals (Hall's, from the losses' moments) as the whole
    # data's: one row is a constant loss, held to the metric's range
    from modelgate.evaluation.segment_intervals import closed_form_estimates, loss_power_sums
    from modelgate.evaluation.sufficient import collect

    part = collect(np.array([1]), np.array([0.8]), threshold=0.5)
    found = closed_form_estimates(part.candidate, loss_power_sums(part), 0.95)
    assert (found["log_loss"].ci_lower, found["log_loss"].ci_upper) == pytest.approx(
        _one_row_ends(-np.log(0.8), LOSS_MAX), rel=1e-12)
    assert (found["brier"].ci_lower, found["brier"].ci_upper) == pytest.approx(
        _one_row_ends(0.2**2, 1.0), rel=1e-12)


def test_a_segment_log_loss_carried_by_one_row_stays_below_the_largest_possible_loss() -> None:
    from modelgate.evaluation.segment_intervals import closed_form_estimates, loss_power_sums
    from modelgate.evaluation.sufficient import collect

    part = collect(np.array([1, 0, 1]), np.array([1e-20, 0.2, 0.9]), threshold=0.5)
    found = closed_form_estimates(part.candidate, loss_power_sums(part), 0.95)["log_loss"]
    assert found.ci_lower <= found.value <= found.ci_upper <= LOSS_MAX


@pytest.mark.parametrize("support", [(1, 1, 1), (24, 6, 2), (150, 40, 10)])
def test_a_multiclass_model_right_on_every_row_gets_f1_intervals_not_one_one(
        support: tuple[int, ...]) -> None:
    # every resample of all-right rows is all right: the percentile interval read [1, 1].
    # Each class's F1 lower end is the binary F1's (Wilson's for its Jaccard index, all of
    # its rows found), the macro F1's their mean, the weighted F1's their support-weighted one
    from statsmodels.stats.proportion import proportion_confint

    y = np.repeat(np.arange(3), support)
    proba = np.eye(3)[y] * 0.8 + 0.1 / 1.5 * (1 - np.eye(3)[y])
    m = evaluate_multiclass(y, proba, classes=["a", "b", "c"], n_bootstrap=200,
                            seed=0).by_name()
    jaccard = np.array([proportion_confint(k, k, 0.05, method="wilson")[0] for k in support])
    f1 = 2 * jaccard / (1 + jaccard)
    assert (m["macro_f1"].ci_lower, m["macro_f1"].ci_upper) == pytest.approx(
        (f1.mean(), 1.0), rel=1e-9)
    assert (m["weighted_f1"].ci_lower, m["weighted_f1"].ci_upper) == pytest.approx(
        (np.dot(f1, support) / sum(support), 1.0), rel=1e-9)


def test_segments_of_a_model_right_on_every_row_get_the_same_f1_intervals() -> None:
    # slices large enough for the closed-form route (not each slice's own evaluation) get
    # the interval a whole evaluation of their rows gets, not [1, 1]
    from modelgate.evaluation.segment_rows import evaluate_multiclass_segments
    from modelgate.fairness.disaggregate import encode_groups

    rng = np.random.default_rng(7)
    y = rng.integers(0, 3, 600)
    proba = np.full((600, 3), 0.1)
    proba[np.arange(600), y] = 0.8
    region = rng.integers(0, 2, 600)
    report = evaluate_multiclass_segments(y, proba, classes=["a", "b", "c"],
                                          columns={"region": encode_groups(region)},
                                          min_rows=30, n_bootstrap=200)
    for seg in report.segments:
        rows = region.astype(str) == seg.values[0]
        whole = evaluate_multiclass(y[rows], proba[rows], classes=["a", "b", "c"],
                                    n_bootstrap=200).by_name()
        for m in seg.metrics:
            if m.name in ("macro_f1", "weighted_f1"):
                assert m.ci_lower < 1.0
                assert (m.ci_lower, m.ci_upper) == pytest.approx(
                    (whole[m.name].ci_lower, whole[m.name].ci_upper), rel=1e-12)


def test_a_regression_of_one_row_has_no_interval_and_r2_none_on_two() -> None:
    # a resample of one row is that row: [x, x] claimed an error known exactly; nothing
    # bounds an error's size, so there is no interval to give (NaN ends), nor for the deltas
    from modelgate.evaluation import compare_regression, decide, load_policy

    one = evaluate_regression([10.0], [13.0], n_bootstrap=200).by_name()
    assert all(np.isnan(m.ci_lower) and np.isnan(m.ci_upper) for m in one.values())
    assert one["mae"].value == 3.0 and one["mean_error"].value == 3.0
    two = evaluate_regression([10.0, 20.0], [13.0, 18.0], n_bootstrap=200).by_name()
    assert np.isnan(two["r2"].ci_lower) and two["r2"].value == pytest.approx(1 - 13 / 50)
    assert np.isfinite([two[k].ci_lower for k in ("rmse", "mae", "mean_error")]).all()
    deltas = compare_regression([10.0], [13.0], [11.0], n_bootstrap=200).by_name()
    assert all(np.isnan(d.ci_lower) and np.isnan(d.ci_upper) for d in deltas.values())
    policy = load_policy("basis: interval\nmetrics: {mae: {value: {upper: 5.0}}}")
    (check,) = decide(one, None, {}, policy).checks
    assert check.verdict == "fail"
    assert check.reason == ("metric mae has no confidence interval to judge at n = 1 (too few "
                            "rows, every row's error alike, or n_bootstrap = 0).")


def test_the_report_shows_a_metric_without_an_interval_with_its_interval_n_a() -> None:
    # the report's metrics table once left out any metric without an interval: a one-row
    # regression's report read "metrics: none" though every value was computed
    from modelgate.pipelines.evaluation.metrics_step import MetricsResult
    from modelgate.pipelines.evaluation.report_step import _metric_rows

    one = evaluate_regression([10.0], [13.0], n_bootstrap=200)
    rows = _metric_rows(MetricsResult(one, None, None, task="regression"))
    assert [(r.name, r.candidate, r.ci_lower, r.ci_upper) for r in rows] == [
        ("rmse", 3.0, None, None), ("mae", 3.0, None, None), ("mean_error", 3.0, None, None)]


@pytest.mark.parametrize(("offset", "without"), [
    (0.0, {"rmse", "mae", "mean_error", "r2"}),  # an exact fit: r2 = 1 on every resample
    (2.5, {"rmse", "mae", "mean_error"}),  # off by one constant: r2 still varies
])
def test_errors_all_alike_give_no_interval_rather_than_a_point(offset: float,
                                                               without: set[str]) -> None:
    y = np.linspace(0.0, 10.0, 40)
    m = evaluate_regression(y, y + offset, n_bootstrap=300, seed=1).by_name()
    assert {k for k, e in m.items() if np.isnan(e.ci_lower) and np.isnan(e.ci_upper)} == without
    assert m["mae"].value == pytest.approx(offset) and m["rmse"].value == pytest.approx(offset)
    if "r2" not in without:
        assert m["r2"].ci_lower < m["r2"].value < m["r2"].ci_upper
