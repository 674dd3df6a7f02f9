"""Model archives from real converters: every task and layout packages, bad ones fail early.

skl2onnx (ZipMap on and off, float64, one input per column), LightGBM and XGBoost through
onnxmltools, 3-class and regression models: ``package`` fills what the graph says and
``verify`` accepts them; each mistake from issue #12 fails at ``package`` with a message
that names the fix.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from model_zoo import BUILDERS, build

from modelgate.artifact import ArtifactError, class_labels, package, verify


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
