"""Regression fairness (``fairness/regression.py``) on tiny cases worked by hand: group errors,
gaps and the groups behind them, small groups, settings and refused input.

Intervals are checked exactly on data whose errors are constant within each group, where
every resample drawing two groups has the same gap, whatever rows it draws.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from modelgate.fairness.regression import regression_fairness_report

# group a: errors 0, 1; group b: errors 3, 0, -3
Y = [10.0, 10.0, 0.0, 0.0, 0.0]
PRED = [10.0, 11.0, 3.0, 0.0, -3.0]
GROUPS = ["a", "a", "b", "b", "b"]


def _report(**options: object):  # type: ignore[no-untyped-def]
    return regression_fairness_report(Y, PRED, GROUPS, sensitive_feature="g",
                                      **{"n_bootstrap": 0, **options})  # type: ignore[arg-type]


def test_group_errors_and_records_by_hand() -> None:
    a, b = _report(min_group_size=3).groups
    assert (a.group, a.n, a.mae, a.mean_prediction, a.mean_error, a.small_group) == (
        "a", 2, 0.5, 10.5, 0.5, True)
    assert a.rmse == pytest.approx(math.sqrt(0.5))
    assert (b.group, b.n, b.mae, b.mean_prediction, b.mean_error, b.small_group) == (
        "b", 3, 2.0, 0.0, 0.0, False)  # 3 rows: not below min_group_size 3
    assert b.rmse == pytest.approx(math.sqrt(6.0))  # (9 + 0 + 9) / 3
    assert a.to_record() == {"group_label": "a", "n": 2, "mae": 0.5, "rmse": a.rmse,
                             "mean_prediction": 10.5, "mean_error": 0.5, "is_small_group": True}


def test_gaps_and_the_groups_behind_them_by_hand() -> None:
    report = _report()
    mae, rmse, mean = (report.by_name()[k] for k in ("mae_gap", "rmse_gap", "mean_prediction_gap"))
    assert (mae.value, mae.highest_group, mae.lowest_group) == (1.5, "b", "a")
    assert rmse.value == pytest.approx(math.sqrt(6.0) - math.sqrt(0.5))
    assert (rmse.highest_group, rmse.lowest_group) == ("b", "a")
    assert (mean.value, mean.highest_group, mean.lowest_group) == (10.5, "a", "b")
    for e in (mae, rmse, mean):
        assert e.n == 5 and e.excluded_groups == () and e.undefined_reason is None
        assert math.isnan(e.ci_lower) and math.isnan(e.ci_upper)  # no resample
    assert [e.name for e in report.estimates] == ["mae_gap", "rmse_gap", "mean_prediction_gap"]


def test_defaults_and_settings() -> None:
    report = regression_fairness_report(Y, PRED, GROUPS, sensitive_feature="g")
    assert (report.sensitive_feature, report.n_bootstrap, report.confidence_level,
            report.seed) == ("g", 1000, 0.95, 0)
    assert all(g.small_group for g in report.groups)  # 2 and 3 rows, below 30
    assert report.by_name()["mae_gap"].value == 1.5  # small groups take part by default
    assert report == regression_fairness_report(Y, PRED, GROUPS, sensitive_feature="g",
                                                min_group_size=30, include_small_groups=True,
                                                n_bootstrap=1000, confidence_level=0.95, seed=0)
    assert report != regression_fairness_report(Y, PRED, GROUPS, sensitive_feature="g", seed=1)
    thirty = regression_fairness_report(np.zeros(59), np.ones(59), ["a"] * 30 + ["b"] * 29,
                                        sensitive_feature="g", n_bootstrap=0)
    assert [(g.n, g.small_group) for g in thirty.groups] == [(30, False), (29, True)]


def test_small_groups_left_out_are_listed_and_can_leave_fewer_than_two() -> None:
    report = _report(min_group_size=3, include_small_groups=False)
    assert [e.name for e in report.estimates] == ["mae_gap", "rmse_gap", "mean_prediction_gap"]
    for e in report.estimates:
        assert math.isnan(e.value) and e.undefined_reason == "fewer than two groups"
        assert e.excluded_groups == (("a", "small group"),)
        assert e.highest_group is None and e.lowest_group is None
    kept = _report(min_group_size=3, include_small_groups=True).by_name()["mae_gap"]
    assert kept.value == 1.5 and kept.excluded_groups == ()
    none_small = _report(min_group_size=2, include_small_groups=False).by_name()["mae_gap"]
    assert none_small.value == 1.5 and none_small.excluded_groups == ()


def _constant_errors(small: bool) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Groups a and b of 5 rows, errors 1 and 3, predictions 1 and 4 (plus c: 2 rows, error 100)."""
    y = np.r_[np.zeros(5), np.ones(5), np.zeros(2 if small else 0)]
    pred = np.r_[np.ones(5), np.full(5, 4.0), np.full(2 if small else 0, 100.0)]
    return y, pred, ["a"] * 5 + ["b"] * 5 + ["c"] * (2 if small else 0)


@pytest.mark.parametrize("level", [0.5, 0.95])
def test_every_resample_has_the_gap_where_errors_are_constant_by_group(level: float) -> None:
    y, pred, groups = _constant_errors(small=False)
    report = regression_fairness_report(y, pred, groups, sensitive_feature="g", n_bootstrap=200,
                                        confidence_level=level, seed=3)
    for name, gap in (("mae_gap", 2.0), ("rmse_gap", 2.0), ("mean_prediction_gap", 3.0)):
        e = report.by_name()[name]
        assert (e.value, e.ci_lower, e.ci_upper) == (gap, gap, gap), name


def test_small_groups_left_out_stay_out_of_the_resamples() -> None:
    y, pred, groups = _constant_errors(small=True)
    report = regression_fairness_report(y, pred, groups, sensitive_feature="g", n_bootstrap=200,
                                        min_group_size=3, include_small_groups=False, seed=1)
    e = report.by_name()["mae_gap"]
    assert (e.value, e.ci_lower, e.ci_upper) == (2.0, 2.0, 2.0)
    assert e.excluded_groups == (("c", "small group"),)
    both = regression_fairness_report(y, pred, groups, sensitive_feature="g", n_bootstrap=200,
                                      min_group_size=3, seed=1).by_name()["mae_gap"]
    assert both.value == 99.0 and both.ci_upper == 99.0  # |100| - |1|


def test_a_resample_with_one_group_is_left_out() -> None:
    """Two rows, one per group: a resample draws both (gap 2) or one row twice (no gap),
    each half the time; the interval holds only the gap."""
    report = regression_fairness_report([0.0, 0.0], [1.0, 3.0], ["a", "b"], sensitive_feature="g",
                                        n_bootstrap=100, seed=2)
    e = report.by_name()["mae_gap"]
    assert (e.value, e.ci_lower, e.ci_upper) == (2.0, 2.0, 2.0)


@pytest.mark.parametrize(("y", "pred", "sensitive", "message"), [
    (1.0, 1.0, ["a"], r"non-empty 1-D arrays of one length; got shapes \(\) and \(\)"),
    ([[1.0, 2.0]], [[1.0, 2.0]], ["a", "b"], r"got shapes \(1, 2\) and \(1, 2\)"),
    ([], [], [], r"got shapes \(0,\) and \(0,\)"),
    ([1.0, 2.0], [1.0], ["a", "b"], r"got shapes \(2,\) and \(1,\)"),
    ([1.0], [1.0, 2.0], ["a"], r"got shapes \(1,\) and \(2,\)"),
    ([1.0, np.nan], [1.0, 2.0], ["a", "b"], "must be finite"),
    ([1.0, 2.0], [np.inf, 2.0], ["a", "b"], "must be finite"),
    ([1.0, 2.0], [1.0, 2.0], ["a"], r"length of y_true \(2\); got 1"),
    ([1.0, 2.0], [1.0, 2.0], ["a", "b", "c"], r"length of y_true \(2\); got 3"),
], ids=["0-d", "2-d", "empty", "shorter-prediction", "longer-prediction", "nan-y", "inf-pred",
        "shorter-sensitive", "longer-sensitive"])
def test_bad_input_is_refused(y: object, pred: object, sensitive: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        regression_fairness_report(y, pred, sensitive, sensitive_feature="g",  # type: ignore[arg-type]
                                   n_bootstrap=0)


def test_options_are_keyword_only_and_the_report_frozen() -> None:
    with pytest.raises(TypeError):
        regression_fairness_report(Y, PRED, GROUPS, "g")  # type: ignore[misc]
    report = regression_fairness_report(y_true=Y, prediction=PRED, sensitive=GROUPS,
                                        sensitive_feature="g", n_bootstrap=0)
    assert report.by_name()["mae_gap"].value == 1.5
    for record, field in ((report, "n_bootstrap"), (report.groups[0], "n")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(record, field, 1)
        assert not hasattr(record, "__dict__")
    with pytest.raises(TypeError):
        report.by_name()["mae_gap"] = report.estimates[0]  # type: ignore[index]


def test_one_row_is_one_group_without_a_gap() -> None:
    report = regression_fairness_report([1.0], [3.0], ["a"], sensitive_feature="g", n_bootstrap=20)
    (a,) = report.groups
    assert (a.n, a.mae, a.rmse, a.mean_prediction, a.mean_error) == (1, 2.0, 2.0, 3.0, 2.0)
    assert [e.undefined_reason for e in report.estimates] == [
        "one group only, 'a': no gap between groups"] * 3
    missing = regression_fairness_report([1.0, 2.0], [3.0, 2.0], [None, None],
                                         sensitive_feature="g", n_bootstrap=0)
    assert {e.undefined_reason for e in missing.estimates} == {
        "every value of the sensitive column is missing: no gap between groups"}


def test_a_gap_of_zero_names_two_groups_not_one_twice() -> None:
    report = regression_fairness_report([0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0],
                                        ["a", "a", "b", "b"], sensitive_feature="g",
                                        min_group_size=1, n_bootstrap=0)
    for e in report.estimates:
        assert (e.value, e.highest_group, e.lowest_group) == (0.0, "a", "b"), e.name
