"""The default binary interval methods, chosen per metric by simulated coverage.

A percentile bootstrap interval is short near a bound: on a confident model (AUC 0.997,
n = 200) the percentile interval of the AUC held the truth in 82 % of simulated sets,
that of the log loss in 87 % and that of the accuracy in 91 %, and a plain row bootstrap
was as short (``bench/RESULTS.md``, "Coverage of the binary intervals").  With
``interval="per_metric"`` (the default of
:func:`~modelgate.evaluation.sufficient.performance_from_statistics`):

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
* Every other metric and every paired delta: the percentile interval, which covered
  as well as the alternatives tried there (see ``bench/RESULTS.md``).

All ends are widened to hold the point estimate
(:func:`modelgate.intervals.interval_holding`) by the caller, and all use only the
merged table and the draws, so mapped and one-process runs still agree, at
``O(resamples x cells)``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from modelgate.intervals import logit_wald_interval, studentized_interval, wilson_interval

__all__ = ["METHOD_BY_METRIC", "per_metric_interval"]

METHOD_BY_METRIC = {"roc_auc": "logit-scale Wald, DeLong variance",
                    "accuracy": "Wilson score", "log_loss": "studentized bootstrap"}


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
