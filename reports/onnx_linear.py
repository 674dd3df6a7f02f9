"""Linear models read from an ONNX graph, and their exact interventional SHAP values.

Reads the ``ai.onnx.ml`` ``LinearClassifier`` / ``LinearRegressor`` node (skl2onnx writes it
for LogisticRegression, LinearRegression, Ridge, Lasso, SGD...) whose input is the raw
features (the same rule as :func:`modelgate.reports.onnx_trees.raw_input_columns`), or a
``Gemm`` / ``MatMul`` (+ ``Add``) on the raw feature tensor with constant weights. In margin
space (the scores before the sigmoid or softmax: log-odds for a binary logistic model) the
interventional Shapley value of feature ``j`` is exactly
``w_j * (x_j - mean_background(x_j))`` for each score, at any number of features; the base
value is the score of the background mean. Output EXACT (a closed form, no sampling).

Anything else raises :class:`~modelgate.reports.onnx_trees.UnsupportedGraph` with the reason.

References
----------
.. [1] Lundberg, S. M. and Lee, S.-I. (2017). A Unified Approach to Interpreting Model
   Predictions. NeurIPS 30 (Corollary 1: linear SHAP).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    # onnx is imported by the functions that read a graph: this module is reached from
    # ``modelgate.reports`` (so from every pipeline task) and onnx takes seconds to import
    import onnx

from .onnx_trees import PostTransform, UnsupportedGraph, raw_input_columns
from .tree_shap import TreeShap

__all__ = ["LinearModel", "linear_scores", "linear_shap", "read_linear_model"]

_LINEAR_OPS = ("LinearClassifier", "LinearRegressor")


@dataclass(frozen=True, slots=True, eq=False)
class LinearModel:
    """Scores ``x @ weights.T + intercepts``, then margin columns ``scores @ columns.T + offset``
    (as :class:`~modelgate.reports.onnx_trees.TreeEnsemble`), then ``post_transform``.

    Attributes
    ----------
    weights : ndarray of float64, shape (n_targets, n_inputs)
    intercepts : ndarray of float64, shape (n_targets,)
    columns : ndarray of float64, shape (n_columns, n_targets)
    offset : ndarray of float64, shape (n_columns,)
    post_transform : {"NONE", "LOGISTIC", "SOFTMAX"}
    input_columns : tuple of int
        Graph feature (manifest column) of each model input column.
    """

    weights: npt.NDArray[np.float64]
    intercepts: npt.NDArray[np.float64]
    columns: npt.NDArray[np.float64]
    offset: npt.NDArray[np.float64]
    post_transform: PostTransform
    input_columns: tuple[int, ...]


def read_linear_model(
    model: onnx.ModelProto | bytes,
    feature_names: Sequence[str],
    *,
    input_tensor: str | None = None,
) -> LinearModel:
    """The linear model of ``model``, when it reads the raw features.

    Parameters
    ----------
    model : onnx.ModelProto or bytes
    feature_names : sequence of str
        The model's features in manifest order.
    input_tensor : str, optional
        Name of the one ``[N, F]`` input, if the graph takes one tensor.

    Returns
    -------
    LinearModel

    Raises
    ------
    UnsupportedGraph
        Naming why the graph cannot be read.

    Examples
    --------
    >>> from onnx import helper, TensorProto
    >>> node = helper.make_node("LinearRegressor", ["x"], ["y"], domain="ai.onnx.ml",
    ...                         coefficients=[2.0, -1.0], intercepts=[0.5])
    >>> graph = helper.make_graph(
    ...     [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 2])],
    ...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 1])])
    >>> lin = read_linear_model(helper.make_model(graph), ["a", "b"], input_tensor="x")
    >>> linear_shap(lin, [[1.0, 1.0]], [[0.0, 0.0], [1.0, 3.0]]).values[:, :, 0].tolist()  # w (x - mean)
    [[1.0, 0.5]]
    """
    import onnx
    from onnx import helper

    proto = model if isinstance(model, onnx.ModelProto) else onnx.load_from_string(model)
    graph = proto.graph
    nodes = [n for n in graph.node if n.op_type in _LINEAR_OPS]
    if len(nodes) != 1:
        return _read_gemm(graph, list(feature_names), input_tensor, len(nodes))
    node = nodes[0]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    columns = raw_input_columns(graph, node.input[0], list(feature_names), input_tensor)
    coef = np.asarray(attrs["coefficients"], dtype=np.float64)
    intercepts = np.asarray(attrs.get("intercepts", []), dtype=np.float64)
    n_targets = coef.size // len(columns)
    if coef.size != n_targets * len(columns):
        raise UnsupportedGraph(f"{coef.size} coefficients do not fit {len(columns)} inputs")
    intercepts = intercepts if intercepts.size == n_targets else np.zeros(n_targets)
    post = _text(attrs.get("post_transform", b"NONE"))
    if post not in ("NONE", "LOGISTIC", "SOFTMAX"):
        raise UnsupportedGraph(f"post_transform {post!r} is not supported (NONE, LOGISTIC, SOFTMAX)")
    labels = attrs.get("classlabels_ints") or attrs.get("classlabels_strings") or ()
    cols, offset = np.eye(n_targets), np.zeros(n_targets)
    if node.op_type == "LinearClassifier" and len(labels) == 2 and n_targets == 1:
        if post != "LOGISTIC":  # ONNX Runtime's binary case with one score
            raise UnsupportedGraph(f"a one-score binary LinearClassifier with {post!r} is not supported")
        cols, offset = np.array([[-1.0], [1.0]]), np.zeros(2)
    return LinearModel(coef.reshape(n_targets, len(columns)), intercepts, cols, offset,
                       post, columns)  # type: ignore[arg-type]


def linear_scores(model: LinearModel, x: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Scores ``[N, n_targets]`` of rows of graph features (manifest order), float32 inputs."""
    cols = np.asarray(x, dtype=np.float64)[:, list(model.input_columns)]
    return np.asarray(cols.astype(np.float32).astype(np.float64) @ model.weights.T + model.intercepts)


def linear_shap(model: LinearModel, x: npt.ArrayLike, background: npt.ArrayLike) -> TreeShap:
    """Exact interventional SHAP values ``w_j (x_j - mean_bg(x_j))`` per score (margin space)."""
    xs, zs = np.asarray(x, dtype=np.float64), np.asarray(background, dtype=np.float64)
    if xs.ndim != 2 or zs.ndim != 2 or not len(xs) or not len(zs) or xs.shape[1] != zs.shape[1]:
        raise ValueError(f"x and background must be non-empty 2-D arrays of the same width; got "
                         f"{xs.shape!r} and {zs.shape!r}")
    idx = list(model.input_columns)
    xc = xs[:, idx].astype(np.float32).astype(np.float64)
    mean = zs[:, idx].astype(np.float32).astype(np.float64).mean(axis=0)
    per_input = (xc - mean)[:, :, None] * model.weights.T[None, :, :]  # (R, inputs, T)
    values = np.zeros((len(xs), xs.shape[1], model.weights.shape[0]))
    for k, j in enumerate(idx):  # a feature read twice gets both weights
        values[:, j, :] += per_input[:, k, :]
    base = mean @ model.weights.T + model.intercepts
    return TreeShap(values, base, linear_scores(model, xs))


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _read_gemm(graph: onnx.GraphProto, features: list[str], input_tensor: str | None,
               n_linear: int) -> LinearModel:
    """A Gemm, or a MatMul plus an optional Add, on the raw features with constant weights,
    then an optional Sigmoid or Softmax."""
    if n_linear:
        raise UnsupportedGraph(f"the graph holds {n_linear} linear model nodes; exactly one is read")
    import onnx
    from onnx import helper, numpy_helper

    numeric = (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16)
    consts = {i.name: numpy_helper.to_array(i).astype(np.float64) for i in graph.initializer
              if i.data_type in numeric}
    product = [n for n in graph.node if n.op_type in ("Gemm", "MatMul")]
    if len(product) != 1 or product[0].input[1] not in consts:
        raise UnsupportedGraph("the graph is neither a tree ensemble nor a linear model on the raw "
                               "features (no single LinearClassifier, LinearRegressor, Gemm or MatMul "
                               "with constant weights)")
    node = product[0]
    columns = raw_input_columns(graph, node.input[0], features, input_tensor)
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    w = consts[node.input[1]]
    w = w.T if node.op_type == "MatMul" or not attrs.get("transB", 0) else w
    if attrs.get("transA", 0) or w.ndim != 2 or w.shape[1] != len(columns):
        raise UnsupportedGraph(f"weights of shape {w.shape} do not fit {len(columns)} inputs")
    w = w * float(attrs.get("alpha", 1.0))
    bias = np.zeros(w.shape[0])
    out, after = node.output[0], [n for n in graph.node if node.output[0] in n.input]
    if node.op_type == "Gemm" and len(node.input) > 2 and node.input[2] in consts:
        bias = bias + float(attrs.get("beta", 1.0)) * consts[node.input[2]].ravel()
    elif len(after) == 1 and after[0].op_type == "Add":
        other = next((i for i in after[0].input if i != out), "")
        if other not in consts:
            raise UnsupportedGraph("the Add after the MatMul is not a constant bias")
        bias = bias + consts[other].ravel()
        out, after = after[0].output[0], [n for n in graph.node if after[0].output[0] in n.input]
    # the caller checks the graph's output against this reading on the rows explained
    kinds = {n.op_type for n in after} & {"Sigmoid", "Softmax"}
    post = "NONE" if len(kinds) != 1 else "LOGISTIC" if kinds == {"Sigmoid"} else "SOFTMAX"
    bias = np.broadcast_to(bias, (w.shape[0],)).astype(np.float64)
    return LinearModel(w, bias, np.eye(w.shape[0]), np.zeros(w.shape[0]), post, columns)  # type: ignore[arg-type]
