"""The lower end of a fairness gap's interval: a test inversion from group counts.

The lower end is the smallest gap ``t`` whose hypothesis ``gap <= t`` a test at level ``tail``
(``0.8 alpha`` for two groups, ``alpha`` for more, of
:func:`~modelgate.fairness.gap_intervals.gap_interval_of_families`; the gap 0 at ``0.8 alpha``)
does not reject (:func:`lower_end`).  Each hypothesis is tested by a parametric bootstrap at
the rates fitted under it (:func:`gap_p_value`):

* the statistic is the largest lower end of any ordered pair's Newcombe interval at the
  one-sided point of ``tail`` (1.751 at 4 %), not clipped at 0 (:func:`largest_pair_lower_end`);
* its law under ``gap <= t`` comes from :data:`DRAWS` binomial draws of every group at the
  rates most likely under the hypothesis: each group's rate clipped into a window
  ``[w, w + t]`` at the maximum-likelihood ``w``, then every group within 2 standard errors of
  an edge moved onto the nearer edge, with ``w`` fitted again with those groups held there
  (:func:`window_rates`);
* at ``t = 0`` (equal rates), for a family of three groups or more, its law is instead that
  of the tables with the family's observed total, the successes placed among the trials at
  random (:func:`~modelgate.fairness.count_draws.equal_rates_draws`): a permutation test,
  whose law does not depend on the unknown common rate (up to :data:`EXACT_NULL_UP_TO` of the
  family's rarer outcome; above it, and for two groups, binomial draws at the pooled rate);
* ``t`` is rejected when the mid-p value is at most ``tail``; the lower end is 0 when ``t = 0``
  is not rejected, else the width where rejection stops (bisection to 2**-10, erring low).

Several families (the TPR and FPR counts of the equalized-odds difference) share one
statistic, the largest over both, and one hypothesis: every family in a window of width ``t``.

Why the fit
-----------
Chosen by simulation (``bench/bench_fairness_coverage.py``, ``bench/gap_candidates.py``;
``bench/RESULTS.md``, "Fairness gap intervals at the boundary").

* Fitted rates spread a tie apart: ten groups with one apart fit as one group at each edge
  and the rest in between, so the bootstrap saw fewer pairs at the gap than there are, and
  the lower end missed a gap of 0.2 in 9.5 % of samples at n = 2,000 (``bench/gap_candidates.py``,
  ``--slack 0``).  Moving groups within 2 standard errors of an edge onto it (generalized
  moment selection, Andrews and Soares 2010 [1]_; their rule ``sqrt(log n)`` is 2.0 at 55
  trials) treats what the data cannot tell from a tie as one; 1 standard error still missed
  7.2 % there.  The cost is the other way: where the data cannot tell one group apart from
  a split into two halves, the interval guards against the split, and covers up to about
  98.5 % when only one group stands apart (``bench/gap_floor.py``: in the normal model no
  test on the range valid at every configuration, at 4 %, does better than 97.7 % at ten
  groups a standard error apart).
* The window's position is fitted again with the groups on the edges held there, as the
  draws will have them.  Fitted with each group at its own rate, the window sits where the
  most extreme count puts it: nine groups of about 60 positives at a TPR of 0.977 show 57-60
  of 60, the groups at 60 of 60 pull the window's top to 1, its bottom then lies above a
  group lowered by 0.2, and that gap was covered in 92.3 % of samples.  Held on the edge, the
  nine groups set the top at their pooled rate.
* The mid-p value counts half the draws that tie with the observed statistic: with a handful
  of counts per group, ties are common and counting them whole holds the test well below its
  level.
* From three groups on, no gap is tested by permutation, not at the pooled rate.  Near a
  rate of 1 a table whose statistic is large has a group with several failures, which lowers
  the pooled rate and widens the binomial law drawn at it: at the pooled rate the test
  rejected equal rates well below its level of 4 % (confident model, n = 200, three to ten
  groups: TPR 0.8-2.0 %, PPV 1.8-2.5 %), and small gaps were covered in up to 98.8 %; by
  permutation TPR 1.4-2.6 %, PPV 2.8-3.1 %, and seven more of the 192 small-gap cells are
  covered in 93-97 %.  Few failures in all still hold the permutation test below its level
  (a table with one or two failures in all cannot reject).  With two groups the tables with
  one total are as few as its failures, and the permutation test rejected less than the test
  at the pooled rate (Fisher's exact test against Barnard's): TPR 0.3 % against 0.8 %, PPV
  2.0 % against 3.6 % (``bench/RESULTS.md``, "No gap tested by permutation").

Exact or estimated
------------------
A Monte Carlo test inversion: its p-values come from 2,048 draws (an error of about 0.4 points
at a level of 4 %), its bisection stops within 2**-10 below the crossing, and its coverage is
approximate (the fitted rates stand in for the true ones), shown by simulation.  The draws come
from fixed uniforms (one seed), so the same counts give the same lower end.  A lower end costs
one p-value when it is 0 and about a dozen otherwise: a few to a hundred and fifty
milliseconds for 2 to 10 groups.

References
----------
.. [1] Andrews, D. W. K. and Soares, G. (2010). Inference for parameters defined by moment
   inequalities using generalized moment selection. Econometrica 78(1), 119-157.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from scipy.special import ndtri

from .count_draws import binomial_draws, equal_rates_draws, fixed_uniforms
from .score_intervals import group_rates, wilson_reach

__all__ = ["DRAWS", "EDGE_SLACK", "EXACT_NULL_UP_TO", "gap_p_value", "largest_pair_lower_end",
           "lower_end", "window_rates"]

_FloatArray = npt.NDArray[np.float64]


# A group whose fitted rate lies within this many standard errors of an edge of the window is
# put on that edge (moment selection; module docstring).
EDGE_SLACK = 2.0
DRAWS = 2048  # count tables drawn per tested width
# The test of no gap draws the tables with the family's observed total (a permutation test,
# exact whatever the common rate) when the family's rarer outcome (successes or failures) is
# at most this many; above it, binomial tables at the pooled rate, whose law then differs
# little, while the exact draws' cost grows with the counts' spread (1.4 s at ten groups of
# 100,000 trials, against 11 ms at a thousand failures).
EXACT_NULL_UP_TO = 1000
_TOLERANCE = 2.0 ** -10  # the lower end's bisection, on the rate scale (it errs low by less)
_GRID = 401  # window positions tried per fit, then as many again around the best


def lower_end(families: Sequence[tuple[npt.ArrayLike, npt.ArrayLike]], tail: float,
              null_tail: float | None = None) -> float:
    """The smallest gap ``t`` whose hypothesis ``gap <= t`` the data do not reject at ``tail``.

    Each hypothesis is tested by :func:`gap_p_value`; the lower end is 0 when ``t = 0`` is
    not rejected at ``null_tail``, else the width where rejection at ``tail`` stops, by
    bisection to 2**-10 (the largest width found rejected: the end errs low).

    Parameters
    ----------
    families : sequence of (successes, trials)
        Per family, the per-group counts (``K_f >= 2`` groups each).
    tail : float
        The test's level, in (0, 1): the lower end lies above a gap above 0 in about this
        share of samples.
    null_tail : float, optional
        The level of the test of no gap (``t = 0``, default ``tail``): the lower end leaves 0
        with no gap in about this share of samples.  Each hypothesis has its own level, so
        the lower end misses a gap ``t`` in at most the level of ``t``'s test.

    Returns
    -------
    float
        The lower end, in ``[0, largest observed difference]``.

    Examples
    --------
    Two groups of 100 with 80 and 40 successes: close to the lower end of Newcombe's interval
    at the one-sided 96 % point (0.282), as it should be for one pair.

    >>> round(lower_end([([80, 40], [100, 100])], 0.04), 3)
    0.287
    """
    counts, z, observed = _observed(families, tail)
    equal_rates = _null_draws(counts, 0.0)  # the two tests of no gap share one law's draws
    if null_tail is not None and null_tail != tail:
        z_null = float(ndtri(1.0 - null_tail))
        observed_null = max(float(largest_pair_lower_end(x, n, z_null)) for x, n in counts)
        if _law_mid_p(equal_rates, z_null, observed_null) > null_tail:
            return 0.0
    if _law_mid_p(equal_rates, z, observed) > tail:
        return 0.0

    def rejected(width: float) -> bool:
        return _mid_p(counts, width, z, observed) <= tail

    low, high = 0.0, max(float(np.ptp(group_rates(x, n))) for x, n in counts)
    if rejected(high):
        return high
    while high - low > _TOLERANCE:
        middle = (low + high) / 2.0
        low, high = (middle, high) if rejected(middle) else (low, middle)
    return low


def gap_p_value(families: Sequence[tuple[npt.ArrayLike, npt.ArrayLike]], width: float,
                tail: float) -> float:
    """Mid-p value of the hypothesis that every family's gap is at most ``width``.

    The statistic is the largest lower end of Newcombe's interval (at the one-sided point of
    ``tail``) over the ordered pairs of any family, not clipped at 0.  Its law under the
    hypothesis comes from :data:`DRAWS` binomial draws of every group at the rates of
    :func:`window_rates`, or at ``width`` 0 from as many tables with each family's total
    (module docstring); fixed uniforms through each group's quantile function, so the same
    counts give the same value, and the same uniforms serve every ``width``.

    Parameters
    ----------
    families : sequence of (successes, trials)
        Per family, the per-group counts.
    width : float
        The gap tested, in ``[0, 1]``.
    tail : float
        Sets the statistic's critical value, ``Phi^-1(1 - tail)``.

    Returns
    -------
    float
        ``P(T > t) + P(T = t) / 2`` over the draws, ``t`` the observed statistic.

    Examples
    --------
    >>> round(gap_p_value([([80, 40], [100, 100])], 0.0, 0.04), 4)
    0.0
    >>> round(gap_p_value([([80, 40], [100, 100])], 0.4, 0.04), 2)
    0.5
    """
    counts, z, observed = _observed(families, tail)
    return _mid_p(counts, width, z, observed)


def _observed(families: Sequence[tuple[npt.ArrayLike, npt.ArrayLike]], tail: float
              ) -> tuple[list[tuple[_FloatArray, _FloatArray]], float, float]:
    """The families' counts as float arrays, the statistic's critical value
    ``Phi^-1(1 - tail)`` and its observed value (the largest over the families)."""
    counts = [(np.asarray(x, dtype=np.float64), np.asarray(n, dtype=np.float64)) for x, n in families]
    z = float(ndtri(1.0 - tail))
    return counts, z, max(float(largest_pair_lower_end(x, n, z)) for x, n in counts)


def _mid_p(counts: Sequence[tuple[_FloatArray, _FloatArray]], width: float, z: float,
           observed: float) -> float:
    """:func:`gap_p_value` given the statistic's critical value and observed value."""
    return _law_mid_p(_null_draws(counts, width), z, observed)


def _null_draws(counts: Sequence[tuple[_FloatArray, _FloatArray]], width: float
                ) -> list[tuple[_FloatArray, _FloatArray]]:
    """Each family's :data:`DRAWS` count tables under ``gap <= width``, with its trials: at
    ``width`` 0 the tables with the family's total where :func:`_by_permutation`, otherwise
    binomial counts at the rates of :func:`window_rates`."""
    u = fixed_uniforms(sum(x.size for x, _ in counts), DRAWS)
    out, offset = [], 0
    for x, n in counts:
        part = u[:, offset:offset + x.size]
        if width == 0.0 and _by_permutation(x, n):
            out.append((equal_rates_draws(part, x, n), n))
        else:
            out.append((binomial_draws(part, n, window_rates(x, n, width)), n))
        offset += x.size
    return out


def _by_permutation(successes: _FloatArray, trials: _FloatArray) -> bool:
    """Whether a family's test of no gap draws the tables with its total: from three groups on
    (two groups' tables with one total are too few, module docstring), every group with trials
    (without, its rate is 0 by convention, and so is every rate under no gap), and at most
    :data:`EXACT_NULL_UP_TO` of the rarer outcome."""
    rarer = min(float(successes.sum()), float((trials - successes).sum()))
    return successes.size >= 3 and bool(np.all(trials > 0)) and rarer <= EXACT_NULL_UP_TO


def _law_mid_p(null_draws: Sequence[tuple[_FloatArray, _FloatArray]], z: float,
               observed: float) -> float:
    """The mid-p value of the observed statistic among the draws' statistics (the largest
    over the families)."""
    null = np.full(DRAWS, -np.inf)
    for draws, n in null_draws:
        null = np.maximum(null, largest_pair_lower_end(draws, n, z))
    tie = np.abs(null - observed) <= 1e-12
    return float(((null > observed) & ~tie).mean() + 0.5 * tie.mean())


def largest_pair_lower_end(successes: npt.ArrayLike, trials: npt.ArrayLike, z: float
                           ) -> _FloatArray:
    """The largest lower end of Newcombe's interval over the ordered pairs of the last axis.

    ``max_(i != j) p_i - p_j - sqrt((p_i - l_i)**2 + (u_j - p_j)**2)`` with each group's
    Wilson interval ``[l, u]`` at ``z``, not clipped at 0 (a group without trials: rate 0,
    interval ``[0, 0]``).  Pairs are taken in blocks of rows, so memory stays bounded for
    many groups.

    Parameters
    ----------
    successes : array_like, shape (..., K)
    trials : array_like, shape (K,) or (..., K)
    z : float

    Returns
    -------
    ndarray of shape (...)

    Examples
    --------
    >>> round(float(largest_pair_lower_end([8, 2], [10, 10], 1.750686)), 4)
    0.209
    """
    x = np.asarray(successes, dtype=np.float64)
    n = np.broadcast_to(np.asarray(trials, dtype=np.float64), x.shape)
    p = group_rates(x, n)
    below, above = wilson_reach(x, n, p, z)
    k = x.shape[-1]
    flat_p, flat_b2, flat_a2 = p.reshape(-1, k), (below**2).reshape(-1, k), (above**2).reshape(-1, k)
    out = np.empty(flat_p.shape[0])
    rows = max(1, 2 ** 20 // (k * k))
    diagonal = np.arange(k)
    for start in range(0, flat_p.shape[0], rows):
        part = slice(start, start + rows)
        spread = flat_b2[part, :, None] + flat_a2[part, None, :]
        np.sqrt(spread, out=spread)
        np.subtract(flat_p[part, :, None] - flat_p[part, None, :], spread, out=spread)
        spread[:, diagonal, diagonal] = -np.inf
        out[part] = spread.reshape(spread.shape[0], -1).max(axis=1)
    return out.reshape(x.shape[:-1])


def window_rates(successes: npt.ArrayLike, trials: npt.ArrayLike, width: float,
                 edge_slack: float | None = None) -> _FloatArray:
    """The groups' rates most likely under ``max - min <= width``, near-edge groups on the edge.

    Every rate lies in a window ``[w, w + width]``: each group's own rate clipped into it,
    with ``w`` the maximum-likelihood position (binomial likelihood of all groups; a grid of
    401 positions, then 401 more between the best one's neighbours).  A group whose clipped
    rate lies within ``edge_slack`` Agresti-Coull standard errors of an edge is moved onto
    the nearer edge: the data cannot tell it from one there, and a group on an edge adds pairs
    at the gap, which is where a test of the gap errs (module docstring).  Then ``w``
    is fitted again with those groups held on their edges, and the groups near an edge of
    that window are the ones put on it.  A group without trials keeps the rate 0, so the
    window then starts at 0.

    Parameters
    ----------
    successes, trials : array_like of int, shape (K,)
    width : float
        In ``[0, 1]``.
    edge_slack : float, optional
        In standard errors (default :data:`EDGE_SLACK`); 0 keeps the fitted rates.

    Returns
    -------
    ndarray of shape (K,)

    Examples
    --------
    Rates 0.8, 0.4 and 0.6 in a window of 0.1: ``w`` solves
    ``80 / (w + 0.1) - 20 / (0.9 - w) + 40 / w - 60 / (1 - w) = 0``, about 0.557.

    >>> [round(float(r), 3) for r in window_rates([80, 40, 60], [100, 100, 100], 0.1, 0.0)]
    [0.657, 0.557, 0.6]
    """
    x = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    p = group_rates(x, n)
    slack = EDGE_SLACK if edge_slack is None else edge_slack
    top = 0.0 if np.any(n <= 0) else max(0.0, 1.0 - width)
    z2 = 1.959963984540054 ** 2  # Agresti-Coull standard errors: one per group, every fit
    centre = (x + z2 / 2.0) / (n + z2)
    reach = slack * np.sqrt(centre * (1.0 - centre) / (n + z2))
    free = np.zeros(x.shape, dtype=bool)
    low = _fitted_position(x, n, p, width, top, free, free)
    on_top, on_bottom = _near_edges(np.clip(p, low, low + width), low, width, reach)
    low = _fitted_position(x, n, p, width, top, on_top, on_bottom)
    clipped = np.clip(p, low, low + width)
    on_top, on_bottom = _near_edges(clipped, low, width, reach)
    rates = np.where(on_top, low + width, np.where(on_bottom, low, clipped))
    return np.where(n > 0, np.clip(rates, 0.0, 1.0), 0.0)


def _fitted_position(x: _FloatArray, n: _FloatArray, p: _FloatArray, width: float, top: float,
                     on_top: npt.NDArray[np.bool_], on_bottom: npt.NDArray[np.bool_]) -> float:
    """The maximum-likelihood window start in ``[0, top]``: a grid of 401 positions, then 401
    more between the best one's neighbours."""
    low = _best_position(x, n, p, width, np.linspace(0.0, top, _GRID), on_top, on_bottom)
    step = top / (_GRID - 1)
    return _best_position(x, n, p, width,
                          np.linspace(max(0.0, low - step), min(top, low + step), _GRID),
                          on_top, on_bottom)


def _near_edges(rates: _FloatArray, low: float, width: float, reach: _FloatArray
                ) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Which groups' ``rates`` lie within their ``reach`` of the window's top edge, and which
    of its bottom edge (the nearer one)."""
    to_top, to_bottom = low + width - rates, rates - low
    return ((to_top <= to_bottom) & (to_top <= reach),
            (to_bottom < to_top) & (to_bottom <= reach))


def _best_position(x: _FloatArray, n: _FloatArray, p: _FloatArray, width: float,
                   positions: _FloatArray, on_top: npt.NDArray[np.bool_],
                   on_bottom: npt.NDArray[np.bool_]) -> float:
    """The window start of ``positions`` with the largest binomial log-likelihood, the groups
    of ``on_top`` and ``on_bottom`` held on those edges and the rest clipped into the window."""
    start = positions[:, None]
    q = np.where(on_top[None, :], start + width,
                 np.where(on_bottom[None, :], start, np.clip(p[None, :], start, start + width)))
    q = np.clip(q, 1e-12, 1.0 - 1e-12)
    loglik = (x * np.log(q) + (n - x) * np.log1p(-q)).sum(axis=1)
    return float(positions[int(np.argmax(loglik))])
