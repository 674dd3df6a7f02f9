"""Multiclass metrics: point estimates and bootstrap intervals against scikit-learn."""

from __future__ import annotations

import numpy as np
import pytest
from modelgate.evaluation.metrics import bootstrap_indices
from modelgate.evaluation.multiclass import evaluate_multiclass, multiclass_metric_names
from sklearn import metrics as skm


def _data(seed: int, n: int = 400, c: int = 3, ties: bool = False) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, c, size=n)
    logits = rng.normal(size=(n, c)) + 1.5 * np.eye(c)[y]
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    if ties:  # shared probability values exercise the half-counted ties of ROC AUC
        proba = np.round(proba, 1)
        proba /= proba.sum(axis=1, keepdims=True)
    return y, proba


def _sklearn(y: np.ndarray, proba: np.ndarray) -> dict[str, float]:
    labels = list(range(proba.shape[1]))
    pred = proba.argmax(axis=1)
    out = {
        "accuracy": skm.accuracy_score(y, pred),
        "macro_f1": skm.f1_score(y, pred, labels=labels, average="macro", zero_division=np.nan),
        "weighted_f1": skm.f1_score(y, pred, labels=labels, average="weighted",
                                    zero_division=np.nan),
        "roc_auc_ovr_macro": skm.roc_auc_score(y, proba, multi_class="ovr", average="macro",
                                               labels=labels),
        "log_loss": skm.log_loss(y, proba, labels=labels),
    }
    recall = skm.recall_score(y, pred, labels=labels, average=None, zero_division=np.nan)
    precision = skm.precision_score(y, pred, labels=labels, average=None, zero_division=np.nan)
    out |= {f"recall[{k}]": recall[k] for k in labels}
    out |= {f"precision[{k}]": precision[k] for k in labels}
    return out


CASES = [(0, 3, False), (1, 4, False), (2, 3, True), (3, 5, True)]


@pytest.mark.parametrize(("seed", "c", "ties"), CASES,
                         ids=[f"seed{s}-{c}class{'-ties' if t else ''}" for s, c, t in CASES])
def test_point_estimates_equal_sklearn(seed: int, c: int, ties: bool) -> None:
    y, proba = _data(seed, c=c, ties=ties)
    got = evaluate_multiclass(y, proba, n_bootstrap=0).by_name()
    expected = _sklearn(y, proba)
    assert list(got) == list(multiclass_metric_names(range(c)))
    for name, value in expected.items():
        assert got[name].value == pytest.approx(value, abs=1e-9), name


def test_bootstrap_intervals_equal_sklearn_on_each_resample() -> None:
    y, proba = _data(5, n=150, ties=True)
    report = evaluate_multiclass(y, proba, n_bootstrap=40, seed=7, confidence_level=0.9)
    (idx,) = list(bootstrap_indices(len(y), n_bootstrap=40, seed=7))
    per_resample = [_sklearn(y[i], proba[i]) for i in idx]
    for m in report.metrics:
        values = np.array([r[m.name] for r in per_resample], dtype=float)
        values = values[np.isfinite(values)]
        lower, upper = np.quantile(values, [0.05, 0.95])
        assert (m.ci_lower, m.ci_upper) == pytest.approx((lower, upper), abs=1e-9), m.name


def test_a_class_never_predicted_has_undefined_precision_not_zero() -> None:
    y = np.array([0, 1, 2, 2])
    proba = np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.6, 0.3, 0.1], [0.2, 0.7, 0.1]])
    m = evaluate_multiclass(y, proba, classes=["a", "b", "c"], n_bootstrap=10).by_name()
    assert np.isnan(m["precision[c]"].value)
    assert m["precision[c]"].undefined_reason == "no row is predicted as this class"
    assert m["recall[c]"].value == 0.0  # two rows labelled c, none found


def test_an_absent_class_makes_ovr_auc_undefined() -> None:
    y = np.array([0, 1, 0, 1])
    proba = np.array([[0.6, 0.3, 0.1]] * 4)
    m = evaluate_multiclass(y, proba, n_bootstrap=0).by_name()
    assert np.isnan(m["roc_auc_ovr_macro"].value)
    assert m["roc_auc_ovr_macro"].undefined_reason is not None


@pytest.mark.parametrize(("y", "proba", "message"), [
    ([0, 3], [[0.5, 0.5], [0.5, 0.5]], "class indices 0..1"),
    ([0, 1], [[0.5, 1.5], [0.5, 0.5]], "probabilities in \\[0, 1\\]"),
    ([0.0, 1.0], [[0.5, 0.5], [0.5, 0.5]], "integer class indices"),
    ([0], [0.5, 0.5], "\\[N, C\\]"),
], ids=["index-out-of-range", "not-probabilities", "float-labels", "1-d-proba"])
def test_bad_input_names_the_argument(y: list, proba: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        evaluate_multiclass(y, proba, n_bootstrap=0)
