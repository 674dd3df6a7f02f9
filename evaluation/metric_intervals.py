"""The default binary interval methods, chosen per metric by simulated coverage.

A percentile bootstrap interval is short near a bound: on a confident model (AUC 0.997,
n = 200) the percentile interval of the AUC held the truth in 82 % of simulated sets,
that of the log loss in 87 % and that of the accuracy in 91 %, and a plain row bootstrap
was as short (``bench/RESULTS.md``, "Coverage of the binary intervals").  With
``interval="per_metric"`` (the default of
:func:`~modelgate.evaluation.performance.performance_from_statistics`):

* **ROC AUC**: Wald interval on the logit scale with DeLong's variance, computed
  exactly from the merged negatives and positives per distinct score
  (:func:`~.bootstrap_cells.delong_variance`,
  :func:`modelgate.intervals.logit_wald_interval`); ends in (0, 1), an exact bound on
  a perfect separation.
* **Accuracy**: Wilson score interval of the exact count of correct rows
  (:func:`modelgate.intervals.wilson_interval`).
* **Log loss**: studentized bootstrap (bootstrap-t) of the mean loss, each resample's
  standard error from the cells' mean losses
  (:func:`modelgate.intervals.studentized_interval`); clipped below at 0.
* **Paired deltas of ROC AUC and accuracy** (candidate minus champion,
  :func:`paired_delta_interval`): MOVER (Zou and Donner 2008,
  :func:`modelgate.intervals.mover_difference`) from the two models' own intervals
  above and the correlation of the two estimates: for the accuracy the phi coefficient
  of the 2 x 2 table of rows each model gets right (Newcombe's 1998 method 10), for ROC
  AUC the correlation of the paired resampled AUCs.  On the confident model at n = 200
  the percentile intervals of these deltas held the truth in 88.3 % (AUC) and 91.7 %
  (accuracy) of simulated sets, these in 94.5 % and 96.2 % (``bench/RESULTS.md``,
  "Paired deltas and the equalized-odds difference").  The price: wider intervals
  when the two models are nearly the same (AUC at n = 200: 0.011 against 0.0012), as
  MOVER reads each interval's asymmetry as spread.  Identical models (the same
  difference on every resample) keep the exact ``[d, d]``.
* Every other metric and delta, the log-loss delta included: the percentile interval.
  For the log-loss delta no candidate was both covered and usable: MOVER covered
  96 % but, for nearly identical models, was 19 times the percentile width; the
  paired Wald interval covered 90 % (``bench/RESULTS.md``).

All ends are widened to hold the point estimate
(:func:`modelgate.intervals.interval_holding`) by the caller, and all use only the
merged table and the draws, so mapped and one-process runs still agree, at
``O(resamples x cells)``.
"""

from __future__ import annotations

from collections.abc import Mapping

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

__all__ = ["DELTA_METHOD_BY_METRIC", "METHOD_BY_METRIC", "own_intervals",
           "paired_delta_interval", "per_metric_interval"]

METHOD_BY_METRIC = {"roc_auc": "logit-scale Wald, DeLong variance",
                    "accuracy": "Wilson score", "log_loss": "studentized bootstrap"}
DELTA_METHOD_BY_METRIC = {
    "roc_auc": "MOVER, logit-scale Wald intervals, correlation of the resampled AUCs",
    "accuracy": "MOVER, Wilson intervals, phi correlation (Newcombe's method 10)"}


def per_metric_interval(name: str, point: float, resampled: Mapping[str, npt.NDArray[np.float64]],
                        at_data: Mapping[str, npt.NDArray[np.float64]], successes: int,
                        trials: int, n_pos: int, auc_variance: float,
                        confidence_level: float) -> tuple[float, float] | None:
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
        Positive rows (for the ROC AUC).
    auc_variance : float
        DeLong's variance of the ROC AUC (NaN: percentile interval instead).
    confidence_level : float
        Central coverage in (0, 1).

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
    """
    if name not in METHOD_BY_METRIC:
        return None
    if resampled[name].size == 0:  # no resamples asked for: no interval, as elsewhere
        return float("nan"), float("nan")
    if name == "accuracy":
        return wilson_interval(successes, trials, confidence_level)
    if name == "roc_auc":
        if np.isnan(auc_variance):  # fewer than two of a class
            return None
        return logit_wald_interval(point, auc_variance, n_pos, trials - n_pos, confidence_level)
    return studentized_interval(point, float(np.sqrt(at_data["log_loss_var"][0])),
                                resampled["log_loss"], np.sqrt(resampled["log_loss_var"]),
                                confidence_level, lower_limit=0.0)


def own_intervals(values: Mapping[str, float], resampled: Mapping[str, npt.NDArray[np.float64]],
                  at_data: Mapping[str, npt.NDArray[np.float64]], successes: int, trials: int,
                  n_pos: int, auc_variance: float,
                  confidence_level: float) -> dict[str, tuple[float, float] | None]:
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
                                    auc_variance, confidence_level)
        own[name] = None if found is None else interval_holding(value, *found)
    return own


def paired_delta_interval(name: str, points: tuple[float, float],
                          own: tuple[tuple[float, float] | None, tuple[float, float] | None],
                          resampled: tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]],
                          correct: tuple[int, int, int, int]) -> tuple[float, float] | None:
    """The interval of ``candidate - champion`` for metric ``name``, or None for the percentile one.

    None also when the difference is the same on every resample (identical models).

    ROC AUC and accuracy: MOVER (:func:`modelgate.intervals.mover_difference`) from each
    model's own interval of the metric and the correlation of the two estimates: for the
    accuracy the phi coefficient of the 2 x 2 table of rows each model classifies
    correctly (Newcombe's method 10, with the Wilson intervals), for ROC AUC the
    correlation of the paired resampled values (the same draws for both models).  Not
    the log loss: MOVER from its two skewed studentized intervals covered well but, for
    two nearly identical models, was as wide as either interval (their skews cancel in
    the difference; MOVER's formula cannot see that), and a paired Wald interval was
    as short as the percentile one (``bench/RESULTS.md``).

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
    """
    first, second = own
    if name not in DELTA_METHOD_BY_METRIC or first is None or second is None:
        return None
    new, old = resampled
    if new.size == 0:
        return float("nan"), float("nan")
    ok = np.isfinite(new) & np.isfinite(old)
    if not ok.any() or np.ptp(new[ok] - old[ok]) == 0:
        # the same difference on every resample (identical models): MOVER, blind to
        # that, would still give each interval's asymmetry as width; the percentile
        # interval is the exact [d, d]
        return None
    if name == "accuracy":
        r = phi_correlation(*(float(c) for c in correct))
    else:
        r = 0.0
        if ok.sum() > 1 and np.std(new[ok]) > 0 and np.std(old[ok]) > 0:
            r = float(np.corrcoef(new[ok], old[ok])[0, 1])
    return mover_difference(points[0], first, points[1], second, r)
