"""The error streams ADWIN watches, one per task (ADWIN needs values in [0, 1]).

* Classifiers (binary and multiclass): 1.0 where the predicted class differs from the
  label, else 0.0; ADWIN then tracks the error rate.
* Regression: the bounded absolute error ``min(|prediction - y| / scale, 1)``, where
  ``scale`` is a spread of the model's predictions (the pipeline passes the standard
  deviation of its predictions on the reference data, the same scale data drift
  normalises Wasserstein distances by). Errors of a whole ``scale`` or more count as 1,
  so one wild label cannot dominate; ADWIN then tracks the mean bounded error. ADWIN's
  cut test is a Hoeffding-type bound for values in [0, 1], hence the cap.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

__all__ = ["bounded_absolute_errors", "classification_errors"]


def classification_errors(y_true: npt.ArrayLike, predicted: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """1.0 where ``predicted != y_true`` (class labels or indices), else 0.0.

    Examples
    --------
    >>> classification_errors([0, 2, 1], [0, 1, 1]).tolist()
    [0.0, 1.0, 0.0]
    """
    y, p = np.asarray(y_true), np.asarray(predicted)
    if y.shape != p.shape or y.ndim != 1:
        raise ValueError(f"y_true and predicted must be 1-D of one length; got {y.shape} and {p.shape}")
    return (y != p).astype(np.float64)


def bounded_absolute_errors(y_true: npt.ArrayLike, prediction: npt.ArrayLike, *,
                            scale: float) -> npt.NDArray[np.float64]:
    """``min(|prediction - y_true| / scale, 1)`` per row.

    Parameters
    ----------
    y_true, prediction : array_like of float, shape (n,)
        Observed and predicted values (finite).
    scale : float
        Error that counts as 1 (> 0, finite).

    Examples
    --------
    >>> bounded_absolute_errors([1.0, 1.0, 1.0], [1.5, -3.0, 1.0], scale=2.0).tolist()
    [0.25, 1.0, 0.0]
    """
    if isinstance(scale, bool) or not isinstance(scale, int | float) or not (
            math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a positive finite number; got {scale!r}")
    y = np.asarray(y_true, dtype=np.float64)
    p = np.asarray(prediction, dtype=np.float64)
    if y.shape != p.shape or y.ndim != 1:
        raise ValueError(f"y_true and prediction must be 1-D of one length; got {y.shape} and {p.shape}")
    if not (np.isfinite(y).all() and np.isfinite(p).all()):
        raise ValueError("y_true and prediction must be finite (no NaN or infinite values)")
    return np.minimum(np.abs(p - y) / scale, 1.0)
