"""Global and per-group summaries of SHAP values: what a beeswarm and a group table show.

Both are exact summaries of the rows that were explained (no sampling of their own): they
describe those rows, and another sample of rows would give other numbers.

:func:`shap_summary` is the data of shap's beeswarm plot (``shap.plots.beeswarm``): every
explained row's SHAP value per feature, with the feature's value on that row as a colour
position in ``[0, 1]`` (its mid-rank among the explained rows; NaN for non-numeric or
missing values, drawn grey), features ranked by mean ``|SHAP|``, and per feature the
Spearman correlation between the feature's value and its SHAP value (positive: higher
values push the output up). shap colours by the value clipped to its 5th-95th
percentiles; ranks give the same ordering of colours and need no clipping rule.

:func:`shap_by_group` splits the same rows by a sensitive feature. Its mean SHAP per
group and feature decomposes the gap between groups: every row's output is the shared base
value plus its SHAP values, so the difference in mean output between two groups is the sum
over features of the differences in their mean SHAP. ``spread`` (largest group mean minus
smallest, per feature) says which features drive the gap. Mean ``|SHAP|`` per group says
how much each group's outputs rely on a feature, whatever the direction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd
from modelgate.fairness.disaggregate import encode_groups
from scipy import stats

__all__ = ["GroupShap", "ShapSummary", "shap_by_group", "shap_summary"]


@dataclass(frozen=True, slots=True, eq=False)
class ShapSummary:
    """Every explained row's SHAP values per feature, with colour positions (beeswarm data).

    Attributes
    ----------
    features : tuple of str
        Features by decreasing mean ``|SHAP|`` (ties keep the explanation's order).
    values : ndarray of float64, shape (n_rows, n_features)
        SHAP values, columns in ``features`` order.
    colours : ndarray of float64, shape (n_rows, n_features)
        The feature's value on the row as its mid-rank among the rows, scaled to ``[0, 1]``
        (0.5 when all values are equal); NaN for a non-numeric or missing value.
    mean_abs : ndarray of float64, shape (n_features,)
        Mean ``|SHAP|`` per feature.
    value_correlation : ndarray of float64, shape (n_features,)
        Spearman correlation between a numeric feature's value and its SHAP value; NaN for a
        non-numeric feature or when either is constant.
    """

    features: tuple[str, ...]
    values: npt.NDArray[np.float64]
    colours: npt.NDArray[np.float64]
    mean_abs: npt.NDArray[np.float64]
    value_correlation: npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True, eq=False)
class GroupShap:
    """Mean SHAP and mean ``|SHAP|`` per group of one sensitive feature.

    Attributes
    ----------
    sensitive_feature : str
    groups : tuple of str
        Group labels, as the fairness tables label them (``__missing__`` for missing values).
    counts : ndarray of int64, shape (n_groups,)
        Explained rows per group.
    features : tuple of str
        Features by decreasing ``spread`` (ties keep the given order).
    mean : ndarray of float64, shape (n_groups, n_features)
        Mean SHAP value per group and feature.
    mean_abs : ndarray of float64, shape (n_groups, n_features)
        Mean ``|SHAP|`` per group and feature.
    spread : ndarray of float64, shape (n_features,)
        Largest minus smallest group mean SHAP, per feature (0 with one group).
    """

    sensitive_feature: str
    groups: tuple[str, ...]
    counts: npt.NDArray[np.int64]
    features: tuple[str, ...]
    mean: npt.NDArray[np.float64]
    mean_abs: npt.NDArray[np.float64]
    spread: npt.NDArray[np.float64]


def _check_values(values: npt.ArrayLike, features: Sequence[str]) -> npt.NDArray[np.float64]:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != len(features) or arr.shape[0] == 0:
        raise ValueError(f"values must have shape (n_rows >= 1, {len(features)}) to match "
                         f"features; got {arr.shape!r}")
    if not np.isfinite(arr).all():
        raise ValueError("values must be finite")
    return arr


def _colour_positions(column: npt.NDArray[np.object_]) -> npt.NDArray[np.float64]:
    """Mid-ranks of a column's numeric values scaled to [0, 1]; NaN where not numeric."""
    numeric = pd.to_numeric(pd.Series(column, dtype=object), errors="coerce").astype(np.float64)
    is_number = np.array([isinstance(v, int | float | np.integer | np.floating)
                          and not isinstance(v, bool | np.bool_) for v in column])
    numeric[~is_number] = np.nan
    ranks = numeric.rank(method="average").to_numpy()  # NaN stays NaN
    present = int(np.isfinite(ranks).sum())
    if present <= 1 or np.nanmin(ranks) == np.nanmax(ranks):
        return np.where(np.isfinite(ranks), 0.5, np.nan)
    return (ranks - 1.0) / (present - 1.0)


def _spearman(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> float:
    keep = np.isfinite(x)
    xs, ys = x[keep], y[keep]
    if len(xs) < 2 or xs.min() == xs.max() or ys.min() == ys.max():
        return float("nan")  # undefined; scipy would warn and return nan
    return float(stats.spearmanr(xs, ys).statistic)


def shap_summary(
    values: npt.ArrayLike, feature_values: npt.ArrayLike, features: Sequence[str]
) -> ShapSummary:
    """The beeswarm data of a block of explained rows.

    Parameters
    ----------
    values : array-like of float, shape (n_rows, n_features)
        SHAP values (e.g. ``Explanation.values``).
    feature_values : array-like, shape (n_rows, n_features)
        The rows' raw feature values (e.g. ``Explanation.feature_values``).
    features : sequence of str
        Feature names, in column order.

    Returns
    -------
    ShapSummary

    Raises
    ------
    ValueError
        If the shapes do not agree, there are no rows, or a value is not finite.

    Examples
    --------
    >>> s = shap_summary([[0.1, -2.0], [0.3, 1.0], [-0.2, 0.5]],
    ...                  [[1.0, "a"], [3.0, "b"], [2.0, "a"]], ["x", "c"])
    >>> s.features, s.mean_abs.round(3).tolist()
    (('c', 'x'), [1.167, 0.2])
    >>> s.colours[:, 1].tolist(), s.colours[:, 0].tolist()
    ([0.0, 1.0, 0.5], [nan, nan, nan])
    >>> round(float(s.value_correlation[1]), 3)
    0.5
    """
    feats = tuple(features)
    arr = _check_values(values, feats)
    raw = np.asarray(feature_values, dtype=object)
    if raw.shape != arr.shape:
        raise ValueError(f"feature_values must have the shape of values {arr.shape!r}; "
                         f"got {raw.shape!r}")
    mean_abs = np.abs(arr).mean(axis=0)
    order = np.argsort(-mean_abs, kind="stable")
    colours = np.column_stack([_colour_positions(raw[:, j]) for j in order])
    ordered = arr[:, order]
    corr = np.array([_spearman(colours[:, k], ordered[:, k]) for k in range(len(order))])
    return ShapSummary(tuple(feats[j] for j in order), ordered, colours, mean_abs[order], corr)


def shap_by_group(
    values: npt.ArrayLike,
    features: Sequence[str],
    sensitive: npt.ArrayLike,
    *,
    sensitive_feature: str,
) -> GroupShap:
    """Mean SHAP and mean ``|SHAP|`` per group of a sensitive feature, over explained rows.

    Parameters
    ----------
    values : array-like of float, shape (n_rows, n_features)
        SHAP values of the explained rows.
    features : sequence of str
        Feature names, in column order.
    sensitive : array-like, shape (n_rows,)
        The sensitive feature's value on each explained row (need not be a model input).
    sensitive_feature : str
        Its name, for display.

    Returns
    -------
    GroupShap

    Raises
    ------
    ValueError
        If the shapes do not agree, there are no rows, or a value is not finite.

    Examples
    --------
    >>> g = shap_by_group([[0.4, 0.1], [0.2, -0.1], [-0.3, 0.0]], ["a", "b"],
    ...                   ["F", "F", "M"], sensitive_feature="sex")
    >>> g.groups, g.counts.tolist(), g.features
    (('F', 'M'), [2, 1], ('a', 'b'))
    >>> g.mean.round(3).tolist(), g.spread.round(3).tolist()
    ([[0.3, 0.0], [-0.3, 0.0]], [0.6, 0.0])
    """
    feats = tuple(features)
    arr = _check_values(values, feats)
    column = np.asarray(sensitive, dtype=object)
    if column.shape != (arr.shape[0],):
        raise ValueError(f"sensitive must have one value per row ({arr.shape[0]}); "
                         f"got shape {column.shape!r}")
    labels, codes = encode_groups(column)
    counts = np.bincount(codes, minlength=len(labels)).astype(np.int64)
    sums = np.zeros((len(labels), len(feats)))
    abs_sums = np.zeros((len(labels), len(feats)))
    np.add.at(sums, codes, arr)
    np.add.at(abs_sums, codes, np.abs(arr))
    present = counts > 0
    mean, mean_abs = sums[present] / counts[present, None], abs_sums[present] / counts[present, None]
    spread = mean.max(axis=0) - mean.min(axis=0)
    order = np.argsort(-spread, kind="stable")
    return GroupShap(sensitive_feature, tuple(lbl for lbl, p in zip(labels, present, strict=True) if p),
                     counts[present], tuple(feats[j] for j in order), mean[:, order],
                     mean_abs[:, order], spread[order])
