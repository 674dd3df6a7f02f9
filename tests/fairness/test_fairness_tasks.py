"""Fairness for multiclass (one-vs-rest) and regression models, against fairlearn's MetricFrame."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from fairlearn.metrics import MetricFrame, false_positive_rate, selection_rate, true_positive_rate
from modelgate.fairness.multiclass import multiclass_fairness_report
from modelgate.fairness.regression import regression_fairness_report
from sklearn.metrics import mean_absolute_error, root_mean_squared_error
from support.gap_oracles import gap_upper_end, lower_end_bracket
from support.row_bootstrap import interval_agrees, row_resamples


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


def _means(values: np.ndarray, members: np.ndarray) -> np.ndarray:
    """``(groups, resamples)`` group means of ``(resamples, n)`` values; NaN for an absent group
    (``members`` is ``(groups, resamples, n)``, 1 where a drawn row is in the group)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return (members * values).sum(axis=2) / members.sum(axis=2)


def _spread(means: np.ndarray) -> np.ndarray:
    """Per resample, largest minus smallest of the groups present; NaN below two groups."""
    present = np.isfinite(means)
    gap = np.where(present, means, -np.inf).max(axis=0) - np.where(present, means, np.inf).min(
        axis=0)
    return np.where(present.sum(axis=0) >= 2, gap, np.nan)


def _regression_oracle(y: np.ndarray, pred: np.ndarray, sensitive: np.ndarray,
                       resamples: np.ndarray) -> dict[str, np.ndarray]:
    """The three gaps on each of the test's own row resamples, written here."""
    e = pred[resamples] - y[resamples]
    members = np.stack([sensitive[resamples] == g for g in np.unique(sensitive)]).astype(float)
    return {"mae_gap": _spread(_means(np.abs(e), members)),
            "rmse_gap": _spread(np.sqrt(_means(e * e, members))),
            "mean_prediction_gap": _spread(_means(pred[resamples], members))}


def test_regression_gap_intervals_agree_with_a_row_bootstrap_written_here() -> None:
    y, pred, sensitive = _regression_data(5, n=300)
    report = regression_fairness_report(y, pred, sensitive, sensitive_feature="region",
                                        n_bootstrap=2000, seed=2)
    resamples = row_resamples(len(y), 3000, seed=77)
    oracle = _regression_oracle(y, pred, sensitive, resamples)
    for k, i in enumerate(resamples[:3]):  # the oracle itself, against fairlearn
        gaps = _metricframe(y[i], pred[i], sensitive[i]).difference(method="between_groups")
        for metric in ("mae", "rmse", "mean_prediction"):
            assert oracle[f"{metric}_gap"][k] == pytest.approx(gaps[metric], abs=1e-12)
    for metric in ("mae", "rmse", "mean_prediction"):
        estimate = report.by_name()[f"{metric}_gap"]
        assert estimate.ci_upper - estimate.ci_lower > 0.01
        assert interval_agrees(estimate.ci_lower, estimate.ci_upper, oracle[f"{metric}_gap"], 0.95,
                               n_core=2000), metric
        assert 0.0 <= estimate.ci_lower <= estimate.value <= estimate.ci_upper


def test_the_last_row_takes_part_in_regression_gap_resamples() -> None:
    """The last row is the only one of its group: a gap is defined only in the resamples
    that draw it (about 63 % of them)."""
    rng = np.random.default_rng(3)
    y = rng.normal(size=50)
    pred = y + rng.normal(size=50)
    sensitive = np.array(["a"] * 49 + ["b"])
    gap = regression_fairness_report(y, pred, sensitive, sensitive_feature="g",
                                     n_bootstrap=500, seed=4).by_name()["mae_gap"]
    oracle = _regression_oracle(y, pred, sensitive, row_resamples(50, 3000, seed=5))["mae_gap"]
    assert 0.55 < np.isfinite(oracle).mean() < 0.72
    assert interval_agrees(gap.ci_lower, gap.ci_upper, oracle, 0.95, n_core=500)


def test_multiclass_gap_intervals_are_newcombe_pairs_of_each_class_written_out() -> None:
    """One-vs-rest TPR and FPR gaps of each class: the pairwise Newcombe upper end and the test
    inversion of tests/support/gap_oracles.py on the test's own one-vs-rest counts."""
    rng = np.random.default_rng(12)
    n = 600
    y = rng.integers(0, 3, n)
    pred = np.where(rng.random(n) < 0.6, y, rng.integers(0, 3, n))
    sensitive = _groups(n, rng)
    report = multiclass_fairness_report(y, pred, sensitive, classes=["lo", "mid", "hi"],
                                        sensitive_feature="region")
    members = [sensitive == g for g in np.unique(sensitive)]
    for k, label in enumerate(["lo", "mid", "hi"]):
        for gap, rows in (("tpr_gap", y == k), ("fpr_gap", y != k)):
            counts = [(int((m & rows & (pred == k)).sum()), int((m & rows).sum())) for m in members]
            estimate = report.by_name()[f"{gap}[{label}]"]
            low, high = lower_end_bracket([counts], 0.05, null_tail=0.04)
            assert low <= estimate.ci_lower <= high, (gap, label)
            assert estimate.ci_upper == pytest.approx(gap_upper_end([counts], 0.95), abs=1e-12)
            assert 0.0 <= estimate.ci_lower <= estimate.value <= estimate.ci_upper <= 1.0


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


_THREE = ["lo", "mid", "hi"]


@pytest.mark.parametrize(("y", "pred", "message"), [
    ([0, 1, 3], [0, 1, 2], "y_true must hold class indices 0..2"),  # one past the last class
    ([0, 1, 2], [0, 1, 4], "predicted must hold class indices 0..2"),
    ([0, -1, 2], [0, 1, 2], "y_true must hold class indices 0..2"),
    ([0, 1, 2], [-2, 1, 2], "predicted must hold class indices 0..2"),
    (np.array([0.0, 1.0, 2.0]), [0, 1, 2], "y_true must hold class indices 0..2"),  # not ints
    ([0, 1, 2], np.array([0.0, 1.0, 2.0]), "predicted must hold class indices 0..2"),
], ids=["y-past-last", "pred-past-last", "y-negative", "pred-negative", "y-float", "pred-float"])
def test_multiclass_refuses_what_is_not_a_class_index(y: object, pred: object, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        multiclass_fairness_report(y, pred, ["a", "b", "a"], classes=_THREE,
                                   sensitive_feature="g", n_bootstrap=0)
    assert str(caught.value) == message


def test_multiclass_takes_any_indices_in_range_and_its_options_by_keyword() -> None:
    # the lowest class absent and the highest present: 1..2 of 0..2, unsigned too
    report = multiclass_fairness_report(np.array([1, 2, 2, 1], dtype=np.uint8), [2, 2, 1, 1],
                                        ["a", "a", "b", "b"], classes=_THREE,
                                        sensitive_feature="g", n_bootstrap=0)
    # lo: no row is or is predicted lo; mid: a's one mid row predicted hi, b's predicted mid
    assert report.by_name()["tpr_gap[mid]"].value == 1.0
    assert [c.label for c in report.classes] == _THREE
    with pytest.raises(TypeError):
        multiclass_fairness_report([0, 1], [0, 1], ["a", "b"], _THREE, "g")  # type: ignore[misc]


def test_multiclass_report_is_frozen_and_slotted_with_the_documented_defaults() -> None:
    report = multiclass_fairness_report([0, 1, 2, 0], [0, 1, 2, 1], ["a", "a", "b", "b"],
                                        classes=_THREE, sensitive_feature="g")
    for obj in (report, report.classes[0]):
        assert not hasattr(obj, "__dict__")  # slots
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, dataclasses.fields(obj)[0].name, "other")
    inner = report.classes[0].report
    assert (inner.n_bootstrap, inner.seed, inner.table.min_group_size) == (1000, 0, 30)


@pytest.mark.parametrize("classes", [["a", "a", "b"], [1, "1", 2]], ids=["same", "same-as-text"])
def test_multiclass_refuses_two_classes_with_one_label(classes: list[object]) -> None:
    """``by_name`` keys the gaps by label, so a repeated label would hide a class's gaps (and
    the gate would count the groups of another class than the gap's)."""
    with pytest.raises(ValueError, match=r"classes must have distinct labels; got \['a', 'a', 'b'\]"
                       if classes[0] == "a" else r"got \['1', '1', '2'\]"):
        multiclass_fairness_report([0, 1, 2], [0, 1, 2], ["g", "g", "h"], classes=classes,
                                   sensitive_feature="g", n_bootstrap=0)
