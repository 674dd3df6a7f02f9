"""Bootstrap interval helpers shared by the numeric cores.

``evaluation`` and ``fairness`` both turn resampled statistics into percentile intervals.
The helper lives here, below both, so neither core imports the other for it (imports only
go downward: see the README's code layout).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def percentile_interval(resampled: npt.NDArray[np.float64],
                        confidence_level: float) -> tuple[float, float]:
    """Percentile interval of the finite resampled values; NaN when there are none.

    Parameters
    ----------
    resampled : ndarray of float64
        One statistic per bootstrap resample; NaN marks a resample where it is undefined
        and is left out.
    confidence_level : float
        Central coverage in (0, 1), e.g. 0.95 for the 2.5 % and 97.5 % quantiles
        (``np.quantile`` with linear interpolation).

    Returns
    -------
    tuple of float
        ``(lower, upper)``; ``(nan, nan)`` when no resample is finite.

    References
    ----------
    .. [1] Efron, B. and Tibshirani, R. (1993). An Introduction to the Bootstrap, ch. 13.

    Examples
    --------
    >>> percentile_interval(np.array([1.0, 2.0, 3.0, np.nan]), 0.5)
    (1.5, 2.5)
    >>> percentile_interval(np.array([np.nan]), 0.95)
    (nan, nan)
    """
    finite = resampled[np.isfinite(resampled)]
    if finite.size == 0:
        return float("nan"), float("nan")
    alpha = 1.0 - confidence_level
    lower, upper = np.quantile(finite, [alpha / 2, 1 - alpha / 2])
    return float(lower), float(upper)
