"""The size-aware null of Jensen-Shannon divergence: how large JS gets when nothing changed.

Between a reference of ``n`` counts over ``k`` categories (or bins) and a current sample of
``m``, sampling noise alone makes JS about ``(k - 1) (1/n + 1/m) / (8 ln 2)`` on average (its
second-order expansion is ``1/8`` of Pearson's two-sample chi-square statistic, in bits), with
a right tail that, for a few rows spread over a few categories, is heavier than the chi-square
law's. A threshold proportional to that mean (the drift rule's ``relative`` times a baseline
measured between two halves of the reference) alarms on unshifted data in 28-47 % of intervals
of 2-100 rows (``bench/RESULTS.md``). :func:`js_null_quantile` gives the threshold a floor that
follows the null itself: a high quantile of JS between two independent samples drawn from the
reference's own proportions, the reference's ``n`` and the current ``m``, by a seeded
parametric bootstrap (deterministic given the counts, ``m`` and the seed).

Both sides are drawn, not only the current one, because the live check compares two samples:
a current sample against the reference's fixed proportions leaves the reference's own noise out
and sets the threshold too low (the same reason as the split null of attribution drift in
:mod:`.attribution`). The draws are exact multinomials, made one category at a time by
conditional binomials across all replicates at once (``numpy``'s ``Generator.multinomial``
with ``size=draws`` ran 2-12x slower here, from 1,000 categories down to 5), so the cost is
``k`` vectorised steps of ``draws`` values: about 1 ms per category at 1,000 draws on the
shared 2-core machine of ``bench/RESULTS.md``.

References
----------
.. [1] Lin (1991). Divergence measures based on the Shannon entropy. IEEE Trans. Inf. Theory
   37(1), 145-151.
.. [2] Efron, Tibshirani (1993). An Introduction to the Bootstrap, ch. 6 (the parametric
   bootstrap).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["DEFAULT_NULL_DRAWS", "DEFAULT_NULL_LEVEL", "js_null_draws", "js_null_quantile"]

#: Quantile of the null the drift rule's threshold is at least (1 % false alarms per feature).
DEFAULT_NULL_LEVEL = 0.99
#: Replicates of the null: the 0.99 quantile is then the 990th of 1,000 (its own spread is
#: a few percent of its value; the draws are seeded, so a verdict does not change between runs).
DEFAULT_NULL_DRAWS = 1000


def _check(counts: ArrayLike, m: int, draws: int) -> NDArray[np.int64]:
    arr = np.asarray(counts)
    if arr.ndim != 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.number) \
            or not np.isfinite(arr).all() or bool(np.any(arr < 0)) or np.any(arr != np.round(arr)) \
            or not arr.sum() > 0:
        raise ValueError("reference_counts must be a 1-D vector of whole, non-negative counts with "
                         f"a positive sum, got {arr!r}")
    if isinstance(m, bool) or not isinstance(m, int | np.integer) or m < 1:
        raise ValueError(f"m (the current sample's size) must be an integer >= 1, got {m!r}")
    if isinstance(draws, bool) or not isinstance(draws, int | np.integer) or draws < 1:
        raise ValueError(f"draws must be an integer >= 1, got {draws!r}")
    return arr.astype(np.int64)


def js_null_draws(reference_counts: ArrayLike, m: int, *, draws: int = DEFAULT_NULL_DRAWS,
                  seed: int = 0) -> NDArray[np.float64]:
    """Base-2 JS between ``draws`` pairs of samples from the reference's proportions.

    Each pair is a multinomial of the reference's total over its proportions and an
    independent multinomial of ``m`` over the same proportions (no change between them).

    Parameters
    ----------
    reference_counts : array_like of int, 1-D
        Reference count per category (or bin); categories of count 0 are never drawn.
    m : int
        Size of the current sample.
    draws : int, default :data:`DEFAULT_NULL_DRAWS`
    seed : int, default 0

    Returns
    -------
    ndarray of float64, shape (draws,)
        Values in [0, 1].

    Raises
    ------
    ValueError
        On counts that are not whole and non-negative with a positive sum, or ``m``/``draws``
        below 1.

    Examples
    --------
    >>> js_null_draws([10, 0], 5, draws=3).tolist()  # one category: never any divergence
    [0.0, 0.0, 0.0]
    """
    counts = _check(reference_counts, m, draws)
    n = int(counts.sum())
    shares = np.sort(counts[counts > 0])[::-1] / n  # largest first: the smallest rest is last
    rng = np.random.default_rng(seed)
    left_ref = np.full(draws, n, dtype=np.int64)
    left_cur = np.full(draws, m, dtype=np.int64)
    rest, total = 1.0, np.zeros(draws)
    for i, share in enumerate(shares):
        # the multinomial one category at a time: its count is binomial in what is left
        cond = 1.0 if i == shares.size - 1 else min(1.0, share / rest)
        ref = rng.binomial(left_ref, cond)
        cur = rng.binomial(left_cur, cond)
        left_ref -= ref
        left_cur -= cur
        rest -= share
        total += _js_terms(ref / n, cur / m)
    return np.maximum(total / (2.0 * math.log(2.0)), 0.0)


def _js_terms(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    """``a ln(a / mid) + b ln(b / mid)``, ``mid = (a + b) / 2``, with ``0 ln 0 = 0``."""
    mid = (a + b) / 2.0
    safe = np.where(mid > 0, mid, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ta = np.where(a > 0, a * np.log(np.where(a > 0, a, 1.0) / safe), 0.0)
        tb = np.where(b > 0, b * np.log(np.where(b > 0, b, 1.0) / safe), 0.0)
    return ta + tb


def js_null_quantile(reference_counts: ArrayLike, m: int, *, level: float = DEFAULT_NULL_LEVEL,
                     draws: int = DEFAULT_NULL_DRAWS, seed: int = 0) -> float:
    """The ``level`` quantile of JS under no change, between the reference and ``m`` rows.

    Parameters
    ----------
    reference_counts : array_like of int, 1-D
        Reference count per category (or bin).
    m : int
        Size of the current sample.
    level : float, default :data:`DEFAULT_NULL_LEVEL`
        In (0, 1).
    draws : int, default :data:`DEFAULT_NULL_DRAWS`
    seed : int, default 0

    Returns
    -------
    float
        The quantile (numpy's ``"higher"`` method: an observed null value, never an
        interpolation below it), base 2.

    Raises
    ------
    ValueError
        As :func:`js_null_draws`, or on ``level`` outside (0, 1).

    Examples
    --------
    >>> q50 = js_null_quantile([400, 250, 150, 120, 80], 50)
    >>> q500 = js_null_quantile([400, 250, 150, 120, 80], 500)
    >>> bool(0.03 < q50 < 0.08), bool(q500 < q50 / 5)
    (True, True)
    """
    if not (isinstance(level, int | float) and 0.0 < level < 1.0):
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    counts = _check(reference_counts, m, draws)
    return _quantile(tuple(counts.tolist()), int(m), float(level), int(draws), int(seed))


@lru_cache(maxsize=1024)
def _quantile(counts: tuple[int, ...], m: int, level: float, draws: int, seed: int) -> float:
    # deterministic in its arguments: a monitor judging many intervals of one reference at
    # the same size (and the bench) draws the null once
    return float(np.quantile(js_null_draws(counts, m, draws=draws, seed=seed), level,
                             method="higher"))
