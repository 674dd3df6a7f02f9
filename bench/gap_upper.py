"""A candidate upper end for a fairness gap: a test inversion of ``gap >= t`` on the range.

Used by ``bench/gap_candidates.py --methods upper joint-upper balanced-upper``; not shipped
(``bench/RESULTS.md``, "Two ends that need not hold the point").

The shipped upper end is the farthest end of any pair's Newcombe interval, and the reports
widen every interval to hold its point (the observed range).  With many small groups the
observed range lies far above the true gap, so such an upper end never misses and the
interval covers ``1 - lower miss``: 98-99 % at ten groups a standard error or two apart.  An
upper end may lie below the observed range and still be valid: the range is biased upwards.

Here the upper end is the largest ``t`` whose hypothesis ``gap >= t`` a test at level
``tail`` does not reject.  The test rejects when the observed range is small under every
configuration tried with gap exactly ``t`` (the range's law is stochastically smallest at the
boundary): a pair of groups ``t`` apart at the pair's maximum-likelihood position, the other
groups (a) at the pair's midpoint, (b) on its top edge, (c) on its bottom edge, (d) at their
own rates clipped into the window.  The pair is the observed extreme pair, and, separately,
the two groups with the most trials.  The p-value is the largest mid-p value over those
configurations (a least-favourable choice over a handful, not a supremum over all).
"""

from __future__ import annotations

import numpy as np
from modelgate.fairness import count_draws
from modelgate.fairness import gap_lower_end as gle
from modelgate.fairness.score_intervals import group_rates

_GRID = np.linspace(0.0, 1.0, 801)


def _pair_position(x: np.ndarray, n: np.ndarray, pair: tuple[int, int], width: float) -> float:
    """The window start ``w`` in ``[0, 1 - width]`` maximising the binomial likelihood of the
    pair's bottom group at ``w`` and its top group at ``w + width``."""
    bottom, top = pair
    w = _GRID[np.less_equal(_GRID, 1.0 - width + 1e-12)]
    q0 = np.clip(w, 1e-12, 1 - 1e-12)
    q1 = np.clip(w + width, 1e-12, 1 - 1e-12)
    loglik = (x[bottom] * np.log(q0) + (n[bottom] - x[bottom]) * np.log1p(-q0)
              + x[top] * np.log(q1) + (n[top] - x[top]) * np.log1p(-q1))
    return float(w[int(np.argmax(loglik))])


def _pairs(x: np.ndarray, n: np.ndarray) -> set[tuple[int, int]]:
    """The ``(bottom, top)`` pairs put ``t`` apart: the observed extreme pair and the two
    groups with the most trials (every group has trials)."""
    p = x / n
    pairs = {(int(np.argmin(p)), int(np.argmax(p)))}
    a, b = (int(g) for g in np.argsort(-n, kind="stable")[:2])
    pairs.add((a, b) if p[a] <= p[b] else (b, a))
    return {(bottom, top) for bottom, top in pairs if bottom != top}


def _configurations(x: np.ndarray, n: np.ndarray, pairs: set[tuple[int, int]], width: float
                    ) -> list[np.ndarray]:
    """Every group's rate in each configuration of gap ``width`` (module docstring)."""
    p = x / n
    out = []
    for bottom, top in pairs:
        w = _pair_position(x, n, (bottom, top), width)
        for others in (np.full(x.shape, w + width / 2), np.full(x.shape, w + width),
                       np.full(x.shape, w), np.clip(p, w, w + width)):
            rates = others.copy()
            rates[bottom], rates[top] = w, w + width
            out.append(np.clip(rates, 0.0, 1.0))
    return out


def _range(counts: np.ndarray, n: np.ndarray) -> np.ndarray:
    return np.ptp(group_rates(counts, np.broadcast_to(n, counts.shape)), axis=-1)


def upper_p_value(x: np.ndarray, n: np.ndarray, width: float) -> float:
    """The largest mid-p value ``P(R < r) + P(R = r) / 2`` of the observed range ``r`` over the
    configurations of gap ``width`` (module docstring); groups without trials left out."""
    keep = n > 0
    return _p_value(x[keep], n[keep], _pairs(x[keep], n[keep]), width)


def _p_value(x: np.ndarray, n: np.ndarray, pairs: set[tuple[int, int]], width: float) -> float:
    """:func:`upper_p_value` given groups with trials and their pairs."""
    observed = float(np.ptp(x / n))
    u = count_draws.fixed_uniforms(x.size, gle.DRAWS)
    worst = 0.0
    for rates in _configurations(x, n, pairs, width):
        null = _range(count_draws.binomial_draws(u, n, rates), n)
        tie = np.abs(null - observed) <= 1e-12
        worst = max(worst, float(((null < observed) & ~tie).mean() + 0.5 * tie.mean()))
    return worst


def inverted_upper_end(x: np.ndarray, n: np.ndarray, tail: float) -> float:
    """The largest gap whose hypothesis ``gap >= t`` the range test does not reject at ``tail``
    (bisection to 2**-10, erring high)."""
    keep = n > 0
    x, n = x[keep], n[keep]
    pairs = _pairs(x, n)

    def rejected(width: float) -> bool:
        return _p_value(x, n, pairs, width) <= tail

    low, high = 0.0, 1.0
    if not rejected(high):
        return high
    while high - low > 2.0 ** -10:
        middle = (low + high) / 2.0
        low, high = (low, middle) if rejected(middle) else (middle, high)
    return high
