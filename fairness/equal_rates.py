"""How much more data would put a fairness gap's interval below a limit if the groups' rates were equal.

A fair model's observed gap (the largest pairwise difference of group rates) is biased
upwards, so a projection that holds the observed gap fixed promises a breach that more rows
do not bring (issue #38). When the interval holds 0 the data are consistent with equal
rates; this module asks how much more data of the same mix would put the interval's upper end
below a limit in half the samples if they were.

Method
------
Each rate family of the gap (TPR and FPR for the equalized-odds difference, one rate for the
other gaps) takes its pooled rate for every group; the group trials are scaled by ``k``;
:data:`DRAWS` count tables are drawn from those binomials (a fixed seed) and the gap's upper
end computed on each by the production construction
(:func:`~.gap_intervals.gap_interval` at the upper end's critical value, the farther end over
the families). The factor ``k`` at which the median upper end reaches the limit is found by
bisection on ``log k``. The upper end is noise of order ``1 / sqrt(n)`` with equal rates, so
``(median / limit)**2`` at the present counts brackets the search; simulating at the
projected size instead of extrapolating matters when the counts are small: at n = 200 with
three groups the extrapolation passed 35-37 % of fair samples, the simulation 52-57 %
(``bench/RESULTS.md``, "Rows to decide a fair model's gap").
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from scipy.special import ndtri

from .gap_intervals import end_shares, gap_interval
from .metrics import GAP_RATE, family_counts, gap_members

__all__ = ["DRAWS", "scale_to_clear_if_equal"]

DRAWS = 512
_SEED = 20260538
_BISECTIONS = 12  # 1e-3 of the bracket: a row in a thousand
_FAMILIES = {**{gap: (rate,) for gap, rate in GAP_RATE.items()},
             "equalized_odds_difference": ("tpr", "fpr")}


def scale_to_clear_if_equal(counts: npt.ArrayLike, included: npt.ArrayLike, gap: str,
                            limit: float, *, confidence_level: float = 0.95,
                            zero: bool = False) -> float | None:
    """The factor on every count at which the gap's upper end falls below ``limit`` in half
    of the samples drawn with each rate equal across the groups (its pooled value).

    Parameters
    ----------
    counts : array_like of int, shape (groups, 4)
        ``tn, fp, fn, tp`` per group.
    included : array_like of bool, shape (groups,)
        The groups taking part in the gaps.
    gap : str
        ``equalized_odds_difference``, ``tpr_gap``, ``fpr_gap``,
        ``demographic_parity_difference`` or ``predictive_parity_difference``.
    limit : float
        The upper limit, in (0, 1).
    confidence_level : float, default 0.95
        The report's level.
    zero : bool, default False
        The report's ``undefined_rates == "zero"``.

    Returns
    -------
    float or None
        The factor (at least 1); None for another gap, a family with fewer than two groups
        taking part or without cases, or a limit out of (0, 1).

    Examples
    --------
    Three groups of 70 rows, the same rates: about 32 times the data puts the
    selection-rate gap's upper end below 0.05 in half the samples.

    >>> counts = [[40, 10, 5, 15]] * 3
    >>> round(scale_to_clear_if_equal(counts, [True] * 3, "demographic_parity_difference", 0.05))
    32
    """
    table = np.asarray(counts, dtype=np.int64)
    kept = np.asarray(included, dtype=bool)
    if gap not in _FAMILIES or not 0.0 < limit < 1.0:
        return None
    families = []
    for rate in _FAMILIES[gap]:
        members = gap_members(table, kept, rate, zero=zero)
        x, n = (c[members].astype(np.float64) for c in family_counts(table, rate))
        if members.sum() < 2 or x.sum() <= 0 or x.sum() >= n.sum():
            return None
        families.append((x.sum() / n.sum(), n))
    upper_share = end_shares(min(n.size for _, n in families))[1]
    z_upper = float(ndtri(1.0 - upper_share * (1.0 - confidence_level)))
    rng_state = np.random.default_rng(_SEED).bit_generator.state

    def median_upper(scale: float) -> float:
        rng = np.random.default_rng()
        rng.bit_generator.state = rng_state  # the same draws at every scale
        ends = np.zeros(DRAWS)
        for p, n in families:
            trials = np.maximum(np.rint(n * scale), 1.0)
            x = rng.binomial(trials.astype(np.int64), p, size=(DRAWS, trials.size))
            ends = np.maximum(ends, gap_interval(x, np.broadcast_to(trials, x.shape),
                                                 z_upper, z_upper)[1])
        return float(np.median(ends))

    low, high = 0.0, math.log(max(1.0, (median_upper(1.0) / limit) ** 2))
    if high == 0.0:
        return 1.0
    while median_upper(math.exp(high)) > limit:  # the extrapolation fell short: widen
        low, high = high, high + 1.0
    for _ in range(_BISECTIONS):
        mid = (low + high) / 2.0
        low, high = (mid, high) if median_upper(math.exp(mid)) > limit else (low, mid)
    return math.exp(high)
