"""Paired champion comparisons of multiclass and regression models: point deltas equal to
scikit-learn's differences, and a model compared with itself changes nothing."""

from __future__ import annotations

import numpy as np
import pytest
from modelgate.evaluation.multiclass_compare import compare_multiclass
from modelgate.evaluation.regression import compare_regression
from sklearn import metrics as skm


def _proba(rng: np.random.Generator, n: int, c: int) -> np.ndarray:
    z = rng.normal(size=(n, c))
    return np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)


def test_multiclass_deltas_are_sklearn_differences() -> None:
    rng = np.random.default_rng(11)
    y = rng.integers(0, 3, size=400)
    new, old = _proba(rng, 400, 3), _proba(rng, 400, 3)
    new[np.arange(400), y] += 0.5  # the candidate leans to the truth
    new /= new.sum(axis=1, keepdims=True)
    deltas = compare_multiclass(y, new, old, classes=["a", "b", "c"], n_bootstrap=200).by_name()

    def sk(p: np.ndarray) -> dict[str, float]:
        pred = p.argmax(axis=1)
        return {"accuracy": skm.accuracy_score(y, pred),
                "macro_f1": skm.f1_score(y, pred, average="macro"),
                "roc_auc_ovr_macro": skm.roc_auc_score(y, p, multi_class="ovr"),
                "log_loss": skm.log_loss(y, p), "recall[b]": skm.recall_score(y, pred, average=None)[1]}

    for name, value in sk(new).items():
        d = deltas[name]
        assert d.delta == pytest.approx(value - sk(old)[name], abs=1e-9), name
        assert d.ci_lower <= d.delta <= d.ci_upper, name
    assert deltas["accuracy"].ci_lower > 0  # clearly better on the same rows


@pytest.mark.parametrize("model", ["multiclass", "regression"])
def test_a_model_compared_with_itself_changes_nothing(model: str) -> None:
    rng = np.random.default_rng(5)
    if model == "multiclass":
        y, p = rng.integers(0, 3, size=200), _proba(rng, 200, 3)
        report = compare_multiclass(y, p, p, n_bootstrap=50)
    else:
        y = rng.normal(size=200)
        p = y + rng.normal(scale=0.3, size=200)
        report = compare_regression(y, p, p, n_bootstrap=50)
    for d in report.deltas:
        if d.undefined_reason is None:
            assert (d.delta, d.ci_lower, d.ci_upper) == (0.0, 0.0, 0.0), d.name


def test_regression_deltas_are_sklearn_differences() -> None:
    rng = np.random.default_rng(2)
    y = rng.normal(size=300)
    new, old = y + rng.normal(scale=0.2, size=300), y + rng.normal(scale=0.5, size=300) + 0.1
    deltas = compare_regression(y, new, old, n_bootstrap=200).by_name()
    for name, fn in (("rmse", skm.root_mean_squared_error), ("mae", skm.mean_absolute_error),
                     ("r2", skm.r2_score)):
        assert deltas[name].delta == pytest.approx(fn(y, new) - fn(y, old), abs=1e-9), name
    assert deltas["mean_error"].delta == pytest.approx(np.mean(new - y) - np.mean(old - y), abs=1e-9)
    assert deltas["rmse"].ci_upper < 0  # clearly lower error on the same rows


def test_compare_multiclass_refuses_probabilities_of_another_shape() -> None:
    with pytest.raises(ValueError, match="champion_proba must have the candidate's shape"):
        compare_multiclass([0, 1, 2], np.full((3, 3), 1 / 3), np.full((3, 4), 0.25))
