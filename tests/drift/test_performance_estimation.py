"""Estimated classifier performance: closed forms, brute force and scikit-learn as oracles."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from modelgate.drift.performance_estimation import (
    BINARY_METRICS,
    IsotonicCalibrator,
    MulticlassReference,
    _hanley_mcneil,
    estimate_binary,
    estimate_multiclass,
    expected_roc_auc,
    fit_isotonic,
    fit_multiclass,
)
from sklearn.isotonic import IsotonicRegression

# A known calibration (no fitting error): only the labels are random.
IDENTITY = IsotonicCalibrator(np.array([0.0, 1.0]), np.array([0.0, 1.0]), 2, np.array([0, 1]), np.zeros(2))
GRID = (np.arange(200_000) + 0.5) / 200_000  # uniform on [0, 1]


@pytest.mark.parametrize("seed", [0, 1, 2], ids=lambda s: f"seed{s}")
def test_isotonic_matches_sklearn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    s = np.round(rng.uniform(size=500), 2)  # ties, as real scores have
    y = rng.uniform(size=500) < s ** 2
    ours = fit_isotonic(s, y.astype(int))
    theirs = IsotonicRegression(out_of_bounds="clip", y_min=0.0, y_max=1.0).fit(s, y)
    probe = np.concatenate([rng.uniform(-0.2, 1.2, size=300), s])
    np.testing.assert_allclose(ours.apply(probe), theirs.predict(probe), atol=1e-12)


def test_isotonic_refuses_bad_labels() -> None:
    with pytest.raises(ValueError, match="labels must be 0 or 1"):
        fit_isotonic([0.1, 0.2], [0, 2])
    with pytest.raises(ValueError, match="one length"):
        fit_isotonic([0.1, 0.2], [0])


@pytest.mark.parametrize("t", [0.3, 0.5, 0.8], ids=lambda t: f"t={t}")
def test_uniform_calibrated_confusion_closed_form(t: float) -> None:
    # Scores uniform on [0, 1] and calibrated: E[TP]/n = (1 - t^2)/2, E[FP]/n = (1 - t)^2/2,
    # E[FN]/n = t^2/2, E[TN]/n = t - t^2/2.
    est = estimate_binary(IDENTITY, GRID, threshold=t)
    n = GRID.size
    assert est.expected_tp / n == pytest.approx((1 - t * t) / 2, abs=1e-5)
    assert est.expected_fp / n == pytest.approx((1 - t) ** 2 / 2, abs=1e-5)
    assert est.expected_fn / n == pytest.approx(t * t / 2, abs=1e-5)
    assert est.expected_tn / n == pytest.approx(t - t * t / 2, abs=1e-5)
    tp = (1 - t * t) / 2
    assert est.metric("accuracy").estimate == pytest.approx(0.5 + t - t * t, abs=1e-5)
    assert est.metric("precision").estimate == pytest.approx((1 + t) / 2, abs=1e-5)
    assert est.metric("recall").estimate == pytest.approx(1 - t * t, abs=1e-5)
    assert est.metric("f1").estimate == pytest.approx(2 * tp / ((1 - t) + 0.5), abs=1e-5)
    assert est.metric("roc_auc").estimate == pytest.approx(5 / 6, abs=1e-5)


def test_expected_auc_of_calibrated_beta_closed_form() -> None:
    # Scores Beta(2, 1) (density 2s), calibrated: numerator = int int_{x>y} x(1-y) 2x 2y,
    # = 4 * int_0^1 (1-y) y (1 - y^3)/3 dy = 4/3 * (1/2 - 1/3 - 1/5 + 1/6) = 8/45;
    # E[s] = 2/3, E[1-s] = 1/3, so AUC = (8/45) / (2/9) = 4/5.
    s = np.sqrt(GRID)  # inverse CDF of Beta(2, 1) on a uniform grid
    assert expected_roc_auc(s, s) == pytest.approx(0.8, abs=1e-5)


def test_expected_auc_matches_pairwise_brute_force() -> None:
    rng = np.random.default_rng(3)
    s = np.round(rng.uniform(size=60), 1)  # many ties
    p = rng.uniform(size=60)
    num = sum(p[i] * (1 - p[j]) * (1.0 if s[i] > s[j] else 0.5 if s[i] == s[j] else 0.0)
              for i in range(60) for j in range(60))
    assert expected_roc_auc(s, p) == pytest.approx(num / (p.sum() * (1 - p).sum()), rel=1e-12)


def test_expected_auc_undefined_without_negatives() -> None:
    assert math.isnan(expected_roc_auc([0.2, 0.4], [1.0, 1.0]))


def test_accuracy_and_precision_standard_errors_by_enumeration() -> None:
    # Every 2^8 labelling with its probability: the exact spread of the realised metrics.
    p = np.array([0.05, 0.2, 0.35, 0.5, 0.6, 0.7, 0.85, 0.95])
    predicted = p >= 0.5
    acc, prec, weight = [], [], []
    for labels in itertools.product((0, 1), repeat=p.size):
        y = np.array(labels)
        weight.append(np.prod(np.where(y == 1, p, 1 - p)))
        acc.append(np.mean(y == predicted))
        prec.append(y[predicted].mean())
    w = np.array(weight)
    est = estimate_binary(IDENTITY, p, threshold=0.5)
    for name, values in (("accuracy", np.array(acc)), ("precision", np.array(prec))):
        mean = float(w @ values)
        assert est.metric(name).estimate == pytest.approx(mean, rel=1e-12)
        assert est.metric(name).standard_error == pytest.approx(math.sqrt(w @ (values - mean) ** 2),
                                                                rel=1e-12)


def test_hanley_mcneil_matches_published_values() -> None:
    # auctestr::se_auc examples (Hanley & McNeil 1982).
    assert _hanley_mcneil(0.75, 20, 200) == pytest.approx(0.06498283, abs=1e-8)
    assert _hanley_mcneil(0.75, 110, 110) == pytest.approx(0.03282048, abs=1e-8)
    assert _hanley_mcneil(0.75, 20, 20) == pytest.approx(0.07789072, abs=1e-8)


def test_intervals_in_range_and_hold_the_estimate() -> None:
    rng = np.random.default_rng(4)
    s = rng.uniform(size=300)
    cal = fit_isotonic(s, (rng.uniform(size=300) < s).astype(int))
    est = estimate_binary(cal, rng.beta(5, 1, size=50), threshold=0.5, confidence=0.99)
    assert [m.metric for m in est.metrics] == list(BINARY_METRICS)
    for m in est.metrics:
        assert 0.0 <= m.lower <= m.estimate <= m.upper <= 1.0
    record = est.to_record()
    assert record["metrics"][0]["metric"] == "roc_auc" and record["per_class"] == []


def test_undefined_precision_is_none_in_the_record() -> None:
    est = estimate_binary(IDENTITY, [0.1, 0.2], threshold=0.5)
    rec = {m["metric"]: m for m in est.to_record()["metrics"]}
    assert rec["precision"]["estimate"] is None and rec["accuracy"]["estimate"] == pytest.approx(0.85)


def test_confidence_validated() -> None:
    with pytest.raises(ValueError, match="confidence"):
        estimate_binary(IDENTITY, [0.5], threshold=0.5, confidence=1.0)


def test_multiclass_identity_calibration_hand_case() -> None:
    ref = MulticlassReference(("a", "b", "c"), (IDENTITY,) * 3)
    prob = np.array([[0.7, 0.2, 0.1], [0.1, 0.6, 0.3], [0.2, 0.3, 0.5], [0.5, 0.4, 0.1]])
    est = estimate_multiclass(ref, prob)
    # Accuracy: the mean probability of the predicted (argmax) class.
    assert est.metric("accuracy").estimate == pytest.approx((0.7 + 0.6 + 0.5 + 0.5) / 4)
    # Class a one-vs-rest: predicted a on rows 0 and 3, so precision = (0.7 + 0.5) / 2, and
    # recall = 1.2 / (0.7 + 0.1 + 0.2 + 0.5).
    per = dict(est.per_class)
    assert {m.metric: m.estimate for m in per["a"]}["precision"] == pytest.approx(0.6)
    assert {m.metric: m.estimate for m in per["a"]}["recall"] == pytest.approx(1.2 / 1.5)
    macro_precision = np.mean([(0.7 + 0.5) / 2, 0.6, 0.5])
    assert est.metric("precision").estimate == pytest.approx(macro_precision)
    assert est.expected_tp == pytest.approx(0.7 + 0.5 + 0.6 + 0.5)


def test_multiclass_calibrators_match_sklearn() -> None:
    rng = np.random.default_rng(5)
    logits = rng.normal(size=(400, 3))
    prob = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(3, p=row) for row in prob])
    ref = fit_multiclass(prob, y, ("x", "y", "z"))
    probe = rng.dirichlet(np.ones(3), size=50)
    expected = np.column_stack([
        IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(prob[:, k], y == k)
        .predict(probe[:, k]) for k in range(3)])
    expected /= expected.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(ref.apply(probe), expected, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=2, max_size=40), st.integers(0, 2 ** 32 - 1))
def test_estimates_in_range_and_invariant_to_row_order(scores: list[float], seed: int) -> None:
    rng = np.random.default_rng(seed)
    ref = rng.uniform(size=200)
    cal = fit_isotonic(ref, (rng.uniform(size=200) < ref).astype(int))
    s = np.array(scores)
    a = estimate_binary(cal, s, threshold=0.5).to_record()
    b = estimate_binary(cal, rng.permutation(s), threshold=0.5).to_record()
    _assert_close(a, b)
    for m in a["metrics"]:
        if m["estimate"] is not None and m["lower"] is not None:
            assert 0.0 <= m["lower"] <= m["estimate"] <= m["upper"] <= 1.0


def _assert_close(a: dict, b: dict) -> None:
    assert a["expected_tp"] == pytest.approx(b["expected_tp"])
    for x, y in zip(a["metrics"], b["metrics"], strict=True):
        for key in ("estimate", "standard_error", "lower", "upper"):
            assert (x[key] is None and y[key] is None) or x[key] == pytest.approx(y[key])
