"""Exact interventional SHAP values of a tree ensemble, in margin space, at any width.

The value of a coalition ``S`` for row ``x`` is the model's raw score (the margin: summed
leaf values plus base values, before any sigmoid or softmax) on the input that takes the
features in ``S`` from ``x`` and the others from a background row ``z``, averaged over the
background (``shap.TreeExplainer(model, data=background,
feature_perturbation="interventional")``, ``model_output="raw"``). Output is EXACT, no
sampling; ``base_value + sum(values) == margin(x)``.

How (Lundberg et al. 2020, Algorithm 3, "independent" TreeSHAP): for one pair ``(x, z)``
and one leaf, only the features on the leaf's path matter. Per path feature ``f`` let
``a_f`` say that ``x`` satisfies every test on ``f`` along the path and ``b_f`` that ``z``
does. The leaf is reached by the hybrid input of ``S`` iff every feature with ``a_f`` and
not ``b_f`` is in ``S`` (the set ``X``, size ``nx``), every feature with ``b_f`` and not
``a_f`` is out of ``S`` (the set ``Z``, size ``nz``), and no feature has neither. That
game, ``v * 1[X in S, Z out of S]``, has the closed-form Shapley values
``v * (nx - 1)! nz! / (nx + nz)!`` for each feature of ``X`` and
``-v * nx! (nz - 1)! / (nx + nz)!`` for each feature of ``Z``. Summing over leaves, trees
and background rows gives the values; the recursion of the paper visits the same leaves.
Here the leaves are visited all at once with numpy: per leaf, ``nx``, ``nz`` and
reachability for every (row, background row) pair are small matrix products over the
path's features, so the cost is ``O(leaves x rows x background x path features)``,
polynomial in the trees and independent of the number of features ``M``.

Hand-written because no library computes interventional TreeSHAP from an ONNX graph
(``shap.TreeExplainer`` needs the original model object).

References
----------
.. [1] Lundberg, S. M., Erion, G., Chen, H., DeGrave, A., Prutkin, J. M., Nair, B.,
   Katz, R., Himmelfarb, J., Bansal, N. and Lee, S.-I. (2020). From local explanations
   to global understanding with explainable AI for trees. Nature Machine Intelligence
   2, 56-67.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .onnx_trees import TreeEnsemble, decisions, reached_leaves

__all__ = ["TreeShap", "interventional_tree_shap"]

#: Most float64 elements of one (leaves x rows x background) block.
_BLOCK_ELEMENTS = 1 << 22


@dataclass(frozen=True, slots=True, eq=False)
class TreeShap:
    """Exact interventional SHAP values in the trees' target-score (margin) space.

    Attributes
    ----------
    values : ndarray of float64, shape (n_rows, n_features, n_targets)
        Value of each graph feature (manifest order) for each row and target score.
    base_values : ndarray of float64, shape (n_targets,)
        Mean target scores over the background.
    scores : ndarray of float64, shape (n_rows, n_targets)
        Target scores of the rows; ``base_values + values.sum(axis=1)``.
    """

    values: npt.NDArray[np.float64]
    base_values: npt.NDArray[np.float64]
    scores: npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True, eq=False)
class _Paths:
    """Each leaf's path, grouped by feature: ``slots`` distinct features per leaf."""

    leaf: npt.NDArray[np.int64]           # (L,) flat node index of each leaf
    feature: npt.NDArray[np.int64]        # (L, K) tree input column of each slot (0: padding)
    used: npt.NDArray[np.bool_]           # (L, K) slot holds a feature
    node: npt.NDArray[np.int64]           # (E,) path tests: node ...
    want: npt.NDArray[np.bool_]           # (E,) ... the branch taken (True branch) ...
    entry_slot: npt.NDArray[np.int64]     # (E,) ... and its slot, flat over (L, K)


def interventional_tree_shap(
    trees: TreeEnsemble, x: npt.ArrayLike, background: npt.ArrayLike
) -> TreeShap:
    """Exact interventional SHAP values of ``x`` against ``background``.

    Parameters
    ----------
    trees : TreeEnsemble
        From :func:`modelgate.reports.onnx_trees.read_tree_ensemble`.
    x : array_like, shape (n_rows, n_features)
        Rows explained, graph features in manifest order (numbers; NaN is missing).
    background : array_like, shape (n_background, n_features)
        Background rows, same columns.

    Returns
    -------
    TreeShap

    Raises
    ------
    ValueError
        If ``x`` or ``background`` is empty, not 2-D, or has the wrong width.

    Examples
    --------
    A stump on feature 0 (leaf 1 below 0.5, leaf 3 above) against a background of two rows:

    >>> from onnx import helper, TensorProto
    >>> from modelgate.reports.onnx_trees import read_tree_ensemble
    >>> node = helper.make_node(
    ...     "TreeEnsembleRegressor", ["x"], ["y"], domain="ai.onnx.ml", n_targets=1,
    ...     nodes_treeids=[0, 0, 0], nodes_nodeids=[0, 1, 2], nodes_featureids=[0, 0, 0],
    ...     nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"], nodes_values=[0.5, 0.0, 0.0],
    ...     nodes_truenodeids=[1, 0, 0], nodes_falsenodeids=[2, 0, 0],
    ...     target_treeids=[0, 0], target_nodeids=[1, 2], target_ids=[0, 0],
    ...     target_weights=[1.0, 3.0])
    >>> graph = helper.make_graph(
    ...     [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 2])],
    ...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 1])])
    >>> trees = read_tree_ensemble(helper.make_model(graph), ["a", "b"], input_tensor="x")
    >>> out = interventional_tree_shap(trees, [[1.0, 0.0]], [[0.0, 0.0], [1.0, 5.0]])
    >>> out.values[:, :, 0].tolist(), out.base_values.tolist(), out.scores.tolist()
    ([[1.0, 0.0]], [2.0], [[3.0]])
    """
    xs, zs = _matrix(x, "x", trees), _matrix(background, "background", trees)
    dx, dz = decisions(trees, xs), decisions(trees, zs)
    paths = _paths(trees)
    n_features = len(trees.input_columns) and max(trees.input_columns) + 1
    values = np.zeros((len(xs), max(n_features, xs.shape[1]), trees.n_targets))
    if len(paths.leaf):
        a_all = _satisfied(paths, dx)  # (L, K, R)
        b_all = _satisfied(paths, dz)  # (L, K, B)
        step = max(1, _BLOCK_ELEMENTS // (len(xs) * len(zs)))
        for first in range(0, len(paths.leaf), step):
            block = slice(first, first + step)
            coef = _coefficients(a_all[block], b_all[block], paths.used[block])  # (l, R, K)
            _scatter(values, coef, paths.feature[block], trees.leaf_value[paths.leaf[block]],
                     trees.input_columns)
    base = trees.leaf_value[reached_leaves(trees, dz)].sum(axis=1).mean(axis=0) + trees.base_values
    scores = trees.leaf_value[reached_leaves(trees, dx)].sum(axis=1) + trees.base_values
    return TreeShap(values[:, : xs.shape[1]], base, scores)


def _matrix(a: npt.ArrayLike, name: str, trees: TreeEnsemble) -> npt.NDArray[np.float64]:
    m = np.asarray(a, dtype=np.float64)
    need = max(trees.input_columns, default=-1) + 1
    if m.ndim != 2 or len(m) == 0 or m.shape[1] < need:
        raise ValueError(f"{name} must be a non-empty 2-D array with at least {need} columns; "
                         f"got shape {m.shape!r}")
    return m


#: Paths of the ensembles explained, kept while the ensemble lives (a report explains
#: its rows a block at a time with the same trees).
_PATHS: weakref.WeakKeyDictionary[TreeEnsemble, _Paths] = weakref.WeakKeyDictionary()


def _paths(trees: TreeEnsemble) -> _Paths:
    """Every leaf's path tests, grouped into one slot per distinct feature (cached)."""
    if trees not in _PATHS:
        _PATHS[trees] = _walk(trees)
    return _PATHS[trees]


def _walk(trees: TreeEnsemble) -> _Paths:
    leaves: list[int] = []
    tests: list[list[tuple[int, bool]]] = []
    stack: list[tuple[int, list[tuple[int, bool]]]] = [(int(r), []) for r in trees.roots[::-1]]
    while stack:
        at, path = stack.pop()
        if trees.feature[at] < 0:
            leaves.append(at)
            tests.append(path)
            continue
        stack.append((int(trees.false_child[at]), [*path, (at, False)]))
        stack.append((int(trees.true_child[at]), [*path, (at, True)]))
    slot_feats = [list(dict.fromkeys(int(trees.feature[n]) for n, _ in p)) for p in tests]
    k = max(1, max((len(s) for s in slot_feats), default=1))
    feature = np.zeros((len(leaves), k), dtype=np.int64)
    used = np.zeros((len(leaves), k), dtype=bool)
    node: list[int] = []
    want: list[bool] = []
    slot: list[int] = []
    for i, (p, feats) in enumerate(zip(tests, slot_feats, strict=True)):
        feature[i, : len(feats)] = feats
        used[i, : len(feats)] = True
        for n, w in p:
            node.append(n)
            want.append(w)
            slot.append(i * k + feats.index(int(trees.feature[n])))
    return _Paths(np.asarray(leaves, dtype=np.int64), feature, used,
                  np.asarray(node, dtype=np.int64), np.asarray(want, dtype=bool),
                  np.asarray(slot, dtype=np.int64))


def _satisfied(paths: _Paths, went_true: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
    """``(L, K, N)``: the row passes every test of the slot's feature on the leaf's path."""
    n_leaves, k = paths.feature.shape
    failed = np.zeros((n_leaves * k, went_true.shape[0]), dtype=np.int64)
    miss = paths.want[:, None] != went_true[:, paths.node].T  # (E, N)
    np.add.at(failed, paths.entry_slot, miss.astype(np.int64))
    return (failed == 0).reshape(n_leaves, k, -1)


def _weights(k: int) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Shapley weights by ``(nx, nz)``, flat over ``nx * (k + 1) + nz``; row ``k + 1`` is 0
    (a blocked pair). With ``W(p, q) = p! q! / (p + q + 1)!``, the weight of one player of
    ``p + q + 1``: an ``X`` feature gets ``W(nx - 1, nz)``, a ``Z`` feature ``W(nx, nz - 1)``."""
    def w(p: int, q: int) -> float:
        return math.factorial(p) * math.factorial(q) / math.factorial(p + q + 1)

    for_x, for_z = np.zeros((k + 2, k + 1)), np.zeros((k + 2, k + 1))
    for nx in range(k + 1):
        for nz in range(k + 1 - nx):
            for_x[nx, nz] = w(nx - 1, nz) if nx else 0.0
            for_z[nx, nz] = w(nx, nz - 1) if nz else 0.0
    return for_x.ravel(), for_z.ravel()


def _coefficients(a: npt.NDArray[np.bool_], b: npt.NDArray[np.bool_],
                  used: npt.NDArray[np.bool_]) -> npt.NDArray[np.float64]:
    """``(l, R, K)``: what each slot's feature gets per unit of leaf value, background-averaged."""
    k = a.shape[1]
    at = a.transpose(0, 2, 1).astype(np.float32)           # (l, R, K); padding: a = b = True
    not_a = 1.0 - at
    not_b = (~b).astype(np.float32)                        # (l, K, B)
    # one product counts nx (x fits, z does not) plus (k + 1) x the slots neither fits
    # (small integers: exact in float32)
    code = np.minimum((at + np.float32(k + 1) * not_a) @ not_b, k + 1).astype(np.int64)
    nz = not_a.sum(axis=2).astype(np.int64)                # (l, R)
    code *= k + 1
    code += nz[:, :, None]
    for_x, for_z = _weights(k)
    x_side = at * (for_x.take(code) @ not_b.transpose(0, 2, 1))         # (l, R, K)
    z_side = not_a * for_z.take(code).sum(axis=2, keepdims=True)
    return np.where(used[:, None, :], x_side - z_side, 0.0) / b.shape[2]


def _scatter(values: npt.NDArray[np.float64], coef: npt.NDArray[np.float64],
             feature: npt.NDArray[np.int64], leaf_value: npt.NDArray[np.float64],
             input_columns: tuple[int, ...]) -> None:
    """Add ``coef x leaf value`` to ``values[row, graph feature, target]``: slots sorted by
    feature, summed per feature with ``reduceat`` (no BLAS call: it thrashes on busy cores)."""
    n_rows = coef.shape[1]
    graph_feature = np.asarray(input_columns, dtype=np.int64)[feature].ravel()  # (l*K,)
    order = np.argsort(graph_feature, kind="stable")
    sorted_feature = graph_feature[order]
    starts = np.flatnonzero(np.r_[True, sorted_feature[1:] != sorted_feature[:-1]])
    for t in range(values.shape[2]):
        weighted = (coef * leaf_value[:, t][:, None, None]).transpose(1, 0, 2).reshape(n_rows, -1)
        values[:, sorted_feature[starts], t] += np.add.reduceat(weighted[:, order], starts, axis=1)
