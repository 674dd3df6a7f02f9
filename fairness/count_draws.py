"""Count tables drawn from fixed uniforms: the null laws of the fairness gaps' tests.

Every group's count is the quantile function of its law at a given uniform, so the same
uniforms give the same tables (:func:`fixed_uniforms`: one seed), and a test's p-value is the
same for the same counts.

* :func:`binomial_draws`: each group ``Binomial(trials, rate)``, at given rates.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import numpy.typing as npt
from scipy.special import bdtr, gammaln, xlog1py, xlogy

__all__ = ["binomial_draws", "fixed_uniforms"]

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


@lru_cache(maxsize=64)
def fixed_uniforms(groups: int, draws: int) -> _FloatArray:
    """``(draws, groups)`` points of a scrambled Sobol sequence of a fixed seed, read-only: the
    same on every call, and their tail shares closer to the law's than as many pseudo-random
    draws (all samples share these draws, so their error would be a bias)."""
    from scipy.stats import qmc

    u = qmc.Sobol(groups, scramble=True, seed=_SEED).random(draws)
    u.setflags(write=False)
    return u
