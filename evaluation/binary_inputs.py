"""Validation of the binary metrics' inputs: labels, scores and the bootstrap options.

Shared by :mod:`~.metrics` (the row path) and the mergeable statistics (:mod:`~.sufficient`,
:mod:`~.segment_collect`, :mod:`~.performance`), which must refuse exactly what the row path
refuses.  Labels are 0/1 (bool, integer or float 0.0/1.0), scores probabilities in [0, 1].
"""

from __future__ import annotations

import numbers

import numpy as np
import numpy.typing as npt

from modelgate.intervals import check_confidence_level, check_int

__all__ = ["check_interval", "check_labels_scores", "check_options"]

_FloatArray = npt.NDArray[np.float64]


def check_labels_scores(
    y_true: npt.ArrayLike, score: npt.ArrayLike, score_name: str
) -> tuple[npt.NDArray[np.int8], _FloatArray]:
    """``y_true`` as int8 0/1 labels and ``score`` as float64 probabilities of the same length.

    Raises
    ------
    ValueError
        Naming ``y_true`` or ``score_name`` and what it held: empty, not one-dimensional,
        a label other than 0/1, a non-numeric or out-of-range score, or a length mismatch.

    Examples
    --------
    >>> y, s = check_labels_scores([0, 1], [0.25, 1], "score")
    >>> y.dtype.name, s.tolist()
    ('int8', [0.25, 1.0])
    >>> check_labels_scores([0, 2], [0.2, 0.9], "score")
    Traceback (most recent call last):
    ...
    ValueError: y_true must contain only 0 and 1; found array([2])
    """
    y = _as_1d(y_true, "y_true")
    if y.size == 0:
        raise ValueError("y_true must have at least one row; got an empty array")
    if y.dtype.kind not in "biuf" or not np.all((y == 0) | (y == 1)):
        found = np.unique(y[~((y == 0) | (y == 1))])[:3] if y.dtype.kind in "biuf" else y.dtype
        raise ValueError(f"y_true must contain only 0 and 1; found {found!r}")
    raw = _as_1d(score, score_name)
    if raw.dtype.kind not in "biuf":
        raise ValueError(f"{score_name} must be numeric; got dtype {raw.dtype!r}")
    s: _FloatArray = np.asarray(raw, dtype=np.float64)
    if s.shape != y.shape:
        raise ValueError(f"{score_name} must have the length of y_true ({y.size}); got {s.size}")
    if not np.all((s >= 0.0) & (s <= 1.0)):
        raise ValueError(f"{score_name} must be probabilities in [0, 1]; found values outside "
                         f"(min {np.nanmin(s)!r}, max {np.nanmax(s)!r}, or NaN)")
    return y.astype(np.int8), s


def _as_1d(values: npt.ArrayLike, name: str) -> npt.NDArray[np.generic]:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional; got shape {arr.shape!r}")
    return arr


def check_interval(interval: object) -> None:
    """Refuse an ``interval`` option other than ``"per_metric"`` or ``"percentile"``."""
    if interval not in ("per_metric", "percentile"):
        raise ValueError(f"interval must be 'per_metric' or 'percentile'; got {interval!r}")


def check_options(threshold: float, n_bootstrap: int, confidence_level: float, seed: int) -> None:
    """Refuse a threshold outside [0, 1], a negative or non-integer ``n_bootstrap`` or ``seed``,
    or a confidence level outside (0, 1); each message names the parameter.

    Examples
    --------
    >>> check_options(1.5, 100, 0.95, 0)
    Traceback (most recent call last):
    ...
    ValueError: threshold must be a number in [0, 1]; got 1.5
    """
    if not _is_real(threshold) or not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be a number in [0, 1]; got {threshold!r}")
    check_int(n_bootstrap, "n_bootstrap", minimum=0)
    check_int(seed, "seed", minimum=0)
    check_confidence_level(confidence_level)


def _is_real(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)
