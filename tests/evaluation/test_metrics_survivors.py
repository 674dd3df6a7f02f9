"""Binary metrics (``evaluation/metrics.py``): cases written for the survivors of its third
mutation session, each checked against scikit-learn or a count worked by hand."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from modelgate.evaluation import metrics
from modelgate.evaluation.calibration import calibration_table
from modelgate.evaluation.metrics import compare, evaluate, undefined_reasons
from sklearn import metrics as skm

# No positive label, but some rows predicted positive: F1 = 2 tp / (2 tp + fp + fn) = 0 / fp
# is defined (0); precision is 0 / fp = 0; only recall and AUC are undefined.
NO_POSITIVE_LABEL_CASES = {
    "one-predicted-positive": ([0, 0, 0], [0.1, 0.7, 0.3]),
    "all-predicted-positive": ([0, 0], [0.5, 0.9]),
}


@pytest.mark.parametrize("case", NO_POSITIVE_LABEL_CASES)
def test_f1_without_positive_labels_but_with_predicted_positives_is_zero(case: str) -> None:
    """Oracle: scikit-learn's ``f1_score`` and ``precision_score`` (0.0 without a true
    positive but with a false positive); the reason of F1 is only for no positive labels
    *and* no predicted positives."""
    y, s = map(np.asarray, NO_POSITIVE_LABEL_CASES[case])
    pred = (s >= 0.5).astype(int)
    m = evaluate(y, s, n_bootstrap=0).by_name()
    assert m["f1"].undefined_reason is None
    assert m["f1"].value == skm.f1_score(y, pred, zero_division=np.nan) == 0.0
    assert m["precision"].undefined_reason is None
    assert m["precision"].value == skm.precision_score(y, pred, zero_division=np.nan) == 0.0
    assert m["recall"].undefined_reason == "no positive labels"


def test_f1_delta_without_positive_labels_is_defined() -> None:
    """``compare`` on labels all 0, both models predicting a positive: both F1 are 0 (as
    scikit-learn's ``f1_score``), so the delta is 0 with no reason."""
    y = np.array([0, 0, 0])
    new, old = np.array([0.6, 0.1, 0.2]), np.array([0.1, 0.9, 0.2])
    d = compare(new, old, y, n_bootstrap=0).by_name()["f1"]
    assert d.undefined_reason is None
    assert (d.candidate, d.champion) == (skm.f1_score(y, new >= 0.5), skm.f1_score(y, old >= 0.5))
    assert d.delta == 0.0


@pytest.mark.parametrize(
    ("counts", "f1_reason"),
    [
        ((4, 0, 0, 1), None),  # a false positive: F1 = 0 / 1 = 0
        ((4, 0, 0, 3), None),
        ((4, 0, 0, 0), "no positive labels and no predicted positives"),
        ((4, 2, 0, 0), None),  # positives, none predicted: F1 = 0 / 2 = 0
    ],
    ids=["n4-fp1", "n4-fp3", "n4-nothing", "n4-pos2-no-predicted"],
)
def test_undefined_reasons_of_f1_by_hand(counts: tuple[int, int, int, int],
                                         f1_reason: str | None) -> None:
    """F1 = 2 tp / (tp + fp + n_pos) is 0/0 only when n_pos = tp + fp = 0 (worked by hand)."""
    assert undefined_reasons(*counts)["f1"] == f1_reason


def _no_runtime_warning(call, *args, **kwargs):
    """``call(*args, **kwargs)`` with RuntimeWarnings raised as errors."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        return call(*args, **kwargs)


# Valid inputs on which the module divides 0 by 0 or by 0 internally (undefined metrics,
# resamples of one class, empty calibration bins) and must say so by NaN and a reason, not by a
# RuntimeWarning escaping to the caller.
QUIET_CASES = {
    "mixed": ([0, 1, 1, 0, 1, 0], [0.2, 0.8, 0.4, 0.6, 0.9, 0.1]),
    "one-class": ([0, 0, 0], [0.1, 0.7, 0.3]),
    "two-rows": ([1, 0], [0.3, 0.6]),
}


@pytest.mark.parametrize("case", QUIET_CASES)
def test_evaluate_and_calibration_emit_no_runtime_warning(case: str) -> None:
    """Oracle: scikit-learn's accuracy on the same rows; the check is that no RuntimeWarning
    (division by zero, invalid value) leaves ``evaluate`` or ``calibration_table``."""
    y, s = map(np.asarray, QUIET_CASES[case])
    for interval in ("per_metric", "percentile"):
        m = _no_runtime_warning(evaluate, y, s, n_bootstrap=40, seed=3, n_calibration_bins=7,
                                interval=interval).by_name()
        assert m["accuracy"].value == pytest.approx(skm.accuracy_score(y, s >= 0.5), abs=1e-15)
    t = _no_runtime_warning(calibration_table, y, s, n_bins=7)
    assert sum(b.n for b in t.bins) == len(y)


def test_compare_emits_no_runtime_warning() -> None:
    """Rows of all four kinds (both right, only the candidate right, only the champion right,
    both wrong; marked by hand below): no RuntimeWarning leaves ``compare``. The accuracies
    are scikit-learn's, 3/5 and 2/5."""
    y = np.array([1, 1, 0, 0, 1])
    new = np.array([0.9, 0.8, 0.7, 0.1, 0.2])  # right, right, wrong, right, wrong
    old = np.array([0.9, 0.3, 0.2, 0.6, 0.4])  # right, wrong, right, wrong, wrong
    acc = skm.accuracy_score(y, new >= 0.5), skm.accuracy_score(y, old >= 0.5)
    for interval in ("per_metric", "percentile"):
        d = _no_runtime_warning(compare, new, old, y, n_bootstrap=40, seed=2,
                                interval=interval).by_name()
        assert (d["accuracy"].candidate, d["accuracy"].champion) == acc == (0.6, 0.4)
        assert d["accuracy"].delta == pytest.approx(0.2, abs=1e-15)


@pytest.mark.parametrize("bad", [1.5, float("nan")], ids=["above-one", "nan"])
def test_a_score_outside_zero_one_is_refused_without_a_runtime_warning(bad: float) -> None:
    """The refusal is the ValueError with its message, not a RuntimeWarning on the way."""
    with pytest.raises(ValueError, match=r"score must be probabilities in \[0, 1\]"):
        _no_runtime_warning(evaluate, [0, 1, 1], [0.2, bad, 0.7], n_bootstrap=0)


def test_a_delta_that_overflows_is_undefined_as_not_finite() -> None:
    """Two finite values whose difference overflows (1e308 - -1e308 = inf, IEEE 754): the
    delta is NaN with the reason "not finite", as ``paired_deltas`` marks an undefined value
    (its regression callers can meet such values), never inf with no reason."""
    with np.errstate(over="ignore"):
        assert np.isinf(np.float64(1e308) - np.float64(-1e308))
    point = (np.array([1e308, 1.0]), np.array([-1e308, 1.5]))
    resampled = (np.array([[1.0, 1.0], [2.0, 2.0]]), np.array([[1.5, 1.5], [2.0, 2.0]]))
    huge, small = metrics.paired_deltas(("mse", "mae"), point, resampled, n=4,
                                        confidence_level=0.5)
    assert (huge.candidate, huge.champion) == (1e308, -1e308)
    assert np.isnan([huge.delta, huge.ci_lower, huge.ci_upper]).all()
    assert huge.undefined_reason == "not finite"
    assert (small.delta, small.undefined_reason) == (-0.5, None)


REFUSED_COUNTS = {
    # (option, value): the message names the option, its minimum 0 and the value
    "n_bootstrap-minus-2": ("n_bootstrap", -2),
    "seed-minus-2": ("seed", -2),
    "n_bootstrap-minus-1": ("n_bootstrap", -1),
    "seed-minus-1": ("seed", -1),
}


@pytest.mark.parametrize("case", REFUSED_COUNTS)
def test_a_negative_count_is_refused_first_with_minimum_zero(case: str) -> None:
    """A negative ``n_bootstrap`` or ``seed`` is refused with "must be an integer >= 0"
    (the minimum of the option, not another one), before the interval's name is looked at
    (here also invalid) and before the champion's threshold (here 2, also invalid)."""
    option, value = REFUSED_COUNTS[case]
    message = rf"^{option} must be an integer >= 0; got {value}$"
    y, s = [0, 1, 1], [0.2, 0.6, 0.7]
    with pytest.raises(ValueError, match=message):
        evaluate(y, s, **{option: value})
    with pytest.raises(ValueError, match=message):
        evaluate(y, s, interval="bootstrap", **{option: value})
    with pytest.raises(ValueError, match=message):
        compare(s, s, y, **{option: value})
    with pytest.raises(ValueError, match=message):
        compare(s, s, y, champion_threshold=2.0, interval="bootstrap", **{option: value})


def test_threshold_zero_is_accepted_and_predicts_every_row_positive() -> None:
    """``threshold`` may be any number in [0, 1], its lower end included: at 0 every row is
    predicted positive (``score >= 0``). Oracle: scikit-learn's precision, recall and
    accuracy on all-positive predictions (3/5, 1, 3/5)."""
    y = np.array([1, 0, 1, 0, 1])
    s = np.array([0.0, 0.3, 0.6, 0.1, 0.9])
    pred = np.ones(5, dtype=int)
    m = evaluate(y, s, threshold=0.0, n_bootstrap=0).by_name()
    assert m["precision"].value == skm.precision_score(y, pred) == 0.6
    assert m["recall"].value == skm.recall_score(y, pred) == 1.0
    assert m["accuracy"].value == skm.accuracy_score(y, pred)
    d = compare(s, s, y, threshold=0.5, champion_threshold=0.0, n_bootstrap=0).by_name()
    assert d["recall"].champion == 1.0
    assert d["recall"].candidate == skm.recall_score(y, s >= 0.5) == 2 / 3
    d = compare(s, s, y, threshold=0.0, n_bootstrap=0).by_name()
    assert (d["precision"].candidate, d["precision"].champion) == (0.6, 0.6)
