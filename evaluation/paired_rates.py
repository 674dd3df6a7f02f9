"""Tango's score interval of a difference of paired proportions.

Two models judged on the same rows (right or wrong, or a positive found or missed) give a
2 x 2 table of pairs; the difference of their rates is ``(only_1 - only_2) / n``, where
``only_1`` counts the pairs the first model gets and the second does not.  Tango (1998)
inverts the score test of ``p_12 - p_21 = delta``: the interval is the set of ``delta``
whose statistic

    Z(delta) = (only_1 - only_2 - n delta) / sqrt(n (2 p_21(delta) + delta (1 - delta)))

lies within the normal quantile, ``p_21(delta)`` the maximum-likelihood estimate of the
"second only" cell under that ``delta`` (a quadratic's root, in closed form).  Why this
and not MOVER of the two Wilson intervals with the phi correlation (Newcombe's method
10, the method before it): for two near-equal models MOVER's width follows the
marginal intervals' asymmetry, not the discordant pairs, and it held the truth in
97.8-99.2 % of simulated sets at n = 200 (``bench/RESULTS.md``, "Paired rate deltas of
near-equal models"); the score interval's variance is that of the discordant pairs
alone, and it never collapses to a point while any pair is discordant.  Hand-written:
scipy and statsmodels offer no paired-difference score interval (statsmodels'
``confint_proportions_2indep`` is for independent samples); the roots come from
:func:`scipy.optimize.brentq`.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq
from scipy.stats import norm

__all__ = ["tango_interval"]


def _score(delta: float, only_1: float, only_2: float, n: float) -> float:
    """Tango's statistic at ``delta`` (decreasing in ``delta`` on (-1, 1))."""
    w = -only_1 - only_2 + (2.0 * n - only_1 + only_2) * delta
    p21 = (np.sqrt(max(w * w + 8.0 * n * only_2 * delta * (1.0 - delta), 0.0)) - w) / (4.0 * n)
    variance = n * (2.0 * p21 + delta * (1.0 - delta))
    gap = only_1 - only_2 - n * delta
    if variance <= 0.0:
        return float(np.sign(gap)) * np.inf if gap != 0 else 0.0
    return float(gap / np.sqrt(variance))


def tango_interval(only_1: int, only_2: int, n: int,
                   confidence_level: float) -> tuple[float, float]:
    """Tango's score interval of ``p_1 - p_2`` from the discordant pairs of ``n`` pairs.

    Parameters
    ----------
    only_1, only_2 : int
        Pairs where only the first (second) model succeeds.
    n : int
        All pairs (concordant ones included), ``n >= only_1 + only_2``, ``n > 0``.
    confidence_level : float
        In (0, 1).

    Returns
    -------
    tuple of float
        ``(lower, upper)`` within [-1, 1]; with no discordant pair
        ``(-z**2 / (n + z**2), z**2 / (n + z**2))``, never a point.

    Examples
    --------
    Newcombe (1998)'s example: 50 pairs, 12 discordant one way, 2 the other:

    >>> lo, hi = tango_interval(12, 2, 50, 0.95)
    >>> round(lo, 4), round(hi, 4)
    (0.0611, 0.3447)
    """
    if n <= 0 or min(only_1, only_2) < 0 or only_1 + only_2 > n:
        raise ValueError(f"tango_interval: need 0 <= only_1 + only_2 <= n and n > 0, got "
                         f"only_1={only_1}, only_2={only_2}, n={n}")
    z = float(norm.ppf(0.5 + confidence_level / 2.0))
    b, c, m = float(only_1), float(only_2), float(n)
    point = (b - c) / m
    edge = 1.0 - 1e-12
    lower, upper = -1.0, 1.0
    if _score(-edge, b, c, m) > z:
        lower = brentq(lambda d: _score(d, b, c, m) - z, -edge, point, xtol=1e-12)
    if _score(edge, b, c, m) < -z:
        upper = brentq(lambda d: _score(d, b, c, m) + z, point, edge, xtol=1e-12)
    return float(lower), float(upper)
