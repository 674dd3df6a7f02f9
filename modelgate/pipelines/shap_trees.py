"""Which SHAP algorithm a model gets: exact values read from its trees or linear model when
its graph allows, else the masker's.

A graph that is one tree ensemble (or one linear model) on the raw features, whose output
is that model node's own on the rows at hand, is explained exactly from it
(:func:`modelgate.reports.exact_explanation.explain_trees`, ``algorithm="tree_interventional"``
or ``"linear_interventional"``).
Any other graph goes to :func:`modelgate.reports.explanation.explain` /
:func:`~modelgate.reports.explanation.explain_class` as before, and :class:`TreeRoute` keeps the
reason, which the CLI's JSON (``algorithm_note``) and the report show. The CLI's
``explain`` and the evaluation pipeline's explain step both decide here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from modelgate.reports import (
    Explanation,
    GraphModel,
    UnsupportedGraph,
    check_trees,
    explain_trees,
    read_linear_model,
    read_tree_ensemble,
)

__all__ = ["TreeRoute", "explain_with_trees", "tree_route"]


@dataclass(frozen=True, slots=True)
class TreeRoute:
    """The trees (or linear model) of a graph, or why its SHAP values are not read from one."""

    trees: GraphModel | None
    reason: str = ""


def tree_route(onnx_bytes: bytes, scorer: Any, frame: pd.DataFrame | None = None) -> TreeRoute:
    """The graph's trees (or linear model) when it is one on raw features whose output is
    that model's on every row of ``frame`` (the rows and background to explain)."""
    features = list(scorer.feature_names)
    tensor = scorer.manifest.input_tensor
    model: GraphModel
    try:
        try:
            model = read_tree_ensemble(onnx_bytes, features, input_tensor=tensor)
        except UnsupportedGraph as not_trees:
            if "0 tree ensemble node" not in str(not_trees):
                raise
            model = read_linear_model(onnx_bytes, features, input_tensor=tensor)
        if frame is not None:
            check_trees(model, _graph_output(scorer), frame, features=features)
    except UnsupportedGraph as exc:
        return TreeRoute(None, f"not a tree ensemble or linear model SHAP can read exactly: {exc}")
    return TreeRoute(model)


def explain_with_trees(
    route: TreeRoute,
    scorer: Any,
    rows: pd.DataFrame,
    background: pd.DataFrame,
    *,
    seed: int,
    class_index: int | None = None,
    **options: Any,
) -> tuple[Explanation, np.ndarray | None]:
    """Exact tree SHAP of what a report explains per task: the positive class (binary),
    each row's predicted class or ``class_index`` (multiclass), the value (regression).
    Returns the explanation and, for a multiclass model, the class index of each row."""
    if route.trees is None:
        raise ValueError(f"route has no trees to explain with ({route.reason})")
    task, features = scorer.manifest.task, list(scorer.feature_names)
    if task == "regression":
        exp = explain_trees(route.trees, lambda f: scorer.predict_value(f)[:, None], rows, background,
                            features=features, columns=0, regression=True, seed=seed, **options)
        return exp, None
    if task == "binary_classification":
        exp = explain_trees(route.trees, scorer.predict_class_proba, rows, background,
                            features=features, columns=scorer.manifest.output.positive_index,
                            seed=seed, **options)
        return exp, None
    explained = (np.full(len(rows), class_index, dtype=np.int64) if class_index is not None
                 else scorer.predict_class_proba(rows[features]).argmax(axis=1).astype(np.int64))
    exp = explain_trees(route.trees, scorer.predict_class_proba, rows, background,
                        features=features, columns=explained, seed=seed, **options)
    return exp, explained


def _graph_output(scorer: Any) -> Any:
    if scorer.manifest.task == "regression":
        return lambda f: scorer.predict_value(f)[:, None]
    return scorer.predict_class_proba
