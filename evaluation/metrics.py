"""Binary-classification performance metrics with seeded, vectorised bootstrap intervals.

Every metric here depends on the data only through one count table: how many rows of
each label fall on each distinct score value.  A bootstrap resample is therefore a
table of counts, obtained with one gather and one ``np.bincount`` per chunk of
resamples, and every metric of every resample is computed from those tables with
whole-array operations (ROC AUC is the Mann-Whitney statistic on the weighted ranks,
with ties counted one half).  1000 resamples of 100 000 rows take seconds, not minutes.

Conventions
-----------
* ``y_true`` holds 0/1 labels (bool, integer or float 0.0/1.0); ``score`` is the
  predicted probability of the positive class, in [0, 1].
* A row is predicted positive when ``score >= threshold``.
* Log loss clips probabilities to ``[eps, 1 - eps]`` with ``eps`` the float64 machine
  epsilon, as scikit-learn does.
* A metric that is undefined on the data (ROC AUC with one label class, precision with
  no predicted positives, ...) has ``value`` NaN and an ``undefined_reason``; it is never
  replaced by 0 or 0.5.  Resamples on which a metric is undefined are left out of its
  interval; if all are, the interval is NaN.
* Bootstrap resamples of the rows are drawn by :func:`bootstrap_indices` from
  ``np.random.default_rng(seed)``; the same seed gives the same resamples for every
  model, so :func:`compare` pairs them row for row.  By default (``interval=
  "per_metric"``) every metric and every paired delta but the Brier score's gets the
  interval of :mod:`~.metric_intervals`, the same methods as the pipelines'
  :func:`~modelgate.evaluation.performance.performance_from_statistics`; the Brier
  delta (and every metric with ``interval="percentile"``) percentile intervals
  (``np.nanquantile``, linear interpolation) of the replicates, each the metric on a
  resample, so in its range.  Every interval is widened where needed to hold the point
  estimate (:func:`modelgate.intervals.interval_holding`).

References
----------
.. [1] Efron, B. and Tibshirani, R. (1993). An Introduction to the Bootstrap, ch. 13.
.. [2] Mann, H. B. and Whitney, D. R. (1947). On a test of whether one of two random
   variables is stochastically larger than the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

# Shared with fairness/, so it lives below both cores.
from modelgate.intervals import (
    bootstrap_indices,
    interval_holding,
    percentile_interval,
)

from .auc_delta import delong_deviations, paired_auc_delta_interval
from .binary_inputs import check_interval, check_labels_scores, check_options
from .bootstrap_cells import delong_variance
from .calibration import calibration_table
from .metric_intervals import (
    difference_part_moments,
    log_loss_delta_interval,
    own_intervals,
    paired_delta_interval,
)
from .metric_results import (
    METRIC_NAMES,
    CalibrationBin,
    CalibrationStrategy,
    CalibrationTable,
    ComparisonReport,
    MetricDelta,
    MetricEstimate,
    PairedComparison,
    PerformanceReport,
)
from .paired_ratios import mean_delta_interval

__all__ = [
    "METRIC_NAMES",
    "CalibrationBin",
    "CalibrationTable",
    "ComparisonReport",
    "MetricDelta",
    "MetricEstimate",
    "PairedComparison",
    "PerformanceReport",
    "bootstrap_indices",
    "compare",
    "evaluate",
    "paired_deltas",
]

_FloatArray = npt.NDArray[np.float64]


def paired_deltas(names: tuple[str, ...], point: tuple[_FloatArray, _FloatArray],
                  resampled: tuple[_FloatArray, _FloatArray], *, n: int,
                  confidence_level: float) -> tuple[MetricDelta, ...]:
    """One :class:`MetricDelta` per metric from two models' point values ``(M,)`` and their
    values on the same resamples ``(B, M)`` (candidate first); NaN marks an undefined value.

    Examples
    --------
    >>> d = paired_deltas(("mae",), (np.array([1.0]), np.array([1.5])),
    ...                   (np.array([[1.0], [2.0]]), np.array([[1.5], [2.0]])), n=4,
    ...                   confidence_level=0.5)
    >>> d[0].delta, d[0].ci_lower, d[0].ci_upper
    (-0.5, -0.375, -0.125)
    """
    out = []
    for j, name in enumerate(names):
        new, old = float(point[0][j]), float(point[1][j])
        reason = ("candidate: undefined" if not np.isfinite(new) else
                  "champion: undefined" if not np.isfinite(old) else None)
        diff = _estimate(name, new - old, reason, resampled[0][:, j] - resampled[1][:, j],
                         confidence_level, n)
        out.append(MetricDelta(name, new, old, diff.value, diff.ci_lower, diff.ci_upper, n,
                               diff.undefined_reason))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class _Cells:
    """Rows of one model mapped to count cells ``label * n_unique + score_rank``.

    ``weights`` has one row per cell and one column per additive statistic (see
    :data:`_COLUMNS`), so a whole chunk of count tables reduces with one matrix product.
    """

    cell: npt.NDArray[np.int32] | npt.NDArray[np.intp]
    n_unique: int
    weights: _FloatArray


# Additive per-row statistics, columns of _Cells.weights.
_COLUMNS = ("n", "n_pos", "tp", "fp", "log_loss", "squared_error", "log_loss_squared",
            "squared_error_squared")
_PART_KEYS = ("up", "up_var", "down", "down_var")


def evaluate(
    y_true: npt.ArrayLike,
    score: npt.ArrayLike,
    *,
    threshold: float = 0.5,
    n_bootstrap: int = 1000,
    confidence_level: float = 0.95,
    seed: int = 0,
    n_calibration_bins: int = 10,
    calibration_strategy: CalibrationStrategy = "uniform",
    interval: Literal["per_metric", "percentile"] = "per_metric",
) -> PerformanceReport:
    """Compute every metric of :data:`METRIC_NAMES` with a bootstrap interval.

    Parameters
    ----------
    y_true : array_like of shape (n,)
        True labels, 0 or 1.
    score : array_like of shape (n,)
        Predicted probability of label 1, in [0, 1].
    threshold : float, default 0.5
        A row is predicted positive when ``score >= threshold``.
    n_bootstrap : int, default 1000
        Number of bootstrap resamples; 0 gives NaN intervals.
    confidence_level : float, default 0.95
        Coverage of the percentile interval, in (0, 1).
    seed : int, default 0
        Seed of the resamples (see :func:`bootstrap_indices`).
    n_calibration_bins : int, default 10
        Number of reliability bins.
    calibration_strategy : {"uniform", "quantile"}, default "uniform"
        Equal-width bins on [0, 1] or bins at score quantiles (as scikit-learn).
    interval : {"per_metric", "percentile"}, default "per_metric"
        ``"per_metric"``: each metric by its method of :mod:`~.metric_intervals` (as
        :func:`~modelgate.evaluation.performance.performance_from_statistics`);
        ``"percentile"``: percentile throughout.

    Returns
    -------
    PerformanceReport

    Raises
    ------
    ValueError
        If an input is empty, of the wrong shape or outside its allowed values.

    Examples
    --------
    >>> y = [0, 0, 1, 1, 0, 1]
    >>> s = [0.1, 0.4, 0.35, 0.8, 0.2, 0.9]
    >>> report = evaluate(y, s, n_bootstrap=200, seed=1)
    >>> auc = report.by_name()["roc_auc"]
    >>> round(auc.value, 4), auc.n
    (0.8889, 6)
    >>> bool(auc.ci_lower <= auc.value <= auc.ci_upper)
    True
    >>> evaluate([1, 1], [0.2, 0.9], n_bootstrap=0).by_name()["roc_auc"].undefined_reason
    'label has one class only'
    """
    y, s = check_labels_scores(y_true, score, "score")
    check_options(threshold, n_bootstrap, confidence_level, seed)
    cells = _cells(y, s, threshold)
    point, reasons = _point_estimates(cells)
    check_interval(interval)
    boot = _bootstrap((cells,), len(y), n_bootstrap, seed)
    own = _own_intervals(cells, point, boot[0], confidence_level) if interval == "per_metric" else {}
    metrics = tuple(
        _holding(_estimate(name, point[name], reasons[name], boot[0][name], confidence_level,
                           len(y), own.get(name)))
        for name in METRIC_NAMES
    )
    calibration = calibration_table(
        y, s, n_bins=n_calibration_bins, strategy=calibration_strategy
    )
    return PerformanceReport(
        metrics, calibration, len(y), float(threshold), n_bootstrap, confidence_level, seed
    )


def compare(
    candidate_scores: npt.ArrayLike,
    champion_scores: npt.ArrayLike,
    y_true: npt.ArrayLike,
    *,
    threshold: float = 0.5,
    champion_threshold: float | None = None,
    n_bootstrap: int = 1000,
    confidence_level: float = 0.95,
    seed: int = 0,
    interval: Literal["per_metric", "percentile"] = "per_metric",
) -> ComparisonReport:
    """Paired bootstrap of ``candidate - champion`` for every metric, on the same rows.

    Both models are scored on the same resampled rows (the same indices from
    :func:`bootstrap_indices`), so the interval reflects the paired difference, which is
    usually much narrower than the difference of two independent intervals.

    Parameters
    ----------
    candidate_scores, champion_scores : array_like of shape (n,)
        Predicted probabilities of label 1 of the two models, in [0, 1].
    y_true : array_like of shape (n,)
        True labels, 0 or 1.
    threshold : float, default 0.5
        Decision threshold of the candidate (and of the champion unless
        ``champion_threshold`` is given).
    champion_threshold : float, optional
        Decision threshold of the champion when it differs from the candidate's.
    n_bootstrap, confidence_level, seed, interval
        As in :func:`evaluate`; with ``"per_metric"`` the deltas of ROC AUC, accuracy,
        precision, recall, F1 and log loss are MOVER intervals
        (:func:`~.metric_intervals.paired_delta_interval`).

    Returns
    -------
    ComparisonReport

    Raises
    ------
    ValueError
        If an input is empty, of the wrong shape or outside its allowed values.

    Examples
    --------
    >>> y = [0, 0, 1, 1, 0, 1]
    >>> new = [0.1, 0.2, 0.7, 0.8, 0.3, 0.9]
    >>> old = [0.1, 0.4, 0.35, 0.8, 0.2, 0.9]
    >>> d = compare(new, old, y, n_bootstrap=200).by_name()["roc_auc"]
    >>> round(d.candidate, 4), round(d.champion, 4), round(d.delta, 4)
    (1.0, 0.8889, 0.1111)
    """
    y, s_new = check_labels_scores(y_true, candidate_scores, "candidate_scores")
    _, s_old = check_labels_scores(y, champion_scores, "champion_scores")
    check_options(threshold, n_bootstrap, confidence_level, seed)
    old_threshold = threshold if champion_threshold is None else champion_threshold
    check_options(old_threshold, n_bootstrap, confidence_level, seed)
    cells = (_cells(y, s_new, threshold), _cells(y, s_old, old_threshold))
    (p_new, r_new), (p_old, r_old) = _point_estimates(cells[0]), _point_estimates(cells[1])
    check_interval(interval)
    differences = {"log_loss": _row_log_loss(y, s_new) - _row_log_loss(y, s_old)}
    boot_new, boot_old = _bootstrap(cells, len(y), n_bootstrap, seed, differences)
    own: tuple[Mapping[str, tuple[float, float] | None], ...] = ({}, {})
    loss_delta: dict[str, tuple[float, float] | None] = {"log_loss": None, "brier": None}
    if interval == "per_metric":
        own = (_own_intervals(cells[0], p_new, boot_new, confidence_level),
               _own_intervals(cells[1], p_old, boot_old, confidence_level))
        loss_delta = {name: log_loss_delta_interval(
            difference_part_moments(difference, np.ones((1, len(y)))),
            {key: boot_new[f"{name}_difference_{key}"] for key in _PART_KEYS}, len(y),
            confidence_level) for name, difference in differences.items()}
        loss_delta["brier"] = mean_delta_interval((s_new - y) ** 2 - (s_old - y) ** 2,
                                                  np.ones(len(y)), confidence_level)
        if n_bootstrap > 0:
            loss_delta["roc_auc"] = _auc_delta(y, s_new, s_old, p_new["roc_auc"],
                                               p_old["roc_auc"], confidence_level)
    new_right, old_right = (s_new >= threshold) == y, (s_old >= old_threshold) == y
    correct = (int(np.sum(new_right & old_right)), int(np.sum(new_right & ~old_right)),
               int(np.sum(~new_right & old_right)), int(np.sum(~new_right & ~old_right)))
    pos, new_found, old_found = y == 1, s_new >= threshold, s_old >= old_threshold
    found = (int(np.sum(pos & new_found & old_found)), int(np.sum(pos & new_found & ~old_found)),
             int(np.sum(pos & ~new_found & old_found)), int(np.sum(pos & ~new_found & ~old_found)))
    deltas = []
    for name in METRIC_NAMES:
        reason = r_new[name] and f"candidate: {r_new[name]}"
        reason = reason or (r_old[name] and f"champion: {r_old[name]}")
        paired = paired_delta_interval(name, (p_new[name], p_old[name]),
                                       (own[0].get(name), own[1].get(name)),
                                       (boot_new[name], boot_old[name]), correct,
                                       log_loss_delta=loss_delta["log_loss"],
                                       brier_delta=loss_delta["brier"],
                                       auc_delta=loss_delta.get("roc_auc"), found=found,
                                       confidence_level=confidence_level)
        diff = _holding(_estimate(
            name, p_new[name] - p_old[name], reason, boot_new[name] - boot_old[name],
            confidence_level, len(y), paired,
        ))
        deltas.append(
            MetricDelta(name, p_new[name], p_old[name], diff.value, diff.ci_lower,
                        diff.ci_upper, len(y), diff.undefined_reason)
        )
    return ComparisonReport(
        tuple(deltas), len(y), float(threshold), n_bootstrap, confidence_level, seed
    )


# ----------------------------------------------------------------------------- internals


def _cells(y: npt.NDArray[np.int8], s: _FloatArray, threshold: float) -> _Cells:
    scores, rank = np.unique(s, return_inverse=True)
    n_unique = len(scores)
    cell = y.astype(np.intp) * n_unique + rank.astype(np.intp)
    cell = cell.astype(_cell_dtype(n_unique), copy=False)
    eps = np.finfo(np.float64).eps
    label = np.repeat([0.0, 1.0], n_unique)
    prob = np.tile(scores, 2)
    predicted = np.tile(scores >= threshold, 2)
    weights = np.column_stack([
        np.ones(2 * n_unique),
        label,
        predicted & (label == 1),
        predicted & (label == 0),
        -np.log(np.clip(np.where(label == 1, prob, 1.0 - prob), eps, 1 - eps)),
        (label - prob) ** 2,
        np.log(np.clip(np.where(label == 1, prob, 1.0 - prob), eps, 1 - eps)) ** 2,
        (label - prob) ** 4,
    ])
    return _Cells(cell, n_unique, weights)


def _cell_dtype(n_unique: int) -> type[np.signedinteger[Any]]:
    """The integer type of the cell codes ``0 .. 2 * n_unique - 1``: int32 where they fit it
    (half the memory of the resamples' gathers), ``intp`` past it.

    Examples
    --------
    >>> _cell_dtype(10).__name__, _cell_dtype(2**30 + 1).__name__
    ('int32', 'int64')
    """
    return np.int32 if 2 * n_unique < 2**31 else np.intp


def _row_log_loss(y: npt.NDArray[np.int8], s: _FloatArray) -> _FloatArray:
    """Per row, the log loss clipped as scikit-learn's (and as :func:`_cells` sums it)."""
    eps = np.finfo(np.float64).eps
    return -np.log(np.clip(np.where(y == 1, s, 1.0 - s), eps, 1 - eps))


def _counts(cells: _Cells, idx: npt.NDArray[np.integer] | None) -> _FloatArray:
    """Count table of shape (resamples, 2 * n_unique); ``idx=None`` means the data.

    One ``bincount`` per resample: the table of a single resample stays in cache, which
    is faster than one ``bincount`` over the whole chunk.
    """
    width = 2 * cells.n_unique
    if idx is None:
        return np.bincount(cells.cell, minlength=width)[None, :].astype(np.float64)
    codes = cells.cell[idx]
    out = np.empty((idx.shape[0], width), dtype=np.float64)
    for b in range(idx.shape[0]):
        out[b] = np.bincount(codes[b], minlength=width)
    return out


def _statistics(counts: _FloatArray, cells: _Cells) -> dict[str, _FloatArray]:
    """Every metric for every row of ``counts`` (exact integer counts); NaN where undefined."""
    sums = dict(zip(_COLUMNS, (counts @ cells.weights).T, strict=True))
    n, n_pos, tp, fp = sums["n"], sums["n_pos"], sums["tp"], sums["fp"]
    neg, pos = counts[:, : cells.n_unique], counts[:, cells.n_unique :]
    # Mann-Whitney U: a positive scores 1 per lower negative and 1/2 per tied negative.
    twice_u = 2.0 * np.einsum("ij,ij->i", pos, np.cumsum(neg, axis=1)) - np.einsum(
        "ij,ij->i", pos, neg
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "roc_auc": twice_u / (2.0 * n_pos * (n - n_pos)),
            "accuracy": (n - n_pos - fp + tp) / n,
            "precision": tp / (tp + fp),
            "recall": tp / n_pos,
            "f1": 2.0 * tp / (tp + fp + n_pos),
            "log_loss": sums["log_loss"] / n,
            "brier": sums["squared_error"] / n,
            # squared standard error of the mean log loss (for the studentized interval)
            "log_loss_var": np.maximum(sums["log_loss_squared"] / n - (sums["log_loss"] / n) ** 2,
                                       0.0) / (n - 1.0),
            "brier_var": np.maximum(sums["squared_error_squared"] / n
                                    - (sums["squared_error"] / n) ** 2, 0.0) / (n - 1.0),
        }


def _auc_delta(y: npt.NDArray[np.int8], s_new: _FloatArray, s_old: _FloatArray, auc_new: float,
               auc_old: float, confidence_level: float) -> tuple[float, float] | None:
    """The ROC AUC delta's interval (:func:`~.auc_delta.paired_auc_delta_interval`) from the
    rows, each row a unit: the cell path's interval when cells are distinct scores."""
    ones = np.ones(len(y))
    d_new, d_old = delong_deviations(y, s_new, ones), delong_deviations(y, s_old, ones)
    if d_new is None or d_old is None:
        return None
    n_pos = int(y.sum())
    return paired_auc_delta_interval(auc_new, auc_old, d_new, d_old, ones,
                                     min(n_pos, len(y) - n_pos), confidence_level)


def _own_intervals(cells: _Cells, point: Mapping[str, float],
                   resampled: Mapping[str, _FloatArray],
                   confidence_level: float) -> dict[str, tuple[float, float] | None]:
    """The per-metric intervals of :mod:`~.metric_intervals` from one model's rows."""
    counts = _counts(cells, None)
    n, n_pos, tp, fp = (counts @ cells.weights)[0, :4]
    k = cells.n_unique
    return own_intervals(point, resampled, _statistics(counts, cells), int(n - n_pos - fp + tp),
                         int(n), int(n_pos), delong_variance(counts[0, :k], counts[0, k:]),
                         confidence_level, tp=int(tp), fp=int(fp))


def _point_estimates(cells: _Cells) -> tuple[dict[str, float], dict[str, str | None]]:
    counts = _counts(cells, None)
    stats = _statistics(counts, cells)
    values: dict[str, float] = {name: float(stats[name][0]) for name in METRIC_NAMES}
    n, n_pos, tp, fp = (counts @ cells.weights)[0, :4]
    return values, undefined_reasons(n, n_pos, tp, fp)


def undefined_reasons(n: float, n_pos: float, tp: float, fp: float) -> dict[str, str | None]:
    """Why each metric is undefined on these confusion counts (None where it is defined).

    >>> undefined_reasons(4, 0, 0, 1)["recall"]
    'no positive labels'
    """
    reasons: dict[str, str | None] = dict.fromkeys(METRIC_NAMES)
    if n_pos == 0 or n_pos == n:
        reasons["roc_auc"] = "label has one class only"
    if tp + fp == 0:
        reasons["precision"] = "no predicted positives at this threshold"
    if n_pos == 0:
        reasons["recall"] = "no positive labels"
    if n_pos == 0 and tp + fp == 0:
        reasons["f1"] = "no positive labels and no predicted positives"
    return reasons


def _bootstrap(
    cells: tuple[_Cells, ...], n: int, n_bootstrap: int, seed: int,
    differences: Mapping[str, _FloatArray] | None = None,
) -> list[dict[str, _FloatArray]]:
    """Per model, per metric: the ``n_bootstrap`` resampled values; with ``differences``
    (per metric, per row), the first model's also hold each difference's parts' moments on
    the same resamples (:func:`~.metric_intervals.difference_part_moments`, keys
    ``log_loss_difference_up`` ...)."""
    parts: list[list[dict[str, _FloatArray]]] = [[] for _ in cells]
    for idx in bootstrap_indices(n, n_bootstrap=n_bootstrap, seed=seed):
        for model, c in enumerate(cells):
            parts[model].append(_statistics(_counts(c, idx), c))
        if differences is not None:
            rows = np.stack([np.bincount(i, minlength=n) for i in idx]).astype(np.float64)
            for name, difference in differences.items():
                moments = difference_part_moments(difference, rows)
                parts[0][-1].update({f"{name}_difference_{key}": moments[key]
                                     for key in _PART_KEYS})
    empty = np.empty(0, dtype=np.float64)
    keys = [(*METRIC_NAMES, "log_loss_var", "brier_var") for _ in cells]
    if differences is not None:
        keys[0] = (*keys[0], *(f"{name}_difference_{k}" for name in differences
                               for k in _PART_KEYS))
    return [
        {name: np.concatenate([p[name] for p in chunks]) if chunks else empty for name in names}
        for names, chunks in zip(keys, parts, strict=True)
    ]


def _estimate(
    name: str,
    value: float,
    reason: str | None,
    resampled: _FloatArray,
    confidence_level: float,
    n: int,
    own: tuple[float, float] | None = None,
) -> MetricEstimate:
    lower, upper = percentile_interval(resampled, confidence_level) if own is None else own
    if reason is not None or not np.isfinite(value):
        return MetricEstimate(name, float("nan"), float("nan"), float("nan"), n,
                              reason or "not finite")
    return MetricEstimate(name, value, lower, upper, n, None)


def _holding(estimate: MetricEstimate) -> MetricEstimate:
    """The binary estimate with its interval widened to hold its value (see
    :func:`modelgate.intervals.interval_holding`)."""
    lower, upper = interval_holding(estimate.value, estimate.ci_lower, estimate.ci_upper)
    return MetricEstimate(estimate.name, estimate.value, lower, upper, estimate.n,
                          estimate.undefined_reason)
