"""Paired comparison of two multiclass models on the same rows: ``candidate - champion`` for
every metric of :mod:`~modelgate.evaluation.multiclass`, with intervals.

Both models are judged on the same resamples (those of
:func:`~modelgate.evaluation.multiclass.evaluate_multiclass` for the seed), so each delta's
interval is that of the paired difference. The deltas take the binary deltas' methods where the
percentile interval was short at n = 200: per-class recall MOVER from the two models' Wilson
intervals with the phi coefficient of the class's rows found by each model, per-class precision
the binary precision delta's interval from the class's one-vs-rest 8 cells
(:func:`~.paired_ratios.ratio_delta_interval`), the log loss a studentized bootstrap of the
per-row differences, the macro AUC the joint logit-normal interval with DeLong's paired
covariance; accuracy, F1 and the rest percentile. Every interval is widened to hold the point
estimate if it does not; coverage by simulation in ``bench/RESULTS.md`` ("Every binary,
multiclass and regression interval", "Paired rate deltas of near-equal models").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt
from modelgate.evaluation.metric_intervals import (
    difference_part_moments,
    log_loss_delta_interval,
)
from modelgate.evaluation.metrics import MetricDelta, PairedComparison, paired_deltas
from modelgate.evaluation.multiclass import (
    ModelPoint,
    MulticlassReport,
    check_multiclass_inputs,
    class_labels,
    model_point,
    multiclass_metric_names,
    multiclass_report,
    per_class_wilson_intervals,
    resampled_metrics,
)
from modelgate.evaluation.multiclass_cells import resampled_counts, value_cells
from modelgate.evaluation.ovr_auc import deviations_delta_interval
from modelgate.evaluation.paired_ratios import ratio_delta_interval

from modelgate.intervals import (
    check_confidence_level,
    interval_holding,
    mover_difference,
    phi_correlation,
)

__all__ = ["compare_multiclass", "evaluate_and_compare_multiclass"]

_FloatArray = npt.NDArray[np.float64]


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
    """Paired ``candidate - champion`` for every multiclass metric on the same rows, each
    with the interval the module docstring names (the macro AUC's delta from the classes'
    DeLong deviations, :func:`modelgate.evaluation.ovr_auc.deviations_delta_interval`; the
    log loss's the binary log-loss delta's studentized bootstrap of the per-row differences,
    :func:`modelgate.evaluation.metric_intervals.log_loss_delta_interval`).

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
    y, new, old, labels = _pair(y_true, candidate_proba, champion_proba, classes,
                                confidence_level)
    return _compare(y, new, old, (model_point(y, new), model_point(y, old)), labels, n_bootstrap,
                    confidence_level, seed)


def evaluate_and_compare_multiclass(
    y_true: npt.ArrayLike,
    candidate_proba: npt.ArrayLike,
    champion_proba: npt.ArrayLike,
    *,
    classes: Sequence[object] | None = None,
    n_bootstrap: int = 1000,
    confidence_level: float = 0.95,
    seed: int = 0,
) -> tuple[MulticlassReport, MulticlassReport, PairedComparison]:
    """:func:`evaluate_multiclass` of each model and :func:`compare_multiclass`, equal to the
    three calls, each model's points on the data (its per-class sorts and DeLong
    deviations) computed once for both. Parameters as :func:`compare_multiclass`.

    Examples
    --------
    >>> y = [0, 1, 2, 1]
    >>> new = [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.3, 0.6, 0.1]]
    >>> old = [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.5, 0.4, 0.1]]
    >>> a, b, d = evaluate_and_compare_multiclass(y, new, old, n_bootstrap=0)
    >>> a.by_name()["accuracy"].value, b.by_name()["accuracy"].value
    (1.0, 0.75)
    """
    y, new, old, labels = _pair(y_true, candidate_proba, champion_proba, classes,
                                confidence_level)
    points = (model_point(y, new), model_point(y, old))
    return (multiclass_report(y, new, points[0], labels, n_bootstrap, confidence_level, seed),
            multiclass_report(y, old, points[1], labels, n_bootstrap, confidence_level, seed),
            _compare(y, new, old, points, labels, n_bootstrap, confidence_level, seed))


def _pair(y_true: npt.ArrayLike, candidate_proba: npt.ArrayLike, champion_proba: npt.ArrayLike,
          classes: Sequence[object] | None, confidence_level: float
          ) -> tuple[npt.NDArray[np.int64], _FloatArray, _FloatArray, tuple[str, ...]]:
    y, new = check_multiclass_inputs(y_true, candidate_proba)
    _, old = check_multiclass_inputs(y, champion_proba)
    if new.shape != old.shape:
        raise ValueError(f"champion_proba must have the candidate's shape {new.shape}; got "
                         f"{old.shape}")
    check_confidence_level(confidence_level)
    return y, new, old, class_labels(classes, new.shape[1])


def _compare(y: npt.NDArray[np.int64], new: _FloatArray, old: _FloatArray,
             points: tuple[ModelPoint, ModelPoint], labels: tuple[str, ...], n_bootstrap: int,
             confidence_level: float, seed: int) -> PairedComparison:
    """:func:`compare_multiclass` from the two models' points on the data."""
    d_new, d_old = points[0].deviations, points[1].deviations
    defined = all(np.isfinite(p.values[3]) for p in points)
    delong = defined and d_new is not None and d_old is not None
    boot, _ = resampled_metrics(y, points, new.shape[1], n_bootstrap=n_bootstrap, seed=seed,
                         auc_of=[new, old] if defined and not delong else None)
    deltas = paired_deltas(multiclass_metric_names(labels), (points[0].values, points[1].values),
                           (boot[0], boot[1]), n=len(y), confidence_level=confidence_level)
    auc = deltas[3]  # roc_auc_ovr_macro
    if n_bootstrap > 0 and auc.undefined_reason is None and delong:
        assert d_new is not None and d_old is not None
        # the same deviations: every class ranked alike, the AUCs equal on every resample
        ends = ((auc.delta, auc.delta) if np.array_equal(d_new, d_old) else
                deviations_delta_interval(auc.candidate, auc.champion, d_new, d_old, y,
                                          new.shape[1], confidence_level))
        lower, upper = interval_holding(auc.delta, *ends)
        deltas = (*deltas[:3], replace(auc, ci_lower=lower, ci_upper=upper), *deltas[4:])
    loss = deltas[4]  # log_loss
    if n_bootstrap > 0 and loss.undefined_reason is None:
        diff = points[0].rows.log_loss - points[1].rows.log_loss
        if diff.any():  # else identical losses: the percentile interval, exactly [0, 0]
            table, cell_diff = value_cells(diff)
            drawn = [difference_part_moments(cell_diff, w) for w in
                     resampled_counts(table, n_bootstrap=n_bootstrap, seed=seed)]
            ends = log_loss_delta_interval(
                difference_part_moments(diff, np.ones((1, len(y)))),
                {key: np.concatenate([m[key] for m in drawn]) for key in drawn[0]},
                len(y), confidence_level)
            lower, upper = interval_holding(loss.delta, *ends)
            deltas = (*deltas[:4], replace(loss, ci_lower=lower, ci_upper=upper), *deltas[5:])
    if n_bootstrap > 0:
        deltas = _class_count_deltas(deltas, y, points[0].rows.predicted,
                                     points[1].rows.predicted, (boot[0], boot[1]), labels,
                                     confidence_level)
    return PairedComparison(deltas, len(y), n_bootstrap, confidence_level, seed)


def _class_count_deltas(deltas: tuple[MetricDelta, ...], y: npt.NDArray[np.int64],
                        hit_new: npt.NDArray[np.int64], hit_old: npt.NDArray[np.int64],
                        boot: tuple[_FloatArray, _FloatArray], labels: Sequence[str],
                        confidence_level: float) -> tuple[MetricDelta, ...]:
    """Per-class recall deltas by MOVER: each model's Wilson interval and the phi
    coefficient of the class's rows found by both, one or neither model (Newcombe's method
    10).  Per-class precision deltas as the binary one
    (:func:`modelgate.evaluation.metric_intervals.paired_delta_interval`): the delta
    method's t interval from the one-vs-rest 8 cells, MOVER with the correlation of the
    paired resampled values where its standard error is 0.  A class whose rows both models
    call alike keeps the percentile interval (the exact ``[d, d]``)."""
    c = len(labels)
    own = (per_class_wilson_intervals(y, hit_new, labels, confidence_level),
           per_class_wilson_intervals(y, hit_old, labels, confidence_level))
    out = list(deltas)
    for j, d in enumerate(deltas):
        if d.undefined_reason is not None or not d.name.startswith(("recall[", "precision[")):
            continue
        k = (j - 5) % c
        a, b = hit_new == k, hit_old == k
        paired = None
        if d.name.startswith("recall["):
            rows = y == k
            a, b = a[rows], b[rows]
            if not (a != b).any():
                continue
            r = phi_correlation(float((a & b).sum()), float((a & ~b).sum()),
                                float((~a & b).sum()), float((~a & ~b).sum()))
        else:
            if not (a != b).any():
                continue
            cells = np.bincount(4 * (y == k) + 2 * a + b, minlength=8)
            paired = ratio_delta_interval("precision", cells, confidence_level)
            x, z = boot[0][:, j], boot[1][:, j]
            ok = np.isfinite(x) & np.isfinite(z)
            r = 0.0
            if ok.sum() > 1 and np.std(x[ok]) > 0 and np.std(z[ok]) > 0:
                r = float(np.corrcoef(x[ok], z[ok])[0, 1])
        ends = paired or mover_difference(d.candidate, own[0][d.name], d.champion,
                                          own[1][d.name], r)
        lower, upper = interval_holding(d.delta, *ends)
        out[j] = replace(d, ci_lower=lower, ci_upper=upper)
    return tuple(out)
