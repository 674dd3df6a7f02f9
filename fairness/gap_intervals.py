"""Confidence intervals of fairness gaps that stay valid at a gap of 0, from group counts.

The statistic
-------------
A gap is the largest minus the smallest of ``K`` group rates, each a binomial proportion
(TPR: true positives of the label positives; FPR: false positives of the label negatives;
selection rate: predicted positives of the rows; PPV: true positives of the predicted
positives), which is the largest of the ``K (K - 1) / 2`` pairwise differences
``|p_i - p_j|``.  Its estimate on the data is biased upwards when the true gap is small next
to its noise (a maximum of absolute values), and a percentile bootstrap of it inherits the
bias: with no real gap its interval lay wholly above the default limit 0.03 in 26.5 % of
census samples of n = 228 (issue #38), so the gate blocked fair models as breached.

Construction
------------
Each pairwise difference gets Newcombe's hybrid score interval for a difference of
independent proportions (his method 10 [1]_: the two groups' Wilson score intervals [2]_
combined as ``d -+ sqrt((p_i - l_i)**2 + (u_j - p_j)**2)``, which is
:func:`modelgate.intervals.mover_difference` with correlation 0).  From the pair intervals
``[lo_ij, hi_ij]`` (both orders of each pair):

* lower end = ``max(0, max lo_ij)``, the farthest any pair's interval lies from 0 (0 when
  every pair's interval holds 0), with the Wilson intervals at Tukey's critical value
  ``z = q(level; K, inf) / sqrt(2)`` (``q`` the studentized range distribution, scipy's
  ``studentized_range``): the point of the largest of the ``K (K - 1) / 2`` standardised
  differences of ``K`` independent estimates (1.96 for two groups, 2.34 for three, 3.16 for
  ten; Tukey-Kramer, conservative when the groups differ in size, Hayter 1984 [3]_).  The
  lower end lies above the true gap only if some pair's interval lies farther from 0 than
  that pair's true difference, which all pairs jointly avoid with probability ``level``; with
  no gap the lower end is 0 in about ``level`` of samples, so a breach of any limit above 0
  is rarer still.
* upper end = ``max hi_ij`` with the Wilson intervals at the one-pair value ``z = 1.96``
  (at 95 %): the true gap is the difference of one (unknown but fixed) pair, and the upper
  end lies below it only if that pair's interval does, with probability at most 2.5 %.

Both ends hold the gap on the data.  The equalized-odds difference ``max(tpr_gap, fpr_gap)``
and ``tpr_fpr_gap_sum`` combine the two families: the TPR and FPR counts are independent given
the label counts, so each family's lower end is computed at the Sidak level
``sqrt(confidence_level)`` (z = 2.24 for two groups); the equalized-odds ends are the larger
of the two families' ends, the sum's are their sums.

Why this construction
---------------------
Chosen by simulation (``bench/bench_fairness_coverage.py``; ``bench/RESULTS.md``, "Fairness
gap intervals at the boundary"): with random groups (true gap 0) it breaches the 0.03 limit
in at most a few per cent of samples for K = 2 to 10 at n = 200 and 2,000, where the
percentile bootstrap breached in up to 26.5 %.  Small true gaps are covered in at least 93 %
of samples, but it is conservative: 95-97 % for two groups at gaps several standard errors
wide, up to 97.5 % at gaps near their noise (a folded interval), and 97-100 % with three or
more groups, because the lower end must guard every pair to be right at 0 and the upper end
takes the largest of many pairs' ends.  Bonferroni
over the pairs is wider than Tukey's value (3.26 against 3.16 for K = 10, 45 pairs); a
percentile bootstrap of the gap, even with its lower end moved down by the estimated bias,
cannot reach 0.  Unlike a bootstrap the construction needs no resamples and no seed, and it
depends on the data only through the ``(groups, 4)`` count table, so merged partition counts
give the same interval as the rows.

Exact or estimated
------------------
The intervals are closed-form (no Monte Carlo error); their coverage is approximate (normal
approximation behind Wilson's interval and Tukey's value), shown by simulation.

Undefined rates
---------------
A group whose rate has no denominator is left out of that family (``undefined_rates="exclude"``),
or, with ``undefined_rates="zero"`` (fairlearn's convention), counts as a rate of exactly 0
with the interval ``[0, 0]`` (a convention, not an estimate).

References
----------
.. [1] Newcombe, R. G. (1998). Interval estimation for the difference between independent
   proportions: comparison of eleven methods. Statistics in Medicine 17(8), 873-890.
.. [2] Wilson, E. B. (1927). Probable inference, the law of succession, and statistical
   inference. Journal of the American Statistical Association 22(158), 209-212.
.. [3] Hayter, A. J. (1984). A proof of the conjecture that the Tukey-Kramer multiple
   comparisons procedure is conservative. Annals of Statistics 12(1), 61-75.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import numpy.typing as npt

__all__ = ["gap_interval", "pairwise_critical_value", "wilson_bounds"]

_FloatArray = npt.NDArray[np.float64]


def wilson_bounds(successes: npt.ArrayLike, trials: npt.ArrayLike, z: float
                  ) -> tuple[_FloatArray, _FloatArray]:
    """Wilson score interval of each proportion ``successes / trials`` at critical value ``z``.

    ``(x + z**2/2 -+ z sqrt(x (n - x) / n + z**2 / 4)) / (n + z**2)``, elementwise; NaN where
    ``trials`` is 0.  At ``x = n`` the upper end is exactly 1 and the lower ``n / (n + z**2)``.

    Parameters
    ----------
    successes, trials : array_like of int
        Counts, ``0 <= successes <= trials``.
    z : float
        Critical value (1.96 for a 95 % interval of one proportion).

    Returns
    -------
    tuple of ndarray
        ``(lower, upper)``, each of the shape of ``trials``.

    Examples
    --------
    >>> lo, hi = wilson_bounds([24, 0], [24, 10], 1.959963984540054)
    >>> [round(float(v), 4) for v in lo], [round(float(v), 4) for v in hi]
    ([0.862, 0.0], [1.0, 0.2775])
    """
    x = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    z2 = z * z
    with np.errstate(invalid="ignore", divide="ignore"):
        centre = (x + z2 / 2.0) / (n + z2)
        half = z / (n + z2) * np.sqrt(np.maximum(x * (n - x) / n, 0.0) + z2 / 4.0)
        lower = np.where(x <= 0, 0.0, np.clip(centre - half, 0.0, 1.0))
        upper = np.where(x >= n, 1.0, np.clip(centre + half, 0.0, 1.0))
    empty = n <= 0
    return np.where(empty, np.nan, lower), np.where(empty, np.nan, upper)


@lru_cache(maxsize=256)
def pairwise_critical_value(groups: int, confidence_level: float) -> float:
    """Tukey's critical value for all pairwise differences of ``groups`` independent estimates.

    ``q(confidence_level; groups, inf) / sqrt(2)`` with ``q`` the studentized range
    distribution: each difference within ``z`` of its standard error, jointly, with
    probability ``confidence_level`` (normal estimates).  NaN for fewer than two groups.

    Examples
    --------
    >>> round(pairwise_critical_value(2, 0.95), 4), round(pairwise_critical_value(10, 0.95), 4)
    (1.96, 3.1637)
    """
    from scipy.stats import studentized_range

    if groups < 2:
        return float("nan")
    if groups == 2:  # the range of two is |a - b|: the normal quantile, exactly
        from scipy.special import ndtri

        return float(ndtri(0.5 + confidence_level / 2.0))
    return float(studentized_range.ppf(confidence_level, groups, np.inf) / np.sqrt(2.0))


def gap_interval(successes: npt.ArrayLike, trials: npt.ArrayLike, z_lower: float, z_upper: float
                 ) -> tuple[_FloatArray, _FloatArray]:
    """Interval of the largest pairwise difference of group proportions (the last axis).

    Every group of the last axis takes part; a group with ``trials == 0`` has the rate 0 and
    the interval ``[0, 0]`` (the ``undefined_rates="zero"`` convention; leave such groups out
    to exclude them).  See the module docstring for the construction.

    Parameters
    ----------
    successes, trials : array_like of int, shape (..., K)
        Per-group counts; ``K >= 2``.
    z_lower : float
        Critical value of the pair intervals behind the lower end (simultaneous over the
        pairs: :func:`pairwise_critical_value`).
    z_upper : float
        Critical value of the pair intervals behind the upper end (one pair: 1.96).

    Returns
    -------
    tuple of ndarray
        ``(lower, upper)`` of shape ``(...)``.

    Examples
    --------
    Two groups of 100, 50 and 50 successes: the difference's interval holds 0.

    >>> z = 1.959963984540054
    >>> lo, hi = gap_interval([50, 50], [100, 100], z, z)
    >>> float(lo), round(float(hi), 4)
    (0.0, 0.136)
    """
    x = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    if x.shape != n.shape or x.ndim < 1 or x.shape[-1] < 2:
        raise ValueError(f"successes and trials must have one shape (..., K) with K >= 2; got "
                         f"{x.shape!r} and {n.shape!r}")
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(n > 0, x / n, 0.0)
    d = p[..., :, None] - p[..., None, :]  # ordered pairs (i, j): d = p_i - p_j
    off = ~np.eye(x.shape[-1], dtype=bool)
    below, above = _distances(x, n, p, z_lower)  # Newcombe's lower end of each d
    lo = d - np.sqrt(below[..., :, None] ** 2 + above[..., None, :] ** 2)
    below, above = _distances(x, n, p, z_upper)  # and its upper end
    hi = d + np.sqrt(above[..., :, None] ** 2 + below[..., None, :] ** 2)
    return (np.maximum(lo[..., off].max(axis=-1), 0.0),
            np.minimum(hi[..., off].max(axis=-1), 1.0))


def _distances(x: _FloatArray, n: _FloatArray, p: _FloatArray, z: float
               ) -> tuple[_FloatArray, _FloatArray]:
    """How far each group's Wilson interval reaches below and above its rate (0 and 0 for a
    group without trials)."""
    lower, upper = wilson_bounds(x, n, z)
    return np.where(n > 0, p - lower, 0.0), np.where(n > 0, upper - p, 0.0)
