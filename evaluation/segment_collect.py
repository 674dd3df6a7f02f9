"""Every segment of a column summarised in one pass over the rows, as ``collect`` summarises a slice.

:func:`~.segment_statistics.collect_segments` needs, per segment, exactly what
:func:`~.sufficient.collect` gives on the segment's rows.  Calling it per segment sorts
every segment's scores twice (its score table, then the merge that normalises it),
hashes its cells and validates its rows again: per column, about what the whole
evaluation's own summary costs (``bench/RESULTS.md``, "Segments", Speed).  Here the
batch's rows are validated and their losses and cell codes computed once
(:class:`BatchRows`, shared by every column), and per column:

* with few distinct scores (at most :data:`FEW_SCORES` in the batch: a tree model's),
  the scores are hashed to their rank once and every segment's score table counted with
  ``bincount`` per (segment, label, score), no sort;
* else the scores are sorted once per batch and a stable radix sort of the small segment
  codes groups the rows by segment in score order, every segment's score table the runs
  of equal scores.

A segment keeps no bootstrap cell table: its intervals are closed-form
(:mod:`.segment_intervals`) and read the loss moments off its score table, since a row's
losses depend on its label and score only.  Only a segment whose score table falls back
to the grid (more than ``max_distinct`` distinct scores), where the scores are no longer
known, keeps cells: :func:`cells_from_scores` of its exact table before the fallback.

The result is ``collect`` on each segment's rows, field for field and bit for bit (the
float sums add the same rows in the same order: row order within a calibration bin, a
segment), but for the bootstrap table: empty, or on the grid fallback the cells of
:func:`cells_from_scores`, whose loss sums are ``count x loss`` where ``collect`` adds the
rows' losses: equal to rounding.  ``tests/evaluation/test_segment_collect.py`` checks both
against ``collect`` on the slices.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from .bootstrap_cells import EXACT_LEVEL, BootstrapTable, fit_table, score_codes
from .sufficient import (
    CALIBRATION_BINS,
    EvaluationStatistics,
    ModelStatistics,
    ScoreTable,
    check_sizes,
    row_losses,
    to_grid,
)

__all__ = ["COUNTED_BINS", "FEW_SCORES", "NO_CELLS", "BatchRows", "batch_rows", "cells_from_scores",
           "collect_by_code"]

#: Most distinct scores in a batch for which every segment's table is counted (one bin per
#: segment, label and distinct score) instead of sorted.
FEW_SCORES = 1 << 16
#: Most bins (segments x 2 labels x distinct scores) a column's counted tables may take.
COUNTED_BINS = 1 << 22

_IntArray = npt.NDArray[np.int64]

#: A segment's bootstrap table while its score table is exact: no cells (nothing resamples
#: a segment; its loss moments come from its score table).
NO_CELLS = BootstrapTable(np.zeros(0, dtype=np.int8), np.zeros(0, dtype=np.uint64),
                          np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64),
                          np.zeros((0, 4)), EXACT_LEVEL)


@dataclass(frozen=True, slots=True)
class BatchRows:
    """One batch's rows, checked, with what every segment column's summary reads."""

    y: npt.NDArray[np.int8]
    score: npt.NDArray[np.float64]
    threshold: float
    log_loss: npt.NDArray[np.float64]
    squared_error: npt.NDArray[np.float64]
    calibration_bin: npt.NDArray[np.intp]
    #: Few distinct scores: the sorted distinct scores and each row's index among them;
    #: else None and ``by_score``, the rows in score order (ties in row order).
    distinct: npt.NDArray[np.float64] | None
    rank: npt.NDArray[np.intp] | None
    by_score: npt.NDArray[np.intp] | None


def batch_rows(y_true: npt.ArrayLike, score: npt.ArrayLike, threshold: float, *,
               max_cells: int, max_distinct: int) -> BatchRows:
    """Check a batch as :func:`~.sufficient.collect` does and compute its per-row summaries once."""
    from .binary_inputs import check_labels_scores, check_options

    y, s = check_labels_scores(y_true, score, "score")
    check_options(threshold, 0, 0.5, 0)
    check_sizes(max_cells, max_distinct)
    edges = np.linspace(0.0, 1.0, CALIBRATION_BINS + 1)
    # one contiguous array per loss: gathering and summing rows of an (n, 2) array costs more
    losses = row_losses(y, s)
    # few distinct scores (a tree model's): hashed, not sorted; each segment's table counted
    found, distinct = pd.factorize(s + 0.0)  # + 0.0: -0.0 is 0.0, as np.unique has it
    distinct = np.asarray(distinct, dtype=np.float64)
    rank = by_score = None
    if distinct.size <= FEW_SCORES:
        order = np.argsort(distinct)
        at = np.empty(distinct.size, dtype=np.intp)
        at[order] = np.arange(distinct.size)
        distinct, rank = distinct[order], at[found]
    else:
        by_score = np.argsort(s, kind="stable")
    return BatchRows(y, s, float(threshold), np.ascontiguousarray(losses[:, 0]),
                     np.ascontiguousarray(losses[:, 1]), np.searchsorted(edges[1:-1], s),
                     None if rank is None else distinct, rank, by_score)


def _small(codes: npt.NDArray[np.integer], size: int) -> npt.NDArray[np.integer]:
    """Codes below ``size`` as 16-bit integers where they fit: numpy sorts those by radix."""
    return codes.astype(np.uint16) if size <= 1 << 16 else codes.astype(np.int64)


def _runs(*keys: npt.NDArray[np.generic]) -> _IntArray:
    """First position of each run of equal consecutive keys (all keys equal)."""
    n = keys[0].size
    new = np.zeros(n, dtype=bool)
    if n:
        new[0] = True
        for k in keys:
            new[1:] |= k[1:] != k[:-1]
    return np.flatnonzero(new)


def collect_by_code(rows: BatchRows, codes: npt.NDArray[np.intp], n_codes: int, *,
                    max_cells: int, max_distinct: int) -> dict[int, EvaluationStatistics]:
    """``collect`` of the rows of each code that occurs, keyed by the code, without cells.

    Each segment's bootstrap table is :data:`NO_CELLS`, or on the grid fallback
    :func:`cells_from_scores` of its exact score table, fitted to ``max_cells``.

    Parameters
    ----------
    rows : BatchRows
        The batch (:func:`batch_rows`).
    codes : ndarray of int
        Each row's segment code, in ``[0, n_codes)``.
    n_codes : int
        How many codes there are.
    max_cells, max_distinct : int
        As for :func:`~.sufficient.collect`.

    Examples
    --------
    >>> rows = batch_rows([0, 1, 1, 0], [0.2, 0.9, 0.4, 0.4], 0.5, max_cells=64, max_distinct=64)
    >>> got = collect_by_code(rows, np.array([1, 0, 1, 1]), 2, max_cells=64, max_distinct=64)
    >>> sorted(got), got[1].candidate.scores.pos.tolist(), got[1].bootstrap.counts.tolist()
    ([0, 1], [0, 1], [])
    """
    y, s, threshold = rows.y, rows.score, rows.threshold
    seg = _small(np.asarray(codes), n_codes)
    sizes = np.bincount(seg, minlength=n_codes)
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    # rows by segment in row order: the sums ``collect`` takes over the slice's rows
    in_rows = np.argsort(seg, kind="stable")
    log_loss, squared_error = rows.log_loss[in_rows], rows.squared_error[in_rows]
    y64 = y.astype(np.int64)
    predicted = s >= threshold
    n_pos = np.bincount(seg, weights=y64, minlength=n_codes).astype(np.int64)
    tp = np.bincount(seg, weights=predicted & (y == 1), minlength=n_codes).astype(np.int64)
    fp = np.bincount(seg, weights=predicted & (y == 0), minlength=n_codes).astype(np.int64)
    cal = seg.astype(np.int64) * CALIBRATION_BINS + rows.calibration_bin
    cal_size = n_codes * CALIBRATION_BINS
    cal_n = np.bincount(cal, minlength=cal_size).reshape(n_codes, -1).astype(np.int64)
    cal_s = np.bincount(cal, weights=s, minlength=cal_size).reshape(n_codes, -1).astype(np.float64)
    cal_y = np.bincount(cal, weights=y, minlength=cal_size).reshape(n_codes, -1).astype(np.float64)

    counted = rows.distinct is not None and 2 * n_codes * rows.distinct.size <= COUNTED_BINS
    tables = _counted_tables(rows, seg, n_codes) if counted else _sorted_tables(rows, seg, n_codes)
    out: dict[int, EvaluationStatistics] = {}
    for k in np.flatnonzero(sizes):
        lo, hi = bounds[k], bounds[k + 1]
        table, cells = tables(int(k)), NO_CELLS
        if table.keys.size > max_distinct:  # the scores are lost on the grid: keep cells
            cells = fit_table(cells_from_scores(table, threshold), max_cells)
            table = to_grid(table)
        model = ModelStatistics(
            threshold=threshold, n=int(sizes[k]), n_pos=int(n_pos[k]), tp=int(tp[k]),
            fp=int(fp[k]), log_loss_sum=float(log_loss[lo:hi].sum()),
            squared_error_sum=float(squared_error[lo:hi].sum()), scores=table,
            calibration_n=cal_n[k], calibration_score_sum=cal_s[k],
            calibration_label_sum=cal_y[k])
        out[int(k)] = EvaluationStatistics(int(sizes[k]), model, None, cells, ())
    return out


def cells_from_scores(table: ScoreTable, threshold: float) -> BootstrapTable:
    """The bootstrap cells (level 52, no champion) of the rows an exact score table counts.

    Every row of a ``(label, score)`` cell has the same losses, so a cell's loss sums are
    ``count x loss``: ``collect``'s cells of the same rows to rounding (it adds the rows).

    Examples
    --------
    >>> from modelgate.evaluation.sufficient import collect
    >>> s = collect([0, 1, 1, 0], [0.2, 0.9, 0.4, 0.4], threshold=0.5)
    >>> c = cells_from_scores(s.candidate.scores, 0.5)
    >>> c.counts.tolist() == s.bootstrap.counts.tolist()
    True
    >>> bool(np.allclose(c.loss_sums, s.bootstrap.loss_sums, rtol=1e-15, atol=0))
    True
    """
    if table.grid:
        raise ValueError("cells_from_scores needs an exact score table (grid 0); got one on "
                         f"the grid of {table.grid:,} cells")
    neg, pos = table.neg > 0, table.pos > 0
    score = np.concatenate([table.keys[neg], table.keys[pos]])
    label = np.repeat(np.array([0, 1], dtype=np.int8), [np.count_nonzero(neg),
                                                        np.count_nonzero(pos)])
    counts = np.concatenate([table.neg[neg], table.pos[pos]]).astype(np.int64)
    losses = row_losses(label, score)
    sums = np.zeros((counts.size, 4))  # no champion: its two losses 0
    sums[:, :2] = counts[:, None] * losses
    return BootstrapTable(label, score_codes(score, threshold, EXACT_LEVEL),
                          np.zeros(counts.size, dtype=np.uint64), counts, sums, EXACT_LEVEL)


_Tables = Callable[[int], ScoreTable]


def _sorted_tables(rows: BatchRows, seg: npt.NDArray[np.integer], n_codes: int) -> _Tables:
    """Each segment's score table as runs of the rows sorted by segment, score: continuous
    scores."""
    y, s = rows.y, rows.score
    n = y.size
    in_order = rows.by_score if rows.by_score is not None else np.argsort(s, kind="stable")
    # rows by segment in score order (ties in row order): each segment's score table
    by_score = in_order[np.argsort(seg[in_order], kind="stable")]
    seg_s, score_s = seg[by_score], s[by_score]
    start = _runs(seg_s, score_s)
    run_pos = np.add.reduceat(y[by_score].astype(np.int64), start) if n else np.zeros(0, np.int64)
    run_n = np.diff(np.append(start, n)).astype(np.int64)
    run_edges = np.searchsorted(seg_s[start], np.arange(n_codes + 1), side="left")

    def tables(k: int) -> ScoreTable:
        r0, r1 = run_edges[k], run_edges[k + 1]
        pos = run_pos[r0:r1].astype(np.int64)
        return ScoreTable(score_s[start[r0:r1]], run_n[r0:r1] - pos, pos)

    return tables


def _counted_tables(rows: BatchRows, seg: npt.NDArray[np.integer], n_codes: int) -> _Tables:
    """Each segment's score table counted per (segment, label, distinct score) with
    ``bincount``, no sort: few distinct scores."""
    distinct = rows.distinct
    assert distinct is not None and rows.rank is not None
    width = distinct.size
    cell = (seg.astype(np.int64) * 2 + rows.y) * width + rows.rank
    counts = np.bincount(cell, minlength=2 * n_codes * width).reshape(n_codes, 2, width)

    def tables(k: int) -> ScoreTable:
        neg, pos = counts[k].astype(np.int64)
        present = np.flatnonzero(neg + pos)
        return ScoreTable(distinct[present], neg[present], pos[present])

    return tables
