"""Exact interventional SHAP of linear graphs, against shap.LinearExplainer on the ORIGINAL
scikit-learn models, a hand-built Gemm + Sigmoid graph against ONNX Runtime, and the
route the CLI and the pipeline take (trees, linear, or the estimators with the reason)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import onnxruntime as ort
import pandas as pd
import pytest
from modelgate.reports.exact_explanation import explain_trees
from modelgate.reports.onnx_linear import linear_shap, read_linear_model
from modelgate.reports.onnx_trees import UnsupportedGraph

NAMES = [f"f{i}" for i in range(6)]


def _data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    x = rng.normal(size=(200, len(NAMES))).astype(np.float32).astype(np.float64)
    signal = x[:, 0] - 0.5 * x[:, 1] + 0.3 * x[:, 5] + rng.normal(scale=0.5, size=len(x))
    return x, (signal > 0).astype(np.int64), np.digitize(signal, [-0.6, 0.6]).astype(np.int64)


def _onnx(model: Any, x: np.ndarray) -> bytes:
    from skl2onnx import to_onnx

    options = {"zipmap": False} if hasattr(model, "classes_") else None
    return to_onnx(model, x[:1].astype(np.float32), options=options).SerializeToString()


def _linear_oracle(model: Any, rows: np.ndarray, background: np.ndarray) -> np.ndarray:
    import shap

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        values = np.asarray(shap.LinearExplainer(model, background).shap_values(rows))
    if values.ndim == 2:
        return values[:, :, None]
    return values if values.shape[0] == len(rows) else np.moveaxis(values, 0, -1)


@pytest.mark.parametrize("name", ["logistic-binary", "logistic-3-class", "ridge"], ids=str)
def test_values_equal_shap_linear_explainer_on_the_original_model(name: str) -> None:
    from sklearn.linear_model import LogisticRegression, Ridge

    x, y2, y3 = _data()
    model = {"logistic-binary": lambda: LogisticRegression().fit(x, y2),
             "logistic-3-class": lambda: LogisticRegression().fit(x, y3),
             "ridge": lambda: Ridge().fit(x, x @ np.arange(6.0))}[name]()
    lin = read_linear_model(_onnx(model, x), NAMES, input_tensor="X")
    rows, background = x[:7], x[100:160]
    ours = linear_shap(lin, rows, background)
    values = ours.values @ lin.columns.T
    expected = _linear_oracle(model, rows, background)
    if expected.shape[2] == 1 and values.shape[2] == 2:  # shap gives the positive class's log-odds
        values = values[:, :, 1:]
    # the graph holds float32 weights: the oracle's float64 weights differ by ~1e-7 relative
    np.testing.assert_allclose(values, expected, atol=1e-5)
    np.testing.assert_allclose(ours.base_values + ours.values.sum(axis=1), ours.scores, atol=1e-12)


def test_a_gemm_and_sigmoid_graph_is_read_and_matches_onnx_runtime() -> None:
    from onnx import TensorProto, helper, numpy_helper

    w = np.array([[0.5, -1.0, 2.0]], dtype=np.float32)
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w", "b"], ["z"], transB=1),
         helper.make_node("Sigmoid", ["z"], ["p"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3])],
        [helper.make_tensor_value_info("p", TensorProto.FLOAT, [None, 1])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array([0.25], np.float32), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    lin = read_linear_model(model, ["a", "b", "c"], input_tensor="x")
    assert lin.post_transform == "LOGISTIC"
    x = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [-1.0, 0.5, 0.25]])
    out = linear_shap(lin, x[:1], x)
    # hand-computed: w_j (x_j - mean_j), means (0, 0.8333, 1.0833)
    np.testing.assert_allclose(out.values[0, :, 0], [0.5, -1.0 * (2 - 2.5 / 3), 2.0 * (3 - 3.25 / 3)])
    p = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": x[:1].astype(np.float32)})[0]
    assert out.scores[0, 0] == pytest.approx(float(np.log(p[0, 0] / (1 - p[0, 0]))), abs=1e-5)


def test_explain_trees_on_a_logistic_graph_is_linear_and_labelled_logit() -> None:
    from sklearn.linear_model import LogisticRegression

    x, y2, _ = _data()
    model = LogisticRegression().fit(x, y2)
    onnx_bytes = _onnx(model, x)
    session = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
    frame = pd.DataFrame(x, columns=NAMES)

    def proba(f: pd.DataFrame) -> np.ndarray:
        return session.run(None, {"X": f.to_numpy(dtype=np.float32)})[1]

    lin = read_linear_model(onnx_bytes, NAMES, input_tensor="X")
    ex = explain_trees(lin, proba, frame.iloc[:4], frame.iloc[50:150], features=NAMES, columns=1)
    assert ex.algorithm == "linear_interventional" and ex.output == "logit"
    np.testing.assert_allclose(ex.model_output, model.decision_function(x[:4]), atol=1e-5)


def test_a_scaler_in_front_of_a_linear_model_is_refused_with_the_reason() -> None:
    from skl2onnx import to_onnx
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x, y2, _ = _data()
    pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(x, y2)
    onx = to_onnx(pipe, x[:1].astype(np.float32), options={"zipmap": False})
    with pytest.raises(UnsupportedGraph, match="Scaler node in front of it"):
        read_linear_model(onx.SerializeToString(), NAMES, input_tensor="X")


def test_an_mlp_is_neither_trees_nor_linear() -> None:
    from skl2onnx import to_onnx
    from sklearn.neural_network import MLPClassifier

    x, y2, _ = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mlp = MLPClassifier(hidden_layer_sizes=(4,), max_iter=50, random_state=0).fit(x, y2)
    onx = to_onnx(mlp, x[:1].astype(np.float32), options={"zipmap": False})
    with pytest.raises(UnsupportedGraph, match="neither a tree ensemble nor a linear model"):
        read_linear_model(onx.SerializeToString(), NAMES, input_tensor="X")
