"""Exact interventional TreeSHAP read from ONNX graphs, against shap.TreeExplainer on the
ORIGINAL models (skl2onnx and onnxmltools conversions), additivity against ONNX Runtime,
and the graphs the reader refuses (with the reason the caller falls back on).

HistGradientBoosting is not here: skl2onnx 1.20 with onnx 1.23 cannot convert it (it
writes booleans into an int attribute), so there is no graph to read.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import onnxruntime as ort
import pandas as pd
import pytest
from modelgate.reports.exact_explanation import explain_trees
from modelgate.reports.onnx_trees import UnsupportedGraph, read_tree_ensemble, tree_scores
from modelgate.reports.tree_shap import interventional_tree_shap

N_FEATURES = 5
NAMES = [f"f{i}" for i in range(N_FEATURES)]


def _data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """float32-valued features (the graph reads float32: no split flips between the
    original's thresholds and the graph's), a binary and a 3-class label."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(240, N_FEATURES)).astype(np.float32).astype(np.float64)
    signal = x[:, 0] - x[:, 1] * x[:, 2] + 0.5 * x[:, 3] + rng.normal(scale=0.5, size=len(x))
    return x, (signal > 0).astype(np.int64), np.digitize(signal, [-0.7, 0.7]).astype(np.int64)


def _float_input(n: int = N_FEATURES) -> list[tuple[str, Any]]:
    from onnxmltools.convert.common.data_types import FloatTensorType

    return [("input", FloatTensorType([None, n]))]


def _sk(model: Any, x: np.ndarray) -> bytes:
    from skl2onnx import to_onnx

    options = {"zipmap": False} if hasattr(model, "classes_") else None
    return to_onnx(model, x[:1].astype(np.float32), options=options).SerializeToString()


def _lgb(model: Any, x: np.ndarray) -> bytes:
    from onnxmltools import convert_lightgbm

    return convert_lightgbm(model, initial_types=_float_input(), zipmap=False).SerializeToString()


def _xgb(model: Any, x: np.ndarray) -> bytes:
    from onnxmltools import convert_xgboost

    return convert_xgboost(model, initial_types=_float_input()).SerializeToString()


def _models() -> dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[Any, bytes]]]:
    import lightgbm
    import xgboost
    from sklearn.ensemble import (
        ExtraTreesClassifier,
        GradientBoostingClassifier,
        GradientBoostingRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )

    def fit(make: Callable[[], Any], target: str, convert: Callable[[Any, np.ndarray], bytes]) -> Any:
        def build(x: np.ndarray, y2: np.ndarray, y3: np.ndarray) -> tuple[Any, bytes]:
            y = {"binary": y2, "3-class": y3, "value": x[:, 0] * 2 - x[:, 1] * x[:, 4]}[target]
            model = make().fit(x.astype(np.float32), y)
            return model, convert(model, x)
        return build

    return {
        "random-forest-binary": fit(lambda: RandomForestClassifier(5, max_depth=4, random_state=0),
                                    "binary", _sk),
        "extra-trees-3-class": fit(lambda: ExtraTreesClassifier(4, max_depth=4, random_state=0),
                                   "3-class", _sk),
        "gradient-boosting-binary": fit(lambda: GradientBoostingClassifier(
            n_estimators=5, max_depth=3, random_state=0), "binary", _sk),
        "random-forest-regressor": fit(lambda: RandomForestRegressor(4, max_depth=4, random_state=0),
                                       "value", _sk),
        "gradient-boosting-regressor": fit(lambda: GradientBoostingRegressor(
            n_estimators=5, max_depth=3, random_state=0), "value", _sk),
        "lightgbm-binary": fit(lambda: lightgbm.LGBMClassifier(
            n_estimators=6, num_leaves=7, min_child_samples=5, verbose=-1), "binary", _lgb),
        "lightgbm-3-class": fit(lambda: lightgbm.LGBMClassifier(
            n_estimators=4, num_leaves=5, min_child_samples=5, verbose=-1), "3-class", _lgb),
        "xgboost-binary": fit(lambda: xgboost.XGBClassifier(
            n_estimators=6, max_depth=3, n_jobs=1), "binary", _xgb),
        "xgboost-3-class": fit(lambda: xgboost.XGBClassifier(
            n_estimators=4, max_depth=3, n_jobs=1), "3-class", _xgb),
        "xgboost-regressor": fit(lambda: xgboost.XGBRegressor(
            n_estimators=6, max_depth=3, n_jobs=1), "value", _xgb),
    }


MODELS = sorted(_models())


def _shap_oracle(model: Any, x: np.ndarray, background: np.ndarray) -> np.ndarray:
    """shap's interventional values of the original model: (rows, features, outputs)."""
    import shap

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        explainer = shap.TreeExplainer(model, data=background.astype(np.float32),
                                       feature_perturbation="interventional", model_output="raw")
        values = np.asarray(explainer.shap_values(x.astype(np.float32), check_additivity=False))
    if values.ndim == 2:
        return values[:, :, None]
    return values if values.shape[0] == len(x) else np.moveaxis(values, 0, -1)


@pytest.mark.parametrize("name", MODELS, ids=str)
def test_values_equal_shap_tree_explainer_on_the_original_model(name: str) -> None:
    x, y2, y3 = _data()
    model, onnx_bytes = _models()[name](x, y2, y3)
    trees = read_tree_ensemble(onnx_bytes, NAMES, input_tensor="input" if "gbm" in name or "xgb" in name
                               else "X")
    rows, background = x[:8], x[100:140]
    ours = interventional_tree_shap(trees, rows, background)
    values = ours.values @ trees.columns.T  # the graph's output columns, margin space
    expected = _shap_oracle(model, rows, background)
    if expected.shape[2] == 1 and values.shape[2] == 2:  # shap gives the positive class only
        values = values[:, :, 1:]
    np.testing.assert_allclose(values, expected, atol=1e-6)
    np.testing.assert_allclose(ours.base_values + ours.values.sum(axis=1), ours.scores, atol=1e-12)


@pytest.mark.parametrize("name", [m for m in MODELS if "regressor" not in m], ids=str)
def test_margin_is_the_logit_or_log_of_what_onnx_runtime_returns(name: str) -> None:
    """Additivity against the graph: base + sum(values) is the margin, whose transform is ORT's
    probability (logit of the probability for a sigmoid; log-ratios for a softmax)."""
    x, y2, y3 = _data()
    _, onnx_bytes = _models()[name](x, y2, y3)
    input_name = "input" if "gbm" in name or "xgb" in name else "X"
    trees = read_tree_ensemble(onnx_bytes, NAMES, input_tensor=input_name)
    proba = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"]).run(
        None, {input_name: x[:8].astype(np.float32)})[1]
    ours = interventional_tree_shap(trees, x[:8], x[100:140])
    margin = (ours.base_values + ours.values.sum(axis=1)) @ trees.columns.T + trees.offset
    if trees.post_transform == "NONE":
        np.testing.assert_allclose(margin, proba, atol=1e-5)
    elif margin.shape[1] == 2:  # sigmoid: the positive class's margin is its log-odds
        np.testing.assert_allclose(margin[:, 1], np.log(proba[:, 1] / proba[:, 0]), atol=1e-4)
    else:  # softmax: margins differ by the log-ratios of the probabilities
        np.testing.assert_allclose(margin - margin[:, :1], np.log(proba / proba[:, :1]), atol=1e-4)


def test_explain_trees_gives_an_exact_labelled_explanation_for_a_binary_lightgbm() -> None:
    x, y2, y3 = _data()
    model, onnx_bytes = _models()["lightgbm-binary"](x, y2, y3)
    trees = read_tree_ensemble(onnx_bytes, NAMES, input_tensor="input")
    session = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])

    def proba(frame: pd.DataFrame) -> np.ndarray:
        return session.run(None, {"input": frame.to_numpy(dtype=np.float32)})[1]

    frame = pd.DataFrame(x, columns=NAMES)
    ex = explain_trees(trees, proba, frame.iloc[:5], frame.iloc[40:240], features=NAMES, columns=1,
                       seed=3, background_size=60)
    assert ex.algorithm == "tree_interventional" and ex.output == "logit"
    assert ex.budget.background_size == 60 and not ex.standard_errors.any()
    np.testing.assert_allclose(ex.model_output, model.predict(x[:5].astype(np.float32), raw_score=True),
                               atol=1e-5)
    np.testing.assert_allclose(ex.base_values + ex.values.sum(axis=1), ex.model_output, atol=1e-9)
    # the same 60 background rows as the masker's seeded subsample
    bg = frame.iloc[40:240].iloc[np.sort(np.random.default_rng(3).choice(200, 60, replace=False))]
    np.testing.assert_allclose(ex.values, _shap_oracle(model, x[:5], bg.to_numpy())[:, :, 0], atol=1e-6)


def test_trees_read_through_a_concat_of_one_column_inputs() -> None:
    """Per-column graph inputs joined by a Concat (as skl2onnx joins columns) map back to
    the manifest's features; ONNX Runtime gives the same output as the trees."""
    import onnx
    from onnx import TensorProto, helper
    from sklearn.ensemble import RandomForestRegressor

    x, _, _ = _data()
    model = RandomForestRegressor(3, max_depth=3, random_state=0).fit(x[:, [2, 0, 1]], x[:, 0])
    onx = onnx.load_from_string(_sk(model, x[:, [2, 0, 1]]))
    # graph inputs in the order f2, f0, f1, one column each; the manifest lists f0..f4
    parts = ("f2", "f0", "f1")
    onx.graph.node.insert(0, helper.make_node("Concat", list(parts), ["X"], axis=1))
    del onx.graph.input[:]
    onx.graph.input.extend(helper.make_tensor_value_info(n, TensorProto.FLOAT, [None, 1]) for n in parts)
    trees = read_tree_ensemble(onx.SerializeToString(), NAMES)
    assert trees.input_columns == (2, 0, 1)
    got = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {n: x[:20, [NAMES.index(n)]].astype(np.float32) for n in parts})[0]
    np.testing.assert_allclose(tree_scores(trees, x[:20]), got, atol=1e-5)


def test_a_graph_with_a_scaler_in_front_of_the_trees_is_refused_with_the_reason() -> None:
    from skl2onnx import to_onnx
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x, y2, _ = _data()
    pipe = make_pipeline(StandardScaler(), RandomForestClassifier(3, max_depth=3, random_state=0))
    onx = to_onnx(pipe.fit(x.astype(np.float32), y2), x[:1].astype(np.float32),
                  options={"zipmap": False})
    with pytest.raises(UnsupportedGraph, match="Scaler node in front of it"):
        read_tree_ensemble(onx.SerializeToString(), NAMES, input_tensor="X")


def test_a_graph_without_trees_is_refused() -> None:
    from skl2onnx import to_onnx
    from sklearn.linear_model import LogisticRegression

    x, y2, _ = _data()
    onx = to_onnx(LogisticRegression().fit(x, y2), x[:1].astype(np.float32), options={"zipmap": False})
    with pytest.raises(UnsupportedGraph, match="0 tree ensemble node"):
        read_tree_ensemble(onx.SerializeToString(), NAMES, input_tensor="X")


def test_a_graph_whose_output_is_not_the_trees_is_refused_before_explaining() -> None:
    """The check against the graph: an output the trees do not reproduce is refused."""
    x, y2, y3 = _data()
    _, onnx_bytes = _models()["gradient-boosting-binary"](x, y2, y3)
    trees = read_tree_ensemble(onnx_bytes, NAMES, input_tensor="X")
    frame = pd.DataFrame(x, columns=NAMES)
    with pytest.raises(UnsupportedGraph, match="differs from its trees'"):
        explain_trees(trees, lambda f: np.full((len(f), 2), 0.5), frame.iloc[:3], frame.iloc[10:30],
                      features=NAMES, columns=1)


def test_missing_values_follow_the_graph_and_stay_additive() -> None:
    """LightGBM sends NaN the way nodes_missing_value_tracks_true says; ORT agrees."""
    x, y2, y3 = _data()
    _, onnx_bytes = _models()["lightgbm-binary"](x, y2, y3)
    trees = read_tree_ensemble(onnx_bytes, NAMES, input_tensor="input")
    rows = x[:6].copy()
    rows[::2, 0] = np.nan
    proba = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"]).run(
        None, {"input": rows.astype(np.float32)})[1]
    ours = interventional_tree_shap(trees, rows, x[100:130])
    np.testing.assert_allclose(ours.scores[:, 0], np.log(proba[:, 1] / proba[:, 0]), atol=1e-4)
    np.testing.assert_allclose(ours.base_values + ours.values.sum(axis=1), ours.scores, atol=1e-12)


def test_a_stump_matches_the_hand_computed_values() -> None:
    """One split on f0 (leaf 1 if f0 <= 0.5 else 3) and f1 never read: against background
    rows (0, 0) and (1, 5), row (1, 0) gets f0 = 3 - mean(1, 3) = 1 and f1 = 0."""
    from onnx import TensorProto, helper

    node = helper.make_node(
        "TreeEnsembleRegressor", ["x"], ["y"], domain="ai.onnx.ml", n_targets=1,
        nodes_treeids=[0, 0, 0], nodes_nodeids=[0, 1, 2], nodes_featureids=[0, 0, 0],
        nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"], nodes_values=[0.5, 0.0, 0.0],
        nodes_truenodeids=[1, 0, 0], nodes_falsenodeids=[2, 0, 0],
        target_treeids=[0, 0], target_nodeids=[1, 2], target_ids=[0, 0], target_weights=[1.0, 3.0])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 1])])
    trees = read_tree_ensemble(helper.make_model(graph), ["a", "b"], input_tensor="x")
    out = interventional_tree_shap(trees, [[1.0, 0.0]], [[0.0, 0.0], [1.0, 5.0]])
    assert out.values[:, :, 0].tolist() == [[1.0, 0.0]] and out.base_values.tolist() == [2.0]


def test_a_waterfall_of_tree_values_draws_without_error_bars() -> None:
    from modelgate.reports.waterfall import waterfall_png

    x, y2, y3 = _data()
    _, onnx_bytes = _models()["xgboost-binary"](x, y2, y3)
    trees = read_tree_ensemble(onnx_bytes, NAMES, input_tensor="input")
    session = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
    frame = pd.DataFrame(x, columns=NAMES)
    ex = explain_trees(trees, lambda f: session.run(None, {"input": f.to_numpy(dtype=np.float32)})[1],
                       frame.iloc[:2], frame.iloc[50:90], features=NAMES, columns=1)
    assert waterfall_png(ex, 0).startswith(b"\x89PNG")
