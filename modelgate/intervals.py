"""Bootstrap helpers shared by the numeric cores: resamples (as row indices or as count
vectors) and percentile intervals.

``evaluation`` and ``fairness`` both draw resamples and turn resampled statistics into
percentile intervals. The helpers live here, below both, so neither core imports the
other for them (imports only go downward: see the README's code layout).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

# Indices (or counts) held in memory at once per chunk of resamples (32 MiB of float64).
_CHUNK_ELEMENTS = 1 << 22


def percentile_interval(resampled: npt.NDArray[np.float64],
                        confidence_level: float) -> tuple[float, float]:
    """Percentile interval of the finite resampled values; NaN when there are none.

    Parameters
    ----------
    resampled : ndarray of float64
        One statistic per bootstrap resample; NaN marks a resample where it is undefined
        and is left out.
    confidence_level : float
        Central coverage in (0, 1), e.g. 0.95 for the 2.5 % and 97.5 % quantiles
        (``np.quantile`` with linear interpolation).

    Returns
    -------
    tuple of float
        ``(lower, upper)``; ``(nan, nan)`` when no resample is finite.

    References
    ----------
    .. [1] Efron, B. and Tibshirani, R. (1993). An Introduction to the Bootstrap, ch. 13.

    Examples
    --------
    >>> percentile_interval(np.array([1.0, 2.0, 3.0, np.nan]), 0.5)
    (1.5, 2.5)
    >>> percentile_interval(np.array([np.nan]), 0.95)
    (nan, nan)
    """
    finite = resampled[np.isfinite(resampled)]
    if finite.size == 0:
        return float("nan"), float("nan")
    alpha = 1.0 - confidence_level
    lower, upper = np.quantile(finite, [alpha / 2, 1 - alpha / 2])
    return float(lower), float(upper)


def percentile_lowered_by_bias(resampled: npt.NDArray[np.float64], point: float,
                               confidence_level: float, *,
                               lower_limit: float = -np.inf) -> tuple[float, float]:
    """Percentile interval whose lower end is moved down by the bootstrap's estimate of
    an upward bias.

    For a statistic biased upwards (a maximum of absolute gaps: noise only ever adds to
    it) the resamples are biased upwards again around the estimate, so the whole
    percentile interval sits too high and the truth falls below it too often.  The
    bootstrap estimates that bias as ``mean(resampled) - point`` (Efron and Tibshirani
    1993, ch. 10); when it is positive the lower end is moved down by it, clipped at
    ``lower_limit``.  The upper end stays the percentile one, so the interval only ever
    widens, and a downward or zero bias leaves the percentile interval.  NaN resamples
    are left out.

    Parameters
    ----------
    resampled : ndarray of float64
        One statistic per resample.
    point : float
        The estimate on the data.
    confidence_level : float
        Central coverage in (0, 1).
    lower_limit : float, default -inf
        Smallest value of the statistic.

    Returns
    -------
    tuple of float
        ``(lower, upper)``; ``(nan, nan)`` when no resample is finite.

    Examples
    --------
    Resamples 0.2 above the estimate on average: the lower end drops by 0.2.

    >>> r = np.array([0.2, 0.3, 0.4, 0.5, 0.6])
    >>> [round(e, 9) for e in percentile_lowered_by_bias(r, 0.2, 0.5)]
    [0.1, 0.5]
    >>> percentile_lowered_by_bias(r, 0.4, 0.5) == percentile_interval(r, 0.5)  # no bias
    True
    """
    lower, upper = percentile_interval(resampled, confidence_level)
    finite = resampled[np.isfinite(resampled)]
    if finite.size == 0 or not np.isfinite(point):
        return lower, upper
    bias = float(finite.mean()) - point
    return float(max(lower - max(bias, 0.0), lower_limit)), upper


def bca_interval(resampled: npt.NDArray[np.float64], point: float,
                 jackknife: npt.NDArray[np.float64], weights: npt.NDArray[np.float64],
                 confidence_level: float, *, tie_tolerance: float = 0.0) -> tuple[float, float]:
    """Bias-corrected and accelerated (BCa) interval of the finite resampled values.

    The ends are quantiles of the replicates (so they stay in the metric's range), at
    levels moved by the bias correction ``z0`` (the normal quantile of the share of
    replicates below ``point``, ties counted one half, clipped to ``[1/(2B), 1 - 1/(2B)]``)
    and the acceleration ``a`` from the jackknife (Efron 1987; Efron and Tibshirani 1993,
    eq. 14.15), with ``weights`` repeating each jackknife value (a cell of ``w`` equal
    rows stands for ``w`` leave-one-out values).  Non-finite jackknife values, and
    weights that are not finite and positive, are left out; ``a`` is 0 when the values
    do not vary.  ``a`` is computed on the values and weights scaled to at most 1 (it
    does not change with the values' scale), so that no power of them overflows.

    Parameters
    ----------
    resampled : ndarray of float64
        One statistic per resample; NaN (undefined) is left out.
    point : float
        The estimate on the data.
    jackknife : ndarray of float64
        The statistic with one row of each cell removed.
    weights : ndarray of float64
        Rows per cell (same length as ``jackknife``).
    confidence_level : float
        Central coverage in (0, 1).
    tie_tolerance : float, default 0.0
        Replicates within this distance of ``point`` count as ties. 0 (exact equality)
        for statistics computed exactly; a statistic whose replicates are summed in
        another order than the point (a mean loss from cell sums) differs from it by
        rounding on a resample equal to the data, which must still count as a tie.

    Returns
    -------
    tuple of float
        ``(lower, upper)``; ``(nan, nan)`` when no resample is finite.

    References
    ----------
    .. [1] Efron, B. (1987). Better bootstrap confidence intervals. JASA 82(397), 171-185.
    .. [2] Efron, B. and Tibshirani, R. (1993). An Introduction to the Bootstrap, ch. 14.

    Examples
    --------
    With no bias (half the replicates below the point) and no acceleration it is the
    percentile interval:

    >>> r = np.arange(1.0, 100.0)
    >>> bca_interval(r, 50.0, np.array([1.0, 2.0]), np.array([1.0, 1.0]), 0.5)
    (25.5, 74.5)
    >>> percentile_interval(r, 0.5)
    (25.5, 74.5)
    """
    from scipy.special import ndtr, ndtri

    finite = resampled[np.isfinite(resampled)]
    if finite.size == 0 or not np.isfinite(point):
        return float("nan"), float("nan")
    b = finite.size
    tie = np.abs(finite - point) <= tie_tolerance
    share = (np.count_nonzero((finite < point) & ~tie) + 0.5 * np.count_nonzero(tie)) / b
    z0 = float(ndtri(np.clip(share, 0.5 / b, 1.0 - 0.5 / b)))
    a = _acceleration(jackknife, weights)
    alpha = 1.0 - confidence_level
    z = ndtri(np.array([alpha / 2, 1.0 - alpha / 2])) + z0
    with np.errstate(divide="ignore", invalid="ignore"):
        # 1 - a z <= 0 only for |a| past 1/|z| (no real data); its end goes to the extreme
        levels = np.where(1.0 - a * z > 0, ndtr(z0 + z / (1.0 - a * z)), (z > 0).astype(float))
    lower, upper = np.quantile(finite, levels)
    return float(lower), float(upper)


def _acceleration(jackknife: npt.NDArray[np.float64], weights: npt.NDArray[np.float64]) -> float:
    ok = np.isfinite(jackknife) & np.isfinite(weights) & (weights > 0)
    w, t = weights[ok], jackknife[ok]
    if w.sum() == 0:
        return 0.0
    # a does not change when t is scaled and is divided by sqrt(c) when w is multiplied by c:
    # computed on t / max|t| and w / max(w), no sum overflows (cubes of values past 5.6e102 did)
    w_max = float(w.max())
    w, t = w / w_max, t / (float(np.abs(t).max()) or 1.0)
    # elementwise sums, not np.dot: BLAS threads cost more than they save at this size
    u = (w * t).sum() / w.sum() - t
    wu2 = w * u * u
    den = 6.0 * wu2.sum() ** 1.5
    return float((wu2 * u).sum() / den / np.sqrt(w_max)) if den > 0 else 0.0


def studentized_interval(point: float, se: float, resampled: npt.NDArray[np.float64],
                         resampled_se: npt.NDArray[np.float64], confidence_level: float, *,
                         lower_limit: float = -np.inf, upper_limit: float = np.inf,
                         rows: int | None = None) -> tuple[float, float]:
    """Studentized (bootstrap-t) interval.

    Each resample gives ``t* = (theta* - theta) / se*``; the interval is ``(theta -
    t*_(1 - a/2) se, theta - t*_(a/2) se)`` (Efron and Tibshirani 1993, ch. 12; Hall
    1988).  Unlike a percentile interval it corrects for a standard error that moves with
    the estimate, as that of a mean of skewed losses does (a resample without the rare
    large losses has both a small mean and a small spread).  A resample with standard
    error 0 (or below: not positive) has ``t*`` of infinite size, the sign of ``theta* -
    theta`` (0 if equal), counted as 1e6 so that it widens the interval instead of vanishing.
    Where more than a tail's share of the resamples have no spread (two or three rows, or
    nearly every row alike) that quantile is the count, not the data's: the end on that
    side is Student's t with ``rows - 1`` degrees of freedom instead, or the limit without
    ``rows``.  Resamples where the statistic is undefined (NaN) are left out.  Ends are
    clipped to ``[lower_limit, upper_limit]``, the statistic's range.  When ``se`` is not
    finite and positive (every row alike) it is the percentile interval.

    Parameters
    ----------
    point, se : float
        The estimate on the data and its standard error.
    resampled, resampled_se : ndarray of float64
        The estimate and its standard error on each resample.
    confidence_level : float
        Central coverage in (0, 1).
    lower_limit, upper_limit : float, default -inf and inf
        Smallest and largest value of the statistic.
    rows : int, optional
        The rows behind ``point``, for Student's t where the resamples cannot give a tail.

    Returns
    -------
    tuple of float
        ``(lower, upper)``; ``(nan, nan)`` when no resample is finite.

    References
    ----------
    .. [1] Efron, B. and Tibshirani, R. (1993). An Introduction to the Bootstrap, ch. 12.
    .. [2] Hall, P. (1988). Theoretical comparison of bootstrap confidence intervals.
       Annals of Statistics 16(3), 927-953.

    Examples
    --------
    Replicates whose t values are symmetric give the point plus or minus their quantile
    times the standard error:

    >>> t = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    >>> studentized_interval(10.0, 0.5, 10.0 + t, np.ones(5), 0.5)
    (9.5, 10.5)
    """
    ok = ~np.isnan(resampled) & ~np.isnan(resampled_se)
    theta, theta_se = resampled[ok], resampled_se[ok]
    if not (np.isfinite(point) and np.isfinite(se) and se > 0) or theta.size == 0:
        return percentile_interval(resampled, confidence_level)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.clip((theta - point) / theta_se, -_T_CAP, _T_CAP)
    t = np.where(theta_se > 0, t, np.sign(theta - point) * _T_CAP)
    alpha = 1.0 - confidence_level
    t_low, t_high = np.quantile(t, [alpha / 2, 1 - alpha / 2])
    # a quantile past these leans on the count of 1e6 (a resample's rounding can leave it a
    # standard error of 1e-19 instead of 0: its t is at the cap too)
    spread = t[np.abs(t) < _T_CAP]
    past_top, past_bottom = t_high > spread.max(initial=-np.inf), t_low < spread.min(initial=np.inf)
    if past_top or past_bottom:
        from scipy.stats import t as student

        tail = float(student.ppf(1 - alpha / 2, rows - 1)) if rows and rows >= 2 else np.inf
        t_high = tail if past_top else t_high
        t_low = -tail if past_bottom else t_low
    ends = np.clip([point - t_high * se, point - t_low * se], lower_limit, upper_limit)
    return float(ends[0]), float(ends[1])


_T_CAP = 1e6  # |t*| of a resample with a zero standard error


def logit_wald_interval(auc: float, variance: float, n_pos: int, n_neg: int,
                        confidence_level: float) -> tuple[float, float]:
    """Wald interval of a ROC AUC on the logit scale, from its (DeLong) variance.

    ``expit(logit(A) -+ z se / (A (1 - A)))``: inside (0, 1), holding ``A``, and close
    to nominal near 1 where a percentile bootstrap is short (Pepe 2003, sec. 5.2.2;
    simulated in ``bench/RESULTS.md``).  On a perfect separation (``A`` = 1, variance
    0) the logit is infinite; the lower end is then the exact bound ``(a/2)**(1/m)``
    with ``m = min(n_pos, n_neg)``: ``m`` disjoint positive-negative pairs are
    independent and each ordered right with probability AUC, so every pair is ordered
    right with probability at most ``AUC**m``, below ``a/2`` for any AUC under the bound
    (and symmetrically at ``A`` = 0).  NaN when the AUC is.

    Parameters
    ----------
    auc : float
        The AUC on the data.
    variance : float
        Its variance (DeLong's).
    n_pos, n_neg : int
        Positives and negatives.
    confidence_level : float
        Central coverage in (0, 1).

    Returns
    -------
    tuple of float

    References
    ----------
    .. [1] DeLong, E. R., DeLong, D. M. and Clarke-Pearson, D. L. (1988). Comparing the
       areas under two or more correlated receiver operating characteristic curves: a
       nonparametric approach. Biometrics 44(3), 837-845.
    .. [2] Pepe, M. S. (2003). The Statistical Evaluation of Medical Tests for
       Classification and Prediction. Oxford University Press.

    Examples
    --------
    >>> lo, hi = logit_wald_interval(0.9, 0.0004, 100, 100, 0.95)
    >>> round(lo, 4), round(hi, 4)
    (0.8534, 0.9329)
    >>> logit_wald_interval(1.0, 0.0, 80, 120, 0.95)[0] == 0.025 ** (1 / 80)
    True
    """
    from scipy.special import expit, logit, ndtri

    if not np.isfinite(auc):
        return float("nan"), float("nan")
    alpha = 1.0 - confidence_level
    m = min(n_pos, n_neg)
    if 0.0 < auc < 1.0 and not variance > 0:  # every score tied: no resample moves it
        return float(auc), float(auc)
    if auc >= 1.0 or auc <= 0.0:
        bound = (alpha / 2) ** (1.0 / m) if m > 0 else 0.0
        if auc >= 0.5:
            return float(min(bound, auc)), float(auc)
        return float(auc), float(max(1.0 - bound, auc))
    half = float(ndtri(1.0 - alpha / 2)) * np.sqrt(variance) / (auc * (1.0 - auc))
    centre = float(logit(auc))
    return float(expit(centre - half)), float(expit(centre + half))


def wilson_interval(successes: int, trials: int, confidence_level: float) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (scipy's ``binomtest``).

    Inside [0, 1], holding ``successes / trials``, and close to its nominal coverage with
    a handful of failures, where a percentile bootstrap of the proportion is short
    (Brown, Cai and DasGupta 2001).  NaN without trials.

    References
    ----------
    .. [1] Brown, L. D., Cai, T. T. and DasGupta, A. (2001). Interval estimation for a
       binomial proportion. Statistical Science 16(2), 101-133.

    Examples
    --------
    >>> lo, hi = wilson_interval(195, 200, 0.95)
    >>> round(lo, 4), round(hi, 4)
    (0.9428, 0.9893)
    """
    from scipy.stats import binomtest

    if trials <= 0:
        return float("nan"), float("nan")
    ci = binomtest(int(successes), int(trials)).proportion_ci(confidence_level, method="wilson")
    return float(ci.low), float(ci.high)


def mover_difference(point_1: float, ends_1: tuple[float, float], point_2: float,
                     ends_2: tuple[float, float], correlation: float) -> tuple[float, float]:
    """MOVER interval of ``point_1 - point_2`` from an interval of each and their correlation.

    The method of variance estimates recovery (Zou and Donner 2008) reads each
    estimate's variance off its own interval, separately below and above (so a skewed
    or range-bounded interval, a Wilson or logit-scale one, keeps its shape), and adds
    them with the correlation ``r`` of the two estimates::

        lower = d - sqrt((p1 - l1)**2 + (u2 - p2)**2 - 2 r (p1 - l1)(u2 - p2))
        upper = d + sqrt((u1 - p1)**2 + (p2 - l2)**2 - 2 r (u1 - p1)(p2 - l2))

    With ``r`` in [-1, 1] the ends lie in ``[l1 - u2, u1 - l2]`` (so a difference of
    two quantities in [0, 1] stays in [-1, 1]) and hold ``d``.  ``r`` is clipped to
    [-1, 1]; NaN is taken as 0.  Each point must lie in its interval.

    Parameters
    ----------
    point_1, point_2 : float
        The two estimates.
    ends_1, ends_2 : tuple of float
        Their intervals ``(lower, upper)``.
    correlation : float
        Correlation of the two estimates.

    Returns
    -------
    tuple of float
        ``(lower, upper)``; NaN when an end is.

    References
    ----------
    .. [1] Zou, G. Y. and Donner, A. (2008). Construction of confidence limits about
       effect measures: a general approach. Statistics in Medicine 27(10), 1693-1702.
    .. [2] Newcombe, R. G. (1998). Improved confidence intervals for the difference
       between binomial proportions based on paired data. Statistics in Medicine
       17(22), 2635-2650 (method 10: Wilson intervals and the phi correlation).

    Examples
    --------
    Symmetric intervals of half-width ``h1``, ``h2`` give ``d -+ sqrt(h1**2 + h2**2 -
    2 r h1 h2)``, the Wald interval of a correlated difference:

    >>> [round(e, 9) for e in mover_difference(0.5, (0.2, 0.8), 0.1, (-0.3, 0.5), 0.0)]
    [-0.1, 0.9]
    >>> [round(e, 9) for e in mover_difference(0.5, (0.2, 0.8), 0.1, (-0.3, 0.5), 1.0)]
    [0.3, 0.5]
    """
    r = 0.0 if np.isnan(correlation) else float(np.clip(correlation, -1.0, 1.0))
    below_1, above_1 = point_1 - ends_1[0], ends_1[1] - point_1
    below_2, above_2 = point_2 - ends_2[0], ends_2[1] - point_2
    diff = point_1 - point_2
    # max(., 0): rounding can leave a tiny negative where r = 1 and the terms are equal
    low = np.sqrt(max(below_1**2 + above_2**2 - 2.0 * r * below_1 * above_2, 0.0))
    high = np.sqrt(max(above_1**2 + below_2**2 - 2.0 * r * above_1 * below_2, 0.0))
    if np.isnan(low) or np.isnan(high):
        return float("nan"), float("nan")
    return float(diff - low), float(diff + high)


def phi_correlation(both: float, only_1: float, only_2: float, neither: float) -> float:
    """Phi coefficient of a 2 x 2 table (0 when a margin is empty).

    For paired proportions ``p1 = (both + only_1) / n`` and ``p2 = (both + only_2) / n``
    it is the correlation of the two estimates, which Newcombe's (1998) method 10
    feeds to :func:`mover_difference` with the two Wilson intervals.

    Examples
    --------
    >>> phi_correlation(10, 0, 0, 10), phi_correlation(5, 5, 5, 5), phi_correlation(3, 1, 0, 0)
    (1.0, 0.0, 0.0)
    """
    den = (both + only_1) * (only_2 + neither) * (both + only_2) * (only_1 + neither)
    if not den > 0:
        return 0.0
    return float((both * neither - only_1 * only_2) / np.sqrt(den))


def satterthwaite_df(deviations: npt.NDArray[np.float64]) -> float:
    """Effective degrees of freedom of the variance ``V = sum d_i^2`` of rows' deviations.

    ``2 V^2 / Var(V)`` with ``Var(V)`` estimated as ``sum d_i^4 - V^2 / n`` (Satterthwaite
    1946): ``n`` for normal deviations, small when a few rows carry the variance (a
    near-perfect ranking with a handful of misplaced rows), where a variance estimated
    from them is itself uncertain.  Infinite when every deviation is equal.  Used for the
    t quantile of the macro one-vs-rest AUC's interval and to widen the rmse's
    bootstrap-t interval (:mod:`modelgate.evaluation.ovr_auc`,
    :mod:`modelgate.evaluation.regression`).

    References
    ----------
    .. [1] Satterthwaite, F. E. (1946). An approximate distribution of estimates of
       variance components. Biometrics Bulletin 2(6), 110-114.

    Examples
    --------
    >>> satterthwaite_df(np.array([1.0, -1.0, 1.0, -1.0]))
    inf
    >>> round(satterthwaite_df(np.r_[np.full(99, 0.01), 1.0]), 2)  # one row dominates
    2.06
    """
    n = deviations.size
    v = float(np.dot(deviations, deviations))
    spread = float(np.sum(deviations**4)) - v * v / n
    return 2.0 * v * v / spread if spread > 1e-12 * v * v else float("inf")


def interval_holding(point: float, lower: float, upper: float) -> tuple[float, float]:
    """The interval ``(lower, upper)`` widened, where needed, to hold ``point``.

    A percentile interval need not hold the point estimate it is reported beside: with a
    skewed or discrete bootstrap distribution (a handful of rows, a metric at its bound)
    the point can fall past a 2.5 % or 97.5 % quantile.  Widening to it keeps ``lower
    <= value <= upper``, which the gate and the reports rely on, and can only raise the
    coverage; both ends stay inside the metric's range when the point and the replicates
    are.  NaN ends (no finite replicate) are kept.

    Examples
    --------
    >>> interval_holding(0.5, 0.6, 0.9)
    (0.5, 0.9)
    >>> interval_holding(0.7, 0.6, 0.9)
    (0.6, 0.9)
    >>> interval_holding(0.7, float("nan"), float("nan"))
    (nan, nan)
    """
    if not (np.isfinite(lower) and np.isfinite(upper)):
        return lower, upper
    return float(min(lower, point)), float(max(upper, point))


def bootstrap_indices(
    n: int, *, n_bootstrap: int, seed: int, chunk_size: int | None = None
) -> Iterator[npt.NDArray[np.integer]]:
    """Yield the row indices of the bootstrap resamples, a chunk of resamples at a time.

    Resample ``b`` is ``n`` draws with replacement from ``range(n)``.  The stream does
    not depend on ``chunk_size``: chunks concatenate to the same ``(n_bootstrap, n)``
    array for any chunk size.

    Parameters
    ----------
    n : int
        Number of rows, at least 1.
    n_bootstrap : int
        Number of resamples, at least 0.
    seed : int
        Seed of ``np.random.default_rng``; non-negative.
    chunk_size : int, optional
        Resamples per chunk; by default about 4 million indices per chunk.

    Yields
    ------
    numpy.ndarray
        Integer array of shape ``(chunk, n)``.

    Examples
    --------
    >>> chunks = list(bootstrap_indices(5, n_bootstrap=3, seed=0, chunk_size=2))
    >>> [c.shape for c in chunks]
    [(2, 5), (1, 5)]
    """
    check_int(n, "n", minimum=1)
    check_int(n_bootstrap, "n_bootstrap", minimum=0)
    check_int(seed, "seed", minimum=0)
    if chunk_size is None:
        chunk_size = max(1, _CHUNK_ELEMENTS // n)
    check_int(chunk_size, "chunk_size", minimum=1)
    rng = np.random.default_rng(seed)
    dtype = _index_dtype(n)
    for start in range(0, n_bootstrap, chunk_size):
        size = min(chunk_size, n_bootstrap - start)
        yield rng.integers(0, n, size=(size, n), dtype=dtype)


def _index_dtype(n: int) -> type[np.signedinteger]:
    """int32 for fewer than 2**31 rows (every index fits), int64 from there.

    Its own function so that the boundary can be tested without drawing 2**31 indices.

    Examples
    --------
    >>> _index_dtype(2**31 - 1).__name__, _index_dtype(2**31).__name__
    ('int32', 'int64')
    """
    return np.int32 if n < 2**31 else np.int64


def bootstrap_counts(n: int, *, n_bootstrap: int, seed: int) -> Iterator[npt.NDArray[np.float64]]:
    """Yield chunks of resamples as float64 counts of shape ``(chunk, n)``.

    Parameters
    ----------
    n : int
        Number of rows, at least 1.
    n_bootstrap : int
        Number of resamples, at least 0.
    seed : int
        Seed of the resamples (see ``bootstrap_indices``).

    Yields
    ------
    numpy.ndarray
        Row ``b`` counts how often each row was drawn in resample ``b``; it sums to ``n``.

    Examples
    --------
    >>> [c.tolist() for c in bootstrap_counts(3, n_bootstrap=2, seed=0)]
    [[[0.0, 2.0, 1.0], [3.0, 0.0, 0.0]]]
    """
    chunk = max(1, _CHUNK_ELEMENTS // n)
    for idx in bootstrap_indices(n, n_bootstrap=n_bootstrap, seed=seed, chunk_size=chunk):
        b = idx.shape[0]
        flat = (idx.astype(np.int64) + np.arange(b, dtype=np.int64)[:, None] * n).ravel()
        yield np.bincount(flat, minlength=b * n).reshape(b, n).astype(np.float64)


def check_int(value: object, name: str, *, minimum: int) -> None:
    """Raise ``ValueError`` naming ``name`` unless ``value`` is an integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")


def check_confidence_level(value: object) -> None:
    """Raise ``ValueError`` unless ``value`` is a real number (not a bool) in (0, 1).

    Examples
    --------
    >>> check_confidence_level(0.95)
    >>> check_confidence_level(1.0)
    Traceback (most recent call last):
    ...
    ValueError: confidence_level must be a number in (0, 1); got 1.0
    """
    if (isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real)
            or not 0.0 < float(value) < 1.0):
        raise ValueError(f"confidence_level must be a number in (0, 1); got {value!r}")
