"""Standard errors of permutation SHAP estimates that allow for their own noise.

The permutation estimator (:mod:`modelgate.reports.explain_estimators`) gives each value a
jackknife standard error over its ``P`` independent antithetic pairs: an estimate with
``P - 1`` degrees of freedom, itself noisy. Two things follow, and this module does both.

The interval
    The interval the report draws is ``value ± q SE`` with ``q`` the two-sided 95%
    quantile of Student's t with ``P - 1`` degrees of freedom (2.262 at 10 pairs), not the
    normal 1.96: the standard error is estimated, so ``(value - exact) / SE`` is about
    t-distributed, not normal (:func:`interval_quantile`).

A variance that cannot collapse
    A credit distribution is lumpy: a feature of a tree model often gets the same credit in
    most orderings and a large one in the few that reach a particular split, so in some rows
    all ``P`` pairs happen to agree and the jackknife comes out near 0 while the error is
    not (issue #38: on a 37-feature LightGBM, 96.3% of values within 3 SE where an honest
    error from 10 pairs gives about 98.5%, the misses bunched in rows whose SE was tiny).
    Each value's variance is therefore shrunk towards a pooled one, an empirical-Bayes prior
    worth ``PRIOR_DF`` degrees of freedom (:func:`pooled_standard_errors`)::

        prior = (mean over the row's features + mean over the feature's rows) / 2
        se_pooled**2 = ((P - 1) se**2 + PRIOR_DF * prior) / (P - 1 + PRIOR_DF)

    of the variances ``se**2`` of the rows explained together. A value whose pairs agreed
    keeps ``PRIOR_DF / (P - 1 + PRIOR_DF)`` of its prior (half of it at 10 pairs). The mean
    variance of the block is unchanged (the shrinkage moves variance between values, it
    adds none), so the root-mean-square SE still tracks the real error, and a block whose
    every value is exact keeps SE 0. A lone row pools over its features and with itself.
    The interval keeps ``P - 1`` degrees of freedom (the moderated ``P - 1 + PRIOR_DF`` of
    Smyth (2004) would assume the values' variances alike, which they are not), so it errs
    on the wide side.

Why this one: ``bench/bench_shap_accuracy.py --part coverage`` measures, against exact
values at 10 pairs (10 rows x 20 background rows x 20 seeds per model), the share of values
within 3 SE (target 98.5%) and within the drawn interval (target 94%) for the raw jackknife
and for candidate poolings of it, on LightGBM models of 16, 24 and 37 features (200 trees;
exact interventional values from shap's ``TreeExplainer``), a 16-feature MLP and an
8-feature model of step functions (both exact by enumeration). Lowest share over the five
models (``bench/RESULTS.md`` has each):

======================================  ============  ===================
standard error                          within 3 SE   within t (2.262 SE)
======================================  ============  ===================
jackknife alone                         96.6%         93.4%
floor at 0.25 x the row's mean          98.1%         95.1%
shrunk to the row's mean, d0 4          98.3%         95.7%
shrunk to the feature's mean, d0 4      98.3%         96.5%
shrunk to their average, d0 4           98.4%         96.1%
**shrunk to their average, d0 9**       98.8%         96.6%
shrunk to the larger of them, d0 9      99.1%         97.8%
======================================  ============  ===================

The jackknife alone misses most on the step functions, where pairs agree most often (and the
t interval alone, without pooling, stays below 94% there). The row's pool alone leaves a
feature that is lumpy in every row under-covered, the feature's pool a row that is. Their
average at ``d0 = 9`` (as much weight as the value's own nine degrees of freedom at 10
pairs) meets both targets on every model, and its root-mean-square SE stays 1.00-1.03 of the
real RMSE; shrinking to the larger of the two covers a little more but inflates the standard
errors by 6-11%. More pairs where the pairs agree was not tried: it spends model evaluations
on the rows that look easiest, and pooling costs none. The standard errors stay estimates:
exact values have SE 0 and no interval.

References
----------
.. [1] Smyth, G. K. (2004). Linear models and empirical Bayes methods for assessing
   differential expression in microarray experiments. Statistical Applications in Genetics
   and Molecular Biology 3(1) (variances shrunk towards a pooled prior with ``d0`` degrees of
   freedom).
.. [2] Efron, B. and Stein, C. (1981). The jackknife estimate of variance. Annals of
   Statistics 9(3).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["PRIOR_DF", "interval_quantile", "interval_words", "pooled_standard_errors"]

#: Degrees of freedom the pooled variance is worth in :func:`pooled_standard_errors`.
PRIOR_DF = 9.0


def pooled_standard_errors(
    jackknife: npt.NDArray[np.float64], n_permutations: int, *, prior_df: float = PRIOR_DF
) -> npt.NDArray[np.float64]:
    """Each value's jackknife standard error shrunk towards its row's and feature's pool.

    Parameters
    ----------
    jackknife : ndarray of float64, shape (n_rows, n_features)
        Jackknife standard errors over ``n_permutations`` pairs of the rows explained
        together.
    n_permutations : int
        Antithetic pairs behind each (>= 2): ``n_permutations - 1`` degrees of freedom.
    prior_df : float, default ``PRIOR_DF``
        Weight of the pooled variance, in degrees of freedom (0: the jackknife alone).

    Returns
    -------
    ndarray of float64, same shape
        ``sqrt(((P - 1) se**2 + prior_df * prior) / (P - 1 + prior_df))``, ``prior`` the
        average of the row's mean variance and the feature's mean variance.

    Raises
    ------
    ValueError
        If ``jackknife`` is not 2-D, a standard error is negative or not finite,
        ``n_permutations < 2``, or ``prior_df`` is negative or not finite.

    Examples
    --------
    One row: features whose pairs agreed (SE 0) beside one that varied, 10 pairs. The
    row's mean variance is 0.03**2 / 3 = 0.0003, the prior (0.0003 + 0) / 2 for the first
    two; half of it is kept where the pairs agreed.

    >>> se = pooled_standard_errors(np.array([[0.0, 0.0, 0.03]]), 10)
    >>> np.round(se, 5).tolist()
    [[0.00866, 0.00866, 0.02739]]
    >>> round(float(np.mean(se**2)), 12)  # the mean variance is kept
    0.0003
    """
    se = np.asarray(jackknife, dtype=np.float64)
    if se.ndim != 2:
        raise ValueError(f"jackknife must be 2-D (rows, features); got shape {se.shape!r}")
    if not np.all(np.isfinite(se) & (se >= 0)):
        raise ValueError("jackknife standard errors must be finite and >= 0")
    if isinstance(n_permutations, bool) or n_permutations < 2:
        raise ValueError(f"n_permutations must be an integer >= 2; got {n_permutations!r}")
    if not (np.isfinite(prior_df) and prior_df >= 0):
        raise ValueError(f"prior_df must be a finite number >= 0; got {prior_df!r}")
    variance = np.square(se)
    prior = (variance.mean(axis=1, keepdims=True) + variance.mean(axis=0, keepdims=True)) / 2
    df = n_permutations - 1
    return np.asarray(np.sqrt((df * variance + prior_df * prior) / (df + prior_df)))


def interval_quantile(n_permutations: int, level: float = 0.95) -> float:
    """Two-sided Student-t quantile with ``n_permutations - 1`` degrees of freedom.

    Parameters
    ----------
    n_permutations : int
        Antithetic pairs behind each standard error (>= 2).
    level : float, default 0.95
        Coverage of the interval ``value ± quantile * SE``, in (0, 1).

    Returns
    -------
    float
        ``scipy.stats.t.ppf((1 + level) / 2, n_permutations - 1)``.

    Raises
    ------
    ValueError
        If ``n_permutations < 2`` or ``level`` is not in (0, 1).

    Examples
    --------
    >>> round(interval_quantile(10), 4), round(interval_quantile(30), 4)
    (2.2622, 2.0452)
    """
    if isinstance(n_permutations, bool) or n_permutations < 2:
        raise ValueError(f"n_permutations must be an integer >= 2; got {n_permutations!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1); got {level!r}")
    # scipy.stats here, not at the top: ``modelgate.reports`` imports this module, every
    # pipeline task imports that package, and scipy.stats takes seconds to import
    import scipy.stats

    return float(scipy.stats.t.ppf((1 + level) / 2, n_permutations - 1))


def interval_words(n_permutations: int) -> str:
    """The drawn interval in words, for legends and notes.

    Examples
    --------
    >>> interval_words(10)
    '95% t interval, ± 2.26 SE (9 degrees of freedom: 10 antithetic pairs)'
    """
    return (f"95% t interval, ± {interval_quantile(n_permutations):.2f} SE "
            f"({n_permutations - 1} degrees of freedom: {n_permutations} antithetic pairs)")
