"""Fold the string nodes in front of one-hot encoders into code tables, so the inputs take codes.

skl2onnx converts ``SimpleImputer(missing_values="", fill_value=...)`` before a
``OneHotEncoder`` into string nodes (``Concat``, ``ArrayFeatureExtractor``, ``LabelEncoder``,
``Cast``, ``Where``, ``Gather``) between the graph's string inputs and the encoders, so
:func:`modelgate.onnx.codes.code_string_inputs` cannot feed those inputs as codes and every
row's strings go through ONNX Runtime twice. :func:`fold_encoder_cones` removes those nodes:
each such input becomes int64 codes straight into its encoder (``cats_int64s = 0 .. k-1``),
and the string each code stands for is read off the original nodes.

Why the folded graph computes the same function:

* Only ops that treat a string by equality with the graph's own constants or pass it through
  unchanged are accepted (``LabelEncoder``, ``Concat``, ``ArrayFeatureExtractor``, ``Gather``,
  ``Where``, ``Identity``, ``Cast`` of non-strings, constants). Every string that is none of
  the graph's string constants therefore gives the outputs of any other such string.
* Which input each column of each tensor depends on is tracked through the nodes (all of them
  act row by row on ``[N, k]`` tensors), and each encoder must depend on exactly one input.
* The nodes and encoders are then run by ONNX Runtime on every string constant of the graph,
  ``""`` (a missing value) and two strings that are neither: each result must be a one-hot row
  or all zeros (the code, or ``-1``), the two unknown strings all zeros.

Anything else (another op, an encoder reading two inputs or with ``zeros=0``, a node's output
read elsewhere) leaves the graph as it is. The rewrite is made in memory, for the session
only: the verified archive is not touched.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["CodeTable", "fold_encoder_cones"]

_ML = "ai.onnx.ml"
#: Ops that read strings only by equality with constants or pass them through, row by row.
_ROW_OPS = {("", "Concat"), ("", "Gather"), ("", "Cast"), ("", "Where"), ("", "Identity"),
            ("", "Constant"), (_ML, "ArrayFeatureExtractor"), (_ML, "LabelEncoder")}
_ELEMENTWISE = {"Cast", "Where", "Identity", "LabelEncoder"}
_STRING = TensorProto.STRING


@dataclass(frozen=True, slots=True)
class CodeTable:
    """The codes one folded input takes.

    Attributes
    ----------
    labels : tuple of str
        The encoder's categories: code ``i`` stands for ``labels[i]``.
    aliases : mapping of str to int
        Other strings and their codes where the folded nodes mapped them (``""``, a missing
        value, to the imputer's fill value's code); any string in neither is code ``-1``.
    """

    labels: tuple[str, ...]
    aliases: Mapping[str, int]


class _NotFoldable(Exception):
    """The nodes in front of the encoders are not of the kind this module folds."""


#: Per tensor: its dtype is a string, and the graph inputs each of its columns depends on
#: (None for a constant, which broadcasts).
_Columns = tuple[bool, tuple[frozenset[str], ...] | None]


def fold_encoder_cones(model: onnx.ModelProto, inputs: set[str]) -> dict[str, CodeTable]:
    """Fold the nodes between string ``inputs`` and their one-hot encoders (``model`` in place).

    Parameters
    ----------
    model : onnx.ModelProto
        Changed in place when folding succeeds; left alone otherwise.
    inputs : set of str
        String graph inputs that may be folded (not graph outputs, not read in subgraphs).

    Returns
    -------
    dict of str to CodeTable
        The folded inputs (now int64 ``[N, 1]``) and their codes; empty when nothing folds.
    """
    graph = model.graph
    producer = {out: node for node in graph.node for out in node.output}
    sinks = [n for n in graph.node if _is_ignoring_encoder(n) and n.input[0] in producer]
    if not sinks:
        return {}
    try:
        cone = _cone(graph, sinks, producer, inputs, {t.name for t in graph.initializer})
        columns = _columns(graph, cone, inputs)
        feeding = {id(s): _single_input(columns[s.input[0]]) for s in sinks}
        if len(set(feeding.values())) != len(sinks):
            raise _NotFoldable("an input feeds more than one encoder")
        _check_closed(graph, cone, sinks, set(feeding.values()))
        tables = _code_tables(model, cone, sinks, feeding)
    except _NotFoldable:
        return {}
    _rewrite(graph, cone, sinks, feeding)
    return tables


def _is_ignoring_encoder(node: onnx.NodeProto) -> bool:
    attrs = {a.name: a for a in node.attribute}
    return (node.op_type == "OneHotEncoder" and node.domain == _ML and len(node.input) == 1
            and "cats_strings" in attrs and "cats_int64s" not in attrs
            and ("zeros" not in attrs or attrs["zeros"].i == 1))


def _cone(graph: onnx.GraphProto, sinks: list[onnx.NodeProto],
          producer: Mapping[str, onnx.NodeProto], inputs: set[str],
          initializers: set[str]) -> list[onnx.NodeProto]:
    """Every node the encoders' inputs are computed by, in graph order; all of accepted ops,
    reading only the foldable inputs and constants."""
    seen: dict[int, onnx.NodeProto] = {}
    stack = [s.input[0] for s in sinks]
    while stack:
        name = stack.pop()
        if name in inputs or name in initializers or name == "":
            continue
        node = producer.get(name)
        if node is None:
            raise _NotFoldable(f"{name!r} is a graph input that cannot be folded")
        if id(node) in seen:
            continue
        if (node.domain, node.op_type) not in _ROW_OPS:
            raise _NotFoldable(f"op {node.op_type}")
        seen[id(node)] = node
        stack.extend(node.input)
    return [n for n in graph.node if id(n) in seen]  # graph.node is in topological order


def _columns(graph: onnx.GraphProto, cone: list[onnx.NodeProto], inputs: set[str]
             ) -> dict[str, _Columns]:
    """Which input each column of each tensor depends on, through the cone's nodes."""
    known: dict[str, _Columns] = {}
    constants = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for value in graph.input:
        if value.name in inputs:
            dims = value.type.tensor_type.shape.dim
            if len(dims) != 2 or dims[1].dim_value != 1:
                continue  # not [N, 1]: an encoder reading it will not fold
            known[value.name] = (True, (frozenset({value.name}),))
    for name, array in constants.items():
        known[name] = (array.dtype.kind in "OSU", None)
    for node in cone:
        known[node.output[0]] = _node_columns(node, known, constants)
    return known


def _node_columns(node: onnx.NodeProto, known: Mapping[str, _Columns],
                  constants: Mapping[str, np.ndarray]) -> _Columns:
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if len(node.output) != 1 or any(i not in known for i in node.input):
        raise _NotFoldable(f"{node.op_type} reads an unknown tensor")
    args = [known[i] for i in node.input]
    if node.op_type == "Constant":
        value = attrs.get("value")
        if value is None:
            raise _NotFoldable("Constant without a tensor value")
        return (value.data_type == _STRING, None)
    if node.op_type == "Concat":
        if attrs.get("axis") not in (1, -1) or any(cols is None for _, cols in args):
            raise _NotFoldable("Concat other than of data columns")
        return (args[0][0], tuple(c for _, cols in args for c in cols or ()))
    if node.op_type in ("ArrayFeatureExtractor", "Gather"):
        return _selected(node, attrs, args[0], constants)
    return _elementwise(node, attrs, args)


def _selected(node: onnx.NodeProto, attrs: Mapping[str, object], data: _Columns,
              constants: Mapping[str, np.ndarray]) -> _Columns:
    """``ArrayFeatureExtractor`` or ``Gather(axis=1)`` of constant column indices."""
    is_string, cols = data
    index = constants.get(node.input[1])
    if cols is None or index is None or index.ndim != 1 or index.dtype.kind != "i":
        raise _NotFoldable(f"{node.op_type} other than of constant columns")
    if node.op_type == "Gather" and attrs.get("axis", 0) not in (1, -1):
        raise _NotFoldable("Gather along rows")
    width = len(cols)
    if ((index >= width) | (index < (-width if node.op_type == "Gather" else 0))).any():
        raise _NotFoldable(f"{node.op_type} index out of range")
    return (is_string, tuple(cols[int(i)] for i in index))


def _elementwise(node: onnx.NodeProto, attrs: Mapping[str, object],
                 args: list[_Columns]) -> _Columns:
    """Row-by-row ops: the columns' inputs united, one-column tensors broadcast."""
    if node.op_type == "Cast" and args[0][0]:
        raise _NotFoldable("Cast of strings (parses them)")
    widths = {len(cols) for _, cols in args if cols is not None} - {1}
    if len(widths) > 1:
        raise _NotFoldable("columns that do not line up")
    width = widths.pop() if widths else 1
    merged = tuple(frozenset().union(*(cols[0 if len(cols) == 1 else k]
                                       for _, cols in args if cols is not None))
                   for k in range(width))
    if node.op_type == "Cast":
        is_string = attrs.get("to") == _STRING
    elif node.op_type == "LabelEncoder":
        values = attrs.get("values_tensor")
        is_string = "values_strings" in attrs or (
            isinstance(values, onnx.TensorProto) and values.data_type == _STRING)
    elif node.op_type == "Where":
        is_string = args[1][0] or args[2][0]
    else:
        is_string = args[0][0]
    return (is_string, merged if any(cols is not None for _, cols in args) else None)


def _single_input(columns: _Columns) -> str:
    is_string, cols = columns
    if not is_string or cols is None or len(cols) != 1 or len(cols[0]) != 1:
        raise _NotFoldable("an encoder reads other than one string input")
    (name,) = cols[0]
    return name


def _check_closed(graph: onnx.GraphProto, cone: list[onnx.NodeProto],
                  sinks: list[onnx.NodeProto], folded: set[str]) -> None:
    """The cone's outputs and the folded inputs are read by the cone and the encoders only."""
    inside = {id(n) for n in cone} | {id(s) for s in sinks}
    produced = {o for n in cone for o in n.output} | folded
    outputs = {o.name for o in graph.output}
    if produced & outputs:
        raise _NotFoldable("a folded node's output is a graph output")
    read_outside = {i for n in graph.node if id(n) not in inside for i in n.input}
    if produced & read_outside:
        raise _NotFoldable("a folded node's output is read elsewhere")


def _string_constants(model: onnx.ModelProto, cone: list[onnx.NodeProto],
                      sinks: list[onnx.NodeProto]) -> set[str]:
    found: set[str] = {""}
    for node in [*cone, *sinks]:
        for attr in node.attribute:
            found.update(s.decode("utf-8") for s in attr.strings)
            if attr.type == onnx.AttributeProto.STRING:
                found.add(attr.s.decode("utf-8"))
            if attr.type == onnx.AttributeProto.TENSOR and attr.t.data_type == _STRING:
                found.update(s.decode("utf-8") for s in attr.t.string_data)
    for tensor in model.graph.initializer:
        if tensor.data_type == _STRING:
            found.update(s.decode("utf-8") for s in tensor.string_data)
    return found


def _unknown_strings(known: set[str]) -> list[str]:
    out: list[str] = []
    k = 0
    while len(out) < 2:
        candidate = f"\x00modelgate-unknown-{k}"
        if candidate not in known:
            out.append(candidate)
        k += 1
    return out


def _code_tables(model: onnx.ModelProto, cone: list[onnx.NodeProto], sinks: list[onnx.NodeProto],
                 feeding: Mapping[int, str]) -> dict[str, CodeTable]:
    """Run the cone and the encoders on every string constant, ``""`` and two unknown strings;
    read each input's codes off the one-hot rows."""
    import onnxruntime as ort

    known = _string_constants(model, cone, sinks)
    unknown = _unknown_strings(known)
    probes = np.array([*sorted(known), *unknown], dtype=object)
    inputs = sorted(set(feeding.values()))
    read = {i for n in [*cone, *sinks] for i in n.input}  # the model's weights stay out
    # each input runs through every probe; the others rotated, which the columns say is moot
    feeds = {name: np.roll(probes, k).reshape(-1, 1) for k, name in enumerate(inputs)}
    graph = helper.make_graph(
        [*cone, *sinks], "encoder_cone",
        [helper.make_tensor_value_info(n, _STRING, [None, 1]) for n in inputs],
        [helper.make_tensor_value_info(s.output[0], TensorProto.FLOAT, None) for s in sinks],
        initializer=[t for t in model.graph.initializer if t.name in read])
    probe = helper.make_model(graph, opset_imports=list(model.opset_import),
                              ir_version=model.ir_version)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(probe.SerializeToString(), sess_options=options,
                                       providers=["CPUExecutionProvider"])
        outs = session.run(None, feeds)
    except Exception as exc:  # noqa: BLE001 - ONNX Runtime's own errors: then nothing folds
        raise _NotFoldable(f"the cone does not run on its own: {exc}") from None
    tables = {}
    for sink, out in zip(sinks, outs, strict=True):
        name = feeding[id(sink)]
        rows = np.asarray(out).reshape(len(probes), -1)
        if not (np.isin(rows, (0.0, 1.0)).all() and (rows.sum(axis=1) <= 1).all()):
            raise _NotFoldable("an encoder's rows are not one-hot")
        codes = np.where(rows.any(axis=1), rows.argmax(axis=1), -1)
        seen = np.roll(codes, -inputs.index(name))  # back to the probes' order for this input
        labels = tuple(s.decode("utf-8") for s in
                       next(a for a in sink.attribute if a.name == "cats_strings").strings)
        position = {label: i for i, label in enumerate(labels)}
        if (seen[-len(unknown):] != -1).any():
            raise _NotFoldable("unknown strings do not give all-zero rows")
        aliases = {str(s): int(c) for s, c in zip(probes[:-len(unknown)], seen[:-len(unknown)],
                                                  strict=True)
                   if position.get(str(s), -1) != c}
        tables[name] = CodeTable(labels, aliases)
    return tables


def _rewrite(graph: onnx.GraphProto, cone: list[onnx.NodeProto], sinks: list[onnx.NodeProto],
             feeding: Mapping[int, str]) -> None:
    """The encoders read the int64 inputs directly; the cone and its constants go."""
    folded = {id(n) for n in cone}
    kept = [n for n in graph.node if id(n) not in folded]
    for sink in sinks:
        width = len(next(a for a in sink.attribute if a.name == "cats_strings").strings)
        keep = [a for a in sink.attribute if a.name != "cats_strings"]
        del sink.attribute[:]
        sink.attribute.extend([*keep, helper.make_attribute("cats_int64s", list(range(width)))])
        sink.input[0] = feeding[id(sink)]
    del graph.node[:]
    graph.node.extend(kept)
    read = ({i for n in graph.node for i in n.input} | {o.name for o in graph.output}
            | {v.name for v in graph.input})
    unused = [t for t in graph.initializer if t.name not in read]
    for tensor in unused:
        graph.initializer.remove(tensor)
    for value in graph.input:
        if value.name in set(feeding.values()):
            value.type.tensor_type.elem_type = TensorProto.INT64
