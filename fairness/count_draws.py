"""Count tables drawn from fixed uniforms: the null laws of the fairness gaps' tests.

Every group's count is the quantile function of its law at a given uniform, so the same
uniforms give the same tables (:func:`fixed_uniforms`: one seed), and a test's p-value is the
same for the same counts.

* :func:`binomial_draws`: each group ``Binomial(trials, rate)``, at given rates.
* :func:`equal_rates_draws`: the tables with the observed total, every placing of the
  successes among the trials equally likely (multivariate hypergeometric): the law of the
  counts under equal rates given their total, which a permutation test of equal rates draws
  from.  Drawn group by group, each group's count given the successes left a hypergeometric
  quantile.  numpy's ``Generator.multivariate_hypergeometric`` draws the same law but from
  its own stream, not from given uniforms.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import numpy.typing as npt
from scipy.special import bdtr, gammaln, xlog1py, xlogy

__all__ = ["binomial_draws", "equal_rates_draws", "fixed_uniforms"]

_FloatArray = npt.NDArray[np.float64]
_SEED = 20261206


def binomial_draws(uniforms: npt.ArrayLike, trials: npt.ArrayLike, rates: npt.ArrayLike
                   ) -> _FloatArray:
    """Binomial counts ``F^-1(u)`` for each column's trials and rate, from given uniforms.

    The quantile function is read off each group's distribution function over its mean
    plus or minus 12 standard deviations (and 12 counts): exact unless a uniform lies in a
    tail of probability below 1e-30.

    Parameters
    ----------
    uniforms : array_like, shape (draws, K)
    trials, rates : array_like, shape (K,)

    Returns
    -------
    ndarray of shape (draws, K)

    Examples
    --------
    >>> binomial_draws([[0.1, 0.5], [0.9, 0.999]], [10, 10], [0.5, 0.0]).tolist()
    [[3.0, 0.0], [7.0, 0.0]]
    """
    u = np.asarray(uniforms, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    q = np.asarray(rates, dtype=np.float64)
    mean, sd = n * q, np.sqrt(n * q * (1.0 - q))
    first = np.maximum(0.0, np.floor(mean - 12.0 * sd - 12.0))
    last = np.minimum(n, np.ceil(mean + 12.0 * sd + 12.0))
    counts = first[:, None] + np.arange(int((last - first).max()) + 1)[None, :]  # (K, width)
    k, trials, rate = np.minimum(counts, n[:, None]), n[:, None], q[:, None]
    # the distribution function at the window's first count (the incomplete beta function),
    # then the probabilities above it from the log-gamma form: one special function a group
    log_pmf = (gammaln(trials + 1.0) - gammaln(k + 1.0) - gammaln(trials - k + 1.0)
               + xlogy(k, rate) + xlog1py(trials - k, -rate))
    steps = np.where(counts[:, 1:] <= n[:, None], np.exp(log_pmf[:, 1:]), 0.0)
    cdf = np.concatenate([bdtr(k[:, :1], trials, rate), steps], axis=1).cumsum(axis=1)
    cdf = np.where(counts >= n[:, None], 1.0, cdf)
    out = np.empty(u.shape)
    for g in range(u.shape[1]):
        at = np.minimum(np.searchsorted(cdf[g], u[:, g], side="left"), counts.shape[1] - 1)
        out[:, g] = np.minimum(counts[g, at], n[g])
    return out


def equal_rates_draws(uniforms: npt.ArrayLike, successes: npt.ArrayLike, trials: npt.ArrayLike
                      ) -> _FloatArray:
    """Count tables with the observed total, from given uniforms: the law under equal rates.

    Given their total, counts of equal rates are placed as a random draw of that many trials
    without replacement (multivariate hypergeometric), whatever the common rate.  Group ``g``
    takes the quantile at its uniform of ``Hypergeometric(trials left, successes left,
    trials[g])``, the groups before it having taken theirs; the last group takes what is
    left (its uniform is not used).  Each quantile is read off the distribution function over
    the mean plus or minus 12 standard deviations (and 12 counts), exact unless a uniform lies
    in a tail of probability below 1e-30.

    Parameters
    ----------
    uniforms : array_like, shape (draws, K)
    successes, trials : array_like of int, shape (K,)

    Returns
    -------
    ndarray of shape (draws, K)
        Every row sums to ``sum(successes)``; a group without trials draws 0.

    Examples
    --------
    Three successes among two groups of 2 and 4 trials: the first group holds 0, 1 or 2 of
    them with chances 4/20, 12/20 and 4/20.

    >>> equal_rates_draws([[0.1, 0.5], [0.5, 0.5], [0.9, 0.5]], [1, 2], [2, 4]).tolist()
    [[0.0, 3.0], [1.0, 2.0], [2.0, 1.0]]
    """
    u = np.asarray(uniforms, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    left = np.full(u.shape[0], float(np.asarray(successes, dtype=np.float64).sum()))
    population = float(n.sum())
    out = np.empty(u.shape)
    for g in range(n.size - 1):
        out[:, g] = _hypergeometric_quantiles(u[:, g], population, left, float(n[g]))
        left = left - out[:, g]
        population -= float(n[g])
    out[:, -1] = left
    return out


def _hypergeometric_quantiles(u: _FloatArray, population: float, marked: _FloatArray,
                              taken: float) -> _FloatArray:
    """The quantiles at ``u`` of the marked items among ``taken`` drawn without replacement
    from ``population`` items of which ``marked`` (one per uniform) are marked."""
    if taken <= 0.0:
        return np.zeros(u.shape)
    from scipy.stats import hypergeom  # here, not at import: scipy.stats takes about 0.5 s

    values, index = np.unique(marked, return_inverse=True)  # one table row per distinct total
    low = np.maximum(0.0, taken - (population - values))
    high = np.minimum(taken, values)
    share = values / population
    sd = np.sqrt(taken * share * (1.0 - share) * (population - taken) / max(population - 1.0, 1.0))
    first = np.maximum(low, np.floor(taken * share - 12.0 * sd - 12.0))
    last = np.minimum(high, np.ceil(taken * share + 12.0 * sd + 12.0))
    width = int((last - first).max()) + 1
    raw = first[:, None] + np.arange(width)[None, :]
    k, m = np.minimum(raw, last[:, None]), values[:, None]
    log_pmf = (_log_choose(m, k) + _log_choose(population - m, taken - k)
               - _log_choose(population, taken))
    steps = np.where(raw[:, 1:] <= last[:, None], np.exp(log_pmf[:, 1:]), 0.0)
    below = hypergeom.cdf(first - 1.0, population, values, taken)  # 0 at the support's start
    head = below + np.exp(log_pmf[:, 0])
    cdf = np.concatenate([head[:, None], steps], axis=1).cumsum(axis=1)
    cdf = np.where(raw >= last[:, None], 1.0, cdf)
    # every row's search at once: row r's distribution function shifted by 2 r, so the rows
    # follow one another in one ascending array
    shift = 2.0 * np.arange(values.size)
    at = np.searchsorted((cdf + shift[:, None]).ravel(), u + shift[index], side="left")
    at = np.minimum(at - index * width, width - 1)
    return np.minimum(first[index] + at, last[index])


def _log_choose(a: npt.ArrayLike, b: npt.ArrayLike) -> _FloatArray:
    """``log(a choose b)`` for ``0 <= b <= a``."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return np.asarray(gammaln(a + 1.0) - gammaln(b + 1.0) - gammaln(a - b + 1.0))


@lru_cache(maxsize=64)
def fixed_uniforms(groups: int, draws: int) -> _FloatArray:
    """``(draws, groups)`` points of a scrambled Sobol sequence of a fixed seed, read-only: the
    same on every call, and their tail shares closer to the law's than as many pseudo-random
    draws (all samples share these draws, so their error would be a bias)."""
    from scipy.stats import qmc

    u = qmc.Sobol(groups, scramble=True, seed=_SEED).random(draws)
    u.setflags(write=False)
    return u
