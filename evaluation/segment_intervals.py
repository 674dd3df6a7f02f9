"""Closed-form intervals of a segment's metrics: no resampling, O(cells) per segment.

A report with two columns of 50 values judges 100 segments and 100 rests; a bootstrap of
each (as :func:`~.performance.performance_from_statistics` runs for the whole data) made
segments cost 15 times the evaluation (``bench/RESULTS.md``, "Segments").  Every metric
has an interval computed from the merged statistics alone:

* accuracy, recall, precision, F1: Wilson score intervals of the exact counts, as for
  the whole data (:mod:`.metric_intervals`);
* ROC AUC: logit-scale Wald with DeLong's variance from the negatives and positives per
  distinct score, t-stretched, as for the whole data;
* log loss and Brier score: Hall's (1992) transformation interval for a mean, from the
  first three moments of the per-row losses (read off the score table: a row's losses
  depend on its label and score only; :func:`loss_power_sums`).  The whole data's
  studentized bootstrap corrects a standard error that moves with a skewed mean; Hall's
  cubic transformation of the t statistic removes the same first-order skewness term
  analytically (both are second-order accurate), so no resample is needed.  Written here
  because no library (scipy, statsmodels) offers it.  A loss constant over the rows (or
  of one row) takes :func:`~.metric_intervals.constant_mean_interval` on its range, and
  the ends stay in it (the log loss below :data:`~.metric_intervals.LOG_LOSS_MAX`).

References
----------
.. [1] Hall, P. (1992). On the removal of skewness by transformation. JRSS B 54(1), 221-228.
.. [2] Zhou, X.-H. and Gao, S. (2000). One-sided confidence intervals for means of
   positively skewed distributions. The American Statistician 54(2), 100-104.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from modelgate.intervals import interval_holding, logit_wald_interval

from .metric_intervals import LOG_LOSS_MAX, constant_mean_interval, t_over_z
from .metrics import METRIC_NAMES, MetricEstimate
from .performance import point_values
from .rest_sums import (
    RocSums,
    TotalTable,
    delong_from_sums,
    rest_roc_sums,
    table_roc_sums,
    total_table,
)
from .sufficient import (
    FALLBACK_GRID,
    MAX_DISTINCT,
    EvaluationStatistics,
    ModelStatistics,
    ScoreTable,
    merge_models,
    row_losses,
)
from .weakest_slices import wilson_ends

__all__ = ["ColumnTotal", "closed_form_estimates", "column_total", "hall_mean_interval",
           "loss_power_sums", "rest_estimates", "rest_of"]


def hall_mean_interval(n: float, s1: float, s2: float, s3: float,
                       confidence_level: float) -> tuple[float, float]:
    """Hall's transformation interval of a mean from the power sums of its ``n`` values.

    With ``T = sqrt(n) (mean - mu) / sd`` and ``g = skewness``, Hall's
    ``f(T) = T + g T**2 / (3 sqrt n) + g**2 T**3 / (27 n) + g / (6 sqrt n)`` is normal to
    second order and monotone; the ends are ``mean - sd / sqrt(n) f^-1(z)`` at the two
    normal quantiles, ``f^-1(x) = 3 sqrt(n) / g ((1 + g / sqrt(n) (x - g / (6 sqrt n)))**(1/3) - 1)``.
    Without skewness it is the Wald interval.  NaN below two values; ``(mean, mean)`` when
    the values are all equal.

    Parameters
    ----------
    n, s1, s2, s3 : float
        The count and the sums of the values, their squares and their cubes.
    confidence_level : float
        Central coverage in (0, 1).

    Examples
    --------
    Symmetric values give the Wald interval (here sd 1, n = 4: 1.96 x 1 / sqrt 4):

    >>> [round(e, 4) for e in hall_mean_interval(4, 0.0, 4.0 * 3 / 4, 0.0, 0.95)]
    [-0.98, 0.98]
    >>> lo, hi = hall_mean_interval(100, 10.0, 100.0, 1000.0, 0.95)  # right-skewed
    >>> bool(hi - 0.1 > 0.1 - lo)
    True
    """
    from scipy.special import ndtri

    if n < 2:
        return float("nan"), float("nan")
    mean = s1 / n
    m2 = max(s2 / n - mean * mean, 0.0)
    if m2 <= 0.0:
        return mean, mean
    m3 = s3 / n - 3.0 * mean * s2 / n + 2.0 * mean ** 3
    sd = math.sqrt(m2 * n / (n - 1.0))
    gamma = m3 / m2 ** 1.5
    root_n = math.sqrt(n)
    z = float(ndtri(0.5 + 0.5 * confidence_level))

    def inverse(x: float) -> float:
        if abs(gamma) < 1e-12:
            return x
        inner = 1.0 + gamma / root_n * (x - gamma / (6.0 * root_n))
        return 3.0 * root_n / gamma * (math.copysign(abs(inner) ** (1.0 / 3.0), inner) - 1.0)

    se = sd / root_n
    return mean - se * inverse(z), mean - se * inverse(-z)


def mean_loss_interval(value: float, n: int, s1: float, s2: float, s3: float, most: float,
                       confidence_level: float) -> tuple[float, float]:
    """Hall's interval of a mean loss in ``[0, most]``, held to that range; a loss the same
    on every row (or of one row) takes :func:`~.metric_intervals.constant_mean_interval`.

    >>> [round(e, 4) for e in mean_loss_interval(0.04, 1, 0.04, 0.0016, 6.4e-05, 1.0, 0.95)]
    [0.001, 0.976]
    """
    lower, upper = hall_mean_interval(n, s1, s2, s3, confidence_level)
    if not lower < upper:  # every row the same loss, or one row (NaN)
        lower, upper = constant_mean_interval(value, n, confidence_level, most=most)
    return max(lower, 0.0), min(upper, most)


def loss_power_sums(stats: EvaluationStatistics) -> np.ndarray:
    """Per loss (candidate log loss, squared error), ``(n, sum, sum of squares, sum of cubes)``.

    A row's losses depend on its label and score only, so the sums are exact (to rounding)
    from the candidate's negatives and positives per distinct score.  On the grid fallback
    the scores are lost and the sums are read off the bootstrap cells (a cell's rows taken
    at its mean loss: exact while cells are distinct scores).  Additive over disjoint rows,
    so the rest of a segment is the total minus the segment.

    Examples
    --------
    >>> from modelgate.evaluation.sufficient import collect
    >>> s = collect([0, 1, 1], [0.2, 0.9, 0.4], threshold=0.5)
    >>> sums = loss_power_sums(s)
    >>> sums.shape, float(sums[1, 0]), round(float(sums[1, 1]), 4)  # 0.04 + 0.01 + 0.36
    ((2, 4), 3.0, 0.41)
    """
    scores = stats.candidate.scores
    if scores.grid:
        table = stats.bootstrap
        in_cell = table.counts.astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(in_cell[:, None] > 0, table.loss_sums[:, :2] / in_cell[:, None], 0.0).T
        return _power_sums([in_cell], list(means))
    keys = scores.keys
    # the losses of a negative and of a positive at each score, as ``collect`` computes them
    neg = row_losses(np.zeros(keys.size, dtype=np.int8), keys)
    pos = row_losses(np.ones(keys.size, dtype=np.int8), keys)
    counts = [scores.neg.astype(np.float64), scores.pos.astype(np.float64)]
    return _power_sums(counts, [np.concatenate([neg[:, c], pos[:, c]]) for c in (0, 1)])


def _power_sums(counts: list[np.ndarray], losses: list[np.ndarray]) -> np.ndarray:
    """``(n, sum, sum of squares, sum of cubes)`` per loss of rows with ``losses`` x ``counts``."""
    weight = np.concatenate(counts)
    out = np.empty((2, 4))
    for column, loss in enumerate(losses):
        # elementwise products summed, not np.dot: BLAS threads a dot of this length and,
        # on a loaded machine, waits milliseconds for them (most of a segment's cost)
        sums = weight * loss
        out[column] = (weight.sum(), sums.sum(), float((sums * loss).sum()),
                       float((sums * loss * loss).sum()))
    return out


def closed_form_estimates(stats: ModelStatistics, power_sums: np.ndarray,
                          confidence_level: float) -> dict[str, MetricEstimate]:
    """The candidate's metrics of :data:`~.metrics.METRIC_NAMES` with their closed-form intervals.

    Parameters
    ----------
    stats : ModelStatistics
        The candidate's statistics of one segment (or rest: :func:`rest_of`, or
        :func:`rest_estimates` without building the rest's table).
    power_sums : ndarray of shape (2, 4)
        :func:`loss_power_sums` of the same rows (a rest's: the total's minus the
        segment's).
    confidence_level : float
        Central coverage in (0, 1).

    Returns
    -------
    dict
        Metric name -> :class:`~.metrics.MetricEstimate` (NaN value and ends, with the
        reason, where undefined; NaN ends where no interval exists, e.g. the AUC with a
        single positive).

    Examples
    --------
    >>> from modelgate.evaluation.sufficient import collect
    >>> s = collect([0, 0, 1, 1, 0, 1] * 20, [0.1, 0.4, 0.35, 0.8, 0.2, 0.9] * 20, threshold=0.5)
    >>> e = closed_form_estimates(s.candidate, loss_power_sums(s), 0.95)["accuracy"]
    >>> round(e.value, 4), round(e.ci_lower, 4), round(e.ci_upper, 4)  # Wilson, 100 of 120
    (0.8333, 0.7565, 0.8894)
    """
    return _estimates(stats, table_roc_sums(stats.scores.neg, stats.scores.pos), power_sums,
                      confidence_level)


#: The score table of a rest built by :func:`rest_estimates` (its ROC sums come
#: separately) and of the counts merged by :func:`column_total`.
_NO_TABLE = ScoreTable(np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64))


@dataclass(frozen=True, slots=True)
class ColumnTotal:
    """A segment column's total (every row) with what each segment's rest is read from."""

    stats: ModelStatistics
    table: TotalTable
    power_sums: np.ndarray


def column_total(parts: Sequence[EvaluationStatistics],
                 same_rows: ColumnTotal | None = None) -> ColumnTotal:
    """The total of a column's segments: the candidate's statistics merged, prefix sums and
    loss power sums (the segments partition the rows, so this is every row's).

    ``same_rows``: the total of another column over the same rows (every column of one
    :func:`~.segment_statistics.collect_segments` or ``merge_segments``), whose score
    table and prefix sums are this column's too (counts add exactly in any order), so only
    the float sums are merged again, in this column's order.  Taken when both tables are
    exact, or both on the fallback grid because some segment's table is (the merge of the
    same rows' tables then gives the same table); otherwise this column's is merged.

    Examples
    --------
    >>> from modelgate.evaluation.sufficient import collect
    >>> t = column_total([collect([0, 1], [0.2, 0.9], threshold=0.5),
    ...                   collect([1, 0], [0.4, 0.7], threshold=0.5)])
    >>> t.stats.n, t.table.sums.twice_u, float(t.power_sums[1, 0])
    (4, 6, 4.0)
    """
    sums = np.sum([loss_power_sums(p) for p in parts], axis=0)
    # the candidate's statistics only: the rests need no bootstrap table
    on_grid = any(p.candidate.scores.grid for p in parts)
    if same_rows is None or bool(same_rows.stats.scores.grid) != on_grid:
        stats = merge_models([p.candidate for p in parts], MAX_DISTINCT)
        return ColumnTotal(stats, total_table(stats.scores.keys, stats.scores.neg,
                                              stats.scores.pos), sums)
    counts = merge_models([replace(p.candidate, scores=_NO_TABLE) for p in parts], MAX_DISTINCT)
    shared = same_rows.stats
    if (counts.n, counts.n_pos, counts.tp, counts.fp) != (shared.n, shared.n_pos, shared.tp, shared.fp):
        raise ValueError(f"segment columns over different rows: {counts.n:,} rows, {counts.n_pos:,} "
                         f"positives against {shared.n:,} and {shared.n_pos:,}")
    return ColumnTotal(replace(counts, scores=shared.scores), same_rows.table, sums)


def rest_estimates(total: ColumnTotal, part: ModelStatistics, part_sums: np.ndarray,
                   confidence_level: float) -> dict[str, MetricEstimate]:
    """:func:`closed_form_estimates` of the rows of ``total`` not in ``part``, in O(part's keys).

    Equal to ``closed_form_estimates(rest_of(total.stats, part), total.power_sums -
    part_sums, confidence_level)`` (the AUC bit for bit, DeLong's variance to rounding)
    without building the rest's score table: :func:`~.rest_sums.rest_roc_sums`.

    Examples
    --------
    >>> from modelgate.evaluation.sufficient import collect
    >>> a = collect([0, 1, 1, 0], [0.2, 0.9, 0.4, 0.3], threshold=0.5)
    >>> b = collect([1, 0, 1, 0], [0.4, 0.7, 0.8, 0.1], threshold=0.5)
    >>> t = column_total([a, b])
    >>> rest_estimates(t, a.candidate, loss_power_sums(a), 0.95)["roc_auc"].value  # b's
    0.75
    """
    scores = part.scores
    at = np.searchsorted(total.table.keys, scores.keys)
    neg, pos = scores.neg, scores.pos
    if total.stats.scores.grid and not scores.grid:  # the part's scores pooled as the total's
        cell = np.minimum(np.floor(scores.keys * FALLBACK_GRID), FALLBACK_GRID - 1)
        cells, inverse = np.unique(np.searchsorted(total.table.keys, cell), return_inverse=True)
        at = cells
        neg = np.bincount(inverse, weights=scores.neg, minlength=cells.size).astype(np.int64)
        pos = np.bincount(inverse, weights=scores.pos, minlength=cells.size).astype(np.int64)
    t = total.stats
    rest = ModelStatistics(
        threshold=t.threshold, n=t.n - part.n, n_pos=t.n_pos - part.n_pos, tp=t.tp - part.tp,
        fp=t.fp - part.fp, log_loss_sum=t.log_loss_sum - part.log_loss_sum,
        squared_error_sum=t.squared_error_sum - part.squared_error_sum,
        scores=_NO_TABLE, calibration_n=t.calibration_n - part.calibration_n,
        calibration_score_sum=t.calibration_score_sum - part.calibration_score_sum,
        calibration_label_sum=t.calibration_label_sum - part.calibration_label_sum)
    return _estimates(rest, rest_roc_sums(total.table, at, neg, pos),
                      total.power_sums - part_sums, confidence_level)


def _estimates(m: ModelStatistics, roc: RocSums, power_sums: np.ndarray,
               confidence_level: float) -> dict[str, MetricEstimate]:
    values, reasons = point_values(m, roc.twice_u)
    n, n_pos, tp, fp = m.n, m.n_pos, m.tp, m.fp
    # the Wilson intervals of metric_intervals, all four at once (scipy's binomtest takes
    # one proportion per call, a few ms each: most of a segment's cost)
    counts = {"accuracy": 0, "recall": 1, "precision": 2, "f1": 3}
    lower_ends, upper_ends = wilson_ends([n - n_pos - fp + tp, tp, tp, tp],
                                         [n, n_pos, tp + fp, fp + n_pos], confidence_level)
    out: dict[str, MetricEstimate] = {}
    for name in METRIC_NAMES:
        value, reason = values[name], reasons[name]
        if reason is not None or not math.isfinite(value):
            out[name] = MetricEstimate(name, float("nan"), float("nan"), float("nan"), n,
                                       reason or "not finite")
            continue
        if name in counts:
            ends = (float(lower_ends[counts[name]]), float(upper_ends[counts[name]]))
            if name == "f1":  # Wilson of J = tp / (tp + fp + fn), mapped to 2 J / (1 + J)
                ends = (2.0 * ends[0] / (1.0 + ends[0]), 2.0 * ends[1] / (1.0 + ends[1]))
        elif name == "roc_auc":
            variance = delong_from_sums(roc)
            stretch = t_over_z(min(n_pos, n - n_pos), confidence_level) ** 2
            ends = ((float("nan"), float("nan")) if math.isnan(variance)
                    else logit_wald_interval(value, variance * stretch, n_pos, n - n_pos,
                                             confidence_level))
        else:
            sums = power_sums[0 if name == "log_loss" else 1]
            _, s1, s2, s3 = (float(v) for v in sums)
            ends = mean_loss_interval(value, n, s1, s2, s3,
                                      1.0 if name == "brier" else LOG_LOSS_MAX, confidence_level)
        if math.isfinite(ends[0]) and math.isfinite(ends[1]):
            ends = interval_holding(value, *ends)
        out[name] = MetricEstimate(name, value, float(ends[0]), float(ends[1]), n, None)
    return out


def rest_of(total: ModelStatistics, part: ModelStatistics) -> ModelStatistics:
    """The statistics of the rows of ``total`` not in ``part`` (a subset of its rows): subtracted.

    Every field is a sum over rows, so the rest is the difference, with no second pass
    over the data and no merge of the other segments.  The scores table is the total's
    (on its fallback grid where it has one), the part's counts taken off key by key.

    Examples
    --------
    >>> from modelgate.evaluation.sufficient import collect, merge
    >>> a = collect([0, 1, 1], [0.2, 0.9, 0.4], threshold=0.5)
    >>> b = collect([1, 0], [0.4, 0.7], threshold=0.5)
    >>> r = rest_of(merge([a, b]).candidate, a.candidate)
    >>> r.n, r.tp, r.fp, r.scores.neg.tolist(), r.scores.pos.tolist()
    (2, 0, 1, [0, 0, 1, 0], [0, 1, 0, 0])
    """
    scores = part.scores
    if total.scores.grid and not scores.grid:
        cell = np.minimum(np.floor(scores.keys * FALLBACK_GRID), FALLBACK_GRID - 1)
        scores = ScoreTable(cell, scores.neg, scores.pos, FALLBACK_GRID)
    at = np.searchsorted(total.scores.keys, scores.keys)
    neg, pos = total.scores.neg.copy(), total.scores.pos.copy()
    np.subtract.at(neg, at, scores.neg)
    np.subtract.at(pos, at, scores.pos)
    return ModelStatistics(
        threshold=total.threshold, n=total.n - part.n, n_pos=total.n_pos - part.n_pos,
        tp=total.tp - part.tp, fp=total.fp - part.fp,
        log_loss_sum=total.log_loss_sum - part.log_loss_sum,
        squared_error_sum=total.squared_error_sum - part.squared_error_sum,
        scores=ScoreTable(total.scores.keys, neg, pos, total.scores.grid),
        calibration_n=total.calibration_n - part.calibration_n,
        calibration_score_sum=total.calibration_score_sum - part.calibration_score_sum,
        calibration_label_sum=total.calibration_label_sum - part.calibration_label_sum)
