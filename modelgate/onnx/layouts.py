"""What an ONNX graph takes and gives: input tensors, output kinds, class labels, opset.

Converters lay models out differently: skl2onnx gives one input per column or one
``[N, F]`` tensor, a ``label`` output next to the probabilities, and by default wraps the
probabilities in a ``ZipMap`` (a sequence of ``{class: probability}`` maps); onnxmltools
gives LightGBM and XGBoost models one float ``[N, F]`` input; regressors give a float
``variable`` ``[N, 1]``. :func:`describe_graph` reads that layout once so the manifest can
be checked against it, and :func:`unzip_probabilities` rewrites a ``ZipMap`` away so the
scorer always reads a plain ``[N, C]`` tensor (same numbers, no Python dict per row).

Class labels come from the ``ai.onnx.ml`` nodes that declare them (``ZipMap``,
``LinearClassifier``, ``TreeEnsembleClassifier``, ``SVMClassifier``), or from the
``classes`` initializer skl2onnx feeds to an ``ArrayFeatureExtractor`` when it builds the
label from an ``ArgMax`` (its float64 path). Hand-written because neither ONNX nor ONNX
Runtime exposes a model's layout in these terms.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["GraphLayout", "GraphOutput", "TensorInput", "describe_graph", "unzip_probabilities"]

_ML_DOMAIN = "ai.onnx.ml"
#: ai.onnx.ml nodes that declare class labels (attributes ``classlabels_*``).
_CLASSIFIERS = ("ZipMap", "LinearClassifier", "TreeEnsembleClassifier", "SVMClassifier")
_FLOATS = (TensorProto.FLOAT, TensorProto.DOUBLE)

OutputKind = Literal["probabilities", "zipmap", "label", "values", "other"]


@dataclass(frozen=True, slots=True)
class TensorInput:
    """One graph input: element type name (``"FLOAT"``...) and shape (None: unknown dim)."""

    name: str
    elem_type: str
    shape: tuple[int | None, ...]


@dataclass(frozen=True, slots=True)
class GraphOutput:
    """One graph output and what it holds.

    ``kind`` is ``"probabilities"`` (float ``[N, C]``), ``"zipmap"`` (a sequence of maps),
    ``"label"`` (int64 or string predicted labels), ``"values"`` (float ``[N]`` or
    ``[N, 1]``: a regression output) or ``"other"``. ``width`` is ``C`` when the graph
    states it.
    """

    name: str
    kind: OutputKind
    width: int | None


@dataclass(frozen=True, slots=True)
class GraphLayout:
    """The layout of a graph, as :func:`describe_graph` reads it."""

    inputs: Mapping[str, TensorInput]
    outputs: tuple[GraphOutput, ...]
    class_labels: tuple[str, ...] | tuple[int, ...] | None
    opset: int | None

    def output(self, name: str) -> GraphOutput | None:
        """The output called ``name``, or None."""
        return next((o for o in self.outputs if o.name == name), None)


def _dims(type_: onnx.TypeProto) -> tuple[int | None, ...]:
    return tuple(d.dim_value if d.HasField("dim_value") else None
                 for d in type_.tensor_type.shape.dim)


def _output_kind(type_: onnx.TypeProto, has_classes: bool) -> tuple[OutputKind, int | None]:
    which = type_.WhichOneof("value")
    if which == "sequence_type" and type_.sequence_type.elem_type.WhichOneof("value") == "map_type":
        return "zipmap", None
    if which != "tensor_type":
        return "other", None
    elem, dims = type_.tensor_type.elem_type, _dims(type_)
    if elem in (TensorProto.INT64, TensorProto.STRING) and len(dims) <= 2:
        return "label", None
    if elem not in _FLOATS or len(dims) not in (1, 2):
        return "other", None
    width = dims[1] if len(dims) == 2 else 1
    if width == 1:
        return "values", 1
    if width is None and not has_classes:
        return "values", None
    return "probabilities", width


def _node_labels(node: onnx.NodeProto) -> tuple[str, ...] | tuple[int, ...] | None:
    for attr in node.attribute:
        if attr.name == "classlabels_strings" and attr.strings:
            return tuple(s.decode("utf-8") for s in attr.strings)
        if attr.name in ("classlabels_int64s", "classlabels_ints") and attr.ints:
            return tuple(int(i) for i in attr.ints)
    return None


def _initializer_labels(graph: onnx.GraphProto) -> tuple[str, ...] | tuple[int, ...] | None:
    """skl2onnx's float64 classifiers: ``ArrayFeatureExtractor(classes, ArgMax(...))``."""
    initializers = {i.name: i for i in graph.initializer}
    for node in graph.node:
        if node.op_type == "ArrayFeatureExtractor" and node.input and node.input[0] in initializers:
            values = numpy_helper.to_array(initializers[node.input[0]]).ravel()
            if values.dtype.kind in "iu":
                return tuple(int(v) for v in values)
            if values.dtype.kind in "OSU":
                return tuple(v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in values)
    return None


def _class_labels(graph: onnx.GraphProto) -> tuple[str, ...] | tuple[int, ...] | None:
    found = {labels for node in graph.node
             if node.domain == _ML_DOMAIN and node.op_type in _CLASSIFIERS
             and (labels := _node_labels(node)) is not None}
    if len(found) == 1:
        return found.pop()
    if len(found) > 1:  # e.g. a stacked model: no single answer, the manifest must say
        return None
    return _initializer_labels(graph)


def _opset(model: onnx.ModelProto) -> int | None:
    versions = {o.version for o in model.opset_import if o.domain in ("", "ai.onnx")}
    return max(versions) if versions else None


def describe_graph(model: onnx.ModelProto) -> GraphLayout:
    """Read a graph's inputs, outputs (with their kind), class labels and ai.onnx opset.

    Parameters
    ----------
    model : onnx.ModelProto
        A parsed ONNX model.

    Returns
    -------
    GraphLayout
        ``opset`` is the highest ai.onnx opset imported (None when the graph imports only
        ``ai.onnx.ml``, as onnxmltools' XGBoost models do).

    Examples
    --------
    >>> x = helper.make_tensor_value_info("input", TensorProto.FLOAT, [None, 2])
    >>> label = helper.make_tensor_value_info("label", TensorProto.STRING, [None])
    >>> proba = helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, 2])
    >>> clf = helper.make_node("LinearClassifier", ["input"], ["label", "probabilities"],
    ...                        domain="ai.onnx.ml", classlabels_strings=["bad", "good"],
    ...                        coefficients=[1.0, 0.0, -1.0, 0.0], post_transform="SOFTMAX")
    >>> model = helper.make_model(helper.make_graph([clf], "g", [x], [label, proba]),
    ...     opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 1)])
    >>> layout = describe_graph(model)
    >>> layout.class_labels, layout.opset, [(o.name, o.kind) for o in layout.outputs]
    (('bad', 'good'), 17, [('label', 'label'), ('probabilities', 'probabilities')])
    >>> layout.inputs["input"].elem_type, layout.inputs["input"].shape
    ('FLOAT', (None, 2))
    """
    graph = model.graph
    initializers = {i.name for i in graph.initializer}
    inputs = {i.name: TensorInput(i.name, TensorProto.DataType.Name(i.type.tensor_type.elem_type),
                                  _dims(i.type))
              for i in graph.input if i.name not in initializers}
    labels = _class_labels(graph)
    outputs = tuple(GraphOutput(o.name, *_output_kind(o.type, labels is not None))
                    for o in graph.output)
    return GraphLayout(MappingProxyType(inputs), outputs, labels, _opset(model))


def unzip_probabilities(onnx_bytes: bytes, output: str) -> bytes:
    """Replace the ``ZipMap`` that produces ``output`` by an ``Identity`` of its tensor.

    The output keeps its name and becomes the float ``[N, C]`` tensor the ``ZipMap`` was
    built from (columns in the ZipMap's ``classlabels`` order): the same numbers, without
    building a Python dict per row. Bytes are returned unchanged when ``output`` is not
    made by a ``ZipMap``.

    Parameters
    ----------
    onnx_bytes : bytes
        A serialised ONNX model.
    output : str
        The graph output to rewrite.

    Returns
    -------
    bytes

    Examples
    --------
    >>> p = helper.make_tensor_value_info("p", TensorProto.FLOAT, [None, 2])
    >>> z = helper.make_value_info("zipped", helper.make_sequence_type_proto(
    ...     helper.make_map_type_proto(TensorProto.INT64,
    ...                                helper.make_tensor_type_proto(TensorProto.FLOAT, []))))
    >>> node = helper.make_node("ZipMap", ["p"], ["zipped"], domain="ai.onnx.ml",
    ...                         classlabels_int64s=[0, 1])
    >>> model = helper.make_model(helper.make_graph([node], "g", [p], [z]),
    ...     opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 1)])
    >>> plain = onnx.load_from_string(unzip_probabilities(model.SerializeToString(), "zipped"))
    >>> [n.op_type for n in plain.graph.node], describe_graph(plain).outputs[0].kind
    (['Identity'], 'probabilities')
    """
    model = onnx.load_from_string(onnx_bytes)
    graph = model.graph
    node = next((n for n in graph.node if output in n.output), None)
    if node is None or node.op_type != "ZipMap" or node.domain != _ML_DOMAIN:
        return onnx_bytes
    index = list(graph.node).index(node)
    graph.node.remove(node)
    graph.node.insert(index, helper.make_node("Identity", [node.input[0]], [output],
                                              name=f"{node.name or 'zipmap'}_unzipped"))
    labels = _node_labels(node)
    width = len(labels) if labels is not None else None
    for value in graph.output:
        if value.name == output:
            value.CopyFrom(helper.make_tensor_value_info(output, TensorProto.FLOAT, [None, width]))
    return model.SerializeToString()
