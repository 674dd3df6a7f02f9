"""The reliability (calibration) table of a binary model: per score bin, the count, the mean
score and the observed positive rate.  Exact: no resampling.

Bin edges and membership follow ``sklearn.calibration.calibration_curve``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from modelgate.intervals import check_int

from .binary_inputs import check_labels_scores
from .metric_results import CalibrationBin, CalibrationStrategy, CalibrationTable

__all__ = ["calibration_table"]


def calibration_table(
    y_true: npt.ArrayLike,
    score: npt.ArrayLike,
    *,
    n_bins: int = 10,
    strategy: CalibrationStrategy = "uniform",
) -> CalibrationTable:
    """Reliability table: per score bin, the count, mean score and observed positive rate.

    Bin edges and bin membership follow ``sklearn.calibration.calibration_curve``:
    ``"uniform"`` uses ``n_bins`` equal-width bins on [0, 1], ``"quantile"`` puts the
    edges at score percentiles; a score equal to an inner edge goes to the lower bin.

    Parameters
    ----------
    y_true : array_like of shape (n,)
        True labels, 0 or 1.
    score : array_like of shape (n,)
        Predicted probability of label 1, in [0, 1].
    n_bins : int, default 10
        Number of bins, at least 1.
    strategy : {"uniform", "quantile"}, default "uniform"
        How bin edges are placed.

    Returns
    -------
    CalibrationTable

    Raises
    ------
    ValueError
        If an input is invalid.

    Examples
    --------
    >>> t = calibration_table([0, 1, 1, 0], [0.1, 0.8, 0.9, 0.7], n_bins=2)
    >>> [(b.n, round(b.mean_predicted, 4), round(b.observed_rate, 4)) for b in t.bins]
    [(1, 0.1, 0.0), (3, 0.8, 0.6667)]
    """
    y, s = check_labels_scores(y_true, score, "score")
    check_int(n_bins, "n_bins", minimum=1)
    if strategy == "uniform":
        edges = np.linspace(0.0, 1.0, n_bins + 1)
    elif strategy == "quantile":
        edges = np.percentile(s, np.linspace(0.0, 1.0, n_bins + 1) * 100)
    else:
        raise ValueError(f"strategy must be 'uniform' or 'quantile'; got {strategy!r}")
    bin_ids = np.searchsorted(edges[1:-1], s)
    total = np.bincount(bin_ids, minlength=n_bins)
    sum_score = np.bincount(bin_ids, weights=s, minlength=n_bins)
    sum_label = np.bincount(bin_ids, weights=y.astype(np.float64), minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_score, rate = sum_score / total, sum_label / total
    bins = tuple(
        CalibrationBin(float(edges[i]), float(edges[i + 1]), int(total[i]),
                       float(mean_score[i]), float(rate[i]))
        for i in range(n_bins)
    )
    return CalibrationTable(bins, strategy, n_bins)
