"""Model archives from real converters: every task and layout packages, bad ones fail early.

skl2onnx (ZipMap on and off, float64, one input per column), LightGBM and XGBoost through
onnxmltools, 3-class and regression models: ``package`` fills what the graph says and
``verify`` accepts them; each mistake from issue #12 fails at ``package`` with a message
that names the fix.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.model_zoo import BUILDERS, build

from modelgate.onnx.artifact import ArtifactError, package, verify
from modelgate.onnx.graph_checks import class_labels
from modelgate.onnx.scoring import ModelScorer, ScoringError, SessionSettings, open_session, score_parquet


@pytest.mark.parametrize("name", list(BUILDERS), ids=list(BUILDERS))
def test_every_layout_packages_and_verifies(name: str, tmp_path: Path) -> None:
    zoo = build(name)
    archive = package(*zoo.write(tmp_path / "src"), tmp_path / "out")
    loaded = verify(archive)
    manifest = loaded.manifest
    assert manifest.task == zoo.draft.get("task", "binary_classification")
    assert class_labels(manifest, loaded.onnx_bytes) == zoo.classes
    if manifest.task == "binary_classification":
        assert zoo.classes is not None
        assert manifest.output.positive_index == zoo.classes.index(manifest.label.positive)


def test_package_fills_output_positive_index_and_opset(tmp_path: Path) -> None:
    zoo = build("sklearn-zipmap")  # classes ['bad', 'good'], outputs label + ZipMap
    archive = package(*zoo.write(tmp_path / "src", label={"column": "y_binary", "positive": "bad"}),
                      tmp_path / "out")
    manifest = verify(archive).manifest
    assert manifest.output.name == "output_probability"
    assert manifest.output.positive_index == 0
    assert manifest.opset is not None and manifest.opset >= 9


def test_xgboost_graph_without_ai_onnx_opset_needs_none(tmp_path: Path) -> None:
    manifest = verify(package(*build("xgboost").write(tmp_path / "src"), tmp_path / "out")).manifest
    assert manifest.opset is None and "opset" not in manifest.to_dict()


BAD = {
    "tensor-without-input_tensor": (
        "lightgbm-zipmap", {"input_tensor": None},
        "one tensor 'input' of shape [N, 3]: set \"input_tensor\": 'input'"),
    "tensor-with-too-few-features": (
        "lightgbm-zipmap", {"features": [{"name": "x1", "kind": "numeric"}]},
        "shape [N, 3] but the manifest lists 1 features"),
    "categorical-in-a-float-tensor": (
        "xgboost", {"features": [{"name": "x1", "kind": "numeric"}, {"name": "x2", "kind": "numeric"},
                                 {"name": "x3", "kind": "categorical"}]},
        "every feature must be numeric, but ['x3'] are categorical"),
    "positive-index-against-graph-classes": (
        "sklearn-zipmap", {"label": {"column": "y_binary", "positive": "bad"},
                           "output": {"name": "output_probability", "positive_index": 1}},
        "classes are ['bad', 'good'], so label.positive 'bad' is column 0: set positive_index to 0"),
    "positive-not-a-class": (
        "sklearn-zipmap", {"label": {"column": "y_binary", "positive": "Good"}},
        "label.positive 'Good' is not one of the model's classes ['bad', 'good']"),
    "positive-of-wrong-type": (
        "lightgbm-zipmap", {"label": {"column": "y_int", "positive": "1"}},
        "label.positive '1' is not one of the model's classes [0, 1]"),
    "regression-as-binary": (
        "sklearn-regression", {"task": None, "threshold": 0.5,
                               "label": {"column": "y_value", "positive": 1}},
        "holds one value per row, not class probabilities: for a regression model set "
        "\"task\": \"regression\""),
    "3-class-as-binary": (
        "lightgbm-3-class", {"task": None, "threshold": 0.5, "label": {"column": "y_3", "positive": 1}},
        "has 3 classes but the manifest task is binary_classification: set \"task\": "
        "\"multiclass_classification\""),
    "binary-as-multiclass": (
        "xgboost", {"task": "multiclass_classification", "threshold": None,
                    "label": {"column": "y_int"}},
        "has 2 classes but the manifest task is multiclass_classification"),
    "classifier-as-regression": (
        "xgboost", {"task": "regression", "threshold": None, "label": {"column": "y_int"},
                    "output": {"name": "probabilities"}},
        "of a classifier (classes [0, 1]) cannot be read for task regression"),
    "label-output-named": (
        "sklearn-no-zipmap", {"output": {"name": "label"}},
        "output 'label' holds predicted labels, not class probabilities: set output.name to "
        "'probabilities'"),
    "wrong-opset": (
        "sklearn-no-zipmap", {"opset": 3},
        "manifest key 'opset': expected the graph's ai.onnx opset"),
    "manifest-classes-disagree": (
        "lightgbm-3-class", {"output": {"name": "probabilities", "classes": [2, 1, 0]}},
        "the graph declares classes [0, 1, 2], the manifest [2, 1, 0]"),
}


@pytest.mark.parametrize(("name", "changes", "message"), BAD.values(), ids=list(BAD))
def test_bad_manifest_fails_at_package_naming_the_fix(name: str, changes: dict, message: str,
                                                      tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match=re.escape(message)):
        package(*build(name).write(tmp_path / "src", **changes), tmp_path / "out")
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


# --- scoring: every layout gives the native model's numbers ------------------------------------

def _scorer(name: str, tmp_path: Path) -> ModelScorer:
    archive = package(*build(name).write(tmp_path / "src"), tmp_path / "out")
    return open_session(verify(archive), SessionSettings(provider="cpu", intra_op_threads=1))


# float32 graphs agree with the native float64 models to float32 precision; the float64 graph
# agrees to 1e-9.
TOLERANCE = {"sklearn-double": 1e-9}


@pytest.mark.parametrize("name", list(BUILDERS), ids=list(BUILDERS))
def test_scores_equal_the_native_model(name: str, tmp_path: Path) -> None:
    zoo, scorer = build(name), _scorer(name, tmp_path)
    atol = TOLERANCE.get(name, 2e-5)
    if scorer.manifest.task == "regression":
        np.testing.assert_allclose(scorer.predict_value(zoo.frame), zoo.native, rtol=1e-5, atol=1e-4)
        return
    np.testing.assert_allclose(scorer.predict_class_proba(zoo.frame), zoo.native, atol=atol)
    if scorer.manifest.task == "binary_classification":
        index = scorer.manifest.output.positive_index
        np.testing.assert_allclose(scorer.predict_proba(zoo.frame), zoo.native[:, index], atol=atol)


def test_zipmap_is_rewritten_to_a_tensor(tmp_path: Path) -> None:
    scorer = _scorer("sklearn-zipmap", tmp_path)
    (output,) = [o for o in scorer.session.get_outputs() if o.name == "output_probability"]
    assert output.type == "tensor(float)"


def test_double_and_int64_inputs_are_fed_in_their_own_type(tmp_path: Path) -> None:
    scorer = _scorer("sklearn-columns", tmp_path)
    feeds = scorer.feeds(build("sklearn-columns").frame)
    assert {k: v.dtype.name for k, v in feeds.items()} == {"x1": "float64", "x2": "int64",
                                                          "x3": "float32"}


@pytest.mark.parametrize(("values", "message"), [
    ([1.0, np.nan, 3.0], "1 rows are missing (NaN) and the graph takes this feature as INT64"),
    ([1.0, 2.5, 3.0], "1 rows are not whole numbers"),
], ids=["missing", "fractional"])
def test_int64_input_refuses_what_it_cannot_hold(values: list[float], message: str,
                                                 tmp_path: Path) -> None:
    scorer = _scorer("sklearn-columns", tmp_path)
    frame = pd.DataFrame({"x1": [0.1, 0.2, 0.3], "x2": values, "x3": [0.0, 1.0, 2.0]})
    with pytest.raises(ScoringError, match=re.escape(f"column 'x2': {message}")):
        scorer.feeds(frame)


def test_missing_value_error_names_allow_missing(tmp_path: Path) -> None:
    scorer = _scorer("xgboost", tmp_path)
    frame = build("xgboost").frame.head(5).copy()
    frame.loc[2, "x3"] = np.nan
    with pytest.raises(ScoringError, match="column 'x3': 1 rows are missing.*\"allow_missing\": true"):
        scorer.predict_proba(frame)


def test_task_specific_predictions_refuse_the_other_tasks(tmp_path: Path) -> None:
    frame = build("sklearn-regression").frame
    with pytest.raises(ScoringError, match="regression model: use predict_value"):
        _scorer("sklearn-regression", tmp_path / "r").predict_class_proba(frame)
    with pytest.raises(ScoringError, match="predict_proba is for task binary_classification"):
        _scorer("lightgbm-3-class", tmp_path / "m").predict_proba(frame)


@pytest.mark.parametrize(("name", "columns"), [
    ("xgboost", ["row", "score", "prediction"]),
    ("lightgbm-3-class", ["row", "score", "prediction", "proba_0", "proba_1", "proba_2"]),
    ("sklearn-regression", ["row", "prediction"]),
], ids=["binary", "multiclass", "regression"])
def test_score_parquet_writes_each_tasks_columns(name: str, columns: list[str],
                                                 tmp_path: Path) -> None:
    zoo, scorer = build(name), _scorer(name, tmp_path)
    data = zoo.frame.assign(row=np.arange(len(zoo.frame)))
    pq.write_table(pa.Table.from_pandas(data, preserve_index=False), tmp_path / "in.parquet")
    score_parquet(scorer, tmp_path / "in.parquet", tmp_path / "out.parquet", batch_rows=100,
                  id_column="row")
    out = pq.read_table(tmp_path / "out.parquet").to_pandas()
    assert list(out.columns) == columns
    if scorer.manifest.task == "regression":
        np.testing.assert_allclose(out["prediction"], zoo.native, rtol=1e-5, atol=1e-4)
    elif scorer.manifest.task == "multiclass_classification":
        np.testing.assert_array_equal(out["prediction"], zoo.native.argmax(axis=1))
        np.testing.assert_allclose(out[["proba_0", "proba_1", "proba_2"]], zoo.native, atol=2e-5)
    else:
        np.testing.assert_allclose(out["score"], zoo.native[:, 1], atol=2e-5)
        np.testing.assert_array_equal(out["prediction"], (out["score"] >= 0.5).astype(np.int8))
