"""Multiclass classification metrics with seeded bootstrap intervals.

Metrics: ``accuracy``, ``macro_f1``, ``weighted_f1``, ``roc_auc_ovr_macro``, ``log_loss``
and, per class ``k`` (named by its label), ``recall[k]`` and ``precision[k]``.

Conventions
-----------
* ``y_true`` holds class indices ``0 .. C-1`` into the model's classes (the order of the
  probability columns); ``proba`` is ``[N, C]`` probabilities.
* The predicted class is the most probable one (the first on ties, ``argmax``).
* ``precision[k]`` is undefined (NaN) when no row is predicted ``k``; ``recall[k]`` when
  no row is labelled ``k``; a class's F1 ``2 tp / (2 tp + fp + fn)`` when it has neither.
  ``macro_f1`` averages the defined per-class F1s, ``weighted_f1`` weights them by
  support: scikit-learn's ``f1_score(..., labels=range(C), zero_division=np.nan)``.
* ``roc_auc_ovr_macro`` is the unweighted mean over classes of the one-vs-rest ROC AUC
  of that class's probability (ties count one half); undefined when some class is absent
  or is every row, as scikit-learn's ``roc_auc_score(multi_class="ovr")`` refuses then.
* ``log_loss`` clips the true class's probability to ``[eps, 1 - eps]`` (float64 eps),
  as scikit-learn does.
* Intervals are percentile bootstrap intervals over the resamples of
  :func:`modelgate.intervals.bootstrap_counts` (the binary metrics' rows for
  the same seed); resamples where a metric is undefined are left out of its interval,
  which is widened to hold the point estimate if it does not.

Hand-written (on scikit-learn's definitions, tested equal to them to 1e-9) because
calling scikit-learn once per resample costs a full pass per metric per resample; here a
chunk of resamples is one matrix product.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import numpy.typing as npt
from modelgate.evaluation.labels import class_indices as _class_indices
from modelgate.evaluation.metrics import (
    MetricEstimate,
    PairedComparison,
    paired_deltas,
    percentile_interval,
)

from modelgate.intervals import bootstrap_counts, check_confidence_level, interval_holding

__all__ = ["MulticlassReport", "class_indices", "compare_multiclass", "evaluate_multiclass",
           "multiclass_metric_names"]

_FloatArray = npt.NDArray[np.float64]
_SUMMARY = ("accuracy", "macro_f1", "weighted_f1", "roc_auc_ovr_macro", "log_loss")


@dataclass(frozen=True, slots=True)
class MulticlassReport:
    """Result of :func:`evaluate_multiclass`: every metric and the settings."""

    metrics: tuple[MetricEstimate, ...]
    classes: tuple[str, ...]
    n: int
    n_bootstrap: int
    confidence_level: float
    seed: int

    def by_name(self) -> Mapping[str, MetricEstimate]:
        """Read-only mapping from metric name to estimate (the gate's input)."""
        return MappingProxyType({m.name: m for m in self.metrics})


def multiclass_metric_names(classes: Sequence[object]) -> tuple[str, ...]:
    """The metric names for a model with these classes, in report order.

    Examples
    --------
    >>> multiclass_metric_names(["cat", "dog", "eel"])[4:7]
    ('log_loss', 'recall[cat]', 'recall[dog]')
    """
    labels = [str(c) for c in classes]
    return (*_SUMMARY, *(f"recall[{c}]" for c in labels), *(f"precision[{c}]" for c in labels))


def class_indices(labels: npt.ArrayLike, classes: Sequence[object], *, column: str
                  ) -> npt.NDArray[np.int64]:
    """Position of each label among the model's ``classes``, typed as binary labels are
    (:func:`modelgate.evaluation.labels.class_indices`: ``True`` is not the class ``1``).

    Raises
    ------
    ValueError
        Naming ``column``, the classes and the offending values with their counts.

    Examples
    --------
    >>> class_indices(["b", "a", "b"], ["a", "b", "c"], column="y").tolist()
    [1, 0, 1]
    """
    values = labels if isinstance(labels, np.ndarray) else np.asarray(labels, dtype=object)
    return _class_indices(values, classes, column=column)


def _check(y_true: npt.ArrayLike, proba: npt.ArrayLike) -> tuple[npt.NDArray[np.int64], _FloatArray]:
    p = np.asarray(proba, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] < 2 or p.shape[0] == 0:
        raise ValueError(f"proba must be a non-empty [N, C] array with C >= 2; got shape {p.shape}")
    if not np.all((p >= 0.0) & (p <= 1.0)):
        raise ValueError("proba must be probabilities in [0, 1]; found values outside or NaN")
    y = np.asarray(y_true)
    if y.shape != (p.shape[0],) or y.dtype.kind not in "iu":
        raise ValueError(f"y_true must be {p.shape[0]} integer class indices; got shape {y.shape} "
                         f"dtype {y.dtype}")
    if y.size and (y.min() < 0 or y.max() >= p.shape[1]):
        raise ValueError(f"y_true must hold class indices 0..{p.shape[1] - 1}; found "
                         f"{sorted({int(v) for v in y[(y < 0) | (y >= p.shape[1])]})[:3]}")
    return y.astype(np.int64), p


def _row_statistics(y: npt.NDArray[np.int64], p: _FloatArray) -> _FloatArray:
    """Per row: one-hot of its confusion cell ``true * C + predicted``, then its log loss."""
    n, c = p.shape
    cells = np.zeros((n, c * c + 1))
    cells[np.arange(n), y * c + p.argmax(axis=1)] = 1.0
    eps = np.finfo(np.float64).eps
    cells[:, -1] = -np.log(np.clip(p[np.arange(n), y], eps, 1.0 - eps))
    return cells


@dataclass(frozen=True, slots=True)
class _SortedClass:
    """One class's probability column sorted once: row order, tie groups, who is the class."""

    order: npt.NDArray[np.intp]
    starts: npt.NDArray[np.intp]
    is_class: _FloatArray


def _sorted_classes(y: npt.NDArray[np.int64], p: _FloatArray) -> list[_SortedClass]:
    out = []
    for k in range(p.shape[1]):
        order = np.argsort(p[:, k], kind="stable")
        values = p[order, k]
        starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
        out.append(_SortedClass(order, starts, (y[order] == k).astype(np.float64)))
    return out


def _ovr_auc(weights: _FloatArray, classes: list[_SortedClass]) -> _FloatArray:
    """One-vs-rest ROC AUC per resample (rows) and class (columns); NaN when undefined."""
    out = np.empty((weights.shape[0], len(classes)))
    for k, sc in enumerate(classes):
        w = weights[:, sc.order]
        pos = np.add.reduceat(w * sc.is_class, sc.starts, axis=1)
        neg = np.add.reduceat(w, sc.starts, axis=1) - pos
        below = np.cumsum(neg, axis=1) - neg
        n_pos, n_neg = pos.sum(axis=1), neg.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[:, k] = (pos * (below + 0.5 * neg)).sum(axis=1) / (n_pos * n_neg)
        out[(n_pos == 0) | (n_neg == 0), k] = np.nan
    return out


def _metrics(sums: _FloatArray, auc: _FloatArray, n_classes: int) -> _FloatArray:
    """Every metric per resample from its summed row statistics: ``(B, n_metrics)``."""
    c = n_classes
    confusion = sums[:, : c * c].reshape(-1, c, c)
    n = confusion.sum(axis=(1, 2))
    tp = np.diagonal(confusion, axis1=1, axis2=2)
    support, predicted = confusion.sum(axis=2), confusion.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        recall = np.where(support > 0, tp / support, np.nan)
        precision = np.where(predicted > 0, tp / predicted, np.nan)
        f1 = np.where(support + predicted > 0, 2 * tp / (support + predicted), np.nan)
        defined = ~np.isnan(f1)
        macro = np.where(defined.any(axis=1),
                         np.nansum(f1, axis=1) / defined.sum(axis=1), np.nan)
        weighted = np.nansum(f1 * support, axis=1) / support.sum(axis=1)
    summary = np.column_stack([tp.sum(axis=1) / n, macro, weighted, auc.mean(axis=1),
                               sums[:, -1] / n])
    return np.hstack([summary, recall, precision])


def _point_and_resampled(y: npt.NDArray[np.int64], probas: Sequence[_FloatArray], *,
                         n_bootstrap: int, seed: int) -> tuple[list[_FloatArray], list[_FloatArray]]:
    """Per model: every metric on all rows ``(M,)`` and on each resample ``(B, M)``; the
    models share the resamples (a paired bootstrap)."""
    c = probas[0].shape[1]
    rows = [_row_statistics(y, p) for p in probas]
    classes = [_sorted_classes(y, p) for p in probas]
    ones = np.ones((1, len(y)))
    point = [_metrics(ones @ r, _ovr_auc(ones, k), c)[0] for r, k in zip(rows, classes, strict=True)]
    parts: list[list[_FloatArray]] = [[] for _ in probas]
    for w in bootstrap_counts(len(y), n_bootstrap=n_bootstrap, seed=seed):
        for model, (r, k) in enumerate(zip(rows, classes, strict=True)):
            parts[model].append(_metrics(w @ r, _ovr_auc(w, k), c))
    width = 5 + 2 * c
    return point, [np.vstack(x) if x else np.empty((0, width)) for x in parts]


def _reasons(values: _FloatArray, names: tuple[str, ...]) -> dict[str, str | None]:
    reasons: dict[str, str | None] = {}
    for name, value in zip(names, values, strict=True):
        if np.isfinite(value):
            reasons[name] = None
        elif name.startswith("recall["):
            reasons[name] = "no row has this label"
        elif name.startswith("precision["):
            reasons[name] = "no row is predicted as this class"
        elif name == "roc_auc_ovr_macro":
            reasons[name] = "some class is absent from the labels or is every label"
        else:
            reasons[name] = "not finite"
    return reasons


def evaluate_multiclass(
    y_true: npt.ArrayLike,
    proba: npt.ArrayLike,
    *,
    classes: Sequence[object] | None = None,
    n_bootstrap: int = 1000,
    confidence_level: float = 0.95,
    seed: int = 0,
) -> MulticlassReport:
    """Multiclass metrics with percentile bootstrap intervals.

    Parameters
    ----------
    y_true : array_like of int, shape (N,)
        Class indices ``0 .. C-1`` (positions in ``classes``).
    proba : array_like, shape (N, C)
        Predicted probabilities, columns in class order.
    classes : sequence, optional
        The class labels, used in the per-class metric names; default ``0 .. C-1``.
    n_bootstrap : int
        Resamples (0: no intervals).
    confidence_level : float
        Interval coverage, in (0, 1).
    seed : int
        Seed of the resamples.

    Returns
    -------
    MulticlassReport

    Raises
    ------
    ValueError
        Naming the argument: wrong shapes, probabilities outside [0, 1], indices out of range.

    Examples
    --------
    >>> proba = [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.5, 0.4, 0.1]]
    >>> report = evaluate_multiclass([0, 1, 2, 1], proba, classes=["a", "b", "c"],
    ...                              n_bootstrap=0)
    >>> m = report.by_name()
    >>> m["accuracy"].value, m["recall[b]"].value, m["precision[a]"].value
    (0.75, 0.5, 0.5)
    """
    y, p = _check(y_true, proba)
    labels = tuple(str(c) for c in (range(p.shape[1]) if classes is None else classes))
    if len(labels) != p.shape[1]:
        raise ValueError(f"classes must name the {p.shape[1]} probability columns; got {len(labels)}")
    check_confidence_level(confidence_level)
    names = multiclass_metric_names(labels)
    points, boots = _point_and_resampled(y, [p], n_bootstrap=n_bootstrap, seed=seed)
    point, boot = points[0], boots[0]
    reasons = _reasons(point, names)
    metrics = []
    for j, name in enumerate(names):
        lower, upper = interval_holding(point[j], *percentile_interval(boot[:, j],
                                                                       confidence_level))
        if reasons[name] is not None:
            lower = upper = float("nan")
        metrics.append(MetricEstimate(name, float(point[j]), lower, upper, len(y), reasons[name]))
    return MulticlassReport(tuple(metrics), labels, len(y), n_bootstrap, confidence_level, seed)


def compare_multiclass(
    y_true: npt.ArrayLike,
    candidate_proba: npt.ArrayLike,
    champion_proba: npt.ArrayLike,
    *,
    classes: Sequence[object] | None = None,
    n_bootstrap: int = 1000,
    confidence_level: float = 0.95,
    seed: int = 0,
) -> PairedComparison:
    """Paired bootstrap of ``candidate - champion`` for every multiclass metric, same rows.

    Both models are judged on the same resamples (those of :func:`evaluate_multiclass` for
    the seed), so each delta's interval is that of the paired difference. The two models
    must have the same classes in the same order.

    Parameters
    ----------
    y_true : array_like of int, shape (N,)
        Class indices ``0 .. C-1``.
    candidate_proba, champion_proba : array_like, shape (N, C)
        The two models' probabilities, columns in class order.
    classes, n_bootstrap, confidence_level, seed
        As for :func:`evaluate_multiclass`.

    Returns
    -------
    PairedComparison

    Raises
    ------
    ValueError
        As :func:`evaluate_multiclass`, or when the two probability matrices differ in shape.

    Examples
    --------
    >>> y = [0, 1, 2, 1]
    >>> new = [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.3, 0.6, 0.1]]
    >>> old = [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.5, 0.4, 0.1]]
    >>> d = compare_multiclass(y, new, old, n_bootstrap=0).by_name()["accuracy"]
    >>> d.candidate, d.champion, d.delta
    (1.0, 0.75, 0.25)
    """
    y, new = _check(y_true, candidate_proba)
    _, old = _check(y, champion_proba)
    if new.shape != old.shape:
        raise ValueError(f"champion_proba must have the candidate's shape {new.shape}; got "
                         f"{old.shape}")
    check_confidence_level(confidence_level)
    labels = tuple(str(c) for c in (range(new.shape[1]) if classes is None else classes))
    if len(labels) != new.shape[1]:
        raise ValueError(f"classes must name the {new.shape[1]} probability columns; got {len(labels)}")
    point, boot = _point_and_resampled(y, [new, old], n_bootstrap=n_bootstrap, seed=seed)
    deltas = paired_deltas(multiclass_metric_names(labels), (point[0], point[1]),
                           (boot[0], boot[1]), n=len(y), confidence_level=confidence_level)
    return PairedComparison(deltas, len(y), n_bootstrap, confidence_level, seed)
