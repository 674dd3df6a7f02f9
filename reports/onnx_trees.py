"""Tree ensembles read from an ONNX graph: nodes, leaf values and the output transform.

Reads the ``ai.onnx.ml`` ``TreeEnsembleClassifier`` / ``TreeEnsembleRegressor`` node as
skl2onnx (RandomForest, ExtraTrees, GradientBoosting, HistGradientBoosting) and
onnxmltools (LightGBM, XGBoost) write it, into flat numpy arrays that
:mod:`modelgate.reports.tree_shap` explains exactly and :func:`tree_scores` evaluates the
way ONNX Runtime does (float32 thresholds; a missing value goes the way
``nodes_missing_value_tracks_true`` says, else comparisons with NaN are false).

Only graphs whose trees read the RAW input are accepted: the tree node's input must be a
graph input ``[N, F]`` (through ``Cast`` / ``Identity`` only), or a ``Concat`` along axis 1
of one-column graph inputs. Anything else (a scaler, encoder, imputer or feature selection
in front of the trees; two ensembles; ``SOFTMAX_ZERO`` / ``PROBIT`` transforms; ``MIN`` /
``MAX`` aggregation) raises :class:`UnsupportedGraph` with the reason, and the caller falls
back to a model-agnostic estimator. Pure parsing: a ModelProto or its bytes in, arrays out.

Hand-written because neither ONNX nor ONNX Runtime exposes a tree ensemble's structure in
a form a Shapley computation can use.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    # onnx is imported by the functions that read a graph: this module is reached from
    # ``modelgate.reports`` (so from every pipeline task) and onnx takes seconds to import
    import onnx


__all__ = ["MODES", "TreeEnsemble", "UnsupportedGraph", "raw_input_columns", "read_tree_ensemble",
           "tree_scores"]

#: Node modes, coded by position (``LEAF`` is 0).
MODES = ("LEAF", "BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ")
_TREE_OPS = ("TreeEnsembleClassifier", "TreeEnsembleRegressor", "TreeEnsemble")
_PASS_THROUGH = ("Cast", "Identity")
#: Most elements of one (rows x nodes) float temporary.
_BLOCK_ELEMENTS = 1 << 22
PostTransform = Literal["NONE", "LOGISTIC", "SOFTMAX"]


class UnsupportedGraph(ValueError):
    """The graph is not a tree ensemble on raw features that this reader understands."""


@dataclass(frozen=True, slots=True, eq=False, weakref_slot=True)
class TreeEnsemble:
    """A tree ensemble as flat arrays over all nodes of all trees.

    Attributes
    ----------
    feature : ndarray of int64, shape (n_nodes,)
        Input column a branch node tests (``-1`` for a leaf).
    threshold : ndarray of float64, shape (n_nodes,)
        Threshold of a branch node (a float32 value, as ONNX Runtime compares).
    mode : ndarray of int8, shape (n_nodes,)
        Index into :data:`MODES`.
    true_child, false_child : ndarray of int64, shape (n_nodes,)
        Flat index of the child taken when the test holds / fails (``-1`` for a leaf).
    missing_true : ndarray of bool, shape (n_nodes,)
        A missing (NaN) input takes the true branch.
    leaf_value : ndarray of float64, shape (n_nodes, n_targets)
        What a leaf adds to each target score (0 for branch nodes).
    roots : ndarray of int64, shape (n_trees,)
        Flat index of each tree's root.
    base_values : ndarray of float64, shape (n_targets,)
        Added to the summed scores.
    columns : ndarray of float64, shape (n_columns, n_targets)
        The graph's output columns in margin space are ``scores @ columns.T + offset``
        (e.g. a binary classifier with one score ``s`` has columns ``[-s, s]`` under
        ``LOGISTIC``, ``[1 - s, s]`` under ``NONE``).
    offset : ndarray of float64, shape (n_columns,)
    post_transform : {"NONE", "LOGISTIC", "SOFTMAX"}
        What turns the margin columns into the graph's output.
    input_columns : tuple of int
        Graph feature (manifest column) read by each tree input column.
    """

    feature: npt.NDArray[np.int64]
    threshold: npt.NDArray[np.float64]
    mode: npt.NDArray[np.int8]
    true_child: npt.NDArray[np.int64]
    false_child: npt.NDArray[np.int64]
    missing_true: npt.NDArray[np.bool_]
    leaf_value: npt.NDArray[np.float64]
    roots: npt.NDArray[np.int64]
    base_values: npt.NDArray[np.float64]
    columns: npt.NDArray[np.float64]
    offset: npt.NDArray[np.float64]
    post_transform: PostTransform
    input_columns: tuple[int, ...]

    @property
    def n_targets(self) -> int:
        """Target scores the trees add to."""
        return int(self.leaf_value.shape[1])


def read_tree_ensemble(
    model: onnx.ModelProto | bytes,
    feature_names: Sequence[str],
    *,
    input_tensor: str | None = None,
) -> TreeEnsemble:
    """The tree ensemble of ``model``, when its trees read the raw features.

    Parameters
    ----------
    model : onnx.ModelProto or bytes
        The graph.
    feature_names : sequence of str
        The model's features in manifest order (per-column graph inputs carry these names).
    input_tensor : str, optional
        Name of the one ``[N, F]`` input holding the features in that order, if the graph
        takes one tensor.

    Returns
    -------
    TreeEnsemble

    Raises
    ------
    UnsupportedGraph
        Naming why the graph cannot be read (see the module docstring).

    Examples
    --------
    >>> from onnx import helper, TensorProto
    >>> node = helper.make_node(
    ...     "TreeEnsembleRegressor", ["x"], ["y"], domain="ai.onnx.ml", n_targets=1,
    ...     nodes_treeids=[0, 0, 0], nodes_nodeids=[0, 1, 2], nodes_featureids=[0, 0, 0],
    ...     nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"], nodes_values=[0.5, 0.0, 0.0],
    ...     nodes_truenodeids=[1, 0, 0], nodes_falsenodeids=[2, 0, 0],
    ...     target_treeids=[0, 0], target_nodeids=[1, 2], target_ids=[0, 0],
    ...     target_weights=[1.0, 3.0])
    >>> graph = helper.make_graph(
    ...     [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 1])],
    ...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 1])])
    >>> trees = read_tree_ensemble(helper.make_model(graph), ["a"], input_tensor="x")
    >>> tree_scores(trees, np.array([[0.0], [1.0]])).ravel().tolist()
    [1.0, 3.0]
    """
    import onnx
    from onnx import helper

    proto = model if isinstance(model, onnx.ModelProto) else onnx.load_from_string(model)
    graph = proto.graph
    nodes = [n for n in graph.node if n.op_type in _TREE_OPS]
    if len(nodes) != 1 or nodes[0].op_type == "TreeEnsemble":
        raise UnsupportedGraph(
            f"the graph holds {len(nodes)} tree ensemble node(s) "
            f"({', '.join(n.op_type for n in nodes) or 'none'}); exact tree SHAP reads exactly one "
            "TreeEnsembleClassifier or TreeEnsembleRegressor")
    node = nodes[0]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    columns = raw_input_columns(graph, node.input[0], list(feature_names), input_tensor)
    return _ensemble(node.op_type, attrs, columns)


def tree_scores(trees: TreeEnsemble, x: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Target scores ``[N, n_targets]`` (base values included, no output transform).

    ``x`` holds the graph's features in manifest order; each is rounded to float32, as the
    graph reads it.
    """
    leaves = reached_leaves(trees, decisions(trees, x))
    return trees.leaf_value[leaves].sum(axis=1) + trees.base_values


def decisions(trees: TreeEnsemble, x: npt.ArrayLike) -> npt.NDArray[np.bool_]:
    """``[N, n_nodes]``: whether each row takes the true branch at each node."""
    cols = np.asarray(x, dtype=np.float64)[:, list(trees.input_columns)]
    step = max(1, _BLOCK_ELEMENTS // max(1, len(trees.feature)))
    # in blocks of rows, to bound the float temporaries
    return np.vstack([_decide(trees, cols[i:i + step]) for i in range(0, max(len(cols), 1), step)])


def _decide(trees: TreeEnsemble, cols: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
    v = cols.astype(np.float32).astype(np.float64)[:, np.maximum(trees.feature, 0)]
    t = trees.threshold
    with np.errstate(invalid="ignore"):
        tests = (v <= t, v < t, v >= t, v > t, v == t, v != t)
    out = np.zeros(v.shape, dtype=bool)
    for code, test in enumerate(tests, start=1):
        here = trees.mode == code
        out[:, here] = test[:, here]
    return np.where(np.isnan(v) & trees.missing_true, True, out)


def reached_leaves(trees: TreeEnsemble, went_true: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
    """``[N, n_trees]``: flat index of the leaf each row reaches in each tree."""
    at = np.broadcast_to(trees.roots, (went_true.shape[0], len(trees.roots))).copy()
    rows = np.arange(went_true.shape[0])[:, None]
    while True:
        branch = trees.feature[at] >= 0
        if not branch.any():
            return at
        step = np.where(went_true[rows, at], trees.true_child[at], trees.false_child[at])
        at = np.where(branch, step, at)


# --------------------------------------------------------------------------- internals


def _producer(graph: onnx.GraphProto, name: str) -> onnx.NodeProto | None:
    return next((n for n in graph.node if name in n.output), None)


def raw_input_columns(graph: onnx.GraphProto, name: str, features: list[str],
                   input_tensor: str | None) -> tuple[int, ...]:
    """Manifest column read by each column of the tensor ``name`` (a model node's input):
    a graph input through Cast/Identity, or a Concat of one-column graph inputs; raw
    inputs only (else UnsupportedGraph)."""
    inputs = {i.name for i in graph.input} - {i.name for i in graph.initializer}
    seen = _through(graph, name)
    if seen in inputs:
        if seen == input_tensor:
            return tuple(range(len(features)))
        if len(features) == 1 and seen == features[0]:
            return (0,)
        raise UnsupportedGraph(f"the model node reads graph input {seen!r}, which is not the model's "
                               "feature tensor")
    from onnx import helper

    concat = _producer(graph, seen)
    if concat is not None and concat.op_type == "Concat":
        axis = next((helper.get_attribute_value(a) for a in concat.attribute if a.name == "axis"), None)
        parts = [_through(graph, i) for i in concat.input]
        if axis in (1, -1) and all(p in features for p in parts):
            return tuple(features.index(p) for p in parts)
    what = "nothing" if concat is None else f"a {concat.op_type} node"
    raise UnsupportedGraph(
        f"the model node reads {what} in front of it ({seen!r}), not the raw features: "
        "preprocessing inside the graph (scaler, encoder, imputer, feature selection) is not "
        "mapped back to raw features")


def _through(graph: onnx.GraphProto, name: str) -> str:
    """Follow ``Cast`` / ``Identity`` back from ``name``."""
    node = _producer(graph, name)
    while node is not None and node.op_type in _PASS_THROUGH:
        name = node.input[0]
        node = _producer(graph, name)
    return name


def _floats(attrs: dict[str, object], name: str) -> npt.NDArray[np.float64] | None:
    if name in attrs:
        return np.asarray(attrs[name], dtype=np.float64)
    import onnx
    from onnx import numpy_helper

    tensor = attrs.get(f"{name}_as_tensor")
    if isinstance(tensor, onnx.TensorProto):
        return numpy_helper.to_array(tensor).astype(np.float64).ravel()
    return None


def _ensemble(op: str, attrs: dict[str, object], input_columns: tuple[int, ...]) -> TreeEnsemble:
    prefix = "class" if op == "TreeEnsembleClassifier" else "target"
    post = attrs.get("post_transform", b"NONE")
    post = post.decode() if isinstance(post, bytes) else str(post)
    if post not in ("NONE", "LOGISTIC", "SOFTMAX"):
        raise UnsupportedGraph(f"post_transform {post!r} is not supported (NONE, LOGISTIC, SOFTMAX)")
    aggregate = attrs.get("aggregate_function", b"SUM")
    aggregate = aggregate.decode() if isinstance(aggregate, bytes) else str(aggregate)
    if aggregate not in ("SUM", "AVERAGE"):
        raise UnsupportedGraph(f"aggregate_function {aggregate!r} is not additive (SUM, AVERAGE)")
    tree_ids = np.asarray(attrs["nodes_treeids"], dtype=np.int64)
    node_ids = np.asarray(attrs["nodes_nodeids"], dtype=np.int64)
    index = {(int(t), int(n)): i for i, (t, n) in enumerate(zip(tree_ids, node_ids, strict=True))}
    modes = [m.decode() if isinstance(m, bytes) else str(m) for m in attrs["nodes_modes"]]  # type: ignore[attr-defined]
    unknown = sorted(set(modes) - set(MODES))
    if unknown:
        raise UnsupportedGraph(f"node modes {unknown!r} are not supported")
    mode = np.array([MODES.index(m) for m in modes], dtype=np.int8)
    leaf = mode == 0

    def child(name: str) -> npt.NDArray[np.int64]:
        ids = np.asarray(attrs[name], dtype=np.int64)
        return np.array([-1 if leaf[i] else index[(int(tree_ids[i]), int(ids[i]))]
                         for i in range(len(ids))], dtype=np.int64)

    thresholds = _floats(attrs, "nodes_values")
    weights = _floats(attrs, f"{prefix}_weights")
    if thresholds is None or weights is None:
        raise UnsupportedGraph("the tree node has no nodes_values or weights")
    targets = np.asarray(attrs[f"{prefix}_ids"], dtype=np.int64)
    n_targets = int(attrs.get("n_targets", targets.max(initial=0) + 1))  # type: ignore[call-overload]
    value = np.zeros((len(mode), n_targets))
    where = [index[(int(t), int(n))] for t, n in zip(attrs[f"{prefix}_treeids"],  # type: ignore[call-overload]
                                                       attrs[f"{prefix}_nodeids"], strict=True)]
    np.add.at(value, (np.asarray(where, dtype=np.int64), targets), weights)
    trees = sorted(set(tree_ids.tolist()))
    if aggregate == "AVERAGE":
        value /= len(trees)
    missing = np.asarray(attrs.get("nodes_missing_value_tracks_true", np.zeros(len(mode))), dtype=bool)
    base = _floats(attrs, "base_values")
    cols, offset = _output_columns(op, attrs, n_targets, post, value)
    # ONNX Runtime compares float32 inputs with float32 thresholds
    return TreeEnsemble(
        np.where(leaf, -1, np.asarray(attrs["nodes_featureids"], dtype=np.int64)),
        thresholds.astype(np.float32).astype(np.float64), mode, child("nodes_truenodeids"),
        child("nodes_falsenodeids"), missing if len(missing) == len(mode) else np.zeros(len(mode), bool),
        value, np.array([index[(t, 0)] if (t, 0) in index else _root(tree_ids, t) for t in trees],
                        dtype=np.int64),
        np.zeros(n_targets) if base is None or not len(base) else base, cols, offset,
        post, input_columns)  # type: ignore[arg-type]


def _root(tree_ids: npt.NDArray[np.int64], tree: int) -> int:
    return int(np.flatnonzero(tree_ids == tree)[0])


Matrix = npt.NDArray[np.float64]


def _output_columns(op: str, attrs: dict[str, object], n_targets: int, post: str,
                    value: Matrix) -> tuple[Matrix, Matrix]:
    """Margin columns of the graph output as a linear map of the target scores."""
    labels = attrs.get("classlabels_int64s") or attrs.get("classlabels_strings") or ()
    if op != "TreeEnsembleClassifier" or len(labels) != 2 or n_targets != 1:  # type: ignore[arg-type]
        return np.eye(n_targets), np.zeros(n_targets)
    # ONNX Runtime's binary case: one score s for the second class
    if post == "LOGISTIC":
        return np.array([[-1.0], [1.0]]), np.zeros(2)
    if post == "NONE" and bool((value >= 0).all()):
        return np.array([[-1.0], [1.0]]), np.array([1.0, 0.0])
    raise UnsupportedGraph(f"a binary classifier with one score and post_transform {post!r} "
                           "(negative weights) is not supported")
