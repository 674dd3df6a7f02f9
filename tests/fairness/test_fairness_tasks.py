"""Fairness for multiclass (one-vs-rest) and regression models, against fairlearn's MetricFrame."""

from __future__ import annotations

import numpy as np
import pytest
from fairlearn.metrics import MetricFrame, false_positive_rate, selection_rate, true_positive_rate
from modelgate.evaluation.metrics import bootstrap_indices
from modelgate.fairness.multiclass import multiclass_fairness_report
from modelgate.fairness.regression import regression_fairness_report
from sklearn.metrics import mean_absolute_error, root_mean_squared_error


def _groups(n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.choice(np.array(["north", "south", "west"]), n, p=[0.5, 0.35, 0.15])


def test_multiclass_one_vs_rest_equals_metricframe() -> None:
    rng = np.random.default_rng(11)
    n = 2000
    y = rng.integers(0, 3, n)
    pred = np.where(rng.random(n) < 0.6, y, rng.integers(0, 3, n))
    sensitive = _groups(n, rng)
    report = multiclass_fairness_report(y, pred, sensitive, classes=["lo", "mid", "hi"],
                                        sensitive_feature="region", n_bootstrap=0)
    for k, label in enumerate(["lo", "mid", "hi"]):
        frame = MetricFrame(metrics={"tpr": true_positive_rate, "fpr": false_positive_rate,
                                     "selection": selection_rate},
                            y_true=(y == k).astype(int), y_pred=(pred == k).astype(int),
                            sensitive_features=sensitive)
        table = report.classes[k].report.table
        assert report.classes[k].label == label
        for g in table.groups:
            assert g.tpr == pytest.approx(frame.by_group.loc[g.group, "tpr"], abs=1e-12)
            assert g.fpr == pytest.approx(frame.by_group.loc[g.group, "fpr"], abs=1e-12)
            assert g.selection_rate == pytest.approx(frame.by_group.loc[g.group, "selection"],
                                                     abs=1e-12)
        gaps = frame.difference(method="between_groups")
        assert report.by_name()[f"tpr_gap[{label}]"].value == pytest.approx(gaps["tpr"], abs=1e-12)
        assert report.by_name()[f"fpr_gap[{label}]"].value == pytest.approx(gaps["fpr"], abs=1e-12)
        assert report.by_name()[f"demographic_parity_difference[{label}]"].value == pytest.approx(
            gaps["selection"], abs=1e-12)


def _regression_data(seed: int, n: int = 1500) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    sensitive = _groups(n, rng)
    y = rng.normal(size=n) * 2.0
    noise = np.where(sensitive == "west", 1.5, 0.8)
    return y, y + rng.normal(scale=noise) + (sensitive == "south") * 0.3, sensitive


def _metricframe(y: np.ndarray, pred: np.ndarray, sensitive: np.ndarray) -> MetricFrame:
    return MetricFrame(metrics={"mae": mean_absolute_error, "rmse": root_mean_squared_error,
                                "mean_prediction": lambda _, p: float(np.mean(p))},
                       y_true=y, y_pred=pred, sensitive_features=sensitive)


def test_regression_groups_and_gaps_equal_metricframe() -> None:
    y, pred, sensitive = _regression_data(4)
    report = regression_fairness_report(y, pred, sensitive, sensitive_feature="region",
                                        n_bootstrap=0)
    frame = _metricframe(y, pred, sensitive)
    for g in report.groups:
        for metric in ("mae", "rmse", "mean_prediction"):
            assert getattr(g, metric) == pytest.approx(frame.by_group.loc[g.group, metric],
                                                       abs=1e-12)
    gaps = frame.difference(method="between_groups")
    for metric in ("mae", "rmse", "mean_prediction"):
        assert report.by_name()[f"{metric}_gap"].value == pytest.approx(gaps[metric], abs=1e-12)
    assert report.by_name()["mae_gap"].highest_group == "west"


def test_regression_gap_intervals_equal_metricframe_on_each_resample() -> None:
    y, pred, sensitive = _regression_data(5, n=300)
    report = regression_fairness_report(y, pred, sensitive, sensitive_feature="region",
                                        n_bootstrap=30, seed=2)
    (idx,) = list(bootstrap_indices(len(y), n_bootstrap=30, seed=2))
    gaps = [_metricframe(y[i], pred[i], sensitive[i]).difference(method="between_groups")
            for i in idx]
    for metric in ("mae", "rmse", "mean_prediction"):
        lower, upper = np.quantile([g[metric] for g in gaps], [0.025, 0.975])
        estimate = report.by_name()[f"{metric}_gap"]
        assert (estimate.ci_lower, estimate.ci_upper) == pytest.approx((lower, upper), abs=1e-9)


def test_small_groups_can_be_left_out_of_regression_gaps() -> None:
    y = np.array([0.0] * 40 + [0.0] * 40 + [0.0] * 3)
    pred = np.array([1.0] * 40 + [2.0] * 40 + [10.0] * 3)
    sensitive = np.array(["a"] * 40 + ["b"] * 40 + ["c"] * 3)
    report = regression_fairness_report(y, pred, sensitive, sensitive_feature="g",
                                        include_small_groups=False, n_bootstrap=0)
    gap = report.by_name()["mae_gap"]
    assert gap.value == 1.0 and gap.excluded_groups == (("c", "small group"),)
    one_group = regression_fairness_report(y[:40], pred[:40], sensitive[:40],
                                           sensitive_feature="g", n_bootstrap=0)
    assert np.isnan(one_group.by_name()["mae_gap"].value)
