"""A multiclass segment's and its rest's estimates, the rest read off the whole data's totals.

:func:`~.segment_rows.evaluate_multiclass_segments` needs, per segment, every metric of
:func:`~.multiclass.evaluate_multiclass` on the segment's rows and on its rest's (every
other row), with the intervals the segments use: Wilson for the accuracy and each class's
recall and precision, percentile bootstraps over confusion cells for the F1s, logit Wald
with DeLong's variance for the macro one-vs-rest AUC and Hall's interval for the log loss.
Evaluating each rest from its rows sorts every class's column of nearly all the data and
resamples its loss cells (a bootstrap-t the segments then replace by Hall's), once per
segment: about 24 times the whole evaluation at 20 segments (``bench/RESULTS.md``,
"Segments of multiclass and regression models").  Here each rest is the whole data less
the segment:

* its confusion counts are the total's minus the segment's, and the F1s' resamples are
  drawn over those cells as :func:`~.multiclass.evaluate_multiclass` draws them (the same
  cell table, so the same seeded draws);
* its log loss sums (of the losses, their squares and cubes: Hall's interval) are the
  total's minus the segment's;
* for each class, each row's twice-placement (twice the rows of the other side ranked
  below it, ties once; :func:`~.ovr_auc.class_deviations`) is computed once over all the
  rows, and a rest row's is that less the segment's rows ranked below it, found by a
  binary search in the segment's sorted column: no sort of the rest.  Those give each
  class's AUC and the per-row DeLong deviations of the macro AUC's interval;
* no resample whose result a segment does not use is drawn (the log loss's loss cells).

Point values and intervals are those of evaluating the rest's rows (the counts exactly,
the float sums to rounding; tested equal).  Where that evaluation takes another route (no
resamples, a class with a single row on one side, fewer than 8 rows a confusion cell, a
segment of one row), the rows are evaluated as before.

Cost per segment: ``O(rows x classes)`` array passes and ``O(rows x classes x log
segment's rows)`` binary searches, plus the segment's own evaluation.  Memory: each class's
row order and each row's twice-placements, ``8 x rows x classes`` bytes (16 from 2^30 rows),
besides the probabilities.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt
from modelgate.fairness.score_intervals import wilson_bounds
from scipy.special import ndtri

from modelgate.intervals import interval_holding, percentile_interval, wilson_interval

from .metric_intervals import LOG_LOSS_MAX
from .metrics import MetricEstimate
from .multiclass import (
    RowStatistics,
    all_right_f1_intervals,
    evaluate_multiclass,
    metrics_of_weights,
    model_point,
    multiclass_metric_names,
    row_statistics,
    undefined_multiclass_reasons,
)
from .multiclass_cells import ROWS_PER_CELL, CellTable, resampled_counts
from .ovr_auc import deviations_interval
from .segment_intervals import mean_loss_interval

__all__ = ["multiclass_segment_estimators"]

_IntArray = npt.NDArray[np.intp]
_FloatArray = npt.NDArray[np.float64]
Estimator = Callable[[_IntArray], Mapping[str, MetricEstimate]]


@dataclass(frozen=True, slots=True)
class _Sums:
    """What a slice's estimates need besides its AUC: confusion counts and loss power sums."""

    n: int
    counts: npt.NDArray[np.int64]  # (C * C,), cell true * C + predicted
    loss: tuple[float, float, float]  # sums of the losses, their squares and their cubes


def multiclass_segment_estimators(
    y: npt.ArrayLike, proba: npt.ArrayLike, *, classes: Sequence[object], n_bootstrap: int,
    confidence_level: float, seed: int,
) -> tuple[Estimator, Estimator]:
    """The estimators of a segment (from its rows) and of its rest (from the segment's rows).

    Parameters
    ----------
    y : array_like of int, shape (N,)
        Class indices into ``classes``.
    proba : array_like, shape (N, C)
        The candidate's probabilities.
    classes : sequence
        The model's classes.
    n_bootstrap, confidence_level, seed
        As for :func:`~.multiclass.evaluate_multiclass`.

    Returns
    -------
    own, rest : callable
        Sorted row indices of a segment -> metric name -> estimate, of the segment's rows
        and of every other row; the log loss's interval is Hall's (where the rows are at
        least two and resamples are asked for).
    """
    labels = tuple(str(c) for c in classes)
    yy = np.asarray(y).astype(np.int64)
    p = np.asarray(proba, dtype=np.float64)
    n_rows, c = yy.size, len(labels)
    rows = row_statistics(yy, p) if n_rows else None
    losses = rows.log_loss if rows is not None else np.empty(0)
    cell = yy * c + (rows.predicted if rows is not None else yy)
    total = _Sums(n_rows, np.bincount(cell, minlength=c * c).astype(np.int64), _powers(losses))
    places = _TwicePlacements(yy, p)

    def evaluated(at: _IntArray) -> Mapping[str, MetricEstimate]:
        """Every estimate from the rows ``at`` (the route of the rows' own evaluation)."""
        found = dict(evaluate_multiclass(yy[at], p[at], classes=classes, n_bootstrap=n_bootstrap,
                                         confidence_level=confidence_level, seed=seed).by_name())
        loss = found["log_loss"]
        if n_bootstrap > 0 and loss.undefined_reason is None and at.size >= 2:
            lower, upper = _hall(loss.value, at.size, _powers(losses[at]), confidence_level)
            found["log_loss"] = replace(loss, ci_lower=lower, ci_upper=upper)
        return found

    def own(at: _IntArray) -> Mapping[str, MetricEstimate]:
        if n_bootstrap == 0 or at.size < 2:
            return evaluated(at)
        point = model_point(yy[at], p[at])
        sums = _Sums(at.size, np.bincount(cell[at], minlength=c * c).astype(np.int64),
                     _powers(losses[at]))
        found = _estimates(point.values, point.deviations, sums, labels, n_bootstrap,
                           confidence_level, seed)
        return evaluated(at) if found is None else found

    def rest(at: _IntArray) -> Mapping[str, MetricEstimate]:
        keep = np.ones(n_rows, dtype=bool)
        keep[at] = False
        others = np.flatnonzero(keep)
        if n_bootstrap == 0 or others.size < 2:
            return evaluated(others)
        part = _powers(losses[at])
        sums = _Sums(others.size, total.counts - np.bincount(cell[at], minlength=c * c),
                     (total.loss[0] - part[0], total.loss[1] - part[1], total.loss[2] - part[2]))
        aucs, deviations = places.rest(at, others)
        present = sums.counts[sums.counts > 0].astype(np.float64)
        values = metrics_of_weights(present[None, :], _cells(sums.counts, c),
                          aucs[None, :], c, loss=np.array([sums.loss[0] / sums.n]))[0]
        found = _estimates(values, deviations, sums, labels, n_bootstrap, confidence_level,
                           seed)
        return evaluated(others) if found is None else found

    return own, rest


def _powers(losses: _FloatArray) -> tuple[float, float, float]:
    squared = losses * losses
    return float(losses.sum()), float(squared.sum()), float(np.dot(squared, losses))


def _hall(value: float, n: int, powers: tuple[float, float, float],
          confidence_level: float) -> tuple[float, float]:
    """Hall's interval of a mean log loss (as the binary segments'), holding ``value``."""
    lower, upper = mean_loss_interval(value, n, *powers, LOG_LOSS_MAX, confidence_level)
    lower, upper = interval_holding(value, lower, upper)
    return float(lower), float(upper)


def _cells(counts: npt.NDArray[np.int64], c: int) -> RowStatistics:
    """The nonzero confusion cells as :func:`~.multiclass.metrics_of_weights` takes cells."""
    present = np.flatnonzero(counts)
    y_cell, predicted = present // c, present % c
    return RowStatistics(y_cell, predicted, y_cell == predicted, np.zeros(present.size))


def _estimates(values: _FloatArray, deviations: _FloatArray | None, sums: _Sums,
               labels: tuple[str, ...], n_bootstrap: int, confidence_level: float, seed: int
               ) -> dict[str, MetricEstimate] | None:
    """Every estimate of a slice from its point values, the per-row mean DeLong deviations
    of its macro AUC and its sums, as :func:`~.multiclass.evaluate_multiclass` (log loss:
    Hall's interval); None where that evaluation would take another route."""
    c = len(labels)
    names = multiclass_metric_names(labels)
    reasons = undefined_multiclass_reasons(values, names)
    present = np.flatnonzero(sums.counts)
    if ((reasons["roc_auc_ovr_macro"] is None and deviations is None)
            or present.size * ROWS_PER_CELL > sums.n):
        return None
    # the cell table evaluate_multiclass draws the F1s' resamples over: the same seeded draws
    table = CellTable(np.repeat(np.arange(present.size), sums.counts[present]),
                      sums.counts[present])
    cells = _cells(sums.counts, c)
    boot = np.vstack([metrics_of_weights(w, cells, np.full((w.shape[0], 1), np.nan), c,
                               loss=np.zeros(w.shape[0]))
                      for w in resampled_counts(table, n_bootstrap=n_bootstrap, seed=seed)])
    confusion = sums.counts.reshape(c, c)
    own = _wilson_from_counts(confusion, labels, confidence_level)
    if np.count_nonzero(confusion) == np.count_nonzero(np.diagonal(confusion)):  # all right
        own |= all_right_f1_intervals(confusion.sum(axis=1), confidence_level)
    own["log_loss"] = _hall(float(values[4]), sums.n, sums.loss, confidence_level)
    if deviations is not None and reasons["roc_auc_ovr_macro"] is None:
        support = confusion.sum(axis=1)
        own["roc_auc_ovr_macro"] = deviations_interval(
            float(values[3]), deviations, np.repeat(np.arange(c), support), c, confidence_level)
    out = {}
    for j, name in enumerate(names):
        ends = own.get(name) or percentile_interval(boot[:, j], confidence_level)
        lower, upper = interval_holding(values[j], *ends)
        if reasons[name] is not None:
            lower = upper = float("nan")
        out[name] = MetricEstimate(name, float(values[j]), lower, upper, sums.n, reasons[name])
    return out


def _wilson_from_counts(confusion: npt.NDArray[np.int64], labels: Sequence[str],
                        confidence_level: float) -> dict[str, tuple[float, float]]:
    """Wilson intervals of the accuracy and each class's recall and precision, as
    :func:`~.multiclass.evaluate_multiclass` takes them, from a confusion matrix."""
    hits = np.diagonal(confusion)
    out = {"accuracy": wilson_interval(int(hits.sum()), int(confusion.sum()), confidence_level)}
    z = float(ndtri(0.5 + 0.5 * confidence_level))
    for kind, trials in (("recall", confusion.sum(axis=1)), ("precision", confusion.sum(axis=0))):
        lower, upper = wilson_bounds(hits, trials, z)
        out |= {f"{kind}[{label}]": (float(lo), float(hi))
                for label, lo, hi in zip(labels, lower, upper, strict=True)}
    return out


class _TwicePlacements:
    """Each row's twice-placement per class over all rows, and a rest's read off them.

    A row of class ``k`` (a positive of ``k``'s one-vs-rest split) has ``2 x`` the other
    rows scored below it plus those tied, ``H``; any other row ``2 x`` the rows of ``k``
    scored above it plus those tied, ``G`` (:mod:`.rest_sums`' notation): its DeLong
    placement value is ``H / (2 n_neg)`` or ``G / (2 n_pos)``.
    """

    def __init__(self, y: npt.NDArray[np.int64], p: _FloatArray) -> None:
        self.y, self.p = y, p
        # placements are below 2 x rows, and so are row numbers: 4 bytes each where they fit
        small = np.int32 if 2 * y.size < 2**31 else np.int64
        self.twice = np.empty(p.shape, dtype=small)
        # each class's rows by increasing score: a rest's rows are looked up in that order,
        # so the binary searches walk the segment's sorted column forwards
        self.order = np.empty(p.shape, dtype=small)
        for k in range(p.shape[1]):
            column = np.ascontiguousarray(p[:, k])
            self.order[:, k] = np.argsort(column)
            is_pos = y == k
            self.twice[:, k] = _twice_placements(column, is_pos, np.sort(column[is_pos]),
                                                 np.sort(column[~is_pos]))

    def rest(self, at: _IntArray, others: _IntArray) -> tuple[_FloatArray, _FloatArray | None]:
        """Each class's AUC on the rows ``others`` (all but ``at``) and their per-row mean
        DeLong deviations in the order of ``others`` (None when some class has under two
        rows on a side)."""
        n, c = self.p.shape
        kept = np.ones(n, dtype=bool)
        kept[at] = False
        aucs = np.full(c, np.nan)
        total = np.zeros(n)
        defined = True
        for k in range(c):
            seg, seg_pos = self.p[at, k], self.y[at] == k
            in_rest = kept[self.order[:, k]]
            rows = self.order[in_rest, k]  # the rest's rows, by increasing score
            is_pos = self.y[rows] == k
            twice = self.twice[rows, k] - _twice_placements(
                self.p[rows, k], is_pos, np.sort(seg[seg_pos]), np.sort(seg[~seg_pos]))
            n_pos = int(is_pos.sum())
            n_neg = rows.size - n_pos
            if n_pos == 0 or n_neg == 0:
                defined = False
                continue
            aucs[k] = float(twice[is_pos].sum()) / (2.0 * n_pos * n_neg)
            if n_pos < 2 or n_neg < 2:
                defined = False
            if not defined:
                continue
            # class_deviations' scaled placement deviations
            v10 = twice[is_pos] / (2.0 * n_neg)
            auc = float(v10.mean())
            total[rows[is_pos]] += (v10 - auc) / np.sqrt(n_pos * (n_pos - 1.0))
            total[rows[~is_pos]] += (twice[~is_pos] / (2.0 * n_pos) - auc) / np.sqrt(
                n_neg * (n_neg - 1.0))
        return aucs, (total[others] / c if defined else None)


def _twice_placements(column: _FloatArray, is_pos: npt.NDArray[np.bool_], pos_sorted: _FloatArray,
                      neg_sorted: _FloatArray) -> npt.NDArray[np.int64]:
    """Per row of ``column``: ``H`` against ``neg_sorted`` where ``is_pos``, else ``G``
    against ``pos_sorted`` (2 x below + tied = left + right insertion points)."""
    out = np.empty(column.size, dtype=np.int64)
    v = column[is_pos]
    out[is_pos] = (np.searchsorted(neg_sorted, v, side="left")
                   + np.searchsorted(neg_sorted, v, side="right"))
    v = column[~is_pos]
    out[~is_pos] = (2 * pos_sorted.size - np.searchsorted(pos_sorted, v, side="left")
                    - np.searchsorted(pos_sorted, v, side="right"))
    return out
