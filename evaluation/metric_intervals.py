"""The default binary interval methods, chosen per metric by simulated coverage.

A percentile bootstrap interval is short near a bound: on a confident model (AUC 0.997,
n = 200) the percentile interval of the AUC held the truth in 82 % of simulated sets,
that of the log loss in 87 % and that of the accuracy in 91 %, and a plain row bootstrap
was as short (``bench/RESULTS.md``, "Coverage of the binary intervals"); on a model of
AUC 0.98 at n = 200 that of the recall held it in 83.5 % (issue #38).  With
``interval="per_metric"`` (the default of
:func:`~modelgate.evaluation.performance.performance_from_statistics`):

* **ROC AUC**: Wald interval on the logit scale with DeLong's variance, computed
  exactly from the merged negatives and positives per distinct score
  (:func:`~.bootstrap_cells.delong_variance`,
  :func:`modelgate.intervals.logit_wald_interval`); ends in (0, 1), an exact bound on
  a perfect separation.  The half-width uses Student's t quantile with ``min(n_pos,
  n_neg) - 1`` degrees of freedom instead of the normal one (passed as the variance
  times their squared ratio): on a binormal model of AUC 0.98 at n = 200 the normal
  quantile held the truth in 93.8 % of 2,000 simulated sets, the t quantile in 94.3 %;
  at n = 2,000 the two agree to 0.1 %.
* **Accuracy, recall, precision**: Wilson score interval of an exact count
  (:func:`modelgate.intervals.wilson_interval`): correct rows of all rows, true
  positives of the positives, true positives of the predicted positives.  Recall's
  denominator (the positives) and precision's (the rows predicted positive) are
  themselves random; the interval is conditional on them, the standard choice: given
  ``m`` rows predicted positive, the true positives among them are binomial with the
  population precision as probability (the rows are independent), so the conditional
  interval covers for every ``m`` and hence unconditionally.  Wilson, unlike a
  percentile interval, never collapses to a point: 24 positives all found read
  recall 1 [0.862, 1], not [1, 1].
* **F1**: the Wilson interval of the Jaccard index ``J = tp / (tp + fp + fn)``
  conditional on ``tp + fp + fn`` (the rows that are positive or predicted positive;
  given their number the true positives among them are binomial with the population
  ``J``), mapped through ``F1 = 2 J / (1 + J)``, which is increasing.  The same
  conditional argument as for precision, so exact counts suffice (mergeable,
  ``O(1)``), the ends stay in [0, 1] and hold the point.  Why not the others: the
  percentile interval over the cells is short near 1, as for the recall (F1 is a
  harmonic mean of the two); a MOVER combination of the recall's and precision's
  Wilson ends needs their correlation (they share ``tp``) and gave nothing the
  Jaccard form does not; a studentized bootstrap of a ratio needs a variance per
  resample (``bench/RESULTS.md``, "Every binary, multiclass and regression interval").
* **Log loss and Brier score**: studentized bootstrap (bootstrap-t) of the mean loss,
  each resample's standard error from the cells' mean losses
  (:func:`modelgate.intervals.studentized_interval`); clipped below at 0 (the Brier
  score also above at 1).  A mean of non-negative, right-skewed per-row losses has a
  standard error that grows with the mean (a resample without the rare large losses has
  both a small mean and a small spread), which the percentile interval ignores and the
  t statistic divides out.  When every row has the same squared error ``c`` (all rows
  right with certainty: ``c = 0``) the Brier score's interval is
  :func:`constant_mean_interval`: the share of rows whose loss differs from ``c`` is
  at most the Clopper-Pearson bound of 0 in ``n``, so the interval does not collapse
  to ``[c, c]``; the log loss likewise on its range ``[0, LOG_LOSS_MAX]`` (a row's loss
  at the clipped probability, :data:`LOG_LOSS_MAX`), which also bounds its ends.  Where
  the resamples draw no spread (two or three rows) the bootstrap-t has no tail of its
  own: that end is the loss's limit, the honest answer on so few rows (Student's t
  covered 60-92 % there; the ends had read hundreds of thousands).
* **Paired delta of ROC AUC** (candidate minus champion, :func:`paired_delta_interval`
  with ``auc_delta`` from :func:`~.auc_delta.paired_auc_delta_interval`): the two
  AUCs' logits jointly normal with DeLong's variances and paired covariance (each
  row's placement deviations under both models), t quantile; for one AUC this is its
  own logit Wald interval.  MOVER from the two logit Wald intervals, the method before
  it, held the truth in 99.2 % of simulated sets of two highly correlated models of
  AUC 0.98 (twice as wide as needed: MOVER reads each interval's asymmetry as spread),
  the symmetric paired DeLong Wald interval in 86.5 % on the AUC 0.997 model; see
  :mod:`~.auc_delta`.  Where an AUC is 0 or 1 (infinite logit) it is MOVER from the
  logit Wald intervals (the perfect separation's exact bound) with the correlation of
  the paired resampled AUCs.
* **Paired delta of accuracy**: MOVER (Zou and Donner 2008,
  :func:`modelgate.intervals.mover_difference`) from the two models' Wilson intervals
  and the phi coefficient of the 2 x 2 table of rows each model gets right (Newcombe's
  1998 method 10).  On the confident model at n = 200 the percentile interval held the
  truth in 91.7 % of simulated sets, this one in 96.2 % (``bench/RESULTS.md``,
  "Paired deltas and the equalized-odds difference").  Identical models (the same
  difference on every resample) keep the exact ``[d, d]``.
* **Paired delta of the log loss** (:func:`log_loss_delta_interval`): MOVER over the
  positive and the negative part of the per-row loss difference ``d = loss_candidate -
  loss_champion``: ``mean(d) = mean(max(d, 0)) - mean(max(-d, 0))``.  Each part is a
  mean of non-negative, right-skewed values, as a log loss is, and gets the same
  studentized bootstrap; MOVER adds the two with their correlation.  Why not the
  obvious ones: on the confident model at n = 200 rare rows on which one model is
  confidently wrong make ``d`` heavy-tailed on both sides, and the percentile,
  paired Wald and bootstrap-t intervals of ``mean(d)`` held the truth in 90-93 % of
  sets; MOVER from the two models' own log-loss intervals covered but, for two
  nearly identical models, was as wide as either interval (their correlation near 1
  and their skews do not cancel in MOVER's formula).  The two parts live on disjoint
  rows, so their correlation is ``-mean(up) mean(down) / (sd(up) sd(down)) <= 0`` and
  that failure cannot arise: a near copy's parts are both small, and so is the
  interval (``bench/RESULTS.md``, "The log-loss delta").
* **Paired deltas of precision and F1** (:func:`~.paired_ratios.ratio_delta_interval`):
  the delta method's standard error of the difference of the two ratios from the 8
  counts of (label, candidate's prediction, champion's prediction); for precision
  Student's t quantile with Satterthwaite's degrees of freedom of the rows'
  contributions (as the ROC AUC delta), for F1 the normal quantile on the counts plus
  one pseudo-row spread over the 8 cells.  MOVER from the two
  Wilson intervals, the method before it, held the precision delta of near-equal models
  in 97.6-98.2 % of sets at n = 200
  (``bench/RESULTS.md``, "Paired precision, F1 and Brier deltas of near-equal models").
  MOVER stays where the standard error is 0.
* **Paired delta of recall**: Tango's score interval
  (:func:`~.paired_rates.tango_interval`) of the 2 x 2 table of positives each model
  finds (:func:`~.bootstrap_cells.correct_pairs` of the positives: exact counts,
  mergeable, no resampling).  The percentile interval held the truth in a minority of
  confident sets where both models found every positive (``[0, 0]`` on every
  resample); MOVER of the two Wilson intervals with the resampled correlation did not
  collapse but read each interval's asymmetry as spread (99.2 % at n = 200 for two
  near-equal models).  Tango's variance is that of the discordant positives, and with
  none it is ``-+ z^2 / (m + z^2)`` of the ``m`` positives, never a point.  Near-equal
  models at n = 200 have a median of 2 discordant positives, so coverage there stays
  above 97 % (``bench/RESULTS.md``, "Paired rate deltas of near-equal models").
* **Paired delta of the Brier score** (:func:`~.paired_ratios.mean_delta_interval`):
  the t interval of the mean per-row squared-error difference, Satterthwaite's degrees
  of freedom.  MOVER over the difference's parts, the log loss's method and the Brier
  delta's before, held 96.1-97.2 % of near-equal models' deltas at n = 200 with up to
  half as much width again (``bench/RESULTS.md``, "Paired precision, F1 and Brier deltas of
  near-equal models").

All ends are widened to hold the point estimate
(:func:`modelgate.intervals.interval_holding`) by the caller, and all use only the
merged table and the draws, so mapped and one-process runs still agree, at
``O(resamples x cells)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, cast

import numpy as np
import numpy.typing as npt

from modelgate.intervals import (
    interval_holding,
    logit_wald_interval,
    mover_difference,
    phi_correlation,
    studentized_interval,
    wilson_interval,
)

from .paired_rates import tango_interval
from .paired_ratios import paired_label_cells, ratio_delta_interval

__all__ = ["DELTA_METHOD_BY_METRIC", "LOG_LOSS_MAX", "METHOD_BY_METRIC", "constant_mean_interval",
           "difference_part_moments", "f1_interval", "log_loss_delta_interval",
           "own_intervals", "paired_delta_interval", "per_metric_interval"]

METHOD_BY_METRIC = {"roc_auc": "logit-scale Wald, DeLong variance",
                    "accuracy": "Wilson score", "log_loss": "studentized bootstrap",
                    "recall": "Wilson score, conditional on the positives",
                    "precision": "Wilson score, conditional on the predicted positives",
                    "f1": "Wilson score of tp / (tp + fp + fn), mapped to 2 J / (1 + J)",
                    "brier": "studentized bootstrap"}
# Metrics that need the confusion counts (keyword ``tp``, ``fp`` of per_metric_interval).
_BY_COUNTS = frozenset({"recall", "precision", "f1"})
# A row's log loss at the probability scikit-learn clips to (float64 eps): the largest
# the loss, a mean of such rows, can be.
LOG_LOSS_MAX = float(-np.log(np.finfo(np.float64).eps))
DELTA_METHOD_BY_METRIC = {
    "roc_auc": "the two AUCs' logits jointly normal, DeLong's paired covariance, t quantile "
               "(MOVER of the logit Wald intervals where an AUC is 0 or 1)",
    "accuracy": "MOVER, Wilson intervals, phi correlation (Newcombe's method 10)",
    "log_loss": "MOVER over the positive and negative parts of the per-row loss difference, "
                "studentized intervals",
    "brier": "t interval of the mean per-row squared-error difference, Satterthwaite's "
             "degrees of freedom",
    "recall": "Tango's score interval of the paired table of positives found",
    "precision": "delta method over the rows' contributions, t quantile with Satterthwaite's "
                 "degrees of freedom (MOVER where the standard error is 0)",
    "f1": "delta method over the rows' contributions, normal quantile (MOVER where the "
          "standard error is 0)"}


def per_metric_interval(name: str, point: float, resampled: Mapping[str, npt.NDArray[np.float64]],
                        at_data: Mapping[str, npt.NDArray[np.float64]], successes: int,
                        trials: int, n_pos: int, auc_variance: float,
                        confidence_level: float, *, tp: int | None = None,
                        fp: int | None = None) -> tuple[float, float] | None:
    """The interval of metric ``name`` by its method, or None for the percentile interval.

    Parameters
    ----------
    name : str
        A metric of :data:`~.metrics.METRIC_NAMES`.
    point : float
        Its estimate on the data.
    resampled : mapping
        Per key of :func:`~.bootstrap_cells.replicate_metrics`, one value per resample.
    at_data : mapping
        The same keys evaluated on the table's own counts (one value each).
    successes, trials : int
        Correctly classified rows and all rows (for the accuracy).
    n_pos : int
        Positive rows (for the ROC AUC, recall and F1).
    auc_variance : float
        DeLong's variance of the ROC AUC (NaN: percentile interval instead).
    confidence_level : float
        Central coverage in (0, 1).
    tp, fp : int, optional
        True and false positives (for the recall, precision and F1; without them those
        take the percentile interval).

    Returns
    -------
    tuple of float or None
        ``(lower, upper)``; NaN ends without resamples, as the percentile interval.

    Examples
    --------
    >>> none = {"accuracy": np.empty(0)}
    >>> per_metric_interval("accuracy", 0.5, none, none, 1, 2, 1, 0.1, 0.95)
    (nan, nan)
    >>> per_metric_interval("f1", 0.5, none, none, 1, 2, 1, 0.1, 0.95) is None
    True
    >>> draws = {"recall": np.ones(3)}
    >>> [round(e, 4) for e in per_metric_interval("recall", 1.0, draws, draws, 30, 30, 24,
    ...                                           0.1, 0.95, tp=24, fp=0)]
    [0.862, 1.0]
    """
    if name not in METHOD_BY_METRIC or (name in _BY_COUNTS and (tp is None or fp is None)):
        return None
    if resampled[name].size == 0:  # no resamples asked for: no interval, as elsewhere
        return float("nan"), float("nan")
    if name == "accuracy":
        return wilson_interval(successes, trials, confidence_level)
    if tp is not None and fp is not None and name in _BY_COUNTS:
        if name == "recall":
            return wilson_interval(tp, n_pos, confidence_level)
        if name == "precision":
            return wilson_interval(tp, tp + fp, confidence_level)
        return f1_interval(tp, fp, n_pos - tp, confidence_level)
    if name == "roc_auc":
        if np.isnan(auc_variance):  # fewer than two of a class
            return None
        return logit_wald_interval(point, auc_variance * t_over_z(min(n_pos, trials - n_pos),
                                                                  confidence_level) ** 2,
                                   n_pos, trials - n_pos, confidence_level)
    var_key = f"{name}_var"
    se = float(np.sqrt(at_data[var_key][0]))
    most = 1.0 if name == "brier" else LOG_LOSS_MAX
    # every row the same loss (all right with certainty), or one row (n - 1 = 0 leaves the
    # variance 0 / 0 or x / 0)
    if not (np.isfinite(se) and se > 0):
        return constant_mean_interval(point, trials, confidence_level, most=most)
    # where the resamples draw no spread the end is the loss's limit, not Student's t: on two
    # or three rows t covered 60-92 % of simulated sets, the range all (bench/RESULTS.md,
    # "Intervals at a handful of rows")
    return studentized_interval(point, se, resampled[name], np.sqrt(resampled[var_key]),
                                confidence_level, lower_limit=0.0, upper_limit=most)


def t_over_z(m: int, confidence_level: float) -> float:
    """Student's t quantile with ``m - 1`` degrees of freedom over the normal one (1 for m < 2).

    Scaling DeLong's variance by its square gives the logit Wald interval a t quantile
    (see the module's docstring).

    Examples
    --------
    >>> round(t_over_z(80, 0.95), 4), t_over_z(1, 0.95)
    (1.0156, 1.0)
    """
    from scipy.stats import norm, t

    if m < 2:
        return 1.0
    level = 1.0 - 0.5 * (1.0 - confidence_level)
    return float(t.ppf(level, m - 1) / norm.ppf(level))


def f1_interval(tp: int, fp: int, fn: int, confidence_level: float) -> tuple[float, float]:
    """Interval of ``F1 = 2 tp / (2 tp + fp + fn)``: Wilson's for the Jaccard index, mapped.

    ``J = tp / (tp + fp + fn)`` is a proportion of the rows that are positive or
    predicted positive; given their number ``m``, ``tp`` is binomial ``(m, J)``, so the
    Wilson interval of ``tp`` in ``m`` covers ``J``, and ``F1 = 2 J / (1 + J)`` is
    increasing in ``J``.  NaN when ``m`` is 0 (F1 undefined).

    References
    ----------
    .. [1] Wilson, E. B. (1927). Probable inference, the law of succession, and
       statistical inference. JASA 22(158), 209-212.

    Examples
    --------
    >>> lo, hi = f1_interval(40, 5, 5, 0.95)  # F1 = 80 / 90
    >>> round(lo, 4), round(80 / 90, 4), round(hi, 4)
    (0.8021, 0.8889, 0.9404)
    """
    lower, upper = wilson_interval(tp, tp + fp + fn, confidence_level)
    return 2.0 * lower / (1.0 + lower), 2.0 * upper / (1.0 + upper)


def constant_mean_interval(value: float, n: int, confidence_level: float, *,
                           most: float = 1.0) -> tuple[float, float]:
    """Interval of the mean of a quantity in ``[0, most]`` seen equal to ``value`` on all
    ``n`` rows.

    The share ``q`` of the population whose value differs is then at most the
    Clopper-Pearson bound ``1 - (a / 2) ** (1 / n)`` of 0 events in ``n``, and the mean
    lies in ``[value (1 - q), value + (most - value) q]``.  (A bootstrap gives ``[value,
    value]``: every resample is the data again.)

    Examples
    --------
    >>> lo, hi = constant_mean_interval(0.0, 24, 0.95)
    >>> lo, round(hi, 4)
    (0.0, 0.1425)
    """
    q = 1.0 - (0.5 * (1.0 - confidence_level)) ** (1.0 / n)
    return value * (1.0 - q), value + (most - value) * q


def own_intervals(values: Mapping[str, float], resampled: Mapping[str, npt.NDArray[np.float64]],
                  at_data: Mapping[str, npt.NDArray[np.float64]], successes: int, trials: int,
                  n_pos: int, auc_variance: float,
                  confidence_level: float, *, tp: int | None = None,
                  fp: int | None = None) -> dict[str, tuple[float, float] | None]:
    """Per finite metric of ``values``, :func:`per_metric_interval` held to the point (None:
    the metric takes the percentile interval).  Arguments as there.

    Examples
    --------
    >>> none = {"accuracy": np.empty(0), "f1": np.empty(0)}
    >>> own_intervals({"accuracy": 0.5, "f1": 0.5}, none, none, 1, 2, 1, 0.1, 0.95)
    {'accuracy': (nan, nan), 'f1': None}
    """
    own: dict[str, tuple[float, float] | None] = {}
    for name, value in values.items():
        if not np.isfinite(value):
            continue
        found = per_metric_interval(name, value, resampled, at_data, successes, trials, n_pos,
                                    auc_variance, confidence_level, tp=tp, fp=fp)
        own[name] = None if found is None else interval_holding(value, *found)
    return own


def paired_delta_interval(name: str, points: tuple[float, float],
                          own: tuple[tuple[float, float] | None, tuple[float, float] | None],
                          resampled: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]],
                          correct: tuple[int, int, int, int], *,
                          log_loss_delta: tuple[float, float] | None = None,
                          brier_delta: tuple[float, float] | None = None,
                          auc_delta: tuple[float, float] | None = None,
                          found: tuple[int, int, int, int] | None = None,
                          confidence_level: float = 0.95,
                          ) -> tuple[float, float] | None:
    """The interval of ``candidate - champion`` for metric ``name``, or None for the percentile one.

    None also when the difference is the same on every resample (identical models); for
    precision, recall and F1 only when the two models predict the same label on every
    row (``correct`` has no row right by one model only).

    Recall: Tango's score interval (:func:`~.paired_rates.tango_interval`) of the
    2 x 2 table of positives each model finds (``found``; without it MOVER as below).
    Precision and F1: :func:`~.paired_ratios.ratio_delta_interval` of the 8 cells of
    ``correct`` and ``found`` (without ``found``, or a standard error of 0: MOVER).
    ROC AUC: ``auc_delta`` where given; else, and for accuracy: MOVER
    (:func:`modelgate.intervals.mover_difference`) from each
    model's own interval of the metric and the correlation of the two estimates: for the
    accuracy the phi coefficient of the 2 x 2 table of rows each model classifies
    correctly (Newcombe's method 10, with the Wilson intervals), for the others the
    correlation of the paired resampled values (the same draws for both models).  The
    log loss: ``log_loss_delta``, from :func:`log_loss_delta_interval` (None: the
    percentile interval).

    Parameters
    ----------
    name : str
        A metric of :data:`~.metrics.METRIC_NAMES`.
    points : tuple of float
        Candidate's and champion's estimates.
    own : tuple
        Their intervals by :func:`per_metric_interval` (held to the point), or None
        where that gave none.
    resampled : tuple of ndarray
        Their values on the same resamples.
    correct : tuple of int
        Rows both models classify correctly, only the candidate, only the champion,
        neither.
    log_loss_delta, brier_delta : tuple of float, optional
        The log-loss delta's interval by :func:`log_loss_delta_interval` (of the per-row
        log-loss differences), the Brier delta's by
        :func:`~.paired_ratios.mean_delta_interval`.
    auc_delta : tuple of float, optional
        The ROC AUC delta's interval by :func:`~.auc_delta.paired_auc_delta_interval`
        (None: MOVER, as where an AUC is 0 or 1).
    found : tuple of int, optional
        Positive rows both models find, only the candidate, only the champion, neither.
    confidence_level : float
        Of the score intervals (the others come with theirs).

    Returns
    -------
    tuple of float or None
        ``(lower, upper)``; NaN ends without resamples.

    Examples
    --------
    Accuracy 0.9 vs 0.8 on 100 rows, 75 right by both:

    >>> ends = ((0.8256, 0.9448), (0.7112, 0.8666))  # Wilson intervals, rounded
    >>> draws = (np.array([0.91, 0.88]), np.array([0.8, 0.81]))  # resampled accuracies
    >>> lo, hi = paired_delta_interval("accuracy", (0.9, 0.8), ends, draws, (75, 15, 5, 5))
    >>> round(lo, 4), round(hi, 4)
    (0.0134, 0.1889)
    >>> paired_delta_interval("log_loss", (0.9, 0.8), ends, draws, (75, 15, 5, 5)) is None
    True
    >>> paired_delta_interval("log_loss", (0.9, 0.8), ends, draws, (75, 15, 5, 5),
    ...                       log_loss_delta=(0.05, 0.2))
    (0.05, 0.2)
    """
    first, second = own
    if name not in DELTA_METHOD_BY_METRIC or first is None or second is None:
        return None
    new, old = resampled
    if new.size == 0:
        return float("nan"), float("nan")
    ok = np.isfinite(new) & np.isfinite(old)
    same = bool(ok.any()) and np.ptp(new[ok] - old[ok]) == 0
    if name in _BY_COUNTS:
        # two models that find every positive of the data have the same recall on every
        # resample, yet may differ on the population (the confident model at n = 200: the
        # recall delta's [0, 0] held the truth in 79 % of sets); only the same prediction
        # on every row counts as identical
        same = correct[1] == 0 and correct[2] == 0
    if not ok.any() or same:
        # the same difference on every resample (identical models): MOVER, blind to
        # that, would still give each interval's asymmetry as width; the percentile
        # interval is the exact [d, d]
        return None
    if name == "log_loss":
        return log_loss_delta
    if name == "roc_auc" and auc_delta is not None:
        return auc_delta
    if name == "brier":  # a difference of two scores in [0, 1]
        return None if brier_delta is None else (max(brier_delta[0], -1.0),
                                                 min(brier_delta[1], 1.0))
    if name == "recall" and found is not None and sum(found) > 0:
        return tango_interval(found[1], found[2], sum(found), confidence_level)
    if name in ("precision", "f1") and found is not None:
        paired = ratio_delta_interval(cast(Literal["precision", "f1"], name),
                                      paired_label_cells(correct, found), confidence_level)
        if paired is not None:
            return paired
    if name == "accuracy":
        r = phi_correlation(*(float(c) for c in correct))
    else:
        r = 0.0
        if ok.sum() > 1 and np.std(new[ok]) > 0 and np.std(old[ok]) > 0:
            r = float(np.corrcoef(new[ok], old[ok])[0, 1])
    return mover_difference(points[0], first, points[1], second, r)


def difference_part_moments(cell_difference: npt.ArrayLike,
                            counts: npt.NDArray[np.float64]) -> dict[str, npt.NDArray[np.float64]]:
    """Mean and squared standard error of the positive and the negative part of a per-row
    difference, per row of ``counts``.

    Parameters
    ----------
    cell_difference : array_like of shape (cells,)
        The difference of each cell (with rows as cells, of each row; with cells that
        pool rows, the cell's mean, which leaves out the spread inside a cell).
    counts : ndarray of shape (k, cells)
        Rows counted per cell: one row per resample, or the data's own counts.

    Returns
    -------
    dict
        ``"up"``, ``"up_var"``, ``"down"``, ``"down_var"``: per row of ``counts`` the mean
        of ``max(d, 0)`` and of ``max(-d, 0)`` and their squared standard errors
        (``(mean of squares - square of mean) / (n - 1)``).

    Examples
    --------
    >>> m = difference_part_moments([0.5, -0.25, 0.0], np.array([[1.0, 2.0, 1.0]]))
    >>> float(m["up"][0]), float(m["down"][0]), float(m["up_var"][0])
    (0.125, 0.125, 0.015625)
    """
    d = np.asarray(cell_difference, dtype=np.float64)
    n = counts.sum(axis=1)
    out: dict[str, npt.NDArray[np.float64]] = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for key, part in (("up", np.maximum(d, 0.0)), ("down", np.maximum(-d, 0.0))):
            mean = counts @ part / n
            out[key] = mean
            out[f"{key}_var"] = np.maximum(counts @ part**2 / n - mean**2, 0.0) / (n - 1.0)
    return out


def log_loss_delta_interval(at_data: Mapping[str, npt.NDArray[np.float64]],
                            resampled: Mapping[str, npt.NDArray[np.float64]], n: int,
                            confidence_level: float) -> tuple[float, float]:
    """Interval of the mean per-row loss difference: MOVER over its positive and negative parts.

    ``mean(d) = mean(up) - mean(down)`` with ``up = max(d, 0)``, ``down = max(-d, 0)``.
    Each part's mean gets the studentized bootstrap interval of a log loss
    (:func:`modelgate.intervals.studentized_interval`, clipped at 0, held to its
    point); :func:`modelgate.intervals.mover_difference` combines them with the
    correlation of the two means, ``-mean(up) mean(down) / (sd(up) sd(down))``: the
    parts are never both non-zero on a row, so ``mean(up * down) = 0`` (0 when a part
    is constant).  Why this method: see the module's docstring.

    Parameters
    ----------
    at_data, resampled : mapping
        :func:`difference_part_moments` on the data's own counts (one value per key) and
        on the resamples.
    n : int
        Rows.
    confidence_level : float
        Central coverage in (0, 1).

    Returns
    -------
    tuple of float
        ``(lower, upper)``; NaN ends without resamples.

    Examples
    --------
    Every row's loss lower by 0.1 for the candidate: the negative part is constant, the
    positive part 0, the interval exactly ``[-0.1, -0.1]``:

    >>> d = np.full(4, -0.1)
    >>> data = difference_part_moments(d, np.ones((1, 4)))
    >>> draws = difference_part_moments(d, np.array([[2.0, 0, 1, 1], [0, 0, 4, 0]]))
    >>> [round(e, 12) for e in log_loss_delta_interval(data, draws, 4, 0.95)]
    [-0.1, -0.1]
    """
    if resampled["up"].size == 0:
        return float("nan"), float("nan")
    points, ends, sds = [], [], []
    for key in ("up", "down"):
        point, var = float(at_data[key][0]), float(at_data[f"{key}_var"][0])
        found = studentized_interval(point, float(np.sqrt(var)), resampled[key],
                                     np.sqrt(resampled[f"{key}_var"]), confidence_level,
                                     lower_limit=0.0, upper_limit=LOG_LOSS_MAX)
        points.append(point)
        ends.append(interval_holding(point, *found))
        sds.append(np.sqrt(var * (n - 1.0)))  # the part's standard deviation over the rows
    r = -points[0] * points[1] / (sds[0] * sds[1]) if sds[0] > 0 and sds[1] > 0 else 0.0
    return mover_difference(points[0], ends[0], points[1], ends[1], r)
