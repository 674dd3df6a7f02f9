"""Exact SHAP beyond 10 features and the standard errors of estimates (issue #20).

Oracles: a brute-force Shapley value (``support/shapley_oracle.py``: every coalition, the
Shapley weights from the definition, one masked-input mean per coalition), ``shap.explainers.Exact`` on an
ONNX MLP, and ``scipy.stats`` for the t quantile.
"""

from __future__ import annotations

import math

import numpy as np
import onnxruntime as ort
import pandas as pd
import pytest
import scipy.stats
import shap
from modelgate.reports.explain_errors import interval_quantile
from modelgate.reports.explanation import choose_algorithm, explain, explain_class, importance_standard_errors
from modelgate.reports.waterfall import _draw, uncertain_sign
from skl2onnx import convert_sklearn
from skl2onnx.common.data_types import FloatTensorType
from sklearn.neural_network import MLPClassifier
from support.shapley_oracle import brute_force_shapley


def _numeric_model(m: int, seed: int):
    """A logistic model with pairwise and a three-way interaction (so sampling has error)."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=m)
    names = [f"x{i}" for i in range(m)]

    def predict(frame: pd.DataFrame) -> np.ndarray:
        x = frame[names].to_numpy(dtype=np.float64)
        z = x @ w + 1.5 * x[:, 0] * x[:, 1] - x[:, 2] * x[:, 3] * x[:, 4] + np.sin(2 * x[:, 5])
        return 1 / (1 + np.exp(-z))

    return predict, names


def test_auto_is_exact_at_11_features_and_equalsbrute_force_shapley() -> None:
    predict, names = _numeric_model(11, seed=1)
    rng = np.random.default_rng(2)
    rows = pd.DataFrame(rng.normal(size=(2, 11)), columns=names)
    bg = pd.DataFrame(rng.normal(size=(6, 11)), columns=names)
    ex = explain(predict, rows, bg, features=names)
    assert ex.algorithm == "exact" and ex.budget.evaluations_per_row == 2**11
    np.testing.assert_array_equal(ex.standard_errors, 0.0)
    np.testing.assert_allclose(ex.values, brute_force_shapley(predict, rows, bg, names), rtol=0, atol=1e-12)


@pytest.fixture(scope="module")
def mlp12():
    """An MLP on 12 numeric features, converted to ONNX and scored by ONNX Runtime."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(400, 12)).astype(np.float32)
    y = (x[:, 0] * x[:, 1] + x[:, 2] - np.abs(x[:, 3]) + rng.normal(size=400) > 0).astype(int)
    clf = MLPClassifier(hidden_layer_sizes=(16,), max_iter=1000, random_state=0).fit(x, y)
    onx = convert_sklearn(clf, initial_types=[("x", FloatTensorType([None, 12]))],
                          options={id(clf): {"zipmap": False}})
    sess = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    out = sess.get_outputs()[1].name
    names = [f"f{i}" for i in range(12)]

    def model(a: np.ndarray) -> np.ndarray:
        # padded to a multiple of 64 rows: ONNX Runtime rounds a batch's SIMD tail slightly
        # differently, and shap calls the model with other batch sizes than ours
        n = len(a)
        padded = np.concatenate([a, np.repeat(a[:1], (-n) % 64, axis=0)]).astype(np.float32)
        return sess.run([out], {"x": padded})[0][:n, 1].astype(np.float64)

    return model, names, x


@pytest.mark.e2e  # shap's Exact explainer at 12 features takes 10-20 s here
def test_exact_mlp_at_12_features_equals_shap_exact_explainer(mlp12) -> None:
    model, names, x = mlp12
    rows, bg = x[:2].astype(np.float64), x[100:106].astype(np.float64)

    def predict(frame: pd.DataFrame) -> np.ndarray:
        return model(frame[names].to_numpy())

    ours = explain(predict, pd.DataFrame(rows, columns=names), pd.DataFrame(bg, columns=names),
                   features=names)
    assert ours.algorithm == "exact"
    masker = shap.maskers.Independent(bg, max_samples=len(bg))
    theirs = shap.explainers.Exact(model, masker)(rows)
    np.testing.assert_allclose(ours.values, theirs.values, rtol=0, atol=1e-10)


def test_standard_errors_cover_the_exact_values() -> None:
    """Over 25 seeds x 3 rows x 11 features, |estimate - exact| lies within the drawn t
    interval (2.262 SE at 10 pairs) at least 94% of the time and within 3 SE at least 98.5%,
    and the SEs track the real error."""
    predict, names = _numeric_model(11, seed=4)
    rng = np.random.default_rng(5)
    rows = pd.DataFrame(rng.normal(size=(3, 11)), columns=names)
    bg = pd.DataFrame(rng.normal(size=(8, 11)), columns=names)
    exact = brute_force_shapley(predict, rows, bg, names)
    z = []
    for seed in range(25):
        est = explain(predict, rows, bg, features=names, algorithm="permutation", n_permutations=10,
                      seed=seed)
        assert np.all(est.standard_errors > 0)
        z.append((est.values - exact) / est.standard_errors)
    z = np.concatenate(z).ravel()
    assert np.mean(np.abs(z) <= scipy.stats.t.ppf(0.975, df=9)) >= 0.94
    assert np.mean(np.abs(z) <= 3) >= 0.985
    assert 0.7 < np.sqrt(np.mean(z**2)) < 1.4  # t with 9 df: sqrt(9/7) = 1.13


def test_importance_standard_errors_by_hand() -> None:
    predict, names = _numeric_model(11, seed=6)
    rng = np.random.default_rng(7)
    rows = pd.DataFrame(rng.normal(size=(4, 11)), columns=names)
    bg = pd.DataFrame(rng.normal(size=(5, 11)), columns=names)
    est = explain(predict, rows, bg, features=names, algorithm="permutation", n_permutations=3)
    se = importance_standard_errors(est)
    f = names[2]
    by_hand = math.sqrt(sum(float(est.standard_errors[r, 2]) ** 2 for r in range(4))) / 4
    assert se[f] == pytest.approx(by_hand, rel=1e-12)


def test_explain_class_chooses_one_algorithm_for_all_rows() -> None:
    # 33 rows over the exact budget together, each class's group alone within it
    predict, names = _numeric_model(11, seed=8)

    def proba(frame: pd.DataFrame) -> np.ndarray:
        p = predict(frame)
        return np.column_stack([p, 1 - p])

    rng = np.random.default_rng(9)
    rows = pd.DataFrame(rng.normal(size=(33, 11)), columns=names)
    bg = pd.DataFrame(rng.normal(size=(4, 11)), columns=names)
    budget = 2**11 * 4 * 20
    classes = proba(rows).argmax(axis=1)
    assert 0 < classes.sum() < 33
    ex, _ = explain_class(proba, rows, bg, features=names, algorithm="auto", exact_budget=budget,
                          n_permutations=2)
    assert choose_algorithm(11, 4, 33, exact_budget=budget) == "permutation"
    assert ex.algorithm == "permutation" and ex.standard_errors.shape == (33, 11)


def test_uncertain_sign_uses_the_t_quantile_of_the_pairs() -> None:
    q = interval_quantile(10)
    assert abs(q - scipy.stats.t.ppf(0.975, df=9)) < 1e-12
    values = np.array([0.02263, 0.021, -0.0226, -0.02263, 0.5])  # 0.021: normal 1.96 would not
    np.testing.assert_array_equal(uncertain_sign(values, np.full(5, 0.01), q),
                                  [False, True, True, False, False])


def test_waterfall_hatches_only_bars_whose_interval_crosses_zero() -> None:
    values = np.array([0.30, -0.02, 0.01])
    errors = np.array([0.01, 0.05, np.nan])  # the last is an "other features" sum: unknown
    fig = _draw(["a", "b", "c"], values, 0.5, 0.79, "t", "probability", errors=errors,
                quantile=interval_quantile(10))
    (ax,) = fig.axes
    hatched = [p.get_hatch() is not None for p in ax.patches]
    assert hatched == [False, True, False][::-1]  # bars are drawn bottom-up
    labels = sorted(t.get_text() for t in ax.texts)
    assert labels == ["+0.010", "+0.300 ± 0.01", "-0.020 ± 0.05"]


def test_report_budget_line_says_exact_or_how_far_off() -> None:
    from modelgate.pipelines.evaluation.explain_step import ExplainResult
    from modelgate.pipelines.evaluation.report_step import _shap_error_note

    common = {"global_rows": 50, "waterfalls": (), "background_rows": 100,
              "max_additivity_error": 0.0, "rows_explained": 62}
    exact = ExplainResult(importance=(("a", 0.2),), algorithm="exact", evaluations_per_row=4,
                          importance_se=(0.0,), max_standard_error=0.0, **common)
    assert _shap_error_note(exact) == "values exact (every coalition evaluated)"
    estimate = ExplainResult(importance=(("a", 0.2), ("b", 0.1)), algorithm="permutation",
                             evaluations_per_row=206, importance_se=(0.001, 0.003),
                             max_standard_error=0.02, **common)
    note = _shap_error_note(estimate)
    assert "largest standard error of a value 2.0e-02" in note
    assert "importance of b: mean |SHAP| 0.1000 +/- 0.0030" in note
    assert "hatch values whose 95% t interval, ± 2.26 SE (9 degrees of freedom" in note
