"""SHAP for multiclass (predicted class or a chosen class) and regression ONNX models.

Oracles: Shapley's definition (``support/shapley_oracle.py``), and shap's Exact explainer in
the e2e tier; the linear closed form for the regression model."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/support/model_zoo.py
from modelgate.reports.explanation import explain, explain_class  # noqa: E402
from support.model_zoo import FEATURES, build  # noqa: E402
from support.shapley_oracle import brute_force_shapley  # noqa: E402

from modelgate.onnx.artifact import package, verify  # noqa: E402
from modelgate.onnx.scoring import ModelScorer, SessionSettings, open_session  # noqa: E402


def _scorer(name: str, tmp_path: Path) -> ModelScorer:
    archive = package(*build(name).write(tmp_path / "src"), tmp_path / "out")
    return open_session(verify(archive), SessionSettings(provider="cpu", intra_op_threads=1))


def _shap_exact(predict, rows: pd.DataFrame, bg: pd.DataFrame, names: list[str]) -> np.ndarray:
    import shap  # the e2e tier's oracle: its numba kernels compile for seconds in each process

    def model(x: np.ndarray) -> np.ndarray:
        return predict(pd.DataFrame(x, columns=names))

    masker = shap.maskers.Independent(bg[names].to_numpy(), max_samples=len(bg))
    return shap.explainers.Exact(model, masker)(rows[names].to_numpy()).values


@pytest.mark.parametrize("oracle", [pytest.param(brute_force_shapley, id="definition"),
                                    pytest.param(_shap_exact, id="shap-exact", marks=pytest.mark.e2e)])
@pytest.mark.parametrize("name", ["lightgbm-3-class", "sklearn-3-class"])
def test_multiclass_explains_each_rows_predicted_class(name: str, oracle, tmp_path: Path) -> None:
    scorer, frame = _scorer(name, tmp_path), build(name).frame
    rows, bg = frame.iloc[:12], frame.iloc[200:240]
    ex, explained = explain_class(scorer.predict_class_proba, rows, bg, features=FEATURES,
                                  algorithm="exact")
    proba = scorer.predict_class_proba(rows)
    np.testing.assert_array_equal(explained, proba.argmax(axis=1))
    assert len(set(explained.tolist())) > 1  # the rows cover several classes
    np.testing.assert_allclose(ex.model_output, proba[np.arange(len(rows)), explained], atol=1e-12)
    assert np.abs(ex.base_values + ex.values.sum(axis=1) - ex.model_output).max() <= 1e-6
    for k in np.unique(explained):
        theirs = oracle(lambda f, k=k: scorer.predict_class_proba(f)[:, k],
                        rows[explained == k], bg, list(FEATURES))
        np.testing.assert_allclose(ex.values[explained == k], theirs, atol=1e-9)


def test_multiclass_explains_a_chosen_class(tmp_path: Path) -> None:
    scorer, frame = _scorer("sklearn-3-class", tmp_path), build("sklearn-3-class").frame
    ex, explained = explain_class(scorer.predict_class_proba, frame.iloc[:6], frame.iloc[100:130],
                                  features=FEATURES, class_index=2)
    assert explained.tolist() == [2] * 6
    np.testing.assert_allclose(ex.model_output, scorer.predict_class_proba(frame.iloc[:6])[:, 2],
                               atol=1e-12)
    with pytest.raises(ValueError, match="class_index must be in 0..2"):
        explain_class(scorer.predict_class_proba, frame.iloc[:2], frame, features=FEATURES,
                      class_index=3)


def test_regression_explains_the_raw_value_as_the_linear_closed_form(tmp_path: Path) -> None:
    from sklearn.linear_model import LinearRegression

    scorer, frame = _scorer("sklearn-regression", tmp_path), build("sklearn-regression").frame
    rows, bg = frame.iloc[:20], frame.iloc[300:350]
    ex = explain(scorer.predict_value, rows, bg, features=FEATURES, output="value")
    assert np.abs(ex.base_values + ex.values.sum(axis=1) - ex.model_output).max() <= 1e-6
    # independent masker on a linear model: SHAP_i = w_i * (x_i - mean_background(x_i))
    x = frame[list(FEATURES)].to_numpy(dtype=np.float32)
    w = LinearRegression().fit(x, frame["y_value"]).coef_
    expected = w * (rows[list(FEATURES)].to_numpy() - bg[list(FEATURES)].to_numpy().mean(axis=0))
    np.testing.assert_allclose(ex.values, expected, atol=1e-4)  # float32 graph
    assert ex.model_output.min() < 0 or ex.model_output.max() > 1  # not a probability


def test_value_output_refuses_non_finite_predictions() -> None:
    bg = pd.DataFrame({"a": [0.0, 1.0]})
    with pytest.raises(ValueError, match="finite values"):
        explain(lambda f: np.full(len(f), np.nan), bg, bg, features=["a"], output="value")
