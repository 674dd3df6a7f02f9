"""Every segment of a column summarised in one pass over the rows, as ``collect`` summarises a slice.

:func:`~.segment_statistics.collect_segments` needs, per segment, exactly what
:func:`~.sufficient.collect` gives on the segment's rows.  Calling it per segment sorts
every segment's scores twice (its score table, then the merge that normalises it),
hashes its cells and validates its rows again: per column, about what the whole
evaluation's own summary costs (``bench/RESULTS.md``, "Segments", Speed).  Here the
batch's rows are validated and their losses and cell codes computed once
(:class:`BatchRows`, shared by every column), and per column:

* with few distinct scores (at most :data:`FEW_SCORES` in the batch: a tree model's),
  the scores are hashed to their rank once and every segment's score table and bootstrap
  cells counted with ``bincount`` per (segment, label, score), no sort;
* else the scores are sorted once per batch and two stable radix sorts of the small
  segment codes group the rows by segment (and label) in score order, every segment's
  score table and bootstrap cells the runs of equal scores.

The result is ``collect`` on each segment's rows, field for field and bit for bit (the
float sums add the same rows in the same order: row order within a cell, a calibration
bin, a segment), except the bootstrap cells' loss sums of the counted tables, which
``bincount`` adds one by one where ``collect`` adds pairwise: equal to rounding.
``tests/evaluation/test_segment_collect.py`` checks both against ``collect`` on the slices.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from .bootstrap_cells import EXACT_LEVEL, BootstrapTable, _fit, score_codes
from .sufficient import (
    CALIBRATION_BINS,
    EvaluationStatistics,
    ModelStatistics,
    ScoreTable,
    _check_sizes,
    _row_losses,
    _to_grid,
)

__all__ = ["COUNTED_BINS", "FEW_SCORES", "BatchRows", "batch_rows", "collect_by_code"]

#: Most distinct scores in a batch for which every segment's table is counted (one bin per
#: segment, label and distinct score) instead of sorted.
FEW_SCORES = 1 << 16
#: Most bins (segments x 2 labels x distinct scores) a column's counted tables may take.
COUNTED_BINS = 1 << 22

_IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class BatchRows:
    """One batch's rows, checked, with what every segment column's summary reads."""

    y: npt.NDArray[np.int8]
    score: npt.NDArray[np.float64]
    threshold: float
    log_loss: npt.NDArray[np.float64]
    squared_error: npt.NDArray[np.float64]
    codes: npt.NDArray[np.uint64]
    calibration_bin: npt.NDArray[np.intp]
    #: Few distinct scores: the sorted distinct scores and each row's index among them;
    #: else None and ``by_score``, the rows in score order (ties in row order).
    distinct: npt.NDArray[np.float64] | None
    rank: npt.NDArray[np.intp] | None
    by_score: npt.NDArray[np.intp] | None


def batch_rows(y_true: npt.ArrayLike, score: npt.ArrayLike, threshold: float, *,
               max_cells: int, max_distinct: int) -> BatchRows:
    """Check a batch as :func:`~.sufficient.collect` does and compute its per-row summaries once."""
    from .metrics import _check_labels_scores, _check_options

    y, s = _check_labels_scores(y_true, score, "score")
    _check_options(threshold, 0, 0.5, 0)
    _check_sizes(max_cells, max_distinct)
    edges = np.linspace(0.0, 1.0, CALIBRATION_BINS + 1)
    # one contiguous array per loss: gathering and summing rows of an (n, 2) array costs more
    losses = _row_losses(y, s)
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
                     np.ascontiguousarray(losses[:, 1]),
                     score_codes(s, threshold, EXACT_LEVEL),
                     np.searchsorted(edges[1:-1], s), None if rank is None else distinct, rank,
                     by_score)


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
    """``collect`` of the rows of each code that occurs, keyed by the code.

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
    >>> from modelgate.evaluation.sufficient import collect
    >>> rows = batch_rows([0, 1, 1, 0], [0.2, 0.9, 0.4, 0.4], 0.5, max_cells=64, max_distinct=64)
    >>> got = collect_by_code(rows, np.array([1, 0, 1, 1]), 2, max_cells=64, max_distinct=64)
    >>> sorted(got), got[1].candidate.scores.pos.tolist(), got[1].bootstrap.counts.tolist()
    ([0, 1], [0, 1], [1, 1, 1])
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
        table, cells = tables(int(k))
        if table.keys.size > max_distinct:
            table = _to_grid(table)
        model = ModelStatistics(
            threshold=threshold, n=int(sizes[k]), n_pos=int(n_pos[k]), tp=int(tp[k]),
            fp=int(fp[k]), log_loss_sum=float(log_loss[lo:hi].sum()),
            squared_error_sum=float(squared_error[lo:hi].sum()), scores=table,
            calibration_n=cal_n[k], calibration_score_sum=cal_s[k],
            calibration_label_sum=cal_y[k])
        out[int(k)] = EvaluationStatistics(int(sizes[k]), model, None, _fit(cells, max_cells), ())
    return out


_Tables = Callable[[int], tuple[ScoreTable, BootstrapTable]]


def _sorted_tables(rows: BatchRows, seg: npt.NDArray[np.integer], n_codes: int) -> _Tables:
    """Each segment's score table and bootstrap cells as runs of the rows sorted by segment,
    (label,) score: continuous scores."""
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
    # rows by segment, then label, in score order (ties in row order): the bootstrap cells,
    # each cell's losses added in row order as ``collect`` adds them
    cell_rows = by_score[np.argsort(_small(seg_s.astype(np.int64) * 2 + y[by_score], 2 * n_codes),
                                    kind="stable")]
    seg_c, label_c = seg[cell_rows], y[cell_rows]
    cell_start = _runs(seg_c, label_c, s[cell_rows])
    cell_sums = np.zeros((cell_start.size, 4))  # no champion: its two losses 0
    if n:
        cell_sums[:, 0] = np.add.reduceat(rows.log_loss[cell_rows], cell_start)
        cell_sums[:, 1] = np.add.reduceat(rows.squared_error[cell_rows], cell_start)
    cell_counts = np.diff(np.append(cell_start, n)).astype(np.int64)
    cell_edges = np.searchsorted(seg_c[cell_start], np.arange(n_codes + 1), side="left")
    cell_label = label_c[cell_start].astype(np.int8)
    cell_code = rows.codes[cell_rows[cell_start]]

    def tables(k: int) -> tuple[ScoreTable, BootstrapTable]:
        r0, r1 = run_edges[k], run_edges[k + 1]
        pos = run_pos[r0:r1].astype(np.int64)
        c0, c1 = cell_edges[k], cell_edges[k + 1]
        return (ScoreTable(score_s[start[r0:r1]], run_n[r0:r1] - pos, pos),
                BootstrapTable(cell_label[c0:c1], cell_code[c0:c1],
                               np.zeros(c1 - c0, dtype=np.uint64), cell_counts[c0:c1],
                               cell_sums[c0:c1], EXACT_LEVEL))

    return tables


def _counted_tables(rows: BatchRows, seg: npt.NDArray[np.integer], n_codes: int) -> _Tables:
    """Each segment's score table and bootstrap cells counted per (segment, label, distinct
    score) with ``bincount``, no sort: few distinct scores.  ``bincount`` adds a cell's
    losses one by one in row order where ``collect`` adds them pairwise, so the cells' loss
    sums agree with its to rounding (every other field exactly)."""
    distinct = rows.distinct
    assert distinct is not None and rows.rank is not None
    width = distinct.size
    cell = (seg.astype(np.int64) * 2 + rows.y) * width + rows.rank
    size = 2 * n_codes * width
    counts = np.bincount(cell, minlength=size).reshape(n_codes, 2, width).astype(np.int64)
    log_loss = np.bincount(cell, weights=rows.log_loss, minlength=size).reshape(n_codes, 2, width)
    squared = np.bincount(cell, weights=rows.squared_error, minlength=size).reshape(n_codes, 2, width)
    codes = score_codes(distinct, rows.threshold, EXACT_LEVEL)

    def tables(k: int) -> tuple[ScoreTable, BootstrapTable]:
        neg, pos = counts[k]
        present = np.flatnonzero(neg + pos)
        label = np.repeat(np.array([0, 1], dtype=np.int8), [np.count_nonzero(neg),
                                                            np.count_nonzero(pos)])
        at = np.concatenate([np.flatnonzero(neg), np.flatnonzero(pos)])
        side = label.astype(np.intp)
        sums = np.zeros((at.size, 4))  # no champion: its two losses 0
        sums[:, 0], sums[:, 1] = log_loss[k][side, at], squared[k][side, at]
        return (ScoreTable(distinct[present], neg[present], pos[present]),
                BootstrapTable(label, codes[at], np.zeros(at.size, dtype=np.uint64),
                               counts[k][side, at], sums, EXACT_LEVEL))

    return tables
