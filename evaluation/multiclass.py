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
* ``accuracy``, ``recall[k]`` and ``precision[k]`` get the Wilson score interval of
  their exact counts (:func:`modelgate.intervals.wilson_interval`; correct rows of all
  rows, the class's hits of its rows, of the rows predicted as it), conditional on the
  denominator as the binary recall and precision are
  (:mod:`~modelgate.evaluation.metric_intervals` says why): a percentile interval of a
  class with few rows is short, and reads recall 1 [1, 1] for 24 rows all found (Wilson:
  [0.862, 1]).
* ``roc_auc_ovr_macro`` gets the binary AUC's interval, a logit-scale Wald interval
  with DeLong's variance and a t quantile, here of the mean of the classes' AUCs with
  their covariances (:func:`modelgate.evaluation.ovr_auc.macro_ovr_auc_interval`; the
  percentile interval when some class has fewer than two rows or fewer than two others).
* ``log_loss`` gets the binary log loss's studentized bootstrap (bootstrap-t,
  :func:`modelgate.intervals.studentized_interval`), each resample's mean and standard
  error from cells of nearby per-row losses (their means and mean squares): at n = 200 the
  percentile interval covered 93.5-94.0 % (86.5 % for a confident 10-class model), the
  bootstrap-t 95.0-97.0 % on the same sets (``bench/multiclass_loss_coverage.py``).  Its
  ends stay below a row's largest loss (:data:`~.metric_intervals.LOG_LOSS_MAX`), and a
  loss the same on every row (one row) takes the binary log loss's interval for that
  case (:func:`~.metric_intervals.constant_mean_interval` on ``[0, LOG_LOSS_MAX]``).
* The other metrics get percentile bootstrap intervals, the resamples drawn over cells of
  rows (:mod:`~modelgate.evaluation.multiclass_cells`: ``(true, predicted class)`` cells for
  the count metrics, the row bootstrap's law); resamples where a metric is undefined are
  left out of its interval.
  Every interval is widened to hold the point estimate if it does not; coverage by
  simulation in ``bench/RESULTS.md`` ("Every binary, multiclass and regression
  interval").

Time and memory: one sort per class gives both the class's AUC and its DeLong deviations
(``O(N C log N)``), and the resamples cost ``resamples x cells``, never ``resamples x rows x
classes``: confusion counts are per-class ``bincount`` sums of the cell counts (true class,
predicted class, correct cells). Only the macro AUC's percentile fallback (some class with
fewer than two rows, or fewer than two others) still ranks every class's rows for every
resample. Memory grows as rows x classes, never rows x classes^2
(:func:`multiclass_memory_bytes`). The paired comparison of two models is
:mod:`~modelgate.evaluation.multiclass_compare`. Cell counts are whole numbers, so the sums are exact and
the point estimates are those of the dense computation (``log_loss`` to the last bits of its
float sum).

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
from modelgate.evaluation.metric_intervals import (
    LOG_LOSS_MAX,
    constant_mean_interval,
    f1_interval,
)
from modelgate.evaluation.metrics import MetricEstimate
from modelgate.evaluation.multiclass_cells import class_cells, resampled_counts, value_cells
from modelgate.evaluation.ovr_auc import (
    class_deviations,
    deviations_interval,
)
from modelgate.evaluation.ovr_auc_ranking import ovr_auc, ovr_auc_one, rank_class
from modelgate.fairness.score_intervals import wilson_bounds
from scipy.special import ndtri

from modelgate.intervals import (
    bootstrap_counts,
    check_confidence_level,
    interval_holding,
    percentile_interval,
    studentized_interval,
    wilson_interval,
)

__all__ = ["MulticlassReport", "class_indices", "evaluate_multiclass", "multiclass_memory_bytes",
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


def multiclass_memory_bytes(n_rows: int, n_classes: int, *, n_models: int = 1,
                            n_bootstrap: int = 1000) -> int:
    """Upper bound of the memory :func:`evaluate_multiclass` / :func:`compare_multiclass`
    hold, the ``[N, C]`` float64 probabilities they are given included.

    Per model ``12 N C + 25 N + 16 B (5 + 2C)`` bytes (the probabilities, 8 N C; each
    class's ranking, at most ``N`` int32 row numbers, 4 N C, held only for the macro AUC's
    percentile fallback when a class has under two rows a side, else one class's at a time;
    true and predicted class, log loss; the resampled metrics), plus one chunk of resamples,
    ``2^22`` counts held in at most 64 bytes each (the float64 counts, their byte copy, each
    class's int32 running sums and the float64 sums gathered from them: about 45 to 55 bytes
    a count measured with a full chunk; a chunk of cell counts holds less). It grows as
    ``N x C``, never ``N x C^2``; whole-process peaks measured in ``bench/RESULTS.md``
    ("Many-class models").

    Examples
    --------
    >>> round(multiclass_memory_bytes(100_000, 1000) / 2**30, 2)  # GiB
    1.4
    """
    per_model = 12 * n_rows * n_classes + 25 * n_rows + 16 * n_bootstrap * (5 + 2 * n_classes)
    return n_models * per_model + 64 * (1 << 22)


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


def check_multiclass_inputs(y_true: npt.ArrayLike, proba: npt.ArrayLike
                            ) -> tuple[npt.NDArray[np.int64], _FloatArray]:
    """``y_true`` as int64 class indices and ``proba`` as an ``[N, C]`` float64 array of
    probabilities; a ValueError names the argument and what it held."""
    p = np.asarray(proba, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] < 2 or p.shape[0] == 0:
        raise ValueError(f"proba must be a non-empty [N, C] array with C >= 2; got shape {p.shape}")
    if not (p.min() >= 0.0 and p.max() <= 1.0):  # NaN fails both; no [N, C] temporaries
        raise ValueError("proba must be probabilities in [0, 1]; found values outside or NaN")
    y = np.asarray(y_true)
    if y.shape != (p.shape[0],) or y.dtype.kind not in "iu":
        raise ValueError(f"y_true must be {p.shape[0]} integer class indices; got shape {y.shape} "
                         f"dtype {y.dtype}")
    if y.size and (y.min() < 0 or y.max() >= p.shape[1]):
        raise ValueError(f"y_true must hold class indices 0..{p.shape[1] - 1}; found "
                         f"{sorted({int(v) for v in y[(y < 0) | (y >= p.shape[1])]})[:3]}")
    return y.astype(np.int64), p


@dataclass(frozen=True, slots=True)
class RowStatistics:
    """What the metrics need of one model's rows: true and predicted class, log loss."""

    y: npt.NDArray[np.int64]
    predicted: npt.NDArray[np.int64]
    correct: npt.NDArray[np.bool_]
    log_loss: _FloatArray


def row_statistics(y: npt.NDArray[np.int64], p: _FloatArray) -> RowStatistics:
    """One model's rows: true and predicted class, whether they agree, the clipped log loss."""
    n = len(y)
    eps = np.finfo(np.float64).eps
    predicted = _argmax_rows(p)
    return RowStatistics(y, predicted, predicted == y,
                         -np.log(np.clip(p[np.arange(n), y], eps, 1.0 - eps)))


def _argmax_rows(p: _FloatArray) -> npt.NDArray[np.int64]:
    """``p.argmax(axis=1)`` (the first on ties); a column-major ``p`` a column at a time, as
    numpy's argmax along a non-contiguous axis copies the whole matrix first.

    Examples
    --------
    >>> _argmax_rows(np.asfortranarray([[0.2, 0.5, 0.5], [0.7, 0.1, 0.2]])).tolist()
    [1, 0]
    """
    if not p.flags.f_contiguous or p.flags.c_contiguous:
        return p.argmax(axis=1)
    best, where = p[:, 0].copy(), np.zeros(p.shape[0], dtype=np.int64)
    for k in range(1, p.shape[1]):
        column = p[:, k]
        higher = column > best  # strictly: the first of tied maxima stays
        best[higher] = column[higher]
        where[higher] = k
    return where


def _class_sums(w: _FloatArray, index: npt.NDArray[np.int64], n_classes: int) -> _FloatArray:
    """Per resample (rows of ``w``) the weight of the rows of each class ``index``: ``(B, C)``.

    One ``bincount`` over resample-offset indices: memory ``B x (rows + C)``, never
    ``rows x C`` (the dense one-hot product it replaces held ``C^2`` cells per row).
    """
    b = w.shape[0]
    flat = (index[None, :] + (np.arange(b, dtype=np.int64) * n_classes)[:, None]).ravel()
    sums = np.bincount(flat, weights=w.ravel(), minlength=b * n_classes)
    return sums.reshape(b, n_classes).astype(np.float64, copy=False)


def metrics_of_weights(w: _FloatArray, rows: RowStatistics, auc: _FloatArray, n_classes: int,
                       loss: _FloatArray | None = None) -> _FloatArray:
    """Every metric per resample of the weights ``w``: ``(B, n_metrics)``; ``loss`` the mean
    log loss per resample when ``w`` weighs cells (default: from the rows' log losses)."""
    c = n_classes
    support = _class_sums(w, rows.y, c)
    predicted = _class_sums(w, rows.predicted, c)
    tp = _class_sums(w[:, rows.correct], rows.y[rows.correct], c)
    n = support.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        recall = np.where(support > 0, tp / support, np.nan)
        precision = np.where(predicted > 0, tp / predicted, np.nan)
        f1 = np.where(support + predicted > 0, 2 * tp / (support + predicted), np.nan)
        defined = ~np.isnan(f1)
        macro = np.where(defined.any(axis=1),
                         np.nansum(f1, axis=1) / defined.sum(axis=1), np.nan)
        weighted = np.nansum(f1 * support, axis=1) / support.sum(axis=1)
    if loss is None:
        loss = (w @ rows.log_loss[:, None])[:, 0] / n
    summary = np.column_stack([tp.sum(axis=1) / n, macro, weighted, auc.mean(axis=1), loss])
    return np.hstack([summary, recall, precision])


@dataclass(frozen=True, slots=True)
class ModelPoint:
    """One model on all rows: every metric ``(M,)``, the row statistics and the per-row mean
    DeLong deviations of the macro AUC (None when some class has under two rows a side)."""

    values: _FloatArray
    rows: RowStatistics
    deviations: _FloatArray | None


def model_point(y: npt.NDArray[np.int64], p: _FloatArray) -> ModelPoint:
    """Every metric on all rows, one sort per class for both its AUC and its deviations."""
    n, c = p.shape
    rows = row_statistics(y, p)
    ones = np.ones((1, n))
    total, counts = ones.sum(axis=1), ones.astype(np.uint8)
    aucs, deviations = [], np.zeros(n)
    defined = True
    for k in range(c):
        column = np.ascontiguousarray(p[:, k])
        order = np.argsort(column)
        aucs.append(ovr_auc_one(counts, total, rank_class(y, column, k, order)))
        d = class_deviations(y, column, k, order) if defined else None
        defined = d is not None
        if d is not None:
            deviations += d
    values = metrics_of_weights(ones, rows, np.column_stack(aucs), c)[0]
    return ModelPoint(values, rows, deviations / c if defined else None)


def resampled_metrics(y: npt.NDArray[np.int64], points: Sequence[ModelPoint], n_classes: int, *,
                      n_bootstrap: int, seed: int, auc_of: Sequence[_FloatArray] | None
                      ) -> tuple[list[_FloatArray], list[_FloatArray]]:
    """Per model every metric on each resample ``(B, M)`` and its log loss's standard error
    on each resample ``(B,)`` (from the loss cells' means and mean squares), from cell tables
    (:mod:`~modelgate.evaluation.multiclass_cells`): the count metrics from one table of
    ``(true, each model's predicted class)`` cells, so the models' values are paired; each
    model's log loss from its own table of loss cells. The macro AUC per resample only when
    ``auc_of`` gives the models' probabilities (its percentile interval, used when a class
    has under two rows a side: ``resamples x rows x classes``); else NaN."""
    c, n = n_classes, len(y)
    width = 5 + 2 * c
    if n_bootstrap == 0:
        return [np.empty((0, width)) for _ in points], [np.empty(0) for _ in points]
    losses, loss_se = [], []
    for point in points:
        table, means = value_cells(point.rows.log_loss)
        squares = np.bincount(table.cell, weights=point.rows.log_loss**2) / table.counts
        moments = np.vstack([w @ np.column_stack([means, squares]) for w in resampled_counts(
            table, n_bootstrap=n_bootstrap, seed=seed)]) / n
        losses.append(moments[:, 0])
        loss_se.append(np.sqrt(np.maximum(moments[:, 1] - moments[:, 0]**2, 0.0) / n))
    aucs = [np.full(n_bootstrap, np.nan) for _ in points]
    if auc_of is not None:
        rankings = [[rank_class(y, p[:, k], k) for k in range(c)] for p in auc_of]
        drawn = [[ovr_auc(w, r).mean(axis=1) for r in rankings]
                 for w in bootstrap_counts(n, n_bootstrap=n_bootstrap, seed=seed)]
        aucs = [np.concatenate([chunk[m] for chunk in drawn]) for m in range(len(points))]
    table, y_cell, predicted = class_cells(y, [p.rows.predicted for p in points], c)
    no_loss = np.zeros(len(table.counts))
    parts: list[list[_FloatArray]] = [[] for _ in points]
    done = 0
    for w in resampled_counts(table, n_bootstrap=n_bootstrap, seed=seed):
        b = slice(done, done + w.shape[0])
        for m, hit in enumerate(predicted):
            cells = RowStatistics(y_cell, hit, hit == y_cell, no_loss)
            parts[m].append(metrics_of_weights(w, cells, aucs[m][b, None], c, loss=losses[m][b]))
        done += w.shape[0]
    return [np.vstack(x) for x in parts], loss_se


def per_class_wilson_intervals(y: npt.NDArray[np.int64], predicted: npt.NDArray[np.int64],
                               labels: Sequence[str], confidence_level: float
                               ) -> dict[str, tuple[float, float]]:
    """Wilson intervals of the accuracy and of each class's recall and precision, from counts."""
    c = len(labels)
    correct = predicted == y
    support, called = np.bincount(y, minlength=c), np.bincount(predicted, minlength=c)
    hits = np.bincount(y[correct], minlength=c)
    out = {"accuracy": wilson_interval(int(correct.sum()), len(y), confidence_level)}
    # every class at once (scipy's binomtest takes one count at a time: ~2 ms a class)
    z = float(ndtri(0.5 + 0.5 * confidence_level))
    for kind, trials in (("recall", support), ("precision", called)):
        lower, upper = wilson_bounds(hits, trials, z)
        out |= {f"{kind}[{label}]": (float(lo), float(hi))
                for label, lo, hi in zip(labels, lower, upper, strict=True)}
    return out


def all_right_f1_intervals(support: npt.NDArray[np.int64], confidence_level: float
                           ) -> dict[str, tuple[float, float]]:
    """The macro and weighted F1's intervals when every row is predicted right.

    ``support`` holds each class's rows.  Every resample is then right too and the
    percentile interval is ``[1, 1]``.  Instead, each class's F1 gets the binary F1's
    interval (:func:`~.metric_intervals.f1_interval`: Wilson's for its Jaccard index, all
    ``support`` of ``support``), and their mean (the macro F1) or support-weighted mean
    (the weighted F1) is the lower end; the upper is 1.

    >>> ends = all_right_f1_intervals(np.array([24, 6]), 0.95)
    >>> [round(e, 4) for e in ends["macro_f1"]], [round(e, 4) for e in ends["weighted_f1"]]
    ([0.8417, 1.0], [0.8922, 1.0])
    """
    present = support[support > 0]
    lower = np.array([f1_interval(int(m), 0, 0, confidence_level)[0] for m in present])
    return {"macro_f1": (float(lower.mean()), 1.0),
            "weighted_f1": (float(np.dot(lower, present) / present.sum()), 1.0)}


def undefined_multiclass_reasons(values: _FloatArray, names: tuple[str, ...]
                                 ) -> dict[str, str | None]:
    """Why each metric of ``names`` is undefined where its value is not finite (else None)."""
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
    """Multiclass metrics with intervals (Wilson for the accuracy and the per-class recall and
    precision, logit Wald with DeLong's variance for the macro AUC, percentile bootstrap for
    the rest; see the module's docstring).

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
    y, p = check_multiclass_inputs(y_true, proba)
    labels = class_labels(classes, p.shape[1])
    check_confidence_level(confidence_level)
    return multiclass_report(y, p, model_point(y, p), labels, n_bootstrap, confidence_level, seed)


def class_labels(classes: Sequence[object] | None, n_classes: int) -> tuple[str, ...]:
    """The class names as text, ``0 .. n_classes - 1`` when none are given."""
    labels = tuple(str(c) for c in (range(n_classes) if classes is None else classes))
    if len(labels) != n_classes:
        raise ValueError(f"classes must name the {n_classes} probability columns; got {len(labels)}")
    return labels


def multiclass_report(y: npt.NDArray[np.int64], p: _FloatArray, at_data: ModelPoint, labels: tuple[str, ...],
                      n_bootstrap: int, confidence_level: float, seed: int) -> MulticlassReport:
    """:func:`evaluate_multiclass` from the model's points on the data."""
    names = multiclass_metric_names(labels)
    point = at_data.values
    reasons = undefined_multiclass_reasons(point, names)
    delong = reasons["roc_auc_ovr_macro"] is None and at_data.deviations is not None
    boots, loss_se = resampled_metrics(
        y, [at_data], p.shape[1], n_bootstrap=n_bootstrap, seed=seed,
        auc_of=[p] if reasons["roc_auc_ovr_macro"] is None and not delong else None)
    boot = boots[0]
    own = (per_class_wilson_intervals(y, at_data.rows.predicted, labels, confidence_level)
           if n_bootstrap > 0 else {})
    if n_bootstrap > 0 and len(y) and np.array_equal(at_data.rows.predicted, y):
        own |= all_right_f1_intervals(np.bincount(y, minlength=p.shape[1]), confidence_level)
    if n_bootstrap > 0 and reasons["log_loss"] is None:
        # the binary log loss's bootstrap-t: a percentile interval of a mean of skewed
        # losses is short where the rare large losses carry the spread
        losses = at_data.rows.log_loss
        se = float(losses.std() / np.sqrt(len(y)))
        if se > 0:
            own["log_loss"] = studentized_interval(float(point[4]), se, boot[:, 4], loss_se[0],
                                                   confidence_level, lower_limit=0.0,
                                                   upper_limit=LOG_LOSS_MAX)
        else:  # every row the same loss (one row): as the binary log loss, no collapse
            own["log_loss"] = constant_mean_interval(float(point[4]), len(y), confidence_level,
                                                     most=LOG_LOSS_MAX)
    if n_bootstrap > 0 and delong:  # else (fewer than two rows on a side) percentile
        assert at_data.deviations is not None
        own["roc_auc_ovr_macro"] = deviations_interval(float(point[3]), at_data.deviations, y,
                                                       p.shape[1], confidence_level)
    metrics = []
    for j, name in enumerate(names):
        ends = own.get(name) or percentile_interval(boot[:, j], confidence_level)
        lower, upper = interval_holding(point[j], *ends)
        if reasons[name] is not None:
            lower = upper = float("nan")
        metrics.append(MetricEstimate(name, float(point[j]), lower, upper, len(y), reasons[name]))
    return MulticlassReport(tuple(metrics), labels, len(y), n_bootstrap, confidence_level, seed)
