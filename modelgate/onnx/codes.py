"""Feed string categorical inputs of an ONNX graph as integer codes.

ONNX Runtime turns every element of a string input (a numpy object array) into a C++
string and the graph's ``ai.onnx.ml.OneHotEncoder`` hashes it again: about 60 ns per
element on a 2-core machine here, more than the rest of a small MLP costs per row. The
columns modelgate feeds are usually codes already (parquet dictionary pages read as pandas
categoricals, the SHAP masker's coalitions), so paying for strings is waste.

:func:`code_string_inputs` rewrites a graph so that such an input takes int64 codes: code
``i`` stands for ``cats_strings[i]`` of its encoder and ``-1`` for any other string. The
encoder gets ``cats_int64s = 0 .. k-1`` and keeps its ``zeros`` attribute, so an unknown
string still gives an all-zero row (``zeros=1``) or an error (``zeros=0``): the rewritten
graph computes the same function. Inputs whose every consumer is a ``OneHotEncoder``
with the same categories are rewritten; so are inputs that reach their encoder through
skl2onnx's string imputer nodes, folded by :mod:`modelgate.onnx.encoder_cones`. Any other
use (an ordinal ``LabelEncoder``, a string op, a subgraph, a graph output) leaves that input
as strings.

Hand-written because neither ONNX nor ONNX Runtime offers this transformation.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import onnx
from onnx import TensorProto, helper

from modelgate.onnx.encoder_cones import fold_encoder_cones

__all__ = ["CodedGraph", "code_string_inputs"]

_ML_DOMAIN = "ai.onnx.ml"


@dataclass(frozen=True, slots=True)
class CodedGraph:
    """An ONNX graph whose string categorical inputs take int64 codes.

    Attributes
    ----------
    onnx_bytes : bytes
        The rewritten model (the input bytes unchanged when nothing was rewritten).
    categories : mapping of str to tuple of str
        For each rewritten input, the string each code stands for (code = position).
    unknown_is_error : frozenset of str
        Rewritten inputs whose encoder rejects unknown strings (``zeros=0``).
    aliases : mapping of str to mapping of str to int
        For inputs whose string nodes were folded (:mod:`modelgate.onnx.encoder_cones`), the
        strings coded other than by their position in ``categories`` (``""`` as the imputer's
        fill value); every other string not among the categories is code ``-1``.
    """

    onnx_bytes: bytes
    categories: Mapping[str, tuple[str, ...]]
    unknown_is_error: frozenset[str]
    aliases: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


def code_string_inputs(onnx_bytes: bytes) -> CodedGraph:
    """Rewrite string inputs consumed only by ``OneHotEncoder`` nodes to int64 codes.

    Parameters
    ----------
    onnx_bytes : bytes
        A serialized ONNX model.

    Returns
    -------
    CodedGraph

    Examples
    --------
    >>> from onnx import helper, TensorProto
    >>> x = helper.make_tensor_value_info("colour", TensorProto.STRING, [None, 1])
    >>> y = helper.make_tensor_value_info("onehot", TensorProto.FLOAT, [None, 1, 2])
    >>> enc = helper.make_node("OneHotEncoder", ["colour"], ["onehot"], domain="ai.onnx.ml",
    ...                        cats_strings=["red", "blue"], zeros=1)
    >>> model = helper.make_model(helper.make_graph([enc], "g", [x], [y]), opset_imports=[
    ...     helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])
    >>> coded = code_string_inputs(model.SerializeToString())
    >>> dict(coded.categories), sorted(coded.unknown_is_error)
    ({'colour': ('red', 'blue')}, [])
    """
    model = onnx.load_from_string(onnx_bytes)
    graph = model.graph
    # an input that is also a graph output or read inside a subgraph must stay a string
    elsewhere = {o.name for o in graph.output} | set(_subgraph_names(graph))
    categories: dict[str, tuple[str, ...]] = {}
    strict: set[str] = set()
    for value in graph.input:
        name = value.name
        if value.type.tensor_type.elem_type != TensorProto.STRING or name in elsewhere:
            continue
        users = [n for n in graph.node if name in n.input]
        cats = {_encoder_categories(n, name) for n in users}
        zeros = {_attribute(n, "zeros", 1) for n in users}
        if not users or None in cats or len(cats) != 1 or len(zeros) != 1:
            continue
        (labels,) = cats
        assert labels is not None
        for node in users:
            keep = [a for a in node.attribute if a.name != "cats_strings"]
            del node.attribute[:]
            node.attribute.extend(keep)
            node.attribute.append(helper.make_attribute("cats_int64s", list(range(len(labels)))))
        value.type.tensor_type.elem_type = TensorProto.INT64
        categories[name] = labels
        if zeros == {0}:
            strict.add(name)
    strings = {v.name for v in graph.input if v.type.tensor_type.elem_type == TensorProto.STRING}
    folded = fold_encoder_cones(model, strings - elsewhere - set(categories))
    categories.update({name: table.labels for name, table in folded.items()})
    aliases = {name: MappingProxyType(dict(t.aliases)) for name, t in folded.items() if t.aliases}
    data = model.SerializeToString() if categories else onnx_bytes
    return CodedGraph(data, MappingProxyType(categories), frozenset(strict),
                      MappingProxyType(aliases))


def _encoder_categories(node: onnx.NodeProto, name: str) -> tuple[str, ...] | None:
    """The node's ``cats_strings`` if it is a OneHotEncoder reading ``name``, else None."""
    if node.op_type != "OneHotEncoder" or node.domain != _ML_DOMAIN or list(node.input) != [name]:
        return None
    attrs = {a.name: a for a in node.attribute}
    if "cats_strings" not in attrs or "cats_int64s" in attrs:
        return None
    labels = tuple(s.decode("utf-8") for s in attrs["cats_strings"].strings)
    return labels if len(set(labels)) == len(labels) else None


def _attribute(node: onnx.NodeProto, name: str, default: int) -> int:
    for a in node.attribute:
        if a.name == name:
            return int(a.i)
    return default


def _subgraph_names(graph: onnx.GraphProto) -> Iterator[str]:
    """Every name read by a node inside a subgraph (If/Loop/Scan bodies), recursively."""
    for node in graph.node:
        for attr in node.attribute:
            subgraphs = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
            for sub in subgraphs:
                for inner in sub.node:
                    yield from inner.input
                yield from _subgraph_names(sub)
