"""Performance metrics: point estimates against scikit-learn, bootstrap against a slow loop."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from modelgate.evaluation.calibration import calibration_table
from modelgate.evaluation.metrics import (
    METRIC_NAMES,
    bootstrap_indices,
    compare,
    evaluate,
)
from sklearn import metrics as skm
from sklearn.calibration import calibration_curve


def _dataset(kind: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = 2000
    rate = 0.05 if kind == "imbalanced" else 0.5
    y = (rng.random(n) < rate).astype(int)
    s = np.clip(rng.normal(0.35 + 0.3 * y, 0.2), 0.0, 1.0)
    if kind == "ties":
        s = np.round(s, 1)
    if kind == "extremes":  # exact 0 and 1 exercise log-loss clipping
        s[:50] = 0.0
        s[50:100] = 1.0
    return y, s


def _sklearn(y: np.ndarray, s: np.ndarray, threshold: float) -> dict[str, float]:
    pred = (s >= threshold).astype(int)
    return {
        "roc_auc": skm.roc_auc_score(y, s),
        "accuracy": skm.accuracy_score(y, pred),
        "precision": skm.precision_score(y, pred),
        "recall": skm.recall_score(y, pred),
        "f1": skm.f1_score(y, pred),
        "log_loss": skm.log_loss(y, s, labels=[0, 1]),
        "brier": skm.brier_score_loss(y, s),
    }


CASES = [("continuous", 0, 0.5), ("ties", 1, 0.5), ("imbalanced", 2, 0.3),
         ("extremes", 3, 0.5), ("ties", 4, 0.4)]


@pytest.mark.parametrize(("kind", "seed", "threshold"), CASES,
                         ids=[f"{k}-seed{s}-thr{t}" for k, s, t in CASES])
def test_point_estimates_match_sklearn(kind: str, seed: int, threshold: float) -> None:
    y, s = _dataset(kind, seed)
    report = evaluate(y, s, threshold=threshold, n_bootstrap=0)
    expected = _sklearn(y, s, threshold)
    got = report.by_name()
    assert set(got) == set(METRIC_NAMES)
    for name in METRIC_NAMES:
        assert got[name].value == pytest.approx(expected[name], abs=1e-12), name
        assert got[name].undefined_reason is None
        assert got[name].n == len(y)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("kind", ["continuous", "ties"])
def test_calibration_matches_sklearn(kind: str, strategy: str) -> None:
    y, s = _dataset(kind, 5)
    table = evaluate(y, s, n_bootstrap=0, n_calibration_bins=8,
                     calibration_strategy=strategy).calibration  # type: ignore[arg-type]
    prob_true, prob_pred = calibration_curve(y, s, n_bins=8, strategy=strategy)
    nonempty = [b for b in table.bins if b.n > 0]
    np.testing.assert_allclose([b.observed_rate for b in nonempty], prob_true, atol=1e-12)
    np.testing.assert_allclose([b.mean_predicted for b in nonempty], prob_pred, atol=1e-12)
    assert sum(b.n for b in table.bins) == len(y)


def test_calibration_keeps_empty_bins_as_nan() -> None:
    table = calibration_table([0, 1, 1], [0.05, 0.95, 0.9], n_bins=4)
    assert [b.n for b in table.bins] == [1, 0, 0, 2]
    assert np.isnan(table.bins[1].mean_predicted) and np.isnan(table.bins[1].observed_rate)
    assert table.bins[3].lower == 0.75 and table.bins[3].upper == 1.0


def _slow_interval(values: list[float], level: float) -> tuple[float, float]:
    finite = np.array([v for v in values if np.isfinite(v)])
    lo, hi = np.quantile(finite, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(lo), float(hi)


def _sklearn_or_nan(y: np.ndarray, s: np.ndarray, threshold: float) -> dict[str, float]:
    pred = (s >= threshold).astype(int)
    out = {"accuracy": skm.accuracy_score(y, pred), "log_loss": skm.log_loss(y, s, labels=[0, 1]),
           "brier": skm.brier_score_loss(y, s)}
    out["roc_auc"] = skm.roc_auc_score(y, s) if 0 < y.sum() < len(y) else np.nan
    out["precision"] = skm.precision_score(y, pred) if pred.sum() else np.nan
    out["recall"] = skm.recall_score(y, pred) if y.sum() else np.nan
    out["f1"] = skm.f1_score(y, pred) if y.sum() or pred.sum() else np.nan
    return out


@pytest.mark.parametrize(("n", "seed"), [(300, 11), (8, 12)],
                         ids=["n300", "n8-one-positive-many-undefined-resamples"])
def test_bootstrap_matches_slow_sklearn_loop_on_same_indices(n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.3).astype(int) if n > 10 else np.eye(1, n, 1, dtype=int)[0]
    y[:2] = [0, 1]
    s = np.round(np.clip(rng.normal(0.3 + 0.3 * y, 0.25), 0, 1), 2)
    report = evaluate(y, s, n_bootstrap=80, seed=seed, confidence_level=0.9,
                      interval="percentile")
    per_metric: dict[str, list[float]] = {m: [] for m in METRIC_NAMES}
    for chunk in bootstrap_indices(n, n_bootstrap=80, seed=seed, chunk_size=7):
        for idx in chunk:
            for name, value in _sklearn_or_nan(y[idx], s[idx], 0.5).items():
                per_metric[name].append(value)
    if n < 10:  # the case is meant to have resamples where AUC and recall are undefined
        assert np.isnan(per_metric["roc_auc"]).sum() > 5
    for est in report.metrics:
        lo, hi = _slow_interval(per_metric[est.name], 0.9)
        assert est.ci_lower == pytest.approx(lo, abs=1e-12), est.name
        assert est.ci_upper == pytest.approx(hi, abs=1e-12), est.name


def test_compare_pairs_resamples() -> None:
    rng = np.random.default_rng(21)
    n = 250
    y = rng.integers(0, 2, n)
    new = np.clip(rng.normal(0.3 + 0.4 * y, 0.2), 0, 1)
    old = np.clip(new + rng.normal(0, 0.1, n), 0, 1)
    report = compare(new, old, y, n_bootstrap=60, seed=5, interval="percentile")
    deltas: dict[str, list[float]] = {m: [] for m in METRIC_NAMES}
    for chunk in bootstrap_indices(n, n_bootstrap=60, seed=5):
        for idx in chunk:
            a = _sklearn_or_nan(y[idx], new[idx], 0.5)
            b = _sklearn_or_nan(y[idx], old[idx], 0.5)
            for name in METRIC_NAMES:
                deltas[name].append(a[name] - b[name])
    point_new, point_old = _sklearn(y, new, 0.5), _sklearn(y, old, 0.5)
    for d in report.deltas:
        assert d.candidate == pytest.approx(point_new[d.name], abs=1e-12)
        assert d.champion == pytest.approx(point_old[d.name], abs=1e-12)
        assert d.delta == pytest.approx(point_new[d.name] - point_old[d.name], abs=1e-12)
        lo, hi = _slow_interval(deltas[d.name], 0.95)
        assert (d.ci_lower, d.ci_upper) == pytest.approx((lo, hi), abs=1e-12), d.name


def test_compare_with_a_champion_threshold() -> None:
    y, s = _dataset("continuous", 13)
    report = compare(s, s, y, threshold=0.5, champion_threshold=0.3, n_bootstrap=0).by_name()
    assert report["recall"].candidate == pytest.approx(skm.recall_score(y, s >= 0.5), abs=1e-12)
    assert report["recall"].champion == pytest.approx(skm.recall_score(y, s >= 0.3), abs=1e-12)
    assert report["roc_auc"].delta == 0.0
    with pytest.raises(ValueError, match="threshold must be a number in"):
        compare(s, s, y, champion_threshold=-0.1)


def test_identical_models_have_zero_deltas_and_zero_width_intervals() -> None:
    rng = np.random.default_rng(8)
    y = rng.integers(0, 2, 120)
    s = rng.random(120)
    same = compare(s, s, y, n_bootstrap=50, seed=3).by_name()
    assert all(d.delta == 0 and d.ci_lower == 0 and d.ci_upper == 0 for d in same.values())


@pytest.mark.parametrize("chunk_size", [1, 3, 64], ids=["chunk1", "chunk3", "chunk64"])
def test_bootstrap_indices_do_not_depend_on_chunk_size(chunk_size: int) -> None:
    whole = np.concatenate(list(bootstrap_indices(17, n_bootstrap=10, seed=4, chunk_size=100)))
    chunked = np.concatenate(list(bootstrap_indices(17, n_bootstrap=10, seed=4,
                                                    chunk_size=chunk_size)))
    assert whole.shape == (10, 17)
    np.testing.assert_array_equal(whole, chunked)
    assert whole.min() >= 0 and whole.max() < 17


def test_single_class_labels_make_auc_undefined_not_half() -> None:
    report = evaluate(np.ones(40, dtype=int), np.linspace(0, 1, 40), n_bootstrap=30)
    auc = report.by_name()["roc_auc"]
    assert np.isnan(auc.value) and np.isnan(auc.ci_lower) and np.isnan(auc.ci_upper)
    assert auc.undefined_reason == "label has one class only"
    assert report.by_name()["recall"].value == pytest.approx(0.5, abs=1e-12)
    assert report.by_name()["log_loss"].undefined_reason is None


def test_no_predicted_positives_makes_precision_undefined() -> None:
    by_name = evaluate([0, 1, 0, 1], [0.1, 0.2, 0.3, 0.4], n_bootstrap=10).by_name()
    assert np.isnan(by_name["precision"].value)
    assert by_name["precision"].undefined_reason == "no predicted positives at this threshold"
    assert by_name["recall"].value == 0.0
    assert by_name["f1"].value == 0.0  # 2TP / (2TP + FP + FN) = 0 / 2


def test_same_seed_same_report_and_zero_bootstrap_gives_nan_intervals() -> None:
    y, s = _dataset("continuous", 9)
    assert evaluate(y, s, n_bootstrap=20, seed=2) == evaluate(y, s, n_bootstrap=20, seed=2)
    assert evaluate(y, s, n_bootstrap=20, seed=2) != evaluate(y, s, n_bootstrap=20, seed=3)
    est = evaluate(y, s, n_bootstrap=0).by_name()["roc_auc"]
    assert np.isnan(est.ci_lower) and np.isfinite(est.value)


BAD = [
    (dict(y_true=[0, 2], score=[0.1, 0.2]), "y_true must contain only 0 and 1"),
    (dict(y_true=[], score=[]), "y_true must have at least one row"),
    (dict(y_true=[[0, 1]], score=[0.1, 0.2]), "y_true must be one-dimensional"),
    (dict(y_true=[0, 1], score=[0.1]), "score must have the length of y_true"),
    (dict(y_true=[0, 1], score=[0.1, 1.5]), r"score must be probabilities in \[0, 1\]"),
    (dict(y_true=[0, 1], score=[0.1, np.nan]), r"score must be probabilities in \[0, 1\]"),
    (dict(y_true=[0, 1], score=["a", "b"]), "score must be numeric"),
    (dict(y_true=[0, 1], score=[0.1, 0.2], threshold=2.0), "threshold must be a number"),
    (dict(y_true=[0, 1], score=[0.1, 0.2], n_bootstrap=-1), "n_bootstrap must be an integer"),
    (dict(y_true=[0, 1], score=[0.1, 0.2], confidence_level=1.0), "confidence_level must be"),
    (dict(y_true=[0, 1], score=[0.1, 0.2], seed=1.5), "seed must be an integer"),
    (dict(y_true=[0, 1], score=[0.1, 0.2], calibration_strategy="kmeans"), "strategy must be"),
]


@pytest.mark.parametrize(("kwargs", "message"), BAD, ids=[m for _, m in BAD])
def test_invalid_inputs_are_rejected_with_clear_messages(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        evaluate(**kwargs)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 60))
def test_point_estimates_invariant_to_row_order(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = np.round(rng.random(n), 1)
    perm = rng.permutation(n)
    a = evaluate(y, s, n_bootstrap=0).metrics
    b = evaluate(y[perm], s[perm], n_bootstrap=0).metrics
    for x, z in zip(a, b, strict=True):
        assert x.undefined_reason == z.undefined_reason
        assert x.value == pytest.approx(z.value, abs=1e-12, nan_ok=True)
        if x.name == "roc_auc" and x.undefined_reason is None:
            assert 0.0 <= x.value <= 1.0


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_interval_is_ordered_and_finite_when_defined(seed: int) -> None:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, 50)
    y[:2] = [0, 1]
    s = rng.random(50)
    for est in evaluate(y, s, n_bootstrap=30, seed=seed % 1000).metrics:
        if est.undefined_reason is None:
            assert est.ci_lower <= est.ci_upper
