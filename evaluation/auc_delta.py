"""The interval of the difference of two correlated ROC AUCs on the same rows.

Both AUCs' logits are taken as jointly normal, with DeLong's variances and covariance
carried to the logit scale by the delta method (``1 / (A (1 - A))``), and the interval
of ``A1 - A2`` is the central ``confidence_level`` range of ``expit(g1) - expit(g2)``
under that law.  For one AUC this is exactly its logit Wald interval
(:func:`modelgate.intervals.logit_wald_interval`), and the variances may carry the same
t-quantile factor.

Why not the others (``bench/RESULTS.md``, "The last regression and AUC-delta gaps";
row-level sets of ``bench/interval_candidates.py``):

* MOVER from the two logit Wald intervals (the earlier method) reads each interval's
  asymmetry as spread: with two highly correlated AUCs near 1 (AUC 0.98, a champion
  that is the candidate plus a little noise, n = 200) it held the truth in 99.2 % of
  sets, twice as wide as needed, because the lower and upper distances of two skewed
  intervals do not cancel in its formula however close the correlation is to 1.
* A Wald interval of the difference with the paired DeLong variance (the textbook
  test's interval) is symmetric: 95.8 % there, but 86.5 % on the AUC 0.997 model,
  where the champion's AUC is skewed down and the truth lies above the interval.
* A studentized bootstrap of the difference with each resample's paired DeLong
  standard error: 90.8-91.1 % (resamples that drop the few misranked rows).

The joint law's quantiles are taken from a fixed scrambled Sobol sample of the
bivariate normal (scipy's ``MultivariateNormalQMC``, fixed seed, ``2^14`` points): a
deterministic function of the two AUCs and their covariance, so mapped and
one-process runs, which merge to the same counts, give the same interval.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["auc_difference_interval", "delong_deviations", "effective_df", "paired_auc_delta_interval"]

_SOBOL_POINTS = 1 << 14  # quantile error about 1e-3 of the interval's probability


def auc_difference_interval(auc_1: float, auc_2: float, variance_1: float, variance_2: float,
                            covariance: float, confidence_level: float
                            ) -> tuple[float, float] | None:
    """Interval of ``auc_1 - auc_2`` from their joint logit-normal law (see the module's
    docstring), or None where it does not apply: an AUC at 0 or 1 (infinite logit), a
    variance that is not positive, or a covariance matrix that is not positive definite
    (two AUCs moving as one).

    Parameters
    ----------
    auc_1, auc_2 : float
        The two AUCs on the same rows.
    variance_1, variance_2, covariance : float
        Their (DeLong) variances and covariance, any quantile factor included.
    confidence_level : float
        Central coverage in (0, 1).

    Returns
    -------
    tuple of float or None
        ``(lower, upper)``, in ``[-1, 1]`` and holding ``auc_1 - auc_2``.

    Examples
    --------
    A second AUC with no variance of its own (covariance 0) leaves the first one's
    logit Wald interval, shifted:

    >>> from modelgate.intervals import logit_wald_interval
    >>> lo, hi = auc_difference_interval(0.9, 0.5, 0.0004, 1e-30, 0.0, 0.95)
    >>> wald = logit_wald_interval(0.9, 0.0004, 100, 100, 0.95)
    >>> round(lo + 0.5, 3), round(wald[0], 3), round(hi + 0.5, 3), round(wald[1], 3)
    (0.853, 0.853, 0.933, 0.933)
    >>> auc_difference_interval(1.0, 0.9, 0.0, 0.0004, 0.0, 0.95) is None
    True
    """
    from scipy.special import expit, logit
    from scipy.stats import qmc

    if not (0.0 < auc_1 < 1.0 and 0.0 < auc_2 < 1.0 and variance_1 > 0 and variance_2 > 0):
        return None
    if not np.isfinite(covariance) or covariance**2 >= variance_1 * variance_2:
        return None
    jac = np.array([1.0 / (auc_1 * (1.0 - auc_1)), 1.0 / (auc_2 * (1.0 - auc_2))])
    cov = np.array([[variance_1, covariance], [covariance, variance_2]]) * np.outer(jac, jac)
    sampler = qmc.MultivariateNormalQMC(mean=logit([auc_1, auc_2]), cov=cov,
                                        rng=np.random.default_rng(20260538))
    g = sampler.random(_SOBOL_POINTS)
    difference = expit(g[:, 0]) - expit(g[:, 1])
    alpha = 1.0 - confidence_level
    lower, upper = np.quantile(difference, [alpha / 2, 1.0 - alpha / 2])
    point = auc_1 - auc_2
    return float(min(lower, point)), float(max(upper, point))


def delong_deviations(label: npt.ArrayLike, key: npt.ArrayLike, counts: npt.ArrayLike
                      ) -> npt.NDArray[np.float64] | None:
    """Each unit's scaled DeLong placement deviation for one model's AUC.

    A unit is a row (count 1) or a cell of rows sharing a label and a score key (count
    its rows).  A positive's placement is the share of negatives scored below it (ties
    one half), a negative's the share of positives above it; the deviation is
    ``(placement - AUC) / sqrt(m (m - 1))``, ``m`` the rows of its class.  With ``d``
    one model's deviations and ``e`` another's on the same units, ``sum(c d^2)`` is
    DeLong's variance and ``sum(c d e)`` DeLong's covariance of the two AUCs (DeLong,
    DeLong and Clarke-Pearson 1988).  None with fewer than two rows of a class.

    Parameters
    ----------
    label : array_like of int
        0 or 1 per unit.
    key : array_like
        Sortable score key per unit (the score, or a cell code ordered as the scores).
    counts : array_like of int
        Rows per unit.

    Returns
    -------
    ndarray of float64 or None

    Examples
    --------
    Negatives at scores 1, 2, positives at 2, 3: DeLong's variance 1/32 (worked in
    :func:`~.bootstrap_cells.delong_variance`), by rows or by cells:

    >>> d = delong_deviations([0, 0, 1, 1], [1, 2, 2, 3], [1, 1, 1, 1])
    >>> round(float(np.dot(d, d)), 12)
    0.03125
    >>> rows = delong_deviations([0, 0, 1, 0, 1, 1], [1, 1, 2, 2, 3, 3], np.ones(6))
    >>> cells = delong_deviations([0, 1, 0, 1], [1, 2, 2, 3], [2, 1, 1, 2])
    >>> bool(np.isclose(np.dot(rows, rows), np.dot([2, 1, 1, 2], cells * cells)))
    True
    """
    y = np.asarray(label).astype(bool)
    c = np.asarray(counts, dtype=np.float64)
    keys, inverse = np.unique(np.asarray(key), return_inverse=True)
    neg = np.bincount(inverse[~y], weights=c[~y], minlength=len(keys))
    pos = np.bincount(inverse[y], weights=c[y], minlength=len(keys))
    n_pos, n_neg = pos.sum(), neg.sum()
    if n_pos < 2 or n_neg < 2:
        return None
    v10 = (np.cumsum(neg) - neg / 2.0) / n_neg
    v01 = (n_pos - np.cumsum(pos) + pos / 2.0) / n_pos
    auc = float(np.dot(pos, v10) / n_pos)
    return np.where(y, (v10[inverse] - auc) / np.sqrt(n_pos * (n_pos - 1.0)),
                    (v01[inverse] - auc) / np.sqrt(n_neg * (n_neg - 1.0)))


def effective_df(d: npt.NDArray[np.float64], counts: npt.NDArray[np.float64]) -> float:
    """Satterthwaite's ``2 V^2 / (sum c d^4 - V^2 / n)`` with ``V = sum c d^2``: the
    weighted form of :func:`modelgate.intervals.satterthwaite_df` (inf when it is 0):
    ``d`` per unit, ``counts`` the rows of each unit.  Also the t quantile's degrees of
    freedom of the precision and F1 deltas (:mod:`~.paired_ratios`).

    Examples
    --------
    >>> round(effective_df(np.array([0.01, 1.0]), np.array([99.0, 1.0])), 2)  # one row dominates
    2.06
    """
    v = float(np.dot(counts, d * d))
    spread = float(np.dot(counts, d**4)) - v * v / float(counts.sum())
    return 2.0 * v * v / spread if spread > 1e-12 * v * v else float("inf")


def paired_auc_delta_interval(auc_1: float, auc_2: float, d_1: npt.NDArray[np.float64],
                              d_2: npt.NDArray[np.float64], counts: npt.ArrayLike, m: int,
                              confidence_level: float) -> tuple[float, float] | None:
    """:func:`auc_difference_interval` from the two models' :func:`delong_deviations` on the
    same units, the variances and covariance times ``(t_df / z)^2``, Student's t with
    ``df = min(m - 1, Satterthwaite's df of d_1 - d_2)`` (at least 1), ``m`` the fewest
    rows of a class, as the macro one-vs-rest AUC's interval (:mod:`~.ovr_auc`).

    Examples
    --------
    >>> y, c = np.array([0, 0, 0, 1, 1, 1]), np.ones(6)
    >>> d1 = delong_deviations(y, [1, 2, 4, 3, 5, 6], c)   # AUC 8 / 9
    >>> d2 = delong_deviations(y, [1, 4, 2, 3, 5, 6], c)   # the same AUC, other pairs
    >>> lo, hi = paired_auc_delta_interval(8 / 9, 8 / 9, d1, d2, c, 3, 0.95)
    >>> bool(-1 < lo < 0 < hi < 1)
    True
    """
    from scipy.stats import norm, t

    w = np.asarray(counts, dtype=np.float64)
    df = max(min(m - 1.0, effective_df(d_1 - d_2, w)), 1.0)
    level = 1.0 - 0.5 * (1.0 - confidence_level)
    factor = float(t.ppf(level, df) / norm.ppf(level)) ** 2
    return auc_difference_interval(auc_1, auc_2, factor * float(np.dot(w, d_1 * d_1)),
                                   factor * float(np.dot(w, d_2 * d_2)),
                                   factor * float(np.dot(w, d_1 * d_2)), confidence_level)
