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
  first three moments of the per-row losses (read off the cell table: every row of a cell
  has the cell's mean loss, exactly so while cells are distinct scores).  The whole data's
  studentized bootstrap corrects a standard error that moves with a skewed mean; Hall's
  cubic transformation of the t statistic removes the same first-order skewness term
  analytically (both are second-order accurate), so no resample is needed.  Written here
  because no library (scipy, statsmodels) offers it.  A Brier score constant over the rows
  takes :func:`~.metric_intervals.constant_mean_interval`.

References
----------
.. [1] Hall, P. (1992). On the removal of skewness by transformation. JRSS B 54(1), 221-228.
.. [2] Zhou, X.-H. and Gao, S. (2000). One-sided confidence intervals for means of
   positively skewed distributions. The American Statistician 54(2), 100-104.
"""

from __future__ import annotations

import math

import numpy as np

from modelgate.intervals import interval_holding, logit_wald_interval

from .bootstrap_cells import delong_variance
from .metric_intervals import _t_over_z, constant_mean_interval
from .metrics import METRIC_NAMES, MetricEstimate
from .performance import _point_metrics
from .sufficient import FALLBACK_GRID, EvaluationStatistics, ModelStatistics, ScoreTable
from .weakest_slices import wilson_ends

__all__ = ["closed_form_estimates", "hall_mean_interval", "loss_power_sums", "rest_of"]


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


def loss_power_sums(stats: EvaluationStatistics) -> np.ndarray:
    """Per loss (candidate log loss, squared error), ``(n, sum, sum of squares, sum of cubes)``.

    Read off the cell table: a cell's rows share its mean loss.  Additive over disjoint
    rows, so the rest of a segment is the total minus the segment.

    Examples
    --------
    >>> from modelgate.evaluation.sufficient import collect
    >>> s = collect([0, 1, 1], [0.2, 0.9, 0.4], threshold=0.5)
    >>> sums = loss_power_sums(s)
    >>> sums.shape, float(sums[1, 0]), round(float(sums[1, 1]), 4)  # 0.04 + 0.01 + 0.36
    ((2, 4), 3.0, 0.41)
    """
    table = stats.bootstrap
    counts = table.counts.astype(np.float64)
    out = np.empty((2, 4))
    for column in (0, 1):
        sums = table.loss_sums[:, column]
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(counts > 0, sums / counts, 0.0)
        out[column] = (counts.sum(), sums.sum(), float(np.dot(sums, mean)),
                       float(np.dot(sums, mean * mean)))
    return out


def closed_form_estimates(stats: ModelStatistics, power_sums: np.ndarray,
                          confidence_level: float) -> dict[str, MetricEstimate]:
    """The candidate's metrics of :data:`~.metrics.METRIC_NAMES` with their closed-form intervals.

    Parameters
    ----------
    stats : ModelStatistics
        The candidate's statistics of one segment (or rest: :func:`rest_of`).
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
    m = stats
    values, reasons = _point_metrics(m)
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
            variance = delong_variance(m.scores.neg, m.scores.pos)
            stretch = _t_over_z(min(n_pos, n - n_pos), confidence_level) ** 2
            ends = ((float("nan"), float("nan")) if math.isnan(variance)
                    else logit_wald_interval(value, variance * stretch, n_pos, n - n_pos,
                                             confidence_level))
        else:
            sums = power_sums[0 if name == "log_loss" else 1]
            count, s1, s2, s3 = (float(v) for v in sums)
            lower, upper = hall_mean_interval(count, s1, s2, s3, confidence_level)
            if name == "brier" and lower == upper:  # every row the same squared error
                lower, upper = constant_mean_interval(value, n, confidence_level)
            ends = (max(lower, 0.0), min(upper, 1.0) if name == "brier" else upper)
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
