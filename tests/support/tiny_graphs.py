"""Hand-built ONNX models whose scores are closed forms, packaged like real archives.

``binary(elem)``: one input ``x`` of ONNX type ``elem`` -> p = logistic(x / 1000), output
``probabilities`` ``[1 - p, p]``. ``three_class()``: x (FLOAT) -> softmax([x, 0, -x]) over
classes 0, 1, 2. The expected scores are therefore ``scipy.special.expit`` and
``scipy.special.softmax`` of the inputs, independent of the scorer. ``wide_class_graph(width)``:
x (FLOAT) -> softmax(x * w) with ``w = linspace(-1, 1, width)``, a declared ``[None, width]`` output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import onnx
from onnx import TensorProto, helper

from modelgate.onnx.artifact import LoadedModel, package, verify
from modelgate.onnx.manifest import Manifest

TYPES = {"INT64": TensorProto.INT64, "INT32": TensorProto.INT32, "FLOAT": TensorProto.FLOAT,
         "DOUBLE": TensorProto.DOUBLE}
SCALE = 1e-3  # keeps huge inputs inside float32 through the sigmoid


def _model(nodes: list[Any], x: Any, width: int, init: list[Any]) -> bytes:
    out = helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, width])
    graph = helper.make_graph(nodes, "tiny", [x], [out], initializer=init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model.SerializeToString()


def binary_graph(elem: str) -> bytes:
    x = helper.make_tensor_value_info("x", TYPES[elem], [None, 1])
    nodes = [helper.make_node("Cast", ["x"], ["xf"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["xf", "scale"], ["z"]),
             helper.make_node("Sigmoid", ["z"], ["p"]),
             helper.make_node("Sub", ["one", "p"], ["q"]),
             helper.make_node("Concat", ["q", "p"], ["probabilities"], axis=1)]
    init = [helper.make_tensor("one", TensorProto.FLOAT, [1, 1], [1.0]),
            helper.make_tensor("scale", TensorProto.FLOAT, [1, 1], [SCALE])]
    return _model(nodes, x, 2, init)


def three_class_graph() -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 1])
    nodes = [helper.make_node("Mul", ["x", "zero"], ["o"]),
             helper.make_node("Neg", ["x"], ["n"]),
             helper.make_node("Concat", ["x", "o", "n"], ["logits"], axis=1),
             helper.make_node("Softmax", ["logits"], ["probabilities"], axis=1)]
    return _model(nodes, x, 3, [helper.make_tensor("zero", TensorProto.FLOAT, [1, 1], [0.0])])


def wide_class_graph(width: int) -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 1])
    weights = [-1.0 + 2.0 * k / (width - 1) for k in range(width)]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["logits"]),
             helper.make_node("Softmax", ["logits"], ["probabilities"], axis=1)]
    return _model(nodes, x, width, [helper.make_tensor("w", TensorProto.FLOAT, [1, width], weights)])


def archive(where: Path, onnx_bytes: bytes, **manifest: Any) -> LoadedModel:
    """Package ``onnx_bytes`` with a manifest of one numeric feature ``x`` (overridable)."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "model.onnx").write_bytes(onnx_bytes)
    base: dict[str, Any] = {
        "format_version": 1, "name": "tiny", "version": "1",
        "features": [{"name": "x", "kind": "numeric"}],
        "label": {"column": "y", "positive": 1}, "threshold": 0.5,
        "output": {"name": "probabilities", "positive_index": 1},
        "sensitive_features": [], "id_column": "row_id"}
    (where / "manifest.json").write_text(json.dumps({**base, **manifest}))
    return verify(package(where / "model.onnx", where / "manifest.json", where / "dist"))


def manifest_of(name: str = "m", version: str = "1", **keys: Any) -> Manifest:
    """A valid binary manifest (one numeric feature ``x``, label ``y``) for a registry row that
    needs one but no archive; ``keys`` replace or add top-level manifest keys."""
    base = {"format_version": 1, "name": name, "version": version, "sha256": "0" * 64,
            "features": [{"name": "x", "kind": "numeric"}], "label": {"column": "y", "positive": 1},
            "output": {"name": "probabilities", "positive_index": 1}, "threshold": 0.5,
            "sensitive_features": []}
    return Manifest.from_dict({**base, **keys})
