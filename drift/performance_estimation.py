"""Estimated classifier performance before labels arrive (confidence-based, as NannyML's CBPE).

Labels reach a production model days or weeks late; its scores arrive at once. When the scores
are calibrated probabilities, ``p_i = P(y_i = 1 | score_i)``, the expected confusion matrix of an
interval follows from its scores alone [1]_. With a row predicted positive when its score is at
least the model's threshold ``t``:

    E[TP] = sum of p_i over s_i >= t        E[FP] = sum of (1 - p_i) over s_i >= t
    E[FN] = sum of p_i over s_i <  t        E[TN] = sum of (1 - p_i) over s_i <  t

Accuracy, precision, recall and F1 are computed on the expected matrix. The expected ROC AUC
ranks rows by the model's raw score (the ranking the realised AUC will judge) and weights each
row as ``p_i`` of a positive and ``1 - p_i`` of a negative: the area under the ROC curve whose
true and false positive rates at every cut are the expected ones (NannyML's definition).

Calibration
-----------
Model scores are rarely calibrated, so a calibrator is fitted on the labelled held-out set the
model was promoted on (the reference): isotonic regression of the label on the score
(``scipy.optimize.isotonic_regression`` on the distinct scores weighted by their counts), applied
by linear interpolation between the fitted points and clipped outside them, the same function as
scikit-learn's ``IsotonicRegression(out_of_bounds="clip")`` (the tests compare the two). The
estimate is only as good as the calibration: it assumes ``P(y | score)`` is the same on the
interval as on the reference (covariate shift is fine, concept shift is not) [1]_.

Multiclass models are estimated one-vs-rest: one calibrator per class, calibrated rows
renormalised to sum to 1, the predicted class the argmax of the raw probabilities; each class is
a binary problem (predicted ``c`` or not), and the macro averages are reported.

Intervals (estimated, not exact)
--------------------------------
The interval covers the metric the labels will give, not the estimate's own error. Given the
interval's calibrated scores, each label is an independent Bernoulli(``p_i``), so the realised
TP and FN are independent sums with variances ``sum p(1 - p)`` over their rows (and FP is the
predicted positives minus TP). The calibrator's own error (a finite reference) is the second
part: each isotonic block's fitted rate has a binomial variance over its reference rows and is
shared by every interval row in the block, which makes TP and FN covary. Accuracy and precision
are linear in (TP, FN); recall and F1 are ratios, taken to first order (delta method), each part
on its own. The two parts' standard errors are added, not taken in quadrature: the calibrator's
error is one draw shared by every interval of a reference, so in quadrature an unlucky draw
(1.6 of its standard errors, seed 11 of the bench) leaves every interval of that reference
off-centre and undercovering (86.5 % at nominal 95 %); added, every interval covers at least
the nominal rate whenever the draw is within its own ``z`` standard errors. (A bootstrap of the
isotonic fit gives the same calibrator variance as the block variances here, and coverage did
not change with it.) For ROC AUC
the Hanley-McNeil standard error [2]_ at the estimated AUC and the expected numbers of positives
and negatives is used; it also counts score sampling, so it is a little wide. A macro average's
standard error is the mean of the classes' (an upper bound whatever their correlation). The
interval is ``estimate +/- z * standard error``, ``z`` from ``confidence``, clipped to [0, 1].
NannyML instead uses 3 standard deviations of the metric on reference chunks, scaled by the
chunk size [3]_; conditioning on the interval's own scores follows shifts in the score
distribution. Coverage by simulation is in ``tests/drift/test_performance_estimation_sim.py`` and
``bench/RESULTS.md``: at nominal 95%, at least 94% per metric and seed on covariate-shifted
intervals of 5,000 rows with references of 50,000 and 200,000 rows.

References
----------
.. [1] NannyML, "Performance estimation: CBPE",
   https://nannyml.readthedocs.io/en/stable/how_it_works/performance_estimation.html
.. [2] Hanley, McNeil (1982). The meaning and use of the area under a receiver operating
   characteristic (ROC) curve. Radiology 143(1), 29-36.
.. [3] NannyML, "Estimation of standard error",
   https://nannyml.readthedocs.io/en/stable/how_it_works/estimation_of_standard_error.html
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import isotonic_regression
from scipy.stats import norm

from modelgate.records import finite_or_none

__all__ = [
    "BINARY_METRICS",
    "ClassificationEstimate",
    "EstimatedMetric",
    "IsotonicCalibrator",
    "MulticlassReference",
    "estimate_binary",
    "estimate_multiclass",
    "expected_roc_auc",
    "fit_isotonic",
    "fit_multiclass",
]

#: The metrics every classification estimate carries, in this order.
BINARY_METRICS = ("roc_auc", "accuracy", "precision", "recall", "f1")


def _readonly(arr: NDArray[Any]) -> NDArray[Any]:
    arr.setflags(write=False)
    return arr


def _finite_1d(values: ArrayLike, name: str) -> NDArray[np.float64]:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional; got shape {arr.shape!r}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} holds {int((~np.isfinite(arr)).sum())} missing or infinite values")
    return arr


def _in_unit_interval(arr: NDArray[np.float64], name: str) -> NDArray[np.float64]:
    """``arr`` (finite) if every value is a probability, else a ValueError naming ``name``."""
    outside = np.clip(arr, 0.0, 1.0) != arr
    if outside.any():
        raise ValueError(f"{name} must lie in [0, 1]; {int(outside.sum())} do not "
                         f"(first: {float(arr[outside][0])!r})")
    return arr


@dataclass(frozen=True, slots=True, eq=False)
class IsotonicCalibrator:
    """A non-decreasing map from a model's score to the probability of the positive class.

    Attributes
    ----------
    x : ndarray
        Distinct reference scores, increasing (read-only).
    y : ndarray
        Calibrated probability at each of ``x`` (non-decreasing, in [0, 1]; read-only).
    n : int
        Reference rows it was fitted on.
    block : ndarray of int
        Index of the isotonic block (run of equal fitted values) each of ``x`` is in.
    block_variance : ndarray
        Sampling variance of each block's fitted value: ``q (1 - q) / (m + 2)`` for a block
        of ``m`` rows with Laplace-smoothed rate ``q = (m y + 1) / (m + 2)`` (so a block fitted
        at 0 or 1 is not taken as certain).
    """

    x: NDArray[np.float64]
    y: NDArray[np.float64]
    n: int
    block: NDArray[np.intp]
    block_variance: NDArray[np.float64]

    def block_of(self, scores: NDArray[np.float64]) -> NDArray[np.intp]:
        """The block of the fitted point nearest each score."""
        right = np.clip(np.searchsorted(self.x, scores), 1, max(self.x.size - 1, 1))
        left = right - 1
        nearest = np.where(np.abs(scores - self.x[left]) <= np.abs(self.x[np.minimum(right, self.x.size - 1)]
                                                                   - scores), left,
                           np.minimum(right, self.x.size - 1))
        # above the last point it is the nearest: far above, both distances round to one float
        nearest = np.where(scores > self.x[-1], self.x.size - 1, nearest)
        return self.block[nearest]

    def apply(self, scores: ArrayLike) -> NDArray[np.float64]:
        """Calibrated probabilities of ``scores``: linear between the fitted points, clipped
        to the end values outside them.

        Examples
        --------
        >>> cal = fit_isotonic([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1])
        >>> cal.apply([0.0, 0.25, 0.4]).tolist()
        [0.0, 0.5, 1.0]
        """
        return np.interp(_finite_1d(scores, "scores"), self.x, self.y)

    def to_record(self) -> dict[str, Any]:
        """Plain values (for storing the calibrator with a reference)."""
        return {"x": self.x.tolist(), "y": self.y.tolist(), "n": self.n,
                "block": self.block.tolist(), "block_variance": self.block_variance.tolist()}


def fit_isotonic(scores: ArrayLike, labels: ArrayLike) -> IsotonicCalibrator:
    """Isotonic regression of 0/1 ``labels`` on ``scores`` (pool adjacent violators).

    Parameters
    ----------
    scores : array_like of float
        Model scores of the labelled reference rows.
    labels : array_like
        1 for the positive class, 0 otherwise (bool accepted).

    Returns
    -------
    IsotonicCalibrator

    Raises
    ------
    ValueError
        Empty or mismatched inputs, non-finite scores, or labels other than 0 and 1.

    Examples
    --------
    >>> cal = fit_isotonic([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1])
    >>> cal.y.tolist()
    [0.0, 0.5, 0.5, 1.0]
    """
    s = _finite_1d(scores, "scores")
    y = np.asarray(labels)
    if y.shape != s.shape or s.size == 0:
        raise ValueError(f"scores and labels must be non-empty and of one length; got {s.size} "
                         f"and {y.size}")
    if not np.isin(y, (0, 1)).all():
        raise ValueError(f"labels must be 0 or 1; got {np.unique(y)[:5].tolist()!r}")
    x, inverse, counts = np.unique(s, return_inverse=True, return_counts=True)
    mean = np.bincount(inverse, weights=y.astype(np.float64)) / counts
    result = isotonic_regression(mean, weights=counts.astype(np.float64), increasing=True)
    starts = result.blocks[:-1]
    block = np.repeat(np.arange(starts.size), np.diff(result.blocks))
    m = np.add.reduceat(counts, starts).astype(np.float64)
    q = (m * result.x[starts] + 1.0) / (m + 2.0)
    # Only each block's first and last points shape the interpolated function (as scikit-learn
    # drops the others): a few points instead of every distinct score keeps apply() fast.
    keep = np.unique(np.concatenate([starts, result.blocks[1:] - 1]))
    return IsotonicCalibrator(_readonly(x[keep]), _readonly(np.clip(result.x[keep], 0.0, 1.0)),
                              int(s.size), _readonly(block[keep]),
                              _readonly(q * (1.0 - q) / (m + 2.0)))


@dataclass(frozen=True, slots=True)
class EstimatedMetric:
    """One estimated metric with its interval for the realised value.

    Attributes
    ----------
    metric : str
        One of :data:`BINARY_METRICS`.
    estimate : float
        NaN when undefined (e.g. precision with no predicted positive).
    standard_error : float
        Of the realised metric; for accuracy, precision, recall and F1 the label-noise and
        calibrator parts added (an upper bound of their root sum of squares).
    lower, upper : float
        ``estimate -/+ z * standard_error`` clipped to [0, 1].
    """

    metric: str
    estimate: float
    standard_error: float
    lower: float
    upper: float

    def to_record(self) -> dict[str, Any]:
        """Plain values; undefined numbers are ``None``."""
        return {"metric": self.metric, "estimate": finite_or_none(self.estimate),
                "standard_error": finite_or_none(self.standard_error),
                "lower": finite_or_none(self.lower), "upper": finite_or_none(self.upper)}


@dataclass(frozen=True, slots=True)
class ClassificationEstimate:
    """Estimated performance of a classifier on one interval (no labels used).

    Attributes
    ----------
    n : int
        Rows of the interval.
    confidence : float
        Coverage the intervals aim at.
    expected_tp, expected_fp, expected_fn, expected_tn : float
        Expected confusion matrix (binary; summed over classes one-vs-rest for multiclass).
    metrics : tuple of EstimatedMetric
        In :data:`BINARY_METRICS` order (macro averages for multiclass).
    per_class : tuple of (str, tuple of EstimatedMetric)
        Multiclass only: each class's one-vs-rest metrics; empty for binary.
    """

    n: int
    confidence: float
    expected_tp: float
    expected_fp: float
    expected_fn: float
    expected_tn: float
    metrics: tuple[EstimatedMetric, ...]
    per_class: tuple[tuple[str, tuple[EstimatedMetric, ...]], ...] = ()

    def metric(self, name: str) -> EstimatedMetric:
        """The estimate of metric ``name``."""
        for m in self.metrics:
            if m.metric == name:
                return m
        raise KeyError(f"metric {name!r} is not estimated; have {[m.metric for m in self.metrics]}")

    def to_record(self) -> dict[str, Any]:
        """Plain values: counts, then ``metrics`` (and ``per_class``) as lists of records."""
        return {"n": self.n, "confidence": self.confidence,
                "expected_tp": self.expected_tp, "expected_fp": self.expected_fp,
                "expected_fn": self.expected_fn, "expected_tn": self.expected_tn,
                "metrics": [m.to_record() for m in self.metrics],
                "per_class": [{"class": c, "metrics": [m.to_record() for m in ms]}
                              for c, ms in self.per_class]}


def expected_roc_auc(scores: ArrayLike, probabilities: ArrayLike) -> float:
    """ROC AUC expected when row ``i`` is positive with probability ``probabilities[i]``,
    rows ranked by ``scores`` (ties count one half).

    Returns NaN when the expected number of positives or negatives is 0.

    Examples
    --------
    Scores uniform on [0, 1] and calibrated have expected AUC 5/6:

    >>> s = (np.arange(100_000) + 0.5) / 100_000
    >>> round(expected_roc_auc(s, s), 4)
    0.8333
    """
    s = _finite_1d(scores, "scores")
    p = _in_unit_interval(_finite_1d(probabilities, "probabilities"), "probabilities")
    if s.size != p.size:
        raise ValueError(f"scores and probabilities must be of one length; got {s.size} and {p.size}")
    order = np.argsort(s)
    return _expected_auc_sorted(s[order], p[order])


def _expected_auc_sorted(s_sorted: NDArray[np.float64], p_sorted: NDArray[np.float64]) -> float:
    if s_sorted.size == 0:
        return math.nan
    starts = np.flatnonzero(np.r_[True, s_sorted[1:] != s_sorted[:-1]])  # runs of tied scores
    pos = np.add.reduceat(p_sorted, starts)
    neg = (np.diff(np.r_[starts, s_sorted.size]) - pos)
    total_pos, total_neg = float(pos.sum()), float(neg.sum())
    if total_pos <= 0.0 or total_neg <= 0.0:
        return math.nan
    below = np.cumsum(neg) - neg
    return float(np.dot(pos, below + 0.5 * neg) / (total_pos * total_neg))


def _hanley_mcneil(auc: float, n_pos: float, n_neg: float) -> float:
    if not math.isfinite(auc) or n_pos <= 1.0 or n_neg <= 1.0:
        return math.nan
    q1, q2 = auc / (2.0 - auc), 2.0 * auc * auc / (1.0 + auc)
    var = (auc * (1 - auc) + (n_pos - 1) * (q1 - auc * auc) + (n_neg - 1) * (q2 - auc * auc))
    return math.sqrt(max(var, 0.0) / (n_pos * n_neg))


def _ratio(num: float, den: float) -> float:
    return num / den if den > 0.0 else math.nan


def _interval(metric: str, estimate: float, se: float, z: float) -> EstimatedMetric:
    if not math.isfinite(estimate):
        return EstimatedMetric(metric, math.nan, math.nan, math.nan, math.nan)
    se = se if math.isfinite(se) else math.nan
    half = z * se if math.isfinite(se) else math.nan
    lower = max(0.0, estimate - half) if math.isfinite(half) else math.nan
    upper = min(1.0, estimate + half) if math.isfinite(half) else math.nan
    return EstimatedMetric(metric, estimate, se, lower, upper)


def _delta_se(grad: tuple[float, float], cov: NDArray[np.float64]) -> float:
    """First-order standard error of a function of (TP, FN) with gradient ``grad``, from the
    label-noise and calibrator covariances ``cov[0]``, ``cov[1]``: their standard errors are
    added, not taken in quadrature, because the calibrator's error is one draw shared by every
    interval of a reference (see the module docstring, "Intervals")."""
    g = np.asarray(grad)
    parts = [float(g @ c @ g) for c in cov]
    if not all(np.isfinite(v) for v in parts):
        return math.nan
    # each covariance is positive semi-definite by construction: a part below 0 is rounding
    # (about -1e-18 where an isotonic block moves TP and FN in proportion, a part of 0)
    return sum(math.sqrt(max(v, 0.0)) for v in parts)


def _tp_fn_covariance(p: NDArray[np.float64], predicted: NDArray[np.bool_], blocks: NDArray[np.intp],
                      block_variance: NDArray[np.float64]) -> NDArray[np.float64]:
    """Covariances of the realised (TP, FN), shape (2, 2, 2): Bernoulli label noise given the
    calibrated probabilities, and the calibrator's error, shared by every row of an isotonic
    block."""
    q = p * (1.0 - p)
    size = block_variance.size
    a = np.bincount(blocks[predicted], minlength=size).astype(np.float64)
    b = np.bincount(blocks[~predicted], minlength=size).astype(np.float64)
    label = np.diag([float(q[predicted].sum()), float(q[~predicted].sum())])
    cal = np.array([[a * a @ block_variance, a * b @ block_variance],
                    [a * b @ block_variance, b * b @ block_variance]])
    return np.stack([label, cal])


# ``scores`` sorted increasing, ``p`` and ``predicted`` in the same row order.
def _binary_metrics(scores: NDArray[np.float64], p: NDArray[np.float64], predicted: NDArray[np.bool_],
                    cov: NDArray[np.float64],
                    z: float) -> tuple[tuple[float, float, float, float], tuple[EstimatedMetric, ...]]:
    n = p.size
    tp, fn = float(p[predicted].sum()), float(p[~predicted].sum())
    n_pred = float(predicted.sum())
    fp, tn = n_pred - tp, (n - n_pred) - fn
    positives = tp + fn
    d_f1 = n_pred + positives  # F1 = 2 TP / (predicted positives + TP + FN)
    auc = _expected_auc_sorted(scores, p)
    metrics = (
        _interval("roc_auc", auc, _hanley_mcneil(auc, positives, n - positives), z),
        _interval("accuracy", _ratio(tp + tn, n), _delta_se((1.0 / n, -1.0 / n), cov) if n else math.nan,
                  z),
        _interval("precision", _ratio(tp, n_pred), _delta_se((_ratio(1.0, n_pred), 0.0), cov), z),
        _interval("recall", _ratio(tp, positives),
                  _delta_se((_ratio(fn, positives ** 2), -_ratio(tp, positives ** 2)), cov), z),
        _interval("f1", _ratio(2.0 * tp, d_f1),
                  _delta_se((_ratio(2.0 * (n_pred + fn), d_f1 ** 2), -_ratio(2.0 * tp, d_f1 ** 2)), cov),
                  z),
    )
    return (tp, fp, fn, tn), metrics


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1); got {confidence!r}")
    return float(norm.ppf(0.5 + confidence / 2.0))


def estimate_binary(calibrator: IsotonicCalibrator, scores: ArrayLike, *, threshold: float,
                    confidence: float = 0.95) -> ClassificationEstimate:
    """Estimated ROC AUC, accuracy, precision, recall and F1 of a binary classifier on one
    interval's scores.

    Parameters
    ----------
    calibrator : IsotonicCalibrator
        Fitted on the reference (:func:`fit_isotonic`).
    scores : array_like of float
        The model's positive-class scores on the interval.
    threshold : float
        A row is predicted positive when its score is at least this (the manifest's).
    confidence : float, default 0.95
        Coverage the intervals aim at.

    Returns
    -------
    ClassificationEstimate

    Examples
    --------
    Calibrated scores 0.2 and 0.9 at threshold 0.5: E[TP] = 0.9, E[FN] = 0.2.

    >>> ident = fit_isotonic([0.0, 1.0], [0, 1])
    >>> est = estimate_binary(ident, [0.2, 0.9], threshold=0.5)
    >>> round(est.expected_tp, 3), round(est.expected_fn, 3), round(est.metric("accuracy").estimate, 3)
    (0.9, 0.2, 0.85)
    """
    z = _z(confidence)
    # Every statistic is invariant to row order; sorted scores make the calibrator's look-ups
    # cache-friendly and give the AUC its ranking.
    s = np.sort(_finite_1d(scores, "scores"))
    p = calibrator.apply(s)
    predicted = s >= threshold
    cov = _tp_fn_covariance(p, predicted, calibrator.block_of(s), calibrator.block_variance)
    (tp, fp, fn, tn), metrics = _binary_metrics(s, p, predicted, cov, z)
    return ClassificationEstimate(int(s.size), confidence, tp, fp, fn, tn, metrics)


@dataclass(frozen=True, slots=True, eq=False)
class MulticlassReference:
    """One-vs-rest calibrators of a multiclass model, one per probability column.

    Attributes
    ----------
    classes : tuple of str
        Class names, in the model's column order.
    calibrators : tuple of IsotonicCalibrator
    """

    classes: tuple[str, ...]
    calibrators: tuple[IsotonicCalibrator, ...]

    def apply(self, probabilities: ArrayLike) -> NDArray[np.float64]:
        """Calibrated probabilities, each row renormalised to sum to 1."""
        prob = np.asarray(probabilities, dtype=np.float64)
        if prob.ndim != 2 or prob.shape[1] != len(self.classes):
            raise ValueError(f"probabilities must have shape (n, {len(self.classes)}); "
                             f"got {prob.shape!r}")
        _in_unit_interval(prob[np.isfinite(prob)], "probabilities")  # non-finite: refused below
        cal = np.column_stack([c.apply(prob[:, k]) for k, c in enumerate(self.calibrators)])
        total = cal.sum(axis=1, keepdims=True)
        # A row every calibrator puts at 0 keeps its raw probabilities.
        return np.where(total > 0, cal / np.where(total > 0, total, 1.0), prob)


def fit_multiclass(probabilities: ArrayLike, labels: ArrayLike,
                   classes: tuple[str, ...]) -> MulticlassReference:
    """One isotonic calibrator per class on the reference's ``labels`` (column indices).

    Examples
    --------
    >>> ref = fit_multiclass([[0.8, 0.2], [0.3, 0.7]], [0, 1], ("a", "b"))
    >>> ref.apply([[0.8, 0.2]]).tolist()
    [[1.0, 0.0]]
    """
    prob = np.asarray(probabilities, dtype=np.float64)
    y = np.asarray(labels)
    if prob.ndim != 2 or prob.shape[1] != len(classes) or y.shape != (prob.shape[0],):
        raise ValueError(f"probabilities must be (n, {len(classes)}) with n labels; got "
                         f"{prob.shape!r} and {y.shape!r}")
    cals = tuple(fit_isotonic(prob[:, k], (y == k).astype(np.int8)) for k in range(len(classes)))
    return MulticlassReference(tuple(classes), cals)


def estimate_multiclass(reference: MulticlassReference, probabilities: ArrayLike, *,
                        confidence: float = 0.95) -> ClassificationEstimate:
    """Estimated one-vs-rest metrics of a multiclass classifier, macro-averaged.

    Accuracy is the expected share of rows whose predicted class (argmax) is right; the other
    metrics are the mean over classes of each class's binary estimate.

    Examples
    --------
    >>> ref = fit_multiclass([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]], [0, 1, 0, 1], ("a", "b"))
    >>> est = estimate_multiclass(ref, [[0.9, 0.1], [0.2, 0.8]])
    >>> est.metric("accuracy").estimate
    1.0
    """
    z = _z(confidence)
    raw = np.asarray(probabilities, dtype=np.float64)
    cal = reference.apply(raw)
    predicted = np.argmax(raw, axis=1)
    per_class, totals, var_right = [], np.zeros(4), np.zeros(2)  # label, calibrator parts
    for k, name in enumerate(reference.classes):
        order = np.argsort(raw[:, k])  # _binary_metrics wants rows in score order
        raw_k, cal_k, mine = raw[order, k], cal[order, k], predicted[order] == k
        calibrator = reference.calibrators[k]
        cov = _tp_fn_covariance(cal_k, mine, calibrator.block_of(raw_k), calibrator.block_variance)
        counts, metrics = _binary_metrics(raw_k, cal_k, mine, cov, z)
        per_class.append((name, metrics))
        totals += counts
        var_right += cov[:, 0, 0]  # the rows predicted k are right when they are k
    n = raw.shape[0]
    p_right = cal[np.arange(n), predicted]
    macro = []
    for j, name in enumerate(BINARY_METRICS):
        if name == "accuracy":
            est = _ratio(float(p_right.sum()), n)
            se = _ratio(float(np.sqrt(var_right).sum()), n)  # parts added, as in _delta_se
        else:
            est = float(np.mean([ms[j].estimate for _, ms in per_class]))
            se = float(np.mean([ms[j].standard_error for _, ms in per_class]))
        macro.append(_interval(name, est, se, z))
    tp, fp, fn, tn = (float(v) for v in totals)
    return ClassificationEstimate(int(n), confidence, tp, fp, fn, tn, tuple(macro), tuple(per_class))
