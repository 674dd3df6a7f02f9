"""Exact SHAP values of a tree-ensemble or linear graph, as an :class:`Explanation`.

When the ONNX graph is one tree ensemble on the raw features
(:func:`modelgate.reports.onnx_trees.read_tree_ensemble`), its interventional SHAP values
are computed exactly from the trees (:mod:`modelgate.reports.tree_shap`) at any number of
features, in polynomial time, with standard errors 0 and ``algorithm ==
"tree_interventional"``. A linear graph (:mod:`modelgate.reports.onnx_linear`) is explained
the same way, in closed form (``algorithm == "linear_interventional"``). The values explain
the model's margin, not always the probability:

``output`` (the space explained, stored with the values and shown on every chart)
    * ``"logit"``: a binary classifier whose graph applies a sigmoid (gradient boosting,
      LightGBM, XGBoost): the log-odds of the positive class.
    * ``"probability"``: a classifier whose trees output probabilities directly
      (``post_transform`` NONE: random forest, extra trees).
    * ``"margin"``: a multiclass classifier with a softmax: the raw score of the class
      explained (the softmax's input), not its probability.
    * ``"value"``: a regressor.

The background is subsampled as :func:`modelgate.reports.explanation.explain` does (same seed,
same rows). Before any value is trusted, the trees' own output (margin columns through
the graph's transform) is checked against the graph's output on every explained and
background row: a graph whose output is not the trees' (post-processing after them) raises
:class:`~modelgate.reports.onnx_trees.UnsupportedGraph`, and the caller falls back to the
model-agnostic estimators. Exact: ``base_value + sum(values) == margin`` (float64).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt
import pandas as pd

from .explanation import (
    ADDITIVITY_TOLERANCE,
    DEFAULT_BACKGROUND_SIZE,
    DEFAULT_MAX_ROWS,
    AdditivityError,
    Explanation,
    ExplanationBudget,
    Space,
)
from .onnx_linear import LinearModel, linear_scores, linear_shap
from .onnx_trees import TreeEnsemble, UnsupportedGraph, tree_scores
from .tree_shap import TreeShap, interventional_tree_shap

#: A graph whose SHAP values are read from its model node: trees or a linear model.
GraphModel = TreeEnsemble | LinearModel

__all__ = ["GRAPH_TOLERANCE", "GraphModel", "check_trees", "explain_trees", "output_space", "transformed"]

#: Largest gap allowed between the trees' transformed output and the graph's (float32 graph).
GRAPH_TOLERANCE = 1e-4


def output_space(trees: GraphModel, *, regression: bool) -> Space:
    """The space the trees' SHAP values explain (see the module docstring).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> output_space(SimpleNamespace(post_transform="LOGISTIC", columns=np.ones((2, 1))), regression=False)
    'logit'
    """
    if regression:
        return "value"
    if trees.post_transform == "NONE":
        return "probability"
    if trees.post_transform == "LOGISTIC" and trees.columns.shape[0] == 2:
        return "logit"
    return "margin"


def transformed(trees: GraphModel, margin: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The graph's output ``[N, C]`` from the margin columns ``[N, C]`` (its post_transform)."""
    if trees.post_transform == "LOGISTIC":
        return np.asarray(1.0 / (1.0 + np.exp(-margin)))
    if trees.post_transform == "SOFTMAX":
        e = np.exp(margin - margin.max(axis=1, keepdims=True))
        return np.asarray(e / e.sum(axis=1, keepdims=True))
    return margin


def explain_trees(
    trees: GraphModel,
    graph_output: Callable[[pd.DataFrame], npt.ArrayLike],
    rows: pd.DataFrame,
    background: pd.DataFrame,
    *,
    features: Sequence[str],
    columns: npt.ArrayLike,
    regression: bool = False,
    seed: int = 0,
    background_size: int = DEFAULT_BACKGROUND_SIZE,
    max_rows: int = DEFAULT_MAX_ROWS,
) -> Explanation:
    """Exact interventional SHAP values of ``rows`` against ``background`` from the trees.

    Parameters
    ----------
    trees : TreeEnsemble or LinearModel
        The graph's trees (:func:`~modelgate.reports.onnx_trees.read_tree_ensemble`), or its
        linear model (:func:`~modelgate.reports.onnx_linear.read_linear_model`: exact values
        ``w_j (x_j - mean_background(x_j))``, ``algorithm="linear_interventional"``).
    graph_output : callable
        ``graph_output(frame)`` returns the graph's ``[N, C]`` output (class probabilities,
        or the ``[N, 1]`` value of a regressor) for a frame of ``features``.
    rows, background : DataFrame
        Rows explained (at most ``max_rows``) and background sample; numeric ``features``.
    features : sequence of str
        The graph's features in manifest order.
    columns : int or array_like of int
        The output column explained: one for all rows (the positive class, 0 for a
        regressor) or one per row (a multiclass row's predicted class).
    regression : bool, default False
        Whether the graph is a regressor (its space is ``"value"``).
    seed, background_size, max_rows
        As for :func:`~modelgate.reports.explanation.explain` (the same background subsample).

    Returns
    -------
    Explanation
        ``algorithm="tree_interventional"``, standard errors 0, ``output`` per
        :func:`output_space`.

    Raises
    ------
    UnsupportedGraph
        A feature is not numeric, or the trees' output misses the graph's by more than
        ``GRAPH_TOLERANCE``.
    ValueError
        Empty or too many rows, a missing column, a column index out of range.
    AdditivityError
        ``base + sum(values)`` misses the margin by more than 1e-6 (a bug, never expected).
    """
    feats = tuple(features)
    n_rows = len(rows)
    if not 0 < n_rows <= max_rows or len(background) == 0:
        raise ValueError(f"rows must hold 1..{max_rows} rows and background at least one; "
                         f"got {n_rows} and {len(background)}")
    bg = _subsample(background, background_size, np.random.default_rng(seed))
    x, z = _numeric(rows, feats, "rows"), _numeric(bg, feats, "background")
    check_trees(trees, graph_output, pd.concat([rows[list(feats)], bg[list(feats)]], ignore_index=True),
                features=feats)
    shap = _shap(trees, x, z)
    values = shap.values @ trees.columns.T  # (R, F, C)
    base = trees.columns @ shap.base_values + trees.offset
    margin = shap.scores @ trees.columns.T + trees.offset
    pick = np.broadcast_to(np.asarray(columns, dtype=np.int64), (n_rows,))
    if pick.min() < 0 or pick.max() >= values.shape[2]:
        raise ValueError(f"columns must be in 0..{values.shape[2] - 1}; got {pick.tolist()!r}")
    r = np.arange(n_rows)
    chosen, chosen_base, chosen_out = values[r, :, pick], base[pick], margin[r, pick]
    gap = float(np.abs(chosen_base + chosen.sum(axis=1) - chosen_out).max())
    if not gap <= ADDITIVITY_TOLERANCE:
        raise AdditivityError(f"tree SHAP values are not additive: gap {gap!r}")
    raw = rows[list(feats)].to_numpy(dtype=object)
    return Explanation(
        feats, _frozen(chosen), _frozen(chosen_base.astype(np.float64)), _frozen(chosen_out),
        _frozen(raw), output_space(trees, regression=regression),
        "tree_interventional" if isinstance(trees, TreeEnsemble) else "linear_interventional",
        ExplanationBudget(0, 0, len(bg), max_rows), _frozen(np.zeros_like(chosen)))


def check_trees(
    trees: GraphModel,
    graph_output: Callable[[pd.DataFrame], npt.ArrayLike],
    frame: pd.DataFrame,
    *,
    features: Sequence[str],
) -> None:
    """Check that the trees reproduce the graph's output on every row of ``frame``.

    Raises
    ------
    UnsupportedGraph
        A feature is not numeric, the shapes differ, or the outputs differ by more than
        ``GRAPH_TOLERANCE`` (something after the trees changes the output).
    """
    feats = tuple(features)
    got = np.asarray(graph_output(frame[list(feats)]), dtype=np.float64)
    margin = _scores(trees, _numeric(frame, feats, "frame")) @ trees.columns.T + trees.offset
    mine = transformed(trees, margin)
    if got.ndim == 1:
        got = got[:, None]
    if got.shape != mine.shape:
        raise UnsupportedGraph(f"the graph's output has shape {got.shape}, the trees give {mine.shape}")
    gap = float(np.nan_to_num(np.abs(got - mine), nan=np.inf).max())
    if gap > GRAPH_TOLERANCE:
        raise UnsupportedGraph(
            f"the graph's output differs from its trees' by {gap:.2e} (> {GRAPH_TOLERANCE}): "
            "something after the trees changes it")


def _scores(model: GraphModel, x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return tree_scores(model, x) if isinstance(model, TreeEnsemble) else linear_scores(model, x)


def _shap(model: GraphModel, x: npt.NDArray[np.float64], z: npt.NDArray[np.float64]) -> TreeShap:
    if isinstance(model, TreeEnsemble):
        return interventional_tree_shap(model, x, z)
    return linear_shap(model, x, z)


def _numeric(frame: pd.DataFrame, feats: tuple[str, ...], name: str) -> npt.NDArray[np.float64]:
    missing = [f for f in feats if f not in frame.columns]
    if missing:
        raise ValueError(f"{name} is missing feature columns {missing!r}")
    bad = [f for f in feats if frame[f].dtype.kind not in "biuf"]
    if bad:
        raise UnsupportedGraph(f"features {bad!r} are not numeric; tree SHAP reads numeric inputs")
    return frame[list(feats)].to_numpy(dtype=np.float64)


def _subsample(background: pd.DataFrame, size: int, rng: np.random.Generator) -> pd.DataFrame:
    """As :func:`modelgate.reports.explanation.explain` subsamples (the same rows for a seed)."""
    if len(background) <= size:
        return background
    return background.iloc[np.sort(rng.choice(len(background), size=size, replace=False))]


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a
