"""The tests' own row bootstrap, and when two bootstrap quantiles agree (tests only).

Interval tests draw their oracle's resamples here, with their own numpy generator, never
from ``modelgate.intervals``: an oracle that shares the production resampler passes when
that resampler is broken (every resample identical, a row never drawn).

Two percentile intervals from independent resamples differ by resampling noise. The
quantile at level ``p`` of ``B`` resamples sits, on the scale of the resampled
statistic's distribution function, within about ``sqrt(p (1 - p) / B)`` of ``p``; two
independent sets of ``B1`` and ``B2`` resamples differ by ``sqrt(p (1 - p) (1/B1 + 1/B2))``
on that scale. :func:`agrees` maps ``z`` such standard errors back onto the values
through the oracle's own resampled values (order statistics: no density estimate, and
discrete statistics such as accuracy on a few rows are handled). ``z`` is 5 by default:
wide enough that changing a seed does not break a test (none of 292 interval ends across
seeds fell outside), narrow enough that identical resamples (a zero-width interval) fail.
"""

from __future__ import annotations

import numpy as np


def row_resamples(n: int, n_resamples: int, seed: int) -> np.ndarray:
    """``(n_resamples, n)`` row indices, each row ``n`` uniform draws with replacement."""
    rng = np.random.default_rng(seed)
    return np.stack([rng.choice(n, size=n, replace=True) for _ in range(n_resamples)])


def agrees(bound: float, oracle_values: np.ndarray, level: float, *, n_core: int,
           z: float = 5.0) -> bool:
    """Whether ``bound``, the ``level`` quantile of ``n_core`` resamples, is within ``z``
    standard errors of the ``level`` quantile of the oracle's finite resampled values."""
    values = np.sort(oracle_values[np.isfinite(oracle_values)])
    half = z * np.sqrt(level * (1.0 - level) * (1.0 / values.size + 1.0 / n_core))
    low = np.quantile(values, max(level - half, 0.0), method="lower")
    high = np.quantile(values, min(level + half, 1.0), method="higher")
    return bool(low <= bound <= high)


def interval_agrees(lower: float, upper: float, oracle_values: np.ndarray,
                    confidence_level: float, *, n_core: int) -> bool:
    """Both ends of a percentile interval agree with the oracle's (see :func:`agrees`)."""
    alpha = 1.0 - confidence_level
    return (agrees(lower, oracle_values, alpha / 2, n_core=n_core)
            and agrees(upper, oracle_values, 1.0 - alpha / 2, n_core=n_core))
