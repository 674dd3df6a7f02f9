"""The size-aware null of Wasserstein-1: how far an unchanged sample's distribution lands.

``sqrt(1/n + 1/m)``-scaled W1 between two samples of one distribution tends to
``int |B(F(x))| dx`` (``B`` a Brownian bridge), whose law depends on the distribution's shape,
is skewed, and whose mean the drift rule's half-split baseline estimates from five splits: a
threshold of 1.8 times that mean alarmed on 4-6.5 % of unchanged intervals of 10-200 rows once
the reference itself is a fresh sample (``bench/bench_js_null.py``). :func:`w1_null_quantile`
gives the threshold a floor that follows the null: a high quantile of W1 between the reference
and ``m`` values drawn from it (a seeded bootstrap), rescaled to two samples.

How, and why so: the reference's sorted values are thinned to at most ``ATOMS`` evenly spaced
order statistics (a sample of its quantile function); ``m`` draws among those atoms are a
multinomial, whose empirical CDF on the atoms is a cumulative count, so the W1 of every draw is
one matrix-vector product with the gaps between atoms (exact for the atoms; no sort per draw).
A draw from the reference alone leaves the reference's own noise out, so the quantile is
multiplied by ``sqrt((1/n + 1/m) / (1/m))``: the limit of two independent samples is the same
bridge with variance ``1/n + 1/m``. Intervals larger than ``MAX_DRAWN`` rows are drawn at
``MAX_DRAWN`` and rescaled the same way (by then the floor of 0.1 reference standard deviations
decides anyway).

References
----------
.. [1] del Barrio, Gine, Matran (1999). Central limit theorems for the Wasserstein distance
   between the empirical and the true distributions. Ann. Probab. 27(2), 1009-1071.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .js_null import DEFAULT_NULL_DRAWS, DEFAULT_NULL_LEVEL

__all__ = ["ATOMS", "MAX_DRAWN", "w1_null_draws", "w1_null_quantile"]

#: Most reference order statistics the null draws among.
ATOMS = 500
#: Largest current sample drawn; larger ones are rescaled from it.
MAX_DRAWN = 500


def _atoms(sorted_values: ArrayLike) -> NDArray[np.float64]:
    v = np.asarray(sorted_values, dtype=np.float64)
    if v.ndim != 1 or v.size == 0 or not np.isfinite(v).all():
        raise ValueError(f"sorted_values must be a non-empty 1-D array of finite values, got shape "
                         f"{v.shape!r}")
    if v.size > 1 and bool(np.any(v[1:] < v[:-1])):
        raise ValueError("sorted_values must be sorted ascending")
    if v.size <= ATOMS:
        return v
    return v[((np.arange(ATOMS) + 0.5) * v.size / ATOMS).astype(np.int64)]


def w1_null_draws(sorted_values: ArrayLike, m: int, *, draws: int = DEFAULT_NULL_DRAWS,
                  seed: int = 0) -> NDArray[np.float64]:
    """W1 between the (thinned) reference and ``draws`` samples of ``min(m, MAX_DRAWN)`` values
    drawn from it with replacement (one sample each; no reference noise, no rescaling).

    Parameters
    ----------
    sorted_values : array_like of float, 1-D, finite, ascending
    m : int
    draws : int, default :data:`~modelgate.drift.js_null.DEFAULT_NULL_DRAWS`
    seed : int, default 0

    Returns
    -------
    ndarray of float64, shape (draws,)
        In the data's units.

    Examples
    --------
    >>> w1_null_draws([2.0, 2.0, 2.0], 5, draws=2).tolist()  # one value: nothing can move
    [0.0, 0.0]
    """
    atoms = _atoms(sorted_values)
    if isinstance(m, bool) or not isinstance(m, int | np.integer) or m < 1:
        raise ValueError(f"m (the current sample's size) must be an integer >= 1, got {m!r}")
    if isinstance(draws, bool) or not isinstance(draws, int | np.integer) or draws < 1:
        raise ValueError(f"draws must be an integer >= 1, got {draws!r}")
    k, drawn = atoms.size, min(int(m), MAX_DRAWN)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, k, size=(draws, drawn)) + (np.arange(draws) * k)[:, None]
    counts = np.bincount(picks.ravel(), minlength=draws * k).reshape(draws, k)
    # W1 = sum over gaps of |F_drawn - F_atoms| between consecutive atoms (scipy's CDF form)
    cdf = np.cumsum(counts[:, :-1], axis=1) / drawn
    diff = np.abs(cdf - np.arange(1, k) / k)
    return np.asarray(diff @ np.diff(atoms), dtype=np.float64)


def w1_null_quantile(sorted_values: ArrayLike, n: int, m: int, *, level: float = DEFAULT_NULL_LEVEL,
                     draws: int = DEFAULT_NULL_DRAWS, seed: int = 0) -> float:
    """The ``level`` quantile of W1 under no change, between ``n`` reference values and ``m``.

    Parameters
    ----------
    sorted_values : array_like of float, 1-D, finite, ascending
        The reference's values (or its thinned sketch).
    n : int
        The reference's number of values (before any thinning).
    m : int
        Size of the current sample.
    level : float, default 0.99
    draws : int, default 1000
    seed : int, default 0

    Returns
    -------
    float
        In the data's units.

    Examples
    --------
    >>> q50 = w1_null_quantile(np.linspace(0, 1, 5000), 5000, 50)
    >>> q800 = w1_null_quantile(np.linspace(0, 1, 5000), 5000, 800)
    >>> bool(0.08 < q50 < 0.15), bool(3.0 < q50 / q800 < 4.2)  # sqrt((1/5000 + 1/50) / (...)) = 3.7
    (True, True)
    """
    if not (isinstance(level, int | float) and 0.0 < level < 1.0):
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"n (the reference's size) must be an integer >= 1, got {n!r}")
    atoms = _atoms(sorted_values)
    w1_null_draws(atoms[:1], m, draws=1)  # the argument checks, before the cache
    return _quantile(tuple(atoms.tolist()), int(n), int(m), float(level), int(draws), int(seed))


@lru_cache(maxsize=256)
def _quantile(atoms: tuple[float, ...], n: int, m: int, level: float, draws: int, seed: int) -> float:
    # deterministic in its arguments: one reference judged at one size draws its null once
    drawn = min(m, MAX_DRAWN)
    q = float(np.quantile(w1_null_draws(atoms, m, draws=draws, seed=seed), level, method="higher"))
    return q * math.sqrt((1 / n + 1 / m) * drawn)
