"""Textbook oracles of binary-metric intervals, written without modelgate (tests only).

Newcombe's (1998) method 10 for the difference of two paired proportions (Wilson intervals
of each, combined with the phi coefficient of the 2 x 2 table), the per-row log loss clipped
as scikit-learn's, the bootstrap-t interval of a mean (Efron and Tibshirani 1993, ch. 12) on
resamples the caller draws, and MOVER over the two parts of a mean difference.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq, minimize_scalar
from scipy.stats import norm

# a row's log loss at the clipped probability eps: no mean of row losses exceeds it
LOSS_MAX = -np.log(np.finfo(np.float64).eps)

Z = norm.ppf(0.975)


def wilson(p: float, n: int) -> tuple[float, float]:
    """95 % Wilson score interval of a proportion ``p`` of ``n`` trials."""
    centre = (p + Z**2 / (2 * n)) / (1 + Z**2 / n)
    half = Z * np.sqrt(p * (1 - p) / n + Z**2 / (4 * n * n)) / (1 + Z**2 / n)
    return centre - half, centre + half


def newcombe_method_10(new: np.ndarray, old: np.ndarray) -> tuple[float, float, float]:
    """``(p1 - p2, lower, upper)`` of the paired difference of the shares of rows that two
    models get right (boolean arrays ``new``, ``old``), 95 %."""
    n, p1, p2 = len(new), new.mean(), old.mean()
    a, b, c, d = (np.sum(new & old), np.sum(new & ~old), np.sum(~new & old), np.sum(~new & ~old))
    phi = (a * d - b * c) / np.sqrt((a + b) * (c + d) * (a + c) * (b + d))
    (l1, u1), (l2, u2) = wilson(p1, n), wilson(p2, n)
    lower = p1 - p2 - np.sqrt((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    upper = p1 - p2 + np.sqrt((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2)
    return p1 - p2, lower, upper


def tango(new: np.ndarray, old: np.ndarray) -> tuple[float, float, float]:
    """``(p1 - p2, lower, upper)`` of Tango's (1998) 95 % score interval of the paired
    difference of two success rates (boolean arrays ``new``, ``old``): the ``delta`` whose
    score statistic ``(b - c - n delta) / sqrt(n (2 p21 + delta (1 - delta)))`` lies within
    the normal quantile, ``p21`` maximising the multinomial likelihood of the 2 x 2 table
    under ``delta`` numerically (not by the closed form), the ends by root finding."""
    n, b, c = len(new), float(np.sum(new & ~old)), float(np.sum(~new & old))
    z = float(norm.ppf(0.975))

    def score(delta: float) -> float:
        def minus_log_likelihood(p21: float) -> float:
            rest = max(1.0 - 2.0 * p21 - delta, 1e-300)
            return -(b * np.log(max(p21 + delta, 1e-300)) + c * np.log(max(p21, 1e-300))
                     + (n - b - c) * np.log(rest))

        bounds = (max(0.0, -delta), (1.0 - delta) / 2.0)
        p21 = minimize_scalar(minus_log_likelihood, bounds=bounds, method="bounded",
                              options={"xatol": 1e-14}).x
        return (b - c - n * delta) / np.sqrt(n * (2.0 * p21 + delta * (1.0 - delta)))

    point, edge = (b - c) / n, 1.0 - 1e-9
    lower = brentq(lambda d: score(d) - z, -edge, point - 1e-12, xtol=1e-13)
    upper = brentq(lambda d: score(d) + z, point + 1e-12, edge, xtol=1e-13)
    return point, float(lower), float(upper)


def row_log_losses(y: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Per row, the log loss with scores clipped to ``[eps, 1 - eps]`` as scikit-learn's."""
    eps = np.finfo(np.float64).eps
    return -np.log(np.clip(np.where(y == 1, s, 1 - s), eps, 1 - eps))


def bootstrap_t(values: np.ndarray, idx: np.ndarray, *, upper: float = np.inf
                ) -> tuple[float, float]:
    """Textbook bootstrap-t interval of a mean from the resampled rows ``idx``: ``t* =
    (mean* - mean) / se*``, ``se = sd(ddof=1) / sqrt(n)``, a zero ``se*`` counted as a t of
    1e6 with the sign of ``mean* - mean``; a quantile that falls past every other t (it
    leans on those resamples without spread) gives its end the mean's limit, 0 below and
    ``upper`` above; clipped to ``[0, upper]`` (non-negative values) and widened to hold
    the mean."""
    n, mean = len(values), values.mean()
    se = values.std(ddof=1) / np.sqrt(n)
    if se == 0:  # every row alike: the resampled means are all the mean
        return mean, mean
    draws = values[idx]
    means, ses = draws.mean(axis=1), draws.std(axis=1, ddof=1) / np.sqrt(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(ses > 0, (means - mean) / ses, np.sign(means - mean) * 1e6)
    t = np.clip(t, -1e6, 1e6)
    lo, hi = np.quantile(t, [0.025, 0.975])
    real = t[np.abs(t) < 1e6]
    low_end = 0.0 if real.size == 0 or hi > real.max() else min(max(mean - hi * se, 0.0), upper)
    high_end = upper if real.size == 0 or lo < real.min() else min(max(mean - lo * se, 0.0), upper)
    return min(low_end, mean), max(high_end, mean)


def parts_mover(diff: np.ndarray, idx: np.ndarray) -> tuple[float, float]:
    """MOVER interval of the mean of ``diff`` over its parts ``max(d, 0)`` and ``max(-d, 0)``,
    each by :func:`bootstrap_t` on the resampled rows ``idx``, with the correlation of the two
    parts over the rows (np.corrcoef)."""
    up, down = np.maximum(diff, 0.0), np.maximum(-diff, 0.0)
    (l1, u1), (l2, u2) = (bootstrap_t(part, idx, upper=LOSS_MAX) for part in (up, down))
    p1, p2 = up.mean(), down.mean()
    r = np.corrcoef(up, down)[0, 1] if up.std() > 0 and down.std() > 0 else 0.0
    lower = p1 - p2 - np.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2 - 2 * r * (p1 - l1) * (u2 - p2))
    upper = p1 - p2 + np.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2 - 2 * r * (u1 - p1) * (p2 - l2))
    return float(lower), float(upper)
