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
:func:`modelgate.intervals.mover_difference` with correlation 0), at a critical value ``z``
(:func:`gap_interval`).  With ``alpha = 1 - confidence_level``
(:func:`gap_interval_of_families`):

* **upper end** = the farthest end of any ordered pair's interval at the one-sided point of
  ``0.4 alpha`` (z = 2.054 at 95 %).  The true gap is the difference of one (unknown, fixed)
  pair, and the upper end lies below it only if that pair's interval does: at most
  ``0.4 alpha`` of samples, less when several pairs share the gap.
* **lower end, step one**: the pair intervals at Tukey's simultaneous critical value
  ``q(1 - 0.8 alpha; K, inf) / sqrt(2)`` (``q`` the studentized range distribution, scipy's
  ``studentized_range``; Tukey-Kramer [3]_).  If every one holds 0 the lower end is 0.  With no
  gap every pair is tied, and some interval leaves 0 in about ``0.8 alpha`` of samples: the
  gate's `breach` (lower end above a limit > 0) is rarer still.
* **lower end, step two** (some pair clearly apart): the farthest distance from 0 of a pair
  interval at the critical value of the pairs that can hold the gap
  (:func:`selected_critical_value`): the ``1 - 0.8 alpha`` point of the largest standardised
  difference over the ordered pairs whose estimate lies within 2.5 standard errors of the
  largest one, the groups' errors normal with Agresti-Coull variances, by 4,096 quasi-random
  draws of a fixed seed.  This is generalized moment selection (Andrews and Soares 2010 [4]_):
  a pair far below the gap cannot put the lower end above it, so it needs no share of the
  error.  One pair near the gap gets the one-sided normal point (1.75 at 95 %), ``K - 1``
  pairs sharing one outlying group about Dunnett's many-to-one point [5]_, ``K`` tied groups
  Tukey's.

The equalized-odds difference ``max(tpr_gap, fpr_gap)`` is the largest difference over the
pairs of two independent families (TPR counts and FPR counts): step one takes each family at
the Sidak level ``(1 - 0.8 alpha) ** (1/2)``, step two selects over both families' pairs
together, the upper end is the farther of the two families' ends.  ``tpr_fpr_gap_sum`` adds
the two families' ends, each at level ``1 - alpha / 2`` (Bonferroni).  Every end depends on the
data only through the ``(groups, 4)`` count table, so merged partition counts give the same
interval as the rows; the draws are fixed, so the same counts give the same interval.

Why this construction
---------------------
Chosen by simulation (``bench/bench_fairness_coverage.py``; ``bench/RESULTS.md``, "Fairness
gap intervals at the boundary").  The gap is a maximum of ``K (K - 1) / 2`` differences and
cannot be negative, which makes a plain interval conservative in two ways the simulation
showed (coverage 97-100 % at small gaps for three to ten groups):

* Near a gap of 0 only the lower end can miss: a central interval (``alpha / 2`` per end)
  covers ``1 - alpha / 2`` there (97.5 %), ``1 - alpha`` only far from 0.  Giving the lower
  end ``0.8 alpha`` and the upper ``0.4 alpha`` keeps the miss rate between ``0.8 alpha``
  (near 0) and ``1.2 alpha`` (far, one pair ahead): 94-96 % at 95 %.
* Tukey's value guards every pair, which a lower end must do at a true 0 (all pairs tied) but
  not when one group stands apart: then only the pairs near the gap can push the lower end
  above it.  Step one keeps Tukey's guard where the data cannot tell the groups apart, step
  two drops it once they can.  Step two alone (its selection run on the noise of tied groups)
  breached the 0.03 limit in 7.3 % of ten-group samples of 200 rows with no gap; calibrating
  the upper end on the fitted rates (their pair slacks plugged into the same simulation, a
  parametric bootstrap under the fitted rates) covered as little as 59 % (70-79 % for two
  groups), because fitted rates spread ties apart (``bench/gap_candidates.py``).  A percentile
  bootstrap of the gap cannot reach 0 (issue #38).

The cost is a jump: the lower end goes from 0 straight to a positive value when step one first
leaves 0.  With a handful of counts per group the interval over-covers (97-100 % at small gaps
for ten groups of about six positives, or a TPR of 0.977 on 6-30 positives per group): with no
gap step one then leaves 0 in 1-2 % of samples, not 4 %, because the pair intervals at Tukey's
value can hardly leave 0 (for ten groups, two groups of six positives give a lower end of at
most 0.10, at 6 of 6 against 0 of 6), and a lower end above a true gap of 0.1-0.2 would need
such splits.  Tried on those cells (``bench/gap_candidates.py``, ``bench/RESULTS.md``): Jeffreys
intervals in place of Wilson's (no better there, up to 5.2 % breaches elsewhere); step one
calibrated on the counts' own discreteness (a parametric bootstrap at the pooled rate), or
Tukey's value calibrated so that the pair intervals of such draws leave 0 in 4 % of them:
about 95 % at a gap of 0.05 but still 98-100 % at 0.10-0.20, at 7 to 100 times the cost, so
neither is shipped; one pair's point with no allowance for the 45 pairs breaches in 57 % of
no-gap samples and still covers 97.5-98 % on the confident model's ten groups.  Bonferroni over
the pairs would be wider than Tukey's value (3.26 against 3.16 for K = 10, 45 pairs).

Exact or estimated
------------------
The ends are closed-form given the critical values; step two's value is a quasi-Monte Carlo
quantile (within about 0.02 of the exact point, about 0.2 points of tail probability), fixed
for fixed counts.  Their coverage is approximate (normal approximation behind Wilson's interval
and the critical values), shown by simulation.

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
.. [4] Andrews, D. W. K. and Soares, G. (2010). Inference for parameters defined by moment
   inequalities using generalized moment selection. Econometrica 78(1), 119-157.
.. [5] Dunnett, C. W. (1955). A multiple comparison procedure for comparing several
   treatments with a control. Journal of the American Statistical Association 50(272),
   1096-1121.
.. [6] Brown, L. D., Cai, T. T. and DasGupta, A. (2001). Interval estimation for a binomial
   proportion. Statistical Science 16(2), 101-133 (section 4.1.1, the modified Wilson
   interval).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt
from scipy.special import chdtri, ndtr, ndtri

__all__ = ["gap_interval", "gap_interval_of_families", "modified_wilson_bounds",
           "pairwise_critical_value", "selected_critical_value", "wilson_bounds"]

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


def modified_wilson_bounds(successes: npt.ArrayLike, trials: npt.ArrayLike, z: float
                           ) -> tuple[_FloatArray, _FloatArray]:
    """Wilson's interval with Brown, Cai and DasGupta's Poisson ends near 0 and ``trials``.

    Wilson's lower end at 1 or 2 successes (1-3 for 51-100 trials) and its upper end at 1 or 2
    failures lie too close to the rate: at 5 of 6 its 95 % upper end is 0.970, so a true rate of
    0.977 (5 of 6 in 12 % of samples) is missed far more often than 2.5 %.  There the lower end
    is ``chi2_alpha(2 x) / (2 n)`` and the upper ``1 - chi2_alpha(2 (n - x)) / (2 n)``, with
    ``chi2_alpha(k)`` the ``alpha = 2 Phi(-z)`` quantile of the chi-square law of ``k`` degrees
    of freedom [6]_; elsewhere, and from 101 trials, Wilson's ends (:func:`wilson_bounds`).

    Parameters
    ----------
    successes, trials : array_like of int
        Counts, ``0 <= successes <= trials``.
    z : float
        Critical value (1.96 for a 95 % interval).

    Returns
    -------
    tuple of ndarray
        ``(lower, upper)``, each of the shape of ``trials``; NaN where ``trials`` is 0.

    Examples
    --------
    >>> lo, hi = modified_wilson_bounds([5, 24, 1], [6, 24, 7], 1.959963984540054)
    >>> [round(float(v), 4) for v in lo], [round(float(v), 4) for v in hi]
    ([0.4365, 0.862, 0.0073], [0.9915, 1.0, 0.5131])
    """
    x = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    lower, upper = wilson_bounds(x, n, z)
    near = np.where(n <= 50, 2.0, np.where(n <= 100, 3.0, 0.0))  # counts from a boundary
    alpha = 2.0 * float(ndtr(-z))
    with np.errstate(invalid="ignore", divide="ignore"):
        poisson_lower = chdtri(2.0 * np.maximum(x, 1.0), 1.0 - alpha) / (2.0 * n)
        poisson_upper = 1.0 - chdtri(2.0 * np.maximum(n - x, 1.0), 1.0 - alpha) / (2.0 * n)
    lower = np.where((x >= 1) & (x <= near), poisson_lower, lower)
    upper = np.where((n - x >= 1) & (n - x <= near), poisson_upper, upper)
    return lower, upper


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


# Miss rates of the two ends, as shares of 1 - confidence_level (module docstring, "Why").
LOWER_SHARE, UPPER_SHARE = 0.8, 0.4
# Pairs whose difference lies more than this many standard errors below the gap are left out
# of the step-two critical value (generalized moment selection; module docstring).
SELECTION_SLACK = 2.5
_DRAWS_LOG2 = 12  # 4,096 quasi-random normal draws per critical value


def gap_interval_of_families(successes: Sequence[npt.ArrayLike], trials: Sequence[npt.ArrayLike],
                             confidence_level: float) -> tuple[float, float]:
    """Interval of the largest pairwise difference of group proportions within any family.

    One family is one rate's gap (``tpr_gap``); two families are the equalized-odds difference
    ``max(tpr_gap, fpr_gap)``.  Every group of a family takes part (a group without trials has
    the rate 0 with the interval ``[0, 0]``).  See the module docstring for the construction.

    Parameters
    ----------
    successes, trials : sequence of array_like of int
        Per family, the per-group counts (``K_f >= 2`` groups each).
    confidence_level : float
        In (0, 1); the lower end misses the gap in about ``0.8 (1 - confidence_level)`` of
        samples, the upper end in at most ``0.4 (1 - confidence_level)``.

    Returns
    -------
    tuple of float
        ``(lower, upper)``.

    Examples
    --------
    Three groups of 100 with 50, 52 and 55 successes: no pair stands out, the lower end is 0.

    >>> lo, hi = gap_interval_of_families([[50, 52, 55]], [[100, 100, 100]], 0.95)
    >>> float(lo), round(float(hi), 4)
    (0.0, 0.1905)
    """
    families = [(np.asarray(x, dtype=np.float64), np.asarray(n, dtype=np.float64))
                for x, n in zip(successes, trials, strict=True)]
    alpha = 1.0 - confidence_level
    z_upper = float(ndtri(1.0 - UPPER_SHARE * alpha))
    # step one: the lower end is 0 unless Tukey's simultaneous pair intervals (Sidak over the
    # families) put some pair away from 0
    level = (1.0 - LOWER_SHARE * alpha) ** (1.0 / len(families))
    tukey = [gap_interval(x, n, pairwise_critical_value(x.shape[-1], level), z_upper)
             for x, n in families]
    upper = max(float(hi) for _, hi in tukey)
    if all(float(lo) <= 0.0 for lo, _ in tukey):
        return 0.0, upper
    # step two: the pairs that could hold the gap, at their own joint critical value
    z_lower = selected_critical_value([x for x, _ in families], [n for _, n in families],
                                      LOWER_SHARE * alpha)
    lower = max(float(gap_interval(x, n, z_lower, z_upper)[0]) for x, n in families)
    return lower, upper


def selected_critical_value(successes: Sequence[npt.ArrayLike], trials: Sequence[npt.ArrayLike],
                            tail: float, slack: float = SELECTION_SLACK) -> float:
    """The ``1 - tail`` point of the largest standardised difference over the pairs near the gap.

    Each group's estimate is normal with the Agresti-Coull variance ``q (1 - q) / (n + z**2)``,
    ``q = (x + z**2 / 2) / (n + z**2)``, ``z = 1.96`` (it cannot vanish at 0 or ``n``
    successes); ordered pairs ``(i, j)`` of one family are kept when their difference lies at
    most ``slack`` standard errors below the largest difference of any family.  The point of
    ``max (e_i - e_j) / se_ij`` over the kept pairs, ``e`` the groups' independent normal
    errors, comes from 4,096 scrambled Sobol draws of a fixed seed: the same counts give the
    same value.

    Parameters
    ----------
    successes, trials : sequence of array_like of int
        Per family, the per-group counts.
    tail : float
        The upper tail probability, in (0, 1).
    slack : float
        The selection threshold in standard errors.

    Returns
    -------
    float
        The critical value (the one-sided normal point when one pair is kept).

    Examples
    --------
    One pair far ahead of the rest: its own one-sided normal point, 1.645 at ``tail = 0.05``;
    three groups with no gap: Tukey's value for three, 2.344.

    >>> round(selected_critical_value([[90, 10, 50]], [[100, 100, 100]], 0.05), 2)
    1.64
    >>> round(selected_critical_value([[50, 50, 50]], [[100, 100, 100]], 0.05), 2)
    2.35
    """
    z2 = 1.959963984540054 ** 2
    rates, errors, family = [], [], []
    for f, (x, n) in enumerate(zip(successes, trials, strict=True)):
        x, n = np.asarray(x, dtype=np.float64), np.asarray(n, dtype=np.float64)
        q = (x + z2 / 2.0) / (n + z2)
        errors.append(np.where(n > 0, np.sqrt(q * (1.0 - q) / (n + z2)), 0.0))
        rates.append(np.where(n > 0, x / np.where(n > 0, n, 1.0), 0.0))
        family.append(np.full(x.size, f))
    p, se, fam = np.concatenate(rates), np.concatenate(errors), np.concatenate(family)
    i, j = np.nonzero((fam[:, None] == fam[None, :]) & ~np.eye(p.size, dtype=bool))
    d, s = p[i] - p[j], np.hypot(se[i], se[j])
    keep = (s > 0) & (d.max() - d <= slack * s)
    i, j, s = i[keep], j[keep], s[keep]
    if i.size <= 1:  # one pair: its standardised difference is standard normal
        return float(ndtri(1.0 - tail))
    used, where = np.unique(np.concatenate([i, j]), return_inverse=True)
    e = _normal_draws(p.size)[:, used] * se[used]  # only the kept pairs' groups
    a, b = where[:i.size], where[i.size:]
    largest = np.full(e.shape[0], -np.inf)
    for start in range(0, a.size, 256):  # bounded memory for many groups
        part = slice(start, start + 256)
        largest = np.maximum(largest, ((e[:, a[part]] - e[:, b[part]]) / s[part]).max(axis=1))
    return float(np.quantile(largest, 1.0 - tail))


@lru_cache(maxsize=64)
def _normal_draws(dimension: int) -> _FloatArray:
    """Standard normal quasi-random draws, ``(4096, dimension)``, from a scrambled Sobol
    sequence of a fixed seed (a smoother quantile than as many pseudo-random draws, and the
    same on every call)."""
    from scipy.stats import qmc

    points = qmc.Sobol(dimension, scramble=True, seed=20261205).random_base2(_DRAWS_LOG2)
    draws = ndtri(points)
    draws.setflags(write=False)
    return draws
