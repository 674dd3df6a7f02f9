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
**Upper end**: the farthest end of any ordered pair's Newcombe hybrid score interval (his
method 10 [1]_: the two groups' Wilson score intervals [2]_ combined as
``d + sqrt((u_i - p_i)**2 + (p_j - l_j)**2)``, :func:`gap_interval`) at the one-sided point of
``0.4 alpha`` for two groups (z = 2.054 at 95 %) and ``0.2 alpha`` for three or more
(z = 2.326), ``alpha = 1 - confidence_level``.  The true gap is the difference of one
(unknown, fixed) pair, and the upper end lies below it only if that pair's interval does: at
most that share of samples, less when several pairs share the gap.

**Lower end**: 0 when a permutation test of no gap at level ``0.8 alpha`` (its law that of
the tables with the observed totals) does not reject it, else the smallest gap ``t`` whose
hypothesis ``gap <= t`` a parametric bootstrap test does not reject at ``0.8 alpha`` for two
groups and ``alpha`` for three or more, its law drawn at the rates fitted under the hypothesis
(:func:`~modelgate.fairness.gap_lower_end.lower_end`; the tests and why they are built so are
in :mod:`modelgate.fairness.gap_lower_end`).

The equalized-odds difference ``max(tpr_gap, fpr_gap)`` is the largest difference over the
pairs of two independent families (TPR counts and FPR counts): its statistic is the largest
over both, its hypothesis puts both families in windows of width ``t``, its upper end is the
farther of the two families' ends.  ``tpr_fpr_gap_sum`` adds the two families' ends, each at
level ``1 - alpha / 2`` (Bonferroni).  Every end depends on the data only through the
``(groups, 4)`` count table, so merged partition counts give the same interval as the rows;
the draws come from fixed uniforms (one seed), so the same counts give the same interval.

Why this construction
---------------------
Chosen by simulation (``bench/bench_fairness_coverage.py`` and ``bench/gap_candidates.py``;
``bench/RESULTS.md``, "Fairness gap intervals at the boundary").  The gap is a maximum of
``K (K - 1) / 2`` differences and cannot be negative; a percentile bootstrap of it cannot
reach 0, and with no gap its interval lay wholly above the default limit 0.03 in 26.5 % of
census samples of n = 228 (issue #38).

* Near a gap of 0 only the lower end can miss: a central interval covers ``1 - alpha / 2``
  there.  The test of no gap, which decides whether a fair model can be called breached, keeps
  ``0.8 alpha``.  With a gap, the ends' shares add to ``1.2 alpha``, so the miss rate stays
  between ``0.8 alpha`` (near 0) and ``1.2 alpha`` (far from 0, one pair ahead, both ends at
  their shares).
* How the ``1.2 alpha`` is split depends on the number of groups.  With two groups the gap is
  one pair's distance and the upper end misses about its share: ``0.8 alpha`` and
  ``0.4 alpha``.  With three or more, the upper end is the farthest of several pairs' ends
  above an observed range that is biased upwards, and it almost never misses (0-0.2 % of
  samples at ten groups one group apart, ``bench/RESULTS.md``): the lower end then covered
  97-99 % on its own.  ``alpha`` and ``0.2 alpha`` there put 12 more of the 192 small-gap cells
  of ``bench/bench_fairness_coverage.py`` in 93-97 % and none below (the same split for two
  groups put two below, at 92.9 %).
* How often a lower end clears the gap depends on how many pairs sit at it (all ``K (K-1)/2``
  pairs tie with no gap, ``K - 1`` when one group stands apart, ``K**2 / 4`` when the groups
  split in two) and, with a handful of counts per group, on the counts' discreteness.  A
  critical value set for the worst case (Tukey's simultaneous value, the construction before
  this one) covered 97-100 % at small gaps with ten groups of about six positives; a normal
  critical value over the pairs near the gap could not tell those cases apart at such counts.
  The bootstrap at the fitted rates takes both from the data: the pairs the fit puts at the
  gap, and the exact binomial law of the counts.
* The test's fit decides where the remaining error goes: see
  :mod:`modelgate.fairness.gap_lower_end`.

Exact or estimated
------------------
The upper end is closed-form.  The lower end is a Monte Carlo test inversion from fixed
uniforms (the same counts give the same end), its coverage approximate and shown by simulation
(``bench/RESULTS.md``).

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
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from scipy.special import ndtri

from .gap_lower_end import lower_end
from .score_intervals import group_rates, wilson_reach

__all__ = ["MANY_SHARES", "NULL_SHARE", "PAIR_SHARES", "end_shares", "gap_interval",
           "gap_interval_of_families"]

_FloatArray = npt.NDArray[np.float64]


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
        Critical value of the pair intervals behind the lower end (the farthest pair lower
        end, clipped at 0; the shipped lower end is a test inversion instead,
        :func:`~modelgate.fairness.gap_lower_end.lower_end`).
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
    p = group_rates(x, n)
    d = p[..., :, None] - p[..., None, :]  # ordered pairs (i, j): d = p_i - p_j
    off = ~np.eye(x.shape[-1], dtype=bool)
    below, above = wilson_reach(x, n, p, z_lower)  # Newcombe's lower end of each d
    lo = d - np.sqrt(below[..., :, None] ** 2 + above[..., None, :] ** 2)
    below, above = wilson_reach(x, n, p, z_upper)  # and its upper end
    hi = d + np.sqrt(above[..., :, None] ** 2 + below[..., None, :] ** 2)
    return (np.maximum(lo[..., off].max(axis=-1), 0.0),
            np.minimum(hi[..., off].max(axis=-1), 1.0))


# Miss rates of the ends, as shares of 1 - confidence_level (module docstring, "Why"): the
# lower end's with no gap, and (lower, upper) with a gap for two groups and for three or more.
NULL_SHARE = 0.8
PAIR_SHARES, MANY_SHARES = (0.8, 0.4), (1.0, 0.2)


def end_shares(groups: int) -> tuple[float, float]:
    """The lower and upper ends' miss shares with a gap, for a gap over ``groups`` groups
    (module docstring, "Why").

    >>> end_shares(2), end_shares(3)
    ((0.8, 0.4), (1.0, 0.2))
    """
    return PAIR_SHARES if groups <= 2 else MANY_SHARES


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
        In (0, 1); the lower end leaves 0 with no gap in about ``0.8 (1 - confidence_level)``
        of samples and misses a gap in about :func:`end_shares` ``[0]`` of it, the upper end
        in at most ``end_shares[1]`` of it (the fewest groups of a family).

    Returns
    -------
    tuple of float
        ``(lower, upper)``.

    Examples
    --------
    Three groups of 100 with 50, 52 and 55 successes: no pair stands out, the lower end is 0.

    >>> lo, hi = gap_interval_of_families([[50, 52, 55]], [[100, 100, 100]], 0.95)
    >>> float(lo), round(float(hi), 4)
    (0.0, 0.208)
    """
    families = [(np.asarray(x, dtype=np.float64), np.asarray(n, dtype=np.float64))
                for x, n in zip(successes, trials, strict=True)]
    alpha = 1.0 - confidence_level
    lower_share, upper_share = end_shares(min(x.size for x, _ in families))
    z_upper = float(ndtri(1.0 - upper_share * alpha))
    upper = max(float(gap_interval(x, n, z_upper, z_upper)[1]) for x, n in families)
    return lower_end(families, lower_share * alpha, null_tail=NULL_SHARE * alpha), upper
