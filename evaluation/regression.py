"""Regression metrics with seeded bootstrap intervals: ``rmse``, ``mae``, ``r2``, ``mean_error``.

Conventions
-----------
* ``mean_error`` is the bias, ``mean(prediction - y_true)``: positive means the model
  predicts too high.
* ``r2`` is scikit-learn's ``r2_score``; undefined (NaN) when ``y_true`` is constant
  (scikit-learn then returns 0 or 1 by convention, which would read as a real score), and
  so in a resample that draws only equal labels.
* rmse, mae and mean_error are functions of per-row sums (error, squared error, absolute
  error), so a chunk of bootstrap resamples is one matrix product with the counts of
  :func:`modelgate.intervals.bootstrap_counts`. Hand-written for that speed; point
  estimates are tested equal to scikit-learn's to 1e-9. r2's denominator, the labels'
  sum of squares about their mean, is summed about each resample's own mean (two passes):
  from sums of labels and squared labels it cancels when a resample's labels sit close
  together far from the mean of all rows (r2 came out NaN or off by 0.004 there).
* ``rmse``, ``mae`` and ``mean_error`` get studentized bootstrap (bootstrap-t)
  intervals over the same resamples (:func:`modelgate.intervals.studentized_interval`),
  each resample's standard error from its own rows: ``mean_error`` and ``mae`` as means
  (of ``e`` and ``|e|``; standard errors from the sums of ``e``, ``|e|`` and ``e^2``),
  ``rmse`` as ``log(mean(e^2))`` (standard error ``se(mean(e^2)) / mean(e^2)``, from the
  sum of ``e^4``; ends mapped back through ``sqrt(exp(.))``, so they stay positive).
  Why: errors of real models are heavy-tailed, and a mean of squared heavy-tailed errors
  is right-skewed with a standard error that grows with it, which the t statistic
  divides out and the percentile interval ignores: with Student t errors (5 degrees of
  freedom) at n = 200 the percentile interval of the rmse held the truth in 89 % of
  simulated sets, the studentized one in 92-93 % (``bench/RESULTS.md``, "Every binary,
  multiclass and regression interval").  Still short there because a resample cannot
  see the tail its data lack, the rmse's ends are moved away from the point (on the
  rmse's scale) by ``t_df / z``, Student's t quantile with Satterthwaite's effective degrees of freedom of the
  squared errors' variance (:func:`modelgate.intervals.satterthwaite_df`) over the
  normal one: 1.01-1.03 for normal errors at n = 300, about 1.1-1.2 for t5 errors at n =
  200; 94-95 % in simulation.  Where
  the data's standard error is 0 (every error equal) or an end maps back to infinity it
  is the percentile interval.  With two or three rows, or nearly every error alike, a
  side the resamples cannot give (they draw no spread) is Student's t with ``n - 1``
  degrees of freedom (:func:`modelgate.intervals.studentized_interval`): the mean
  error of two rows gets the textbook t interval, not a million standard errors.
* ``r2`` gets the percentile interval with its ends moved away from the point by the
  rmse's ``t_df / z`` (:func:`_stretched`), ``df`` Satterthwaite's effective degrees of
  freedom of the rows' influence on r2, ``((1 - r2) q_i - e_i^2) / mean(q)`` with ``q_i =
  (y_i - mean(y))^2``; the upper end stays at or below 1.  Why: with t5 errors at n =
  200 the plain percentile interval held the truth in 92.5-92.9 % of 1,000 simulated
  sets (truth below it in 5 %: sets that lack the tail's large errors read r2 too
  high), the stretched one in 94.1-94.3 %; a bootstrap-t on the raw or the ``log(1 -
  r2)`` scale, stretched the same way, covered the same (93.9-94.2 %) and the latter
  had collapsed to ``[1, 1]`` on eight rows whose labels sit in a tight cluster far
  from two others (``bench/regression_candidates.py``, ``bench/RESULTS.md``, "The last
  regression and AUC-delta gaps").
* Resamples where a metric is undefined are left out of its interval, which is widened
  to hold the point estimate if it does not.  Below :data:`MIN_ROWS_FOR_INTERVAL` (one
  row; two for r2) a metric and its delta have no interval (NaN ends), and so has a metric
  whose every error is the same (an exact fit: every metric; a constant offset: all but
  r2): the resamples can only give the point back, and an error's size has no bound to
  fall back on.
* Paired deltas (:func:`compare_regression`): rmse and r2 get a studentized bootstrap of
  the delta with delta-method standard errors (the rmse delta's from the covariance of the
  two mean squared errors, the r2 delta's from each row's influence), its ends stretched by
  ``t_df / z`` with Satterthwaite's df of those influences, as the rmse's own; at n = 200
  with t5 errors their percentile intervals held the truth in 91.2 / 91.8 % of sets, these
  in 92.8-94.0 % (``bench/RESULTS.md``, "Closing the gaps").  mae and mean_error deltas
  stay percentile intervals of the paired differences (93.2-96.5 %).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

import numpy as np
import numpy.typing as npt
from modelgate.evaluation.metrics import (
    MetricEstimate,
    PairedComparison,
    paired_deltas,
)

from modelgate.intervals import (
    bootstrap_counts,
    check_confidence_level,
    interval_holding,
    percentile_interval,
    satterthwaite_df,
    studentized_interval,
)

__all__ = ["REGRESSION_METRIC_NAMES", "RegressionReport", "compare_regression",
           "evaluate_regression"]

REGRESSION_METRIC_NAMES = ("rmse", "mae", "r2", "mean_error")
_FloatArray = npt.NDArray[np.float64]
# Rows below which a metric (and its delta) has no interval: one row shows no spread of the
# errors and r2 needs two labels that differ in every resample it is defined on, so a
# resample can only give the point back ([x, x] on one row, r2's on two). Nothing bounds an
# error's size, so no interval from the metric's range either, as the log loss has.
MIN_ROWS_FOR_INTERVAL = {"rmse": 2, "mae": 2, "r2": 3, "mean_error": 2}
# The studentized metrics, in the column order of _scaled, and the map back from its scale.
_STUDENTIZED = {"rmse": lambda t: np.sqrt(np.exp(t)), "mae": lambda t: t,
                "mean_error": lambda t: t}


@dataclass(frozen=True, slots=True)
class RegressionReport:
    """Result of :func:`evaluate_regression`: every metric and the settings."""

    metrics: tuple[MetricEstimate, ...]
    n: int
    n_bootstrap: int
    confidence_level: float
    seed: int

    def by_name(self) -> Mapping[str, MetricEstimate]:
        """Read-only mapping from metric name to estimate (the gate's input)."""
        return MappingProxyType({m.name: m for m in self.metrics})


def _check(y_true: npt.ArrayLike, prediction: npt.ArrayLike) -> tuple[_FloatArray, _FloatArray]:
    y = np.asarray(y_true, dtype=np.float64)
    pred = np.asarray(prediction, dtype=np.float64)
    if y.ndim != 1 or y.size == 0:
        raise ValueError(f"y_true must be a non-empty 1-D array; got shape {y.shape}")
    if pred.shape != y.shape:
        raise ValueError(f"prediction must have the shape of y_true {y.shape}; got {pred.shape}")
    for name, values in (("y_true", y), ("prediction", pred)):
        if not np.isfinite(values).all():
            raise ValueError(f"{name} must be finite; found {int((~np.isfinite(values)).sum())} "
                             "NaN or infinite values")
    return y, pred


def _metrics(sums: _FloatArray, total: _FloatArray,
             constant: npt.NDArray[np.bool_]) -> _FloatArray:
    """``(B, 4)`` metrics from ``(B, 4)`` sums (n, e, e^2, |e|) and the labels' ``(B,)`` sum of
    squares about their mean.

    ``constant`` ``(B,)`` marks the resamples whose labels are all equal: r2 is undefined
    there. ``total`` alone cannot tell: the mean of equal labels ``c`` can be a few ulps
    from ``c`` (``3 * 0.1 / 3``), which leaves ``total`` a tiny positive number and
    ``1 - e2 / total`` about -1e16 instead of NaN. ``total > 0`` covers labels so close
    that their squared deviations underflow to 0.
    """
    n, e, e2, ae = sums.T
    with np.errstate(invalid="ignore", divide="ignore"):
        r2 = np.where(~constant & (total > 0), 1.0 - e2 / total, np.nan)
    return np.column_stack([np.sqrt(e2 / n), ae / n, r2, e / n])


def _all_equal(w: _FloatArray, y: _FloatArray) -> npt.NDArray[np.bool_]:
    """Per resample (a row of counts ``w``), whether the labels it draws are all equal."""
    drawn = w > 0
    return np.where(drawn, y, np.inf).min(axis=1) == np.where(drawn, y, -np.inf).max(axis=1)


def _label_spread(w: _FloatArray, y: _FloatArray) -> _FloatArray:
    """Per resample (a row of counts ``w``), ``sum(w * (y - mean)^2)`` about its own mean."""
    d = y[None, :] - ((w @ y) / w.sum(axis=1))[:, None]
    return np.einsum("bn,bn->b", w * d, d)


def _scaled(sums: _FloatArray) -> tuple[_FloatArray, _FloatArray]:
    """rmse, mae and mean_error on the scales their intervals are studentized on (rmse as
    ``log(mean(e^2))``), with their standard errors: ``(B, 3)`` each, from ``(B, 5)`` sums
    (n, e, e^2, |e|, e^4)."""
    n, e, e2, ae, e4 = sums.T
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_e, mse, mae = e / n, e2 / n, ae / n
        var_mse = np.maximum(e4 / n - mse**2, 0.0) / (n - 1.0)
        values = np.column_stack([np.log(mse), mae, mean_e])
        ses = np.column_stack([np.sqrt(var_mse) / mse,
                               np.sqrt(np.maximum(mse - mae**2, 0.0) / (n - 1.0)),
                               np.sqrt(np.maximum(mse - mean_e**2, 0.0) / (n - 1.0))])
    return values, ses


def _point_and_resampled(y: _FloatArray, predictions: list[_FloatArray], *, n_bootstrap: int,
                         seed: int) -> tuple[list[_FloatArray], list[_FloatArray]]:
    """Per model: the metrics on all rows ``(4,)`` and on each shared resample ``(B, 4)``."""
    rows = []
    for pred in predictions:
        e = pred - y
        rows.append(np.column_stack([np.ones_like(y), e, e * e, np.abs(e)]))
    every_row = np.ones((1, len(y)))
    total, constant = _label_spread(every_row, y), np.array([y.min() == y.max()])
    point = [_metrics(r.sum(axis=0, keepdims=True), total, constant)[0] for r in rows]
    parts: list[list[_FloatArray]] = [[] for _ in rows]
    for w in bootstrap_counts(len(y), n_bootstrap=n_bootstrap, seed=seed):
        total, constant = _label_spread(w, y), _all_equal(w, y)
        for model, r in enumerate(rows):
            parts[model].append(_metrics(w @ r, total, constant))
    return point, [np.vstack(x) if x else np.empty((0, 4)) for x in parts]


def _widened(lower: float, value: float, upper: float, squared_errors: _FloatArray,
             confidence_level: float) -> tuple[float, float]:
    """The rmse's bootstrap-t ends moved away from the rmse ``value`` by ``t_df / z``:
    Student's t quantile with Satterthwaite's effective degrees of freedom of the squared
    errors' variance (:func:`modelgate.intervals.satterthwaite_df`, at least 1) over the
    normal one; close to 1 for light tails (normal errors: about ``n / 7`` degrees of
    freedom, 1.01-1.03 at n = 300), larger when a few rows carry the variance.  On the
    rmse's own scale, so the width grows at most by that factor (on the log scale of the
    studentization a rare set dominated by one error got ends 10^4 wide); the lower end
    stays at or above 0.

    Examples
    --------
    >>> _widened(1.0, 2.0, 4.0, np.array([1.0, 3.0, 1.0, 3.0] * 50), 0.95)  # light: as is
    (1.0, 4.0)
    >>> lo, hi = _widened(1.0, 2.0, 4.0, np.r_[np.ones(99), 50.0], 0.95)
    >>> bool(0.0 <= lo < 1.0 and hi > 4.0)
    True
    """
    from scipy.stats import norm, t

    level = 1.0 - 0.5 * (1.0 - confidence_level)
    df = max(satterthwaite_df(squared_errors - squared_errors.mean()), 1.0)
    factor = max(float(t.ppf(level, df) / norm.ppf(level)), 1.0)
    return max(value - factor * (value - lower), 0.0), value + factor * (upper - value)


def _studentized_ends(y: _FloatArray, pred: _FloatArray, *, n_bootstrap: int, seed: int,
                      confidence_level: float) -> dict[str, tuple[float, float]]:
    """rmse, mae and mean_error: the bootstrap-t interval on its scale (see the module's
    docstring), mapped back; left out where the data's standard error is 0 or an end maps
    to infinity (percentile then).  The resamples are those of
    :func:`_point_and_resampled` for the seed."""
    e = pred - y
    rows = np.column_stack([np.ones_like(y), e, e * e, np.abs(e), e**4])
    point, point_se = _scaled(rows.sum(axis=0, keepdims=True))
    chunks = [_scaled(w @ rows)
              for w in bootstrap_counts(len(y), n_bootstrap=n_bootstrap, seed=seed)]
    values, ses = np.vstack([c[0] for c in chunks]), np.vstack([c[1] for c in chunks])
    out: dict[str, tuple[float, float]] = {}
    for j, (name, back) in enumerate(_STUDENTIZED.items()):
        value, se = float(point[0, j]), float(point_se[0, j])
        if not (np.isfinite(value) and np.isfinite(se) and se > 0):
            continue
        lo, hi = studentized_interval(value, se, values[:, j], ses[:, j], confidence_level,
                                      lower_limit=0.0 if name == "mae" else -np.inf,
                                      rows=len(y))
        with np.errstate(over="ignore"):
            ends = (float(back(lo)), float(back(hi)))
        if name == "rmse" and np.isfinite(ends).all():
            ends = _widened(ends[0], float(back(value)), ends[1], e * e, confidence_level)
        if np.isfinite(ends).all():
            out[name] = ends
    return out


def evaluate_regression(
    y_true: npt.ArrayLike,
    prediction: npt.ArrayLike,
    *,
    n_bootstrap: int = 1000,
    confidence_level: float = 0.95,
    seed: int = 0,
) -> RegressionReport:
    """Regression metrics with studentized bootstrap intervals (see the module's docstring).

    Parameters
    ----------
    y_true, prediction : array_like of float, shape (N,)
        Observed and predicted values (finite).
    n_bootstrap : int
        Resamples (0: no intervals).
    confidence_level : float
        Interval coverage, in (0, 1).
    seed : int
        Seed of the resamples (the binary metrics' resamples for the same seed).

    Returns
    -------
    RegressionReport

    Raises
    ------
    ValueError
        Naming the argument: wrong shapes, NaN or infinite values.

    Examples
    --------
    >>> m = evaluate_regression([1.0, 2.0, 3.0, 4.0], [1.5, 2.0, 2.5, 5.0], n_bootstrap=0).by_name()
    >>> m["mae"].value, m["mean_error"].value, m["r2"].value
    (0.5, 0.25, 0.7)
    """
    y, pred = _check(y_true, prediction)
    check_confidence_level(confidence_level)
    points, boots = _point_and_resampled(y, [pred], n_bootstrap=n_bootstrap, seed=seed)
    point, boot = points[0], boots[0]
    own = (_studentized_ends(y, pred, n_bootstrap=n_bootstrap, seed=seed,
                             confidence_level=confidence_level) if n_bootstrap > 0 else {})
    if n_bootstrap > 0 and np.isfinite(point[2]):
        ends = percentile_interval(boot[:, 2], confidence_level)
        if np.isfinite(ends).all():
            influence = _r2_influence(y, pred, float(point[2]))
            held = interval_holding(point[2], *ends)
            # influences that are 0 but for rounding (the fit is exact on the labels'
            # spread) carry no tail: no stretch
            lo, hi = (_stretched(float(point[2]), held, influence, confidence_level)
                      if np.abs(influence).max() > 1e-12 else held)
            own["r2"] = (lo, min(hi, 1.0))
    metrics = []
    alike = _without_spread(y, pred)
    for j, name in enumerate(REGRESSION_METRIC_NAMES):
        reason = None if np.isfinite(point[j]) else "y_true is constant"
        if reason or len(y) < MIN_ROWS_FOR_INTERVAL[name] or name in alike:
            lower = upper = float("nan")
        else:
            ends = own.get(name) or percentile_interval(boot[:, j], confidence_level)
            lower, upper = interval_holding(point[j], *ends)
        metrics.append(MetricEstimate(name, float(point[j]), lower, upper, len(y), reason))
    return RegressionReport(tuple(metrics), len(y), n_bootstrap, confidence_level, seed)


def _without_spread(y: _FloatArray, pred: _FloatArray) -> frozenset[str]:
    """The metrics every resample gives back as their point when every error is the same
    (an exact fit, or a model off by one constant), up to the rounding of ``pred - y``: the
    errors show no spread to bound them.

    >>> y = np.array([0.1, 0.7, 3.0])
    >>> sorted(_without_spread(y, y + 0.3)), sorted(_without_spread(y, y))
    (['mae', 'mean_error', 'rmse'], ['mae', 'mean_error', 'r2', 'rmse'])
    """
    if y.size == 0:
        return frozenset()
    e = pred - y
    rounding = 8 * np.finfo(np.float64).eps * max(np.abs(y).max(), np.abs(pred).max())
    if np.ptp(e) > rounding:
        return frozenset()
    return frozenset({"rmse", "mae", "mean_error"}
                     | ({"r2"} if np.abs(e).max() <= rounding else set()))


def _r2_influence(y: _FloatArray, pred: _FloatArray, r2: float) -> _FloatArray:
    """Each row's influence on r2 ``= 1 - mean(e^2) / mean(q)``: ``((1 - r2) q_i - e_i^2) /
    mean(q)``, ``q_i = (y_i - mean(y))^2`` (the derivative of the ratio; its sum is 0).

    Examples
    --------
    Labels 0, 1, 2, 3 (``q`` 2.25, 0.25, 0.25, 2.25, mean 1.25), squared errors 0.25, 0,
    0, 1: r2 = 1 - 0.3125 / 1.25 = 0.75, and the first row's ``(0.25 * 2.25 - 0.25) /
    1.25 = 0.25``:

    >>> [round(float(v), 12) for v in _r2_influence(np.array([0.0, 1.0, 2.0, 3.0]),
    ...                                      np.array([0.5, 1.0, 2.0, 4.0]), 0.75)]
    [0.25, 0.05, 0.05, -0.35]
    """
    q = (y - y.mean()) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        return ((1.0 - r2) * q - (pred - y) ** 2) / q.mean()


def _paired_moments(w: _FloatArray, y: _FloatArray, a: _FloatArray,
                    b: _FloatArray) -> tuple[_FloatArray, _FloatArray]:
    """The rmse and r2 deltas per row of counts ``w`` ``(B, N)`` and their delta-method
    standard errors: ``(B, 2)`` each, from the two models' squared errors ``a``, ``b``."""
    n = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ma, mb = w @ a / n, w @ b / n
        vaa, vbb = w @ (a * a) / n - ma**2, w @ (b * b) / n - mb**2
        vab = w @ (a * b) / n - ma * mb
        ga, gb = 0.5 / np.sqrt(ma), 0.5 / np.sqrt(mb)  # the square roots' derivatives
        var_rmse = np.maximum(ga**2 * vaa + gb**2 * vbb - 2 * ga * gb * vab, 0.0) / (n - 1.0)
        dev = y[None, :] - ((w @ y) / n)[:, None]
        q = dev * dev  # each row's squared deviation from the resample's label mean
        spread = np.einsum("bn,bn->b", w, q) / n
        r2 = (mb - ma) / spread  # r2_new - r2_old = (sse_old - sse_new) / total
        influence = ((b - a)[None, :] - r2[:, None] * q) / spread[:, None]
        var_r2 = np.einsum("bn,bn->b", w, influence**2) / n / (n - 1.0)
    return (np.column_stack([np.sqrt(ma) - np.sqrt(mb), r2]),
            np.column_stack([np.sqrt(var_rmse), np.sqrt(var_r2)]))


def _stretched(value: float, ends: tuple[float, float], influence: _FloatArray,
               confidence_level: float) -> tuple[float, float]:
    """Ends moved away from ``value`` by ``t_df / z`` (at least 1), ``df`` Satterthwaite's
    effective degrees of freedom of the rows' influence on the delta: the rmse's widening
    (:func:`_widened`) for a difference, where a few rows may carry the variance."""
    from scipy.stats import norm, t

    if not np.isfinite(influence).all():
        return ends
    level = 1.0 - 0.5 * (1.0 - confidence_level)
    df = max(satterthwaite_df(influence - influence.mean()), 1.0)
    factor = max(float(t.ppf(level, df) / norm.ppf(level)), 1.0)
    return value - factor * (value - ends[0]), value + factor * (ends[1] - value)


def _paired_studentized_ends(y: _FloatArray, new: _FloatArray, old: _FloatArray, *,
                             n_bootstrap: int, seed: int, confidence_level: float,
                             ) -> dict[str, tuple[float, float]]:
    """The rmse and r2 deltas' studentized bootstrap (bootstrap-t) intervals, standard
    errors by the delta method: for the rmse delta ``sqrt(mean a) - sqrt(mean b)`` of the
    two models' squared errors ``a``, ``b`` with their covariance, for the r2 delta ``(mean
    b - mean a) / mean q`` (``q`` the labels' squared deviations) from each row's influence
    ``(b - a - delta q) / mean q``.  The resamples are those of :func:`_point_and_resampled`
    for the seed; a delta whose standard error on the data is 0 or not finite is left out
    (percentile then)."""
    a, b = (new - y) ** 2, (old - y) ** 2
    point, point_se = _paired_moments(np.ones((1, len(y))), y, a, b)
    chunks = [_paired_moments(w, y, a, b)
              for w in bootstrap_counts(len(y), n_bootstrap=n_bootstrap, seed=seed)]
    values, ses = np.vstack([c[0] for c in chunks]), np.vstack([c[1] for c in chunks])
    ma, mb = a.mean(), b.mean()
    q = (y - y.mean()) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        influence = ((a - ma) / (2 * np.sqrt(ma)) - (b - mb) / (2 * np.sqrt(mb)),
                     (b - a - point[0, 1] * q) / q.mean())
    out: dict[str, tuple[float, float]] = {}
    for j, name in enumerate(("rmse", "r2")):
        value, se = float(point[0, j]), float(point_se[0, j])
        if not (np.isfinite(value) and np.isfinite(se) and se > 0):
            continue
        ends = studentized_interval(value, se, values[:, j], ses[:, j], confidence_level,
                                    rows=len(y))
        if np.isfinite(ends).all():
            ends = _stretched(value, ends, influence[j], confidence_level)
            out[name] = ends
    return out


def compare_regression(
    y_true: npt.ArrayLike,
    candidate_prediction: npt.ArrayLike,
    champion_prediction: npt.ArrayLike,
    *,
    n_bootstrap: int = 1000,
    confidence_level: float = 0.95,
    seed: int = 0,
) -> PairedComparison:
    """Paired bootstrap of ``candidate - champion`` for every regression metric, same rows
    (rmse and r2: studentized, see the module's docstring).

    Parameters
    ----------
    y_true : array_like of float, shape (N,)
        Observed values (finite).
    candidate_prediction, champion_prediction : array_like of float, shape (N,)
        The two models' predictions (finite).
    n_bootstrap, confidence_level, seed
        As for :func:`evaluate_regression` (the same resamples for the seed).

    Returns
    -------
    PairedComparison

    Raises
    ------
    ValueError
        Naming the argument: wrong shapes, NaN or infinite values.

    Examples
    --------
    >>> d = compare_regression([1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 5.0], [1.5, 2.0, 2.5, 5.0],
    ...                        n_bootstrap=0).by_name()["mae"]
    >>> d.candidate, d.champion, d.delta
    (0.25, 0.5, -0.25)
    """
    y, new = _check(y_true, candidate_prediction)
    _, old = _check(y, champion_prediction)
    check_confidence_level(confidence_level)
    point, boot = _point_and_resampled(y, [new, old], n_bootstrap=n_bootstrap, seed=seed)
    deltas = paired_deltas(REGRESSION_METRIC_NAMES, (point[0], point[1]), (boot[0], boot[1]),
                           n=len(y), confidence_level=confidence_level)
    if n_bootstrap > 0 and not np.array_equal(new, old):  # identical: percentile, [0, 0]
        ends = _paired_studentized_ends(y, new, old, n_bootstrap=n_bootstrap, seed=seed,
                                        confidence_level=confidence_level)
        held = {d.name: interval_holding(d.delta, *ends[d.name]) for d in deltas
                if d.name in ends and d.undefined_reason is None}
        deltas = tuple(replace(d, ci_lower=held[d.name][0], ci_upper=held[d.name][1])
                       if d.name in held else d for d in deltas)
    deltas = tuple(replace(d, ci_lower=float("nan"), ci_upper=float("nan"))
                   if len(y) < MIN_ROWS_FOR_INTERVAL[d.name] else d for d in deltas)
    return PairedComparison(deltas, len(y), n_bootstrap, confidence_level, seed)
