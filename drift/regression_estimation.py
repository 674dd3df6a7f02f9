"""Estimated regression performance before labels arrive (a binned direct loss estimate).

NannyML's DLE [1]_ fits a second ("nanny") model on the reference that predicts each row's
absolute and squared error from the features and the prediction, then averages its predictions
over an interval. Ours is deliberately simpler and needs numpy only: the error model is a
histogram of the reference's errors over reference-quantile bins of the model's PREDICTION
(``n_bins`` bins, default 20; about equal reference counts per bin, edges deduplicated). For each bin it
keeps the mean and variance of ``|e|`` and of ``e ** 2`` (``e = y - prediction``). An interval's
estimates are

    MAE  = mean over its rows of the bin mean of |e|
    RMSE = sqrt(mean over its rows of the bin mean of e ** 2)

So the estimate follows a shift in where the predictions fall (into bins where the model errs
more or less), but not a change in the error at a fixed prediction driven by the features alone;
that needs DLE's feature-based model (NannyML fits LightGBM) and labels to see. Nor can it know
the error where the reference made no predictions: rows beyond the reference's range take the end
bins' error and are counted (``n_outside_reference``), and a shift that moves many rows into the
wide end bins biases the estimate (coverage in the tests is checked for shifts inside the range).

Intervals (estimated)
---------------------
Given the interval's bins, each row's loss is an independent draw from its bin's reference
distribution, so the realised MAE has variance ``sum of var(|e| | bin) / n ** 2`` and the realised
MSE ``sum of var(e ** 2 | bin) / n ** 2``; the RMSE's standard error is the MSE's over ``2 RMSE``
(delta method). The interval is ``estimate +/- z * standard error``, ``z`` from ``confidence``,
floored at 0.

References
----------
.. [1] NannyML, "Performance estimation: DLE",
   https://nannyml.readthedocs.io/en/stable/how_it_works/performance_estimation.html
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.stats import norm

from modelgate.records import finite_or_none

__all__ = ["BinnedErrorModel", "RegressionEstimate", "estimate_regression", "fit_error_model"]

#: Default number of prediction bins of the error model.
DEFAULT_BINS = 20


def _finite_1d(values: ArrayLike, name: str) -> NDArray[np.float64]:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional; got shape {arr.shape!r}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} holds {int((~np.isfinite(arr)).sum())} missing or infinite values")
    return arr


def _readonly(arr: NDArray[Any]) -> NDArray[Any]:
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, slots=True, eq=False)
class BinnedErrorModel:
    """Reference errors of a regression model by bin of its prediction.

    Attributes
    ----------
    edges : ndarray
        Inner bin edges, increasing (``len(edges) + 1`` bins; read-only).
    abs_mean, abs_var, sq_mean, sq_var : ndarray
        Per bin: mean and variance of ``|e|`` and of ``e ** 2`` on the reference (read-only).
    n : int
        Reference rows.
    low, high : float
        Smallest and largest reference prediction.
    """

    edges: NDArray[np.float64]
    abs_mean: NDArray[np.float64]
    abs_var: NDArray[np.float64]
    sq_mean: NDArray[np.float64]
    sq_var: NDArray[np.float64]
    n: int
    low: float
    high: float

    def bin_of(self, predictions: ArrayLike) -> NDArray[np.intp]:
        """Bin index of each prediction (values below or above the reference go to the ends)."""
        return np.searchsorted(self.edges, _finite_1d(predictions, "predictions"), side="right")


def fit_error_model(predictions: ArrayLike, targets: ArrayLike, *,
                    n_bins: int = DEFAULT_BINS) -> BinnedErrorModel:
    """The binned error model of the labelled reference.

    Parameters
    ----------
    predictions, targets : array_like of float
        The model's predictions and the true values on the reference.
    n_bins : int, default 20
        Reference-quantile bins of the prediction (fewer when predictions repeat).

    Returns
    -------
    BinnedErrorModel

    Raises
    ------
    ValueError
        Empty, mismatched or non-finite inputs, or ``n_bins < 1``.

    Examples
    --------
    >>> m = fit_error_model([1.0, 2.0, 3.0, 4.0], [1.5, 1.5, 3.0, 6.0], n_bins=2)
    >>> m.edges.tolist(), m.abs_mean.tolist()
    ([3.0], [0.5, 1.0])
    """
    pred, y = _finite_1d(predictions, "predictions"), _finite_1d(targets, "targets")
    if pred.shape != y.shape or pred.size == 0:
        raise ValueError(f"predictions and targets must be non-empty and of one length; got "
                         f"{pred.size} and {y.size}")
    if n_bins < 1:
        raise ValueError(f"n_bins must be at least 1; got {n_bins!r}")
    # Edges are reference values (the "higher" quantile), above the minimum: every bin then
    # holds at least the value at its left edge, so none is empty.
    edges = np.unique(np.quantile(pred, np.arange(1, n_bins) / n_bins, method="higher"))
    edges = edges[edges > pred.min()]
    bins = np.searchsorted(edges, pred, side="right")
    counts = np.bincount(bins, minlength=edges.size + 1).astype(np.float64)
    err = y - pred

    def mean_var(loss: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        mean = np.bincount(bins, weights=loss, minlength=counts.size) / counts
        var = np.bincount(bins, weights=(loss - mean[bins]) ** 2, minlength=counts.size) / counts
        return _readonly(mean), _readonly(var)

    abs_mean, abs_var = mean_var(np.abs(err))
    sq_mean, sq_var = mean_var(err * err)
    return BinnedErrorModel(_readonly(edges), abs_mean, abs_var, sq_mean, sq_var, int(pred.size),
                            float(pred.min()), float(pred.max()))


@dataclass(frozen=True, slots=True)
class RegressionEstimate:
    """Estimated MAE and RMSE of a regression model on one interval (no labels used).

    Attributes
    ----------
    n : int
    confidence : float
    n_outside_reference : int
        Rows predicted outside the reference's range: their error is extrapolated (the end
        bins'), so a large share makes the estimate a guess.
    mae, mae_standard_error, mae_lower, mae_upper : float
    rmse, rmse_standard_error, rmse_lower, rmse_upper : float
    """

    n: int
    confidence: float
    n_outside_reference: int
    mae: float
    mae_standard_error: float
    mae_lower: float
    mae_upper: float
    rmse: float
    rmse_standard_error: float
    rmse_lower: float
    rmse_upper: float

    def to_record(self) -> dict[str, Any]:
        """Plain values; undefined numbers are ``None``."""
        return {"n": self.n, "confidence": self.confidence,
                "n_outside_reference": self.n_outside_reference,
                **{k: finite_or_none(getattr(self, k)) for k in (
                    "mae", "mae_standard_error", "mae_lower", "mae_upper",
                    "rmse", "rmse_standard_error", "rmse_lower", "rmse_upper")}}


def estimate_regression(model: BinnedErrorModel, predictions: ArrayLike, *,
                        confidence: float = 0.95) -> RegressionEstimate:
    """Estimated MAE and RMSE of one interval's predictions.

    Parameters
    ----------
    model : BinnedErrorModel
        From :func:`fit_error_model` on the reference.
    predictions : array_like of float
        The model's predictions on the interval.
    confidence : float, default 0.95

    Returns
    -------
    RegressionEstimate
        NaN estimates for an empty interval.

    Examples
    --------
    >>> m = fit_error_model([1.0, 2.0, 3.0, 4.0], [1.5, 1.5, 3.0, 6.0], n_bins=2)
    >>> estimate_regression(m, [3.5, 3.6]).mae
    1.0
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1); got {confidence!r}")
    z = float(norm.ppf(0.5 + confidence / 2.0))
    pred = _finite_1d(predictions, "predictions")
    bins = model.bin_of(pred)
    n = bins.size
    if n == 0:
        nan = math.nan
        return RegressionEstimate(0, confidence, 0, nan, nan, nan, nan, nan, nan, nan, nan)
    outside = int(np.count_nonzero((pred < model.low) | (pred > model.high)))
    counts = np.bincount(bins, minlength=model.abs_mean.size).astype(np.float64)
    mae = float(counts @ model.abs_mean) / n
    mae_se = math.sqrt(float(counts @ model.abs_var)) / n
    mse = float(counts @ model.sq_mean) / n
    mse_se = math.sqrt(float(counts @ model.sq_var)) / n
    rmse = math.sqrt(mse)
    rmse_se = mse_se / (2.0 * rmse) if rmse > 0 else 0.0
    return RegressionEstimate(n, confidence, outside,
                              mae, mae_se, max(0.0, mae - z * mae_se), mae + z * mae_se,
                              rmse, rmse_se, max(0.0, rmse - z * rmse_se), rmse + z * rmse_se)
