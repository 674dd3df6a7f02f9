"""Metrics, intervals and paired deltas from merged sufficient statistics.

The statistics themselves (what is kept per partition, how partitions add up) are in
:mod:`modelgate.evaluation.sufficient`.

Bootstrap over counts
---------------------
Intervals come from a multinomial bootstrap of a :class:`BootstrapTable`
(:mod:`modelgate.evaluation.bootstrap_cells`): rows counted per ``(label, candidate
cell, champion cell)``, with the per-cell sums of each model's log loss and squared
error.  Cells are the distinct scores while at most ``max_cells`` cells exist, else the
finest relative-width score grid that fits, and never straddle a threshold.  Resampling
``n`` rows with replacement is a multinomial draw of the cell counts with probabilities
``count / n`` (as :mod:`modelgate.fairness.metrics` does for its group tables), so the
cost is ``n_bootstrap x cells``, independent of the rows, and the joint cells pair the
champion with the candidate for the deltas.  Replicates are computed on the cells
without any shift: confusion counts are exact, losses use the cell means and AUC counts
the pairs inside a cell at the cell's concordance on the data (from the exact per-score
table), so the replicate on the data is the point estimate (to rounding for the losses,
summed over cells rather than rows: BCa counts such replicates as ties), every replicate lies
in its metric's range, and with exact cells the replicates are those of a row bootstrap.
By default (``interval="per_metric"``, :mod:`.metric_intervals`) ROC AUC gets a
logit-scale Wald interval with DeLong's variance from the exact per-score table,
accuracy, recall, precision and F1 Wilson intervals of the exact confusion counts, log
loss and Brier score a studentized bootstrap; the paired deltas of ROC AUC, accuracy,
precision, recall and F1 a MOVER interval built from the two models' intervals and the
correlation of the estimates (that of the paired replicates, or the phi coefficient of
the models' correct rows, counted from the cells); the log-loss delta MOVER over the
positive and negative parts of each cell's loss difference; the Brier delta the
percentile interval of the replicates.  Every interval is widened to hold
the point estimate when it does not (possible only for very skewed or discrete bootstrap
distributions, e.g. a handful of rows).  ``interval="bca"`` gives BCa ends instead
(acceleration from a jackknife over the cells, O(cells)); it is not the default, see
``bench/RESULTS.md`` ("BCa on the cell table") for why.  The merged tables do not
depend on how the rows were partitioned, and the draws depend only on the merged counts and the seed, so
a mapped run and a single-task run give the same intervals.

References
----------
.. [1] Efron, B. and Tibshirani, R. (1993). An Introduction to the Bootstrap, ch. 13.
.. [2] Mann, H. B. and Whitney, D. R. (1947). On a test of whether one of two random
   variables is stochastically larger than the other.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from modelgate.intervals import bca_interval, interval_holding, percentile_interval

from .auc_delta import delong_deviations, paired_auc_delta_interval
from .bootstrap_cells import (
    BootstrapTable,
    correct_pairs,
    delong_variance,
    jackknife_metrics,
    marginal_cells,
    replicate_metrics,
    within_concordance,
)
from .metric_intervals import (
    difference_part_moments,
    log_loss_delta_interval,
    own_intervals,
    paired_delta_interval,
)
from .metrics import (
    METRIC_NAMES,
    CalibrationBin,
    CalibrationTable,
    ComparisonReport,
    MetricDelta,
    MetricEstimate,
    PerformanceReport,
    undefined_reasons,
)
from .paired_ratios import mean_delta_interval
from .sufficient import CALIBRATION_BINS, EvaluationStatistics, ModelStatistics, ScoreTable

__all__ = ["PerformanceSummary", "performance_from_statistics"]

_FloatArray = npt.NDArray[np.float64]
# Resample draws held in memory at once (B x cells float64 values).
_CHUNK_ELEMENTS = 1 << 22
# Log-loss and Brier replicates are sums over cells (draws @ cell means / n) and their points
# sums over rows: on a resample equal to the data the two differ by rounding, an ulp or a few,
# which BCa's bias correction must count as a tie, not as below or above (it moved an end of a
# 4-row case by 0.07). Replicates within this share of the point's magnitude (of both models'
# values for a delta) are ties: the worst-case rounding of a sum of 2**22 terms stays below it,
# and a truly different replicate that close to the point changes nothing visible.
_SUMMED_TIE = 1e-9
_SUMMED = frozenset({"log_loss", "brier"})
# Columns of BootstrapTable.loss_sums (candidate, champion) whose per-row difference gets the
# parts' MOVER interval of its paired delta; the Brier score's difference gets a t interval
# of its mean (evaluation/paired_ratios.py).
_DIFFERENCE_COLUMNS = {"log_loss": (0, 2)}
_BRIER_COLUMNS = (1, 3)


@dataclass(frozen=True, slots=True)
class PerformanceSummary:
    """Result of :func:`performance_from_statistics`.

    ``auc_error_bound`` is 0 when every distinct score was kept (exact AUC), else the
    largest possible ``|reported - exact|`` of either model's AUC.
    """

    candidate: PerformanceReport
    champion: PerformanceReport | None
    comparison: ComparisonReport | None
    distinct_scores: int
    auc_error_bound: float



def performance_from_statistics(
    stats: EvaluationStatistics,
    *,
    n_bootstrap: int = 1000,
    confidence_level: float = 0.95,
    seed: int = 0,
    interval: Literal["per_metric", "percentile", "bca"] = "per_metric",
) -> PerformanceSummary:
    """Every metric of :data:`METRIC_NAMES` (and paired deltas) from merged statistics.

    Parameters
    ----------
    stats : EvaluationStatistics
        From :func:`collect` / :func:`merge`.
    n_bootstrap : int, default 1000
        Multinomial resamples of the bootstrap table; 0 gives NaN intervals.
    confidence_level : float, default 0.95
        Coverage of the intervals, in (0, 1).
    seed : int, default 0
        Seed of ``np.random.default_rng`` for the draws.
    interval : {"per_metric", "percentile", "bca"}, default "per_metric"
        ``"per_metric"``: every metric by its method of :mod:`~.metric_intervals`
        (logit-scale Wald with DeLong's variance, Wilson score of the counts,
        studentized bootstrap for the losses), the deltas of ROC AUC, accuracy,
        recall and accuracy by score intervals of the paired tables, precision and F1 by
        the delta method's interval (:func:`~.paired_ratios.ratio_delta_interval`),
        the log-loss delta by MOVER over the parts of the per-row loss difference
        (:func:`~.metric_intervals.log_loss_delta_interval`), the Brier delta by the t
        interval of the mean squared-error difference
        (:func:`~.paired_ratios.mean_delta_interval`).
        ``"percentile"``: percentile intervals throughout (those of a row bootstrap with
        distinct-score cells).  ``"bca"``: bias-corrected and accelerated ends
        (:func:`modelgate.intervals.bca_interval`), the acceleration from the
        jackknife over the cells (:func:`~.bootstrap_cells.jackknife_metrics`).
        Every interval is widened to hold the point.

    Returns
    -------
    PerformanceSummary

    Examples
    --------
    >>> from modelgate.evaluation.sufficient import collect
    >>> s = collect([0, 0, 1, 1, 0, 1], [0.1, 0.4, 0.35, 0.8, 0.2, 0.9], threshold=0.5)
    >>> r = performance_from_statistics(s, n_bootstrap=200, seed=1)
    >>> round(r.candidate.by_name()["roc_auc"].value, 4), r.auc_error_bound
    (0.8889, 0.0)
    """
    from .binary_inputs import check_options

    check_options(0.5, n_bootstrap, confidence_level, seed)
    if interval not in ("per_metric", "percentile", "bca"):
        raise ValueError(f"interval must be 'per_metric', 'percentile' or 'bca'; got {interval!r}")
    models = [stats.candidate] + ([stats.champion] if stats.champion is not None else [])
    points = [_point_metrics(m) for m in models]
    resampled, jack, at_data, parts = _bootstrap(stats, models, n_bootstrap, seed)
    ends = _Ends(confidence_level, interval, stats.bootstrap.counts.astype(np.float64))
    own = [_own_intervals(m, p[0], r, d, ends)
           for m, p, r, d in zip(models, points, resampled, at_data, strict=True)]
    reports = [_report(m, p, r, j, o, ends, n_bootstrap, seed)
               for m, p, r, j, o in zip(models, points, resampled, jack, own, strict=True)]
    comparison = None
    if stats.champion is not None:
        loss_delta = {name: log_loss_delta_interval(_part(parts[0], name), _part(parts[1], name),
                                                    stats.n, confidence_level)
                      if interval == "per_metric" else None for name in _DIFFERENCE_COLUMNS}
        if interval == "per_metric":
            loss_delta["brier"] = _brier_delta(stats.bootstrap, confidence_level)
        if interval == "per_metric" and n_bootstrap > 0:
            loss_delta["roc_auc"] = _auc_delta(stats, points, confidence_level)
        pairs = (correct_pairs(stats.bootstrap),
                 correct_pairs(stats.bootstrap, positives_only=True))
        comparison = _comparison(points, resampled, jack, own, pairs,
                                 loss_delta, ends, stats.n, stats.candidate.threshold,
                                 n_bootstrap, seed)
    bound = max(_auc_error_bound(m.scores) for m in models)
    return PerformanceSummary(reports[0], reports[1] if len(reports) > 1 else None, comparison,
                              len(stats.candidate.scores.keys), bound)



# ----------------------------------------------------------------------------- internals


def _auc_twice_u(neg: npt.NDArray[np.integer], pos: npt.NDArray[np.integer]) -> npt.NDArray[np.int64]:
    """2 x Mann-Whitney U along the last axis, in integers (exact up to 2**63)."""
    below = np.cumsum(neg, axis=-1) - neg
    return 2 * np.sum(pos * below, axis=-1) + np.sum(pos * neg, axis=-1)


def _auc_error_bound(table: ScoreTable) -> float:
    if not table.grid:
        return 0.0
    n_pos, n_neg = int(table.pos.sum()), int(table.neg.sum())
    if n_pos == 0 or n_neg == 0:
        return 0.0
    return int(np.sum(table.pos * table.neg)) / (2.0 * n_pos * n_neg)


def _point_metrics(m: ModelStatistics) -> tuple[dict[str, float], dict[str, str | None]]:
    return point_values(m, int(_auc_twice_u(m.scores.neg, m.scores.pos)))


def point_values(m: ModelStatistics, twice_u: int
                 ) -> tuple[dict[str, float], dict[str, str | None]]:
    """Every point metric of ``m``'s counts and sums, the ROC AUC from ``twice_u`` (2 x the
    Mann-Whitney U), with the reason each undefined one is undefined (NaN, None if defined)."""
    n, n_pos, tp, fp = m.n, m.n_pos, m.tp, m.fp
    reasons = undefined_reasons(n, n_pos, tp, fp)

    def ratio(num: float, den: float) -> float:
        return num / den if den else float("nan")

    values = {
        "roc_auc": ratio(twice_u, 2 * n_pos * (n - n_pos)),
        "accuracy": ratio(n - n_pos - fp + tp, n),
        "precision": ratio(tp, tp + fp),
        "recall": ratio(tp, n_pos),
        "f1": ratio(2 * tp, tp + fp + n_pos),
        "log_loss": m.log_loss_sum / n,
        "brier": m.squared_error_sum / n,
    }
    return values, reasons


@dataclass(frozen=True, slots=True)
class _Ends:
    """How replicates become an interval: level, method, and the jackknife's weights."""

    confidence_level: float
    method: str
    weights: _FloatArray

    def of(self, point: float, replicates: _FloatArray, jackknife: _FloatArray, *,
           tie_tolerance: float = 0.0) -> tuple[float, float]:
        if self.method == "bca":
            ends = bca_interval(replicates, point, jackknife, self.weights, self.confidence_level,
                                tie_tolerance=tie_tolerance)
        else:
            ends = percentile_interval(replicates, self.confidence_level)
        return interval_holding(point, *ends)


def _tie_tolerance(name: str, magnitude: float) -> float:
    """How far from the point a BCa replicate of ``name`` still counts as a tie."""
    return _SUMMED_TIE * magnitude if name in _SUMMED else 0.0


def _bootstrap(stats: EvaluationStatistics, models: Sequence[ModelStatistics], n_bootstrap: int,
               seed: int) -> tuple[list[dict[str, _FloatArray]], list[dict[str, _FloatArray]],
                                   list[dict[str, _FloatArray]], list[dict[str, _FloatArray]]]:
    """Per model, per metric: the ``n_bootstrap`` replicates (the same draws for every model),
    the jackknife values per cell and the replicate statistics on the table itself; with a
    champion also the moments of the parts of the per-row log-loss differences on the
    table and on the draws (:func:`~.metric_intervals.difference_part_moments`, keys
    prefixed ``log_loss_``), else ``[]``."""
    table = stats.bootstrap
    per_model = []
    for m, model in enumerate(models):
        keys, inverse, predicted = marginal_cells(table.candidate if m == 0 else table.champion)
        score_keys = model.scores.keys
        if model.scores.grid:  # the fallback grid's cell midpoints stand for its scores
            score_keys = (score_keys + 0.5) / model.scores.grid
        kappa = within_concordance(score_keys, model.scores.neg, model.scores.pos,
                                   model.threshold, table.level, keys)
        per_model.append((kappa, inverse, predicted))
    jack = [jackknife_metrics(table, m, *args) for m, args in enumerate(per_model)]
    own = table.counts[None, :].astype(np.float64)
    at_data = [replicate_metrics(own, table, m, *args) for m, args in enumerate(per_model)]
    resampled: list[list[dict[str, _FloatArray]]] = [[] for _ in models]
    # the per-row log-loss differences of each cell (their means over the cell's rows)
    differences = {name: (table.loss_sums[:, new] - table.loss_sums[:, old]) / table.counts
                   for name, (new, old) in _DIFFERENCE_COLUMNS.items()}
    parts: list[list[dict[str, _FloatArray]]] = [[], []] if len(models) == 2 else []
    if parts:
        parts[0].append(_difference_moments(differences, own))
    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_ELEMENTS // len(table.counts))
    for start in range(0, n_bootstrap, chunk):
        size = min(chunk, n_bootstrap - start)
        draws = rng.multinomial(stats.n, table.counts / stats.n, size=size).astype(np.float64)
        for m, (kappa, inverse, predicted) in enumerate(per_model):
            resampled[m].append(replicate_metrics(draws, table, m, kappa, inverse, predicted))
        if parts:
            parts[1].append(_difference_moments(differences, draws))
    part_keys = [f"{name}_{k}" for name in _DIFFERENCE_COLUMNS
                 for k in ("up", "up_var", "down", "down_var")]
    return ([_joined(chunks, at_data[0]) for chunks in resampled], jack, at_data,
            [_joined(chunks, part_keys) for chunks in parts])


def _auc_delta(stats: EvaluationStatistics,
               points: list[tuple[dict[str, float], dict[str, str | None]]],
               confidence_level: float) -> tuple[float, float] | None:
    """The ROC AUC delta's interval (:func:`~.auc_delta.paired_auc_delta_interval`) from the
    merged cell table: each cell's placement deviations under both models (exact while
    cells are distinct scores; coarser cells count the scores inside a cell as tied)."""
    table = stats.bootstrap
    d_new = delong_deviations(table.label, table.candidate, table.counts)
    d_old = delong_deviations(table.label, table.champion, table.counts)
    if d_new is None or d_old is None:
        return None
    n_pos = stats.candidate.n_pos
    return paired_auc_delta_interval(points[0][0]["roc_auc"], points[1][0]["roc_auc"], d_new,
                                     d_old, table.counts, min(n_pos, stats.n - n_pos),
                                     confidence_level)


def _brier_delta(table: BootstrapTable, confidence_level: float) -> tuple[float, float]:
    """The Brier delta's interval (:func:`~.paired_ratios.mean_delta_interval`) over the
    cells' mean squared-error differences."""
    new, old = _BRIER_COLUMNS
    with np.errstate(invalid="ignore", divide="ignore"):
        difference = (table.loss_sums[:, new] - table.loss_sums[:, old]) / table.counts
    return mean_delta_interval(np.where(table.counts > 0, difference, 0.0), table.counts,
                               confidence_level)


def _difference_moments(differences: Mapping[str, _FloatArray],
                        counts: _FloatArray) -> dict[str, _FloatArray]:
    """:func:`~.metric_intervals.difference_part_moments` of each difference, keys prefixed
    by its metric (``log_loss_up`` ...)."""
    return {f"{name}_{key}": value for name, d in differences.items()
            for key, value in difference_part_moments(d, counts).items()}


def _part(moments: Mapping[str, _FloatArray], name: str) -> dict[str, _FloatArray]:
    """The moments of one metric's difference, without its prefix."""
    return {key: moments[f"{name}_{key}"] for key in ("up", "up_var", "down", "down_var")}


def _joined(chunks: Sequence[Mapping[str, _FloatArray]], keys: Iterable[str]) -> dict[str, _FloatArray]:
    """Per key, the chunks' arrays end to end (empty without chunks)."""
    return {key: np.concatenate([c[key] for c in chunks]) if chunks else np.empty(0)
            for key in keys}


def _own_intervals(m: ModelStatistics, values: Mapping[str, float],
                   resampled: Mapping[str, _FloatArray], at_data: Mapping[str, _FloatArray],
                   ends: _Ends) -> dict[str, tuple[float, float] | None]:
    if ends.method != "per_metric":
        return {}
    return own_intervals(values, resampled, at_data, m.n - m.n_pos - m.fp + m.tp, m.n, m.n_pos,
                         delong_variance(m.scores.neg, m.scores.pos), ends.confidence_level,
                         tp=m.tp, fp=m.fp)


def _report(m: ModelStatistics, point: tuple[dict[str, float], dict[str, str | None]],
            resampled: Mapping[str, _FloatArray], jack: Mapping[str, _FloatArray],
            own_ends: Mapping[str, tuple[float, float] | None], ends: _Ends, n_bootstrap: int,
            seed: int) -> PerformanceReport:
    values, reasons = point
    metrics = []
    for name in METRIC_NAMES:
        value, reason = values[name], reasons[name]
        if reason is not None or not np.isfinite(value):
            metrics.append(MetricEstimate(name, float("nan"), float("nan"), float("nan"), m.n,
                                          reason or "not finite"))
            continue
        own = own_ends.get(name)
        lower, upper = (ends.of(value, resampled[name], jack[name],
                                tie_tolerance=_tie_tolerance(name, abs(value)))
                        if own is None else own)
        metrics.append(MetricEstimate(name, value, lower, upper, m.n, None))
    return PerformanceReport(tuple(metrics), _calibration(m), m.n, m.threshold, n_bootstrap,
                             ends.confidence_level, seed)


def _calibration(m: ModelStatistics) -> CalibrationTable:
    edges = np.linspace(0.0, 1.0, CALIBRATION_BINS + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_score = m.calibration_score_sum / m.calibration_n
        rate = m.calibration_label_sum / m.calibration_n
    bins = tuple(CalibrationBin(float(edges[i]), float(edges[i + 1]), int(m.calibration_n[i]),
                                float(mean_score[i]), float(rate[i]))
                 for i in range(CALIBRATION_BINS))
    return CalibrationTable(bins, "uniform", CALIBRATION_BINS)


def _comparison(points: list[tuple[dict[str, float], dict[str, str | None]]],
                resampled: list[dict[str, _FloatArray]], jack: list[dict[str, _FloatArray]],
                own: list[dict[str, tuple[float, float] | None]],
                pairs: tuple[tuple[int, int, int, int], tuple[int, int, int, int]],
                loss_delta: Mapping[str, tuple[float, float] | None] | None,
                ends: _Ends, n: int, threshold: float, n_bootstrap: int,
                seed: int) -> ComparisonReport:
    (p_new, r_new), (p_old, r_old) = points
    deltas = []
    for name in METRIC_NAMES:
        reason = r_new[name] and f"candidate: {r_new[name]}"
        reason = reason or (r_old[name] and f"champion: {r_old[name]}")
        delta = p_new[name] - p_old[name]
        if reason is not None or not np.isfinite(delta):
            deltas.append(MetricDelta(name, p_new[name], p_old[name], float("nan"), float("nan"),
                                      float("nan"), n, reason or "not finite"))
            continue
        paired = None
        if ends.method == "per_metric":
            paired = paired_delta_interval(name, (p_new[name], p_old[name]),
                                           (own[0].get(name), own[1].get(name)),
                                           (resampled[0][name], resampled[1][name]), pairs[0],
                                           log_loss_delta=(loss_delta or {}).get("log_loss"),
                                           brier_delta=(loss_delta or {}).get("brier"),
                                           auc_delta=(loss_delta or {}).get("roc_auc"),
                                           found=pairs[1], confidence_level=ends.confidence_level)
        lower, upper = (ends.of(delta, resampled[0][name] - resampled[1][name],
                                jack[0][name] - jack[1][name],
                                tie_tolerance=_tie_tolerance(name, abs(p_new[name]) + abs(p_old[name])))
                        if paired is None
                        else interval_holding(delta, *paired))
        deltas.append(MetricDelta(name, p_new[name], p_old[name], delta, lower, upper, n, None))
    return ComparisonReport(tuple(deltas), n, threshold, n_bootstrap, ends.confidence_level, seed)
