"""Estimated regression performance before labels arrive (direct loss estimation, DLE).

NannyML's DLE [1]_ fits a second ("nanny") model on the labelled reference that predicts each
row's absolute and squared error from the features and the prediction, then averages its
predictions over an interval. :func:`fit_nanny_model` does that with an additive spline model
(:mod:`modelgate.drift.additive_splines`: per column a cubic spline with linear tails, or a value
per category, summed; NannyML fits LightGBM) of ``|e|`` and ``e ** 2`` (``e = y - prediction``)
on [features, prediction]. It is first fitted on a random 75 % of the reference, the other 25 %
held back to measure the nanny's own error, then refitted on every row (cheap). An interval's
estimates are

    MAE  = mean over its rows of the predicted |e|
    RMSE = sqrt(mean over its rows of the predicted e ** 2)

so they follow a shift in any feature the errors depend on, including one the model ignores.
The mean is exact and needs no per-row prediction (the model is linear in its coefficients: the
interval's mean basis row times them), which keeps a 1M-row interval cheap. Beyond the
reference's range each spline continues along a line from its edge (trees stay flat there); such rows
are counted (``n_outside_reference``: prediction or a numeric feature outside the reference's
range). ``kind="trees"`` fits the former nanny, two scikit-learn ``HistGradientBoostingRegressor``
(tens of milliseconds per 5,000 rows against under 3 ms); references stored with it still load
and estimate.

The older :func:`fit_error_model` (a histogram of the reference's errors over 20 quantile bins of
the PREDICTION only, numpy only) is kept because estimation references pickled before the nanny
model hold it (the drift pipeline still estimates with them); it cannot follow a
shift the prediction does not show, and its open-ended end bins bias it under shifts into them.

Intervals (estimated)
---------------------
Nanny model: the realised MAE of an interval differs from the estimate by (a) the rows' own luck,
``(1/n) sum(|e_i| - E[|e_i| | x_i])``, independent across rows with variance
``sum var(|e| | x_i) / n ** 2`` where ``var(|e| | x) = E[e ** 2 | x] - E[|e| | x] ** 2`` comes from
the nanny's two outputs themselves, and (b) the nanny's own error averaged over the interval,
which does not shrink with ``n``. (b) is the larger of two measures of it: its fitting noise over
this interval's rows (the spline model's sandwich variance of the mean, largest for an interval
shifted into the reference's thin tails) and its systematic error on the held-back rows: for each
column (every feature, the prediction and the predicted loss) the size-weighted mean over its
decile groups of (the group's mean residual squared less that mean's sampling variance), the
largest over the columns, since a covariate shift concentrates an interval in a region of some
column. For the MSE, (a) uses ``var(e ** 2 | x) = c E[e ** 2 | x] ** 2`` (errors of one shape
scaled by ``x``; ``c = 2`` for normal errors), ``c`` fitted on the held-back rows as
``sum (e ** 2 - predicted) ** 2 / sum predicted ** 2``. Over more than 65,536 rows, (a)'s sums are
taken over that many evenly spaced rows and scaled (there (a) is a small part). The standard
error is ``sqrt((a) + (b))``; the RMSE's is the MSE's over ``2 RMSE`` (delta method). The
interval is ``estimate +/- z * standard error``, ``z`` from ``confidence``, floored at 0.

Binned model: each row's loss is a draw from its bin's reference distribution, so the realised
MAE has variance ``sum of var(|e| | bin) / n ** 2`` and the MSE ``sum of var(e ** 2 | bin) / n ** 2``.

References
----------
.. [1] NannyML, "Performance estimation: DLE",
   https://nannyml.readthedocs.io/en/stable/how_it_works/performance_estimation.html
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy.stats import norm

from modelgate.records import finite_or_none

__all__ = ["BinnedErrorModel", "NannyErrorModel", "RegressionEstimate", "estimate_regression",
           "fit_error_model", "fit_nanny_model"]

#: Default number of prediction bins of the error model.
DEFAULT_BINS = 20


def _finite_1d(values: ArrayLike, name: str) -> NDArray[np.float64]:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional; got shape {arr.shape!r}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} holds {int((~np.isfinite(arr)).sum())} missing or infinite values")
    return arr


def _readonly(arr: NDArray[Any]) -> NDArray[Any]:
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, slots=True, eq=False)
class BinnedErrorModel:
    """Reference errors of a regression model by bin of its prediction.

    Attributes
    ----------
    edges : ndarray
        Inner bin edges, increasing (``len(edges) + 1`` bins; read-only).
    abs_mean, abs_var, sq_mean, sq_var : ndarray
        Per bin: mean and variance of ``|e|`` and of ``e ** 2`` on the reference (read-only).
    n : int
        Reference rows.
    low, high : float
        Smallest and largest reference prediction.
    """

    edges: NDArray[np.float64]
    abs_mean: NDArray[np.float64]
    abs_var: NDArray[np.float64]
    sq_mean: NDArray[np.float64]
    sq_var: NDArray[np.float64]
    n: int
    low: float
    high: float

    def bin_of(self, predictions: ArrayLike) -> NDArray[np.intp]:
        """Bin index of each prediction (values below or above the reference go to the ends)."""
        return np.searchsorted(self.edges, _finite_1d(predictions, "predictions"), side="right")


def fit_error_model(predictions: ArrayLike, targets: ArrayLike, *,
                    n_bins: int = DEFAULT_BINS) -> BinnedErrorModel:
    """The binned error model of the labelled reference.

    Parameters
    ----------
    predictions, targets : array_like of float
        The model's predictions and the true values on the reference.
    n_bins : int, default 20
        Reference-quantile bins of the prediction (fewer when predictions repeat).

    Returns
    -------
    BinnedErrorModel

    Raises
    ------
    ValueError
        Empty, mismatched or non-finite inputs, or ``n_bins < 1``.

    Examples
    --------
    >>> m = fit_error_model([1.0, 2.0, 3.0, 4.0], [1.5, 1.5, 3.0, 6.0], n_bins=2)
    >>> m.edges.tolist(), m.abs_mean.tolist()
    ([3.0], [0.5, 1.0])
    """
    pred, y = _finite_1d(predictions, "predictions"), _finite_1d(targets, "targets")
    if pred.shape != y.shape or pred.size == 0:
        raise ValueError(f"predictions and targets must be non-empty and of one length; got "
                         f"{pred.size} and {y.size}")
    if n_bins < 1:
        raise ValueError(f"n_bins must be at least 1; got {n_bins!r}")
    # Edges are reference values (the "higher" quantile), above the minimum: every bin then
    # holds at least the value at its left edge, so none is empty.
    edges = np.unique(np.quantile(pred, np.arange(1, n_bins) / n_bins, method="higher"))
    edges = edges[edges > pred.min()]
    bins = np.searchsorted(edges, pred, side="right")
    counts = np.bincount(bins, minlength=edges.size + 1).astype(np.float64)
    err = y - pred

    def mean_var(loss: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        mean = np.bincount(bins, weights=loss, minlength=counts.size) / counts
        var = np.bincount(bins, weights=(loss - mean[bins]) ** 2, minlength=counts.size) / counts
        return _readonly(mean), _readonly(var)

    abs_mean, abs_var = mean_var(np.abs(err))
    sq_mean, sq_var = mean_var(err * err)
    return BinnedErrorModel(_readonly(edges), abs_mean, abs_var, sq_mean, sq_var, int(pred.size),
                            float(pred.min()), float(pred.max()))


@dataclass(frozen=True, slots=True)
class RegressionEstimate:
    """Estimated MAE and RMSE of a regression model on one interval (no labels used).

    Attributes
    ----------
    n : int
    confidence : float
    n_outside_reference : int
        Rows predicted outside the reference's range: their error is extrapolated (the end
        bins'), so a large share makes the estimate a guess.
    mae, mae_standard_error, mae_lower, mae_upper : float
    rmse, rmse_standard_error, rmse_lower, rmse_upper : float
    """

    n: int
    confidence: float
    n_outside_reference: int
    mae: float
    mae_standard_error: float
    mae_lower: float
    mae_upper: float
    rmse: float
    rmse_standard_error: float
    rmse_lower: float
    rmse_upper: float

    def to_record(self) -> dict[str, Any]:
        """Plain values; undefined numbers are ``None``."""
        return {"n": self.n, "confidence": self.confidence,
                "n_outside_reference": self.n_outside_reference,
                **{k: finite_or_none(getattr(self, k)) for k in (
                    "mae", "mae_standard_error", "mae_lower", "mae_upper",
                    "rmse", "rmse_standard_error", "rmse_lower", "rmse_upper")}}


def estimate_regression(model: BinnedErrorModel | NannyErrorModel, predictions: ArrayLike, *,
                        features: pd.DataFrame | None = None,
                        confidence: float = 0.95) -> RegressionEstimate:
    """Estimated MAE and RMSE of one interval's predictions.

    Parameters
    ----------
    model : NannyErrorModel or BinnedErrorModel
        From :func:`fit_nanny_model` or :func:`fit_error_model` on the reference.
    predictions : array_like of float
        The model's predictions on the interval.
    features : pandas.DataFrame, optional
        The interval's feature columns, row for row (required by the nanny model, unused by
        the binned one).
    confidence : float, default 0.95

    Returns
    -------
    RegressionEstimate
        NaN estimates for an empty interval.

    Examples
    --------
    >>> m = fit_error_model([1.0, 2.0, 3.0, 4.0], [1.5, 1.5, 3.0, 6.0], n_bins=2)
    >>> estimate_regression(m, [3.5, 3.6]).mae
    1.0
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1); got {confidence!r}")
    z = float(norm.ppf(0.5 + confidence / 2.0))
    if isinstance(model, NannyErrorModel):
        return _estimate_nanny(model, predictions, features, confidence, z)
    pred = _finite_1d(predictions, "predictions")
    bins = model.bin_of(pred)
    n = bins.size
    if n == 0:
        nan = math.nan
        return RegressionEstimate(0, confidence, 0, nan, nan, nan, nan, nan, nan, nan, nan)
    outside = int(np.count_nonzero((pred < model.low) | (pred > model.high)))
    counts = np.bincount(bins, minlength=model.abs_mean.size).astype(np.float64)
    mae = float(counts @ model.abs_mean) / n
    mae_se = math.sqrt(float(counts @ model.abs_var)) / n
    mse = float(counts @ model.sq_mean) / n
    mse_se = math.sqrt(float(counts @ model.sq_var)) / n
    rmse = math.sqrt(mse)
    rmse_se = mse_se / (2.0 * rmse) if rmse > 0 else 0.0
    return RegressionEstimate(n, confidence, outside,
                              mae, mae_se, max(0.0, mae - z * mae_se), mae + z * mae_se,
                              rmse, rmse_se, max(0.0, rmse - z * rmse_se), rmse + z * rmse_se)


# --- the nanny model (DLE) ---------------------------------------------------------------------

#: Share of the reference held back to measure the nanny model's own error.
DEFAULT_HOLDOUT = 0.25
#: Groups of held-back rows (by each column) over which the nanny's systematic error is measured.
_GROUPS = 10
#: Most rows whose per-row loss predictions feed the sampling variance (evenly spaced beyond).
_ROWWISE_MAX = 65_536
#: Most categories kept per categorical feature (the trees' limit: 255 bins, one for missing; it
#: also bounds the spline model's table); rarer ones and ones unseen on the reference count as
#: missing.
MAX_CATEGORIES = 254


@dataclass(frozen=True, slots=True, eq=False)
class NannyErrorModel:
    """Per-row expected ``|e|`` and ``e ** 2`` of a regression model, from its features.

    Attributes
    ----------
    features : tuple of str
        Feature columns, in the order the nanny models read them (the prediction comes last).
    categories : dict of str to tuple of str
        Categorical features and the reference categories each keeps (codes in that order).
    abs_model : AdditiveSplineRegressor or HistGradientBoostingRegressor
        The additive spline model of both ``|e|`` and ``e ** 2`` (outputs 0 and 1) from
        [features, prediction], refitted on the whole reference; or, in references stored
        before it, the gradient-boosted trees of ``|e|`` (fitted on the reference's fitting part).
    sq_model : HistGradientBoostingRegressor or None
        The trees of ``e ** 2``; ``None`` with the spline model.
    sq_scale : float
        ``c`` in ``var(e ** 2 | x) = c * E[e ** 2 | x] ** 2``, from the held-back rows.
    abs_model_var, sq_model_var : float
        The nanny's systematic error variance for the MAE and the MSE (held-back rows).
    n, n_holdout : int
        Reference rows, and those held back.
    low, high : dict of str to float
        Smallest and largest reference value of each numeric feature and of the prediction
        (key ``""``).
    """

    features: tuple[str, ...]
    categories: dict[str, tuple[str, ...]]
    abs_model: Any
    sq_model: Any
    sq_scale: float
    abs_model_var: float
    sq_model_var: float
    n: int
    n_holdout: int
    low: dict[str, float]
    high: dict[str, float]

    def design(self, features: pd.DataFrame, predictions: ArrayLike) -> NDArray[np.float64]:
        """The nanny models' input: numeric features (NaN: missing or not a number, as live data
        may hold), category codes (NaN: missing or unknown) and the prediction, as floats."""
        return _design(features, _finite_1d(predictions, "predictions"), self.features,
                       self.categories, strict=False)

    def losses(self, features: pd.DataFrame,
               predictions: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Each row's expected ``|e|`` and ``e ** 2`` (floored at 0)."""
        return self.predict_design(self.design(features, predictions))

    def predict_design(self, x: NDArray[np.float64]) -> tuple[NDArray[np.float64],
                                                              NDArray[np.float64]]:
        """Expected ``|e|`` and ``e ** 2`` per row of a design matrix (floored at 0)."""
        if x.shape[0] == 0:
            return np.zeros(0), np.zeros(0)
        if self.sq_model is None:
            both = self.abs_model.predict(x)
            return np.maximum(both[:, 0], 0.0), np.maximum(both[:, 1], 0.0)
        return (np.maximum(self.abs_model.predict(x), 0.0),
                np.maximum(self.sq_model.predict(x), 0.0))


def _design(features: pd.DataFrame, pred: NDArray[np.float64], names: tuple[str, ...],
            categories: dict[str, tuple[str, ...]], *, strict: bool) -> NDArray[np.float64]:
    missing = [f for f in names if f not in features.columns]
    if missing:
        raise ValueError(f"features lack column(s) {missing} the error model was fitted on")
    if len(features) != pred.size:
        raise ValueError(f"features have {len(features)} rows but there are {pred.size} predictions")
    cols = []
    for f in names:
        col = features[f]
        if f in categories:
            cols.append(_category_codes(col, categories[f]))
        else:
            try:
                values = pd.to_numeric(col, errors="raise" if strict else "coerce").to_numpy(
                    np.float64, na_value=np.nan)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"numeric feature {f!r} holds non-numeric values: {exc}") from None
            cols.append(np.where(np.isfinite(values), values, np.nan))
    cols.append(pred)
    # column-major: the spline model reads one column at a time
    out = np.empty((pred.size, len(cols)), order="F")
    for j, col in enumerate(cols):
        out[:, j] = col
    return out


def _category_codes(col: pd.Series, categories: tuple[str, ...]) -> NDArray[np.float64]:
    """Each value's code among ``categories`` (matched as ``str(value)``), NaN for missing or
    unknown. The distinct values are found first (in C), so only they are converted."""
    inverse, distinct = pd.factorize(col, use_na_sentinel=True)
    position = {c: float(i) for i, c in enumerate(categories)}
    per_distinct = np.array([position.get(v if isinstance(v, str) else str(v), np.nan)
                             for v in distinct] + [np.nan])
    return per_distinct[inverse]  # the sentinel -1 (missing) takes the last entry, NaN


def _nanny(kind: str, mask: NDArray[np.bool_], random_state: int, x: NDArray[np.float64],
           err: NDArray[np.float64]) -> tuple[Any, Any]:
    """The fitted loss model(s): one additive spline model of both losses, or two GBMs."""
    if kind == "spline":
        from modelgate.drift.additive_splines import fit_additive_splines

        return fit_additive_splines(x, np.column_stack([np.abs(err), err * err]),
                                    categorical=mask), None
    from sklearn.ensemble import HistGradientBoostingRegressor

    return tuple(HistGradientBoostingRegressor(
        categorical_features=mask, early_stopping=False, random_state=random_state).fit(x, y)
        for y in (np.abs(err), err * err))


def _model_var(resid: NDArray[np.float64], columns: list[NDArray[np.float64]]) -> float:
    """Systematic error variance of a nanny model on held-back rows: for each column, the mean
    squared residual of its decile groups less each group mean's sampling variance; the largest
    over the columns."""
    worst = 0.0
    for col in columns:
        order = np.argsort(col, kind="stable")  # missing values (NaN) form the last groups
        groups = [g for g in np.array_split(order, min(_GROUPS, resid.size)) if g.size > 1]
        if groups:
            excess = [float(np.mean(resid[g])) ** 2 - float(np.var(resid[g], ddof=1)) / g.size
                      for g in groups]
            worst = max(worst, float(np.average(excess, weights=[g.size for g in groups])))
    return worst


def fit_nanny_model(features: pd.DataFrame, predictions: ArrayLike, targets: ArrayLike, *,
                    categorical: tuple[str, ...] | list[str] = (), holdout: float = DEFAULT_HOLDOUT,
                    kind: Literal["spline", "trees"] = "spline",
                    random_state: int = 0) -> NannyErrorModel:
    """The nanny error model (NannyML's DLE) of the labelled reference.

    An additive spline model (:func:`~modelgate.drift.additive_splines.fit_additive_splines`)
    learns ``|e|`` and ``e ** 2`` (``e = y - prediction``) from every feature column of
    ``features`` and the prediction, on a random ``1 - holdout`` of the rows; the held-back rows
    measure the nanny's own error (see the module docstring, "Intervals"), then the model is
    refitted on every row.

    Parameters
    ----------
    features : pandas.DataFrame
        The reference's feature columns (any not in ``categorical`` must be numeric; missing
        values allowed), one row per prediction.
    predictions, targets : array_like of float
        The model's predictions and the true values on the reference.
    categorical : sequence of str
        The categorical columns of ``features``.
    holdout : float, default 0.25
        Share of rows held back (at least one row; none is fitted on them).
    kind : {"spline", "trees"}, default "spline"
        ``"trees"``: the former nanny, two scikit-learn ``HistGradientBoostingRegressor``
        (categorical features split natively), fitted on the fitting part only.
    random_state : int, default 0
        Seeds the split and the regressors.

    Returns
    -------
    NannyErrorModel

    Raises
    ------
    ValueError
        Fewer than two rows, mismatched or non-finite predictions/targets, a categorical name
        that is no column, a non-numeric numeric feature, ``holdout`` outside (0, 1) or an
        unknown ``kind``.

    Examples
    --------
    Every error is 1, so the expected ``|e|`` and ``e ** 2`` are 1 whatever the features:

    >>> feats = pd.DataFrame({"x": np.arange(40.0), "c": ["a", "b"] * 20})
    >>> m = fit_nanny_model(feats, np.arange(40.0), np.arange(40.0) + 1, categorical=["c"])
    >>> [round(float(v[0]), 6) for v in m.losses(feats.head(1), [3.0])]
    [1.0, 1.0]
    >>> round(estimate_regression(m, [3.0, 7.0], features=feats.head(2)).rmse, 6)
    1.0
    """
    pred, y = _finite_1d(predictions, "predictions"), _finite_1d(targets, "targets")
    if pred.shape != y.shape or pred.size < 2:
        raise ValueError(f"predictions and targets must have one length of at least 2; got "
                         f"{pred.size} and {y.size}")
    if not 0.0 < holdout < 1.0:
        raise ValueError(f"holdout must be in (0, 1); got {holdout!r}")
    if kind not in ("spline", "trees"):
        raise ValueError(f"kind must be 'spline' or 'trees'; got {kind!r}")
    unknown = sorted(set(categorical) - set(features.columns))
    if unknown:
        raise ValueError(f"categorical column(s) {unknown} are not among the features "
                         f"{list(features.columns)}")
    names = tuple(str(c) for c in features.columns)
    categories = {}
    for f in names:
        if f in categorical:
            counts = features[f].dropna().map(str).value_counts(sort=True)
            categories[f] = tuple(sorted(counts.index[:MAX_CATEGORIES]))
    x = _design(features, pred, names, categories, strict=True)
    err = y - pred
    rng = np.random.default_rng(random_state)
    n_hold = min(pred.size - 1, max(1, round(holdout * pred.size)))
    held = np.zeros(pred.size, dtype=bool)
    held[rng.choice(pred.size, size=n_hold, replace=False)] = True
    mask = np.array([f in categories for f in names] + [False])
    abs_model, sq_model = _nanny(kind, mask, random_state, x[~held], err[~held])
    model = NannyErrorModel(names, categories, abs_model, sq_model, 0.0, 0.0, 0.0, 0, 0, {}, {})
    a_hat, s_hat = model.predict_design(x[held])
    a_res, s_res = np.abs(err[held]) - a_hat, err[held] ** 2 - s_hat
    denom = float(np.sum(s_hat ** 2))
    sq_scale = float(np.sum(s_res ** 2)) / denom if denom > 0 else 0.0
    numeric = [i for i, f in enumerate(names) if f not in categories]
    low = {names[i]: float(np.nanmin(x[:, i])) for i in numeric if np.isfinite(x[:, i]).any()}
    high = {names[i]: float(np.nanmax(x[:, i])) for i in numeric if np.isfinite(x[:, i]).any()}
    low[""], high[""] = float(pred.min()), float(pred.max())
    cols = list(x[held].T)
    if kind == "spline":
        # cheap to refit: the stored model uses every row (the held-back ones measured its error)
        abs_model, sq_model = _nanny(kind, mask, random_state, x, err)
    return NannyErrorModel(names, categories, abs_model, sq_model, sq_scale,
                           _model_var(a_res, [a_hat, *cols]), _model_var(s_res, [s_hat, *cols]),
                           int(pred.size), int(n_hold), low, high)


def _outside(model: NannyErrorModel, x: NDArray[np.float64]) -> int:
    """Rows of the design ``x`` with the prediction (last column) or a numeric feature outside
    the reference's range."""
    pred = x[:, -1]
    out = (pred < model.low[""]) | (pred > model.high[""])
    for j, f in enumerate(model.features):
        if f in model.low:
            v = x[:, j]
            out |= (v < model.low[f]) | (v > model.high[f])
    return int(np.count_nonzero(out))


def _estimate_nanny(model: NannyErrorModel, predictions: ArrayLike, features: pd.DataFrame | None,
                    confidence: float, z: float) -> RegressionEstimate:
    if features is None:
        raise ValueError("the nanny error model needs the interval's feature columns "
                         f"{list(model.features)}; got none")
    pred = _finite_1d(predictions, "predictions")
    x = model.design(features, pred)
    n = pred.size
    if n == 0:
        nan = math.nan
        return RegressionEstimate(0, confidence, 0, nan, nan, nan, nan, nan, nan, nan, nan)
    if model.sq_model is None:  # additive splines: exact means from the mean basis row
        means, fit_var = model.abs_model.mean(x)
        mae, mse = max(float(means[0]), 0.0), max(float(means[1]), 0.0)
        # the per-row variance sums from evenly spaced rows of a large interval, scaled: there
        # they are a small part of the standard error, and this keeps 1M rows cheap
        sub = x[::-(-n // _ROWWISE_MAX)]
        a_hat, s_hat = model.predict_design(sub)
        scale = n / sub.shape[0]
    else:
        a_hat, s_hat = model.predict_design(x)
        mae, mse, fit_var, scale = float(a_hat.mean()), float(s_hat.mean()), np.zeros(2), 1.0
    # per-row sampling variance (var |e| = E e^2 - (E|e|)^2), and the nanny's own error over
    # these rows: the larger of its fitting noise and its systematic error on held-back rows
    mae_se = math.sqrt(scale * float(np.sum(np.maximum(s_hat - a_hat ** 2, 0.0))) / n ** 2
                       + max(float(fit_var[0]), model.abs_model_var))
    mse_se = math.sqrt(scale * model.sq_scale * float(np.sum(s_hat ** 2)) / n ** 2
                       + max(float(fit_var[1]), model.sq_model_var))
    rmse = math.sqrt(mse)
    rmse_se = mse_se / (2.0 * rmse) if rmse > 0 else 0.0
    return RegressionEstimate(n, confidence, _outside(model, x),
                              mae, mae_se, max(0.0, mae - z * mae_se), mae + z * mae_se,
                              rmse, rmse_se, max(0.0, rmse - z * rmse_se), rmse + z * rmse_se)
