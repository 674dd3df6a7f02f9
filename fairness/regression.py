"""Regression fairness: per-group MAE, RMSE and mean prediction, and their gaps.

A gap is the largest minus the smallest group value (fairlearn's ``MetricFrame``
``difference(method="between_groups")``): ``mae_gap``, ``rmse_gap`` and
``mean_prediction_gap``. Groups are encoded as in :mod:`modelgate.fairness.disaggregate`
(missing values form the group ``"__missing__"``); groups below ``min_group_size`` are
flagged and, with ``include_small_groups=False``, left out of the gaps (listed in
``excluded_groups``). A gap over fewer than two groups is undefined (NaN), never 0.

Intervals: percentile bootstrap over the row resamples of
:func:`modelgate.intervals.bootstrap_counts`; a group's sums per resample are
one matrix product of the counts with per-row statistics, so all groups and resamples
of a chunk cost one product. A group absent from a resample is left out of that
resample's gaps. An interval is widened to hold its gap on all rows when needed (see
:func:`modelgate.intervals.interval_holding`).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from modelgate.intervals import (
    bootstrap_counts,
    check_confidence_level,
    interval_holding,
    percentile_interval,
)
from modelgate.records import finite_or_none

from .disaggregate import encode_groups, highest_and_lowest, one_group_reason
from .metrics import FairnessEstimate

__all__ = ["REGRESSION_FAIRNESS_NAMES", "RegressionFairnessReport", "RegressionGap",
           "RegressionGroup", "regression_fairness_report"]

REGRESSION_FAIRNESS_NAMES = ("mae_gap", "rmse_gap", "mean_prediction_gap")
_FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class RegressionGroup:
    """One group's size and errors."""

    group: str
    n: int
    mae: float
    rmse: float
    mean_prediction: float
    mean_error: float
    small_group: bool

    def to_record(self) -> dict[str, Any]:
        """The group's errors as a ``fairness_group`` row (the caller adds the run and the
        sensitive feature; a regression model's rows have no rates).

        Returns
        -------
        dict
            ``group_label``, ``n``, ``mae``, ``rmse``, ``mean_prediction``, ``mean_error``
            (None where not finite) and ``is_small_group``.

        Examples
        --------
        >>> RegressionGroup("a", 40, 1.5, 2.0, 10.0, -0.5, small_group=False).to_record()["rmse"]
        2.0
        """
        return {"group_label": self.group, "n": self.n, "mae": finite_or_none(self.mae),
                "rmse": finite_or_none(self.rmse),
                "mean_prediction": finite_or_none(self.mean_prediction),
                "mean_error": finite_or_none(self.mean_error), "is_small_group": self.small_group}


#: One gap with its interval and the groups behind it: the same record as a binary gap.
RegressionGap = FairnessEstimate


@dataclass(frozen=True, slots=True)
class RegressionFairnessReport:
    """Per-group errors and the gaps of one sensitive feature."""

    sensitive_feature: str
    groups: tuple[RegressionGroup, ...]
    estimates: tuple[RegressionGap, ...]
    n_bootstrap: int
    confidence_level: float
    seed: int

    def by_name(self) -> Mapping[str, RegressionGap]:
        """Read-only mapping from gap name to estimate (the gate's input)."""
        return MappingProxyType({e.name: e for e in self.estimates})


def _group_values(sums: _FloatArray) -> _FloatArray:
    """``(B, G, 3)`` MAE, RMSE, mean prediction from ``(B, G, 5)`` sums n, |e|, e^2, pred, e."""
    n = sums[..., 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.stack([sums[..., 1] / n, np.sqrt(sums[..., 2] / n), sums[..., 3] / n], axis=-1)


def _gaps(values: _FloatArray, included: npt.NDArray[np.bool_]) -> _FloatArray:
    """``(B, 3)`` max - min over the included groups with a value; NaN below two groups."""
    v = np.where(included[None, :, None], values, np.nan)
    defined = np.isfinite(v).sum(axis=1)
    with warnings.catch_warnings():  # an all-NaN resample row: handled just below
        warnings.simplefilter("ignore", RuntimeWarning)
        gap = np.nanmax(v, axis=1) - np.nanmin(v, axis=1)
    return np.where(defined >= 2, gap, np.nan)


def regression_fairness_report(
    y_true: npt.ArrayLike,
    prediction: npt.ArrayLike,
    sensitive: npt.ArrayLike,
    *,
    sensitive_feature: str,
    min_group_size: int = 30,
    include_small_groups: bool = True,
    n_bootstrap: int = 1000,
    confidence_level: float = 0.95,
    seed: int = 0,
) -> RegressionFairnessReport:
    """Group MAE, RMSE and mean prediction, and their gaps with bootstrap intervals.

    Parameters
    ----------
    y_true, prediction : array_like of float, shape (n,)
        Observed and predicted values (finite).
    sensitive : array_like, shape (n,)
        Values of the sensitive feature.
    sensitive_feature : str
        Its name (reported).
    min_group_size : int, default 30
        Groups with fewer rows are flagged ``small_group``.
    include_small_groups : bool, default True
        Whether small groups take part in the gaps (fairlearn: all groups do).
    n_bootstrap, confidence_level, seed
        Resamples (0: no intervals), interval coverage, seed.

    Returns
    -------
    RegressionFairnessReport

    Examples
    --------
    >>> r = regression_fairness_report([1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 4.0, 6.0],
    ...                                ["a", "a", "b", "b"], sensitive_feature="g", n_bootstrap=0)
    >>> [(g.group, g.mae) for g in r.groups], r.by_name()["mae_gap"].value
    ([('a', 0.0), ('b', 1.5)], 1.5)
    """
    y = np.asarray(y_true, dtype=np.float64)
    pred = np.asarray(prediction, dtype=np.float64)
    if y.ndim != 1 or y.size == 0 or pred.shape != y.shape:
        raise ValueError(f"y_true and prediction must be non-empty 1-D arrays of one length; got "
                         f"shapes {y.shape} and {pred.shape}")
    if not (np.isfinite(y).all() and np.isfinite(pred).all()):
        raise ValueError("y_true and prediction must be finite (no NaN or infinite values)")
    check_confidence_level(confidence_level)
    labels, codes = encode_groups(sensitive)
    if codes.shape != y.shape:
        raise ValueError(f"sensitive must have the length of y_true ({y.size}); got {codes.size}")
    e = pred - y
    stats = np.column_stack([np.ones_like(y), np.abs(e), e * e, pred, e])
    by_group = np.zeros((len(y), len(labels), stats.shape[1]))
    by_group[np.arange(len(y)), codes] = stats
    rows = by_group.reshape(len(y), -1)  # a row's statistics sit in its group's columns
    sums = rows.sum(axis=0).reshape(len(labels), -1)
    point = _group_values(sums[None])
    groups = tuple(RegressionGroup(label, int(s[0]), float(v[0]), float(v[1]), float(v[2]),
                                   float(s[4] / s[0]), bool(s[0] < min_group_size))
                   for label, s, v in zip(labels, sums, point[0], strict=True))
    small = np.array([g.small_group for g in groups])
    included = np.ones_like(small) if include_small_groups else ~small
    parts = [_gaps(_group_values((w @ rows).reshape(len(w), len(labels), -1)), included)
             for w in bootstrap_counts(len(y), n_bootstrap=n_bootstrap, seed=seed)]
    boot = np.vstack(parts) if parts else np.empty((0, 3))
    gaps = _gaps(point, included)[0]
    excluded = tuple((g.group, "small group") for g in groups if not include_small_groups
                     and g.small_group)
    estimates = []
    for j, name in enumerate(REGRESSION_FAIRNESS_NAMES):
        values = np.where(included, point[0, :, j], np.nan)
        if not np.isfinite(gaps[j]):
            why = one_group_reason(labels) or "fewer than two groups"
            estimates.append(RegressionGap(name, float("nan"), float("nan"), float("nan"), len(y),
                                           None, None, excluded, why))
            continue
        lower, upper = interval_holding(gaps[j], *percentile_interval(boot[:, j],
                                                                      confidence_level))
        estimates.append(RegressionGap(
            name, float(gaps[j]), lower, upper, len(y), *highest_and_lowest(labels, values),
            excluded))
    return RegressionFairnessReport(sensitive_feature, groups, tuple(estimates), n_bootstrap,
                                    confidence_level, seed)
