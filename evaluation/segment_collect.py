"""Every segment of a column summarised in one pass over the rows, as ``collect`` summarises a slice.

:func:`~.segment_statistics.collect_segments` needs, per segment, exactly what
:func:`~.sufficient.collect` gives on the segment's rows.  Calling it per segment sorts
every segment's scores twice (its score table, then the merge that normalises it),
hashes its cells and validates its rows again: per column, about what the whole
evaluation's own summary costs (``bench/RESULTS.md``, "Segments", Speed).  Here the
batch's rows are validated, their losses and cell codes computed and their scores
sorted once (:class:`BatchRows`, shared by every column); per column, two stable radix
sorts of the small segment codes group the rows by segment (and label) in score order,
and every segment's score table and bootstrap cells are the runs of equal scores.

The result is ``collect`` on each segment's rows, field for field and bit for bit: the
float sums add the same rows in the same order (row order within a cell, a calibration
bin, a segment), which ``tests/evaluation/test_segment_collect.py`` checks against
``collect`` on the slices.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

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

__all__ = ["BatchRows", "batch_rows", "collect_by_code"]

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
    by_score: npt.NDArray[np.intp]


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
    return BatchRows(y, s, float(threshold), np.ascontiguousarray(losses[:, 0]),
                     np.ascontiguousarray(losses[:, 1]),
                     score_codes(s, threshold, EXACT_LEVEL),
                     np.searchsorted(edges[1:-1], s), np.argsort(s, kind="stable"))


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
    n = y.size
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

    # rows by segment in score order (ties in row order): each segment's score table
    by_score = rows.by_score[np.argsort(seg[rows.by_score], kind="stable")]
    seg_s, score_s = seg[by_score], s[by_score]
    start = _runs(seg_s, score_s)
    run_pos = np.add.reduceat(y64[by_score], start) if n else np.zeros(0, np.int64)
    run_n = np.diff(np.append(start, n))
    run_edges = np.searchsorted(seg_s[start], np.arange(n_codes + 1), side="left")

    # rows by segment, then label, in score order (ties in row order): the bootstrap cells
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

    out: dict[int, EvaluationStatistics] = {}
    for k in np.flatnonzero(sizes):
        lo, hi = bounds[k], bounds[k + 1]
        r0, r1 = run_edges[k], run_edges[k + 1]
        pos = run_pos[r0:r1].astype(np.int64)
        table = ScoreTable(score_s[start[r0:r1]], run_n[r0:r1].astype(np.int64) - pos, pos)
        if table.keys.size > max_distinct:
            table = _to_grid(table)
        model = ModelStatistics(
            threshold=threshold, n=int(sizes[k]), n_pos=int(n_pos[k]), tp=int(tp[k]),
            fp=int(fp[k]), log_loss_sum=float(log_loss[lo:hi].sum()),
            squared_error_sum=float(squared_error[lo:hi].sum()), scores=table,
            calibration_n=cal_n[k], calibration_score_sum=cal_s[k],
            calibration_label_sum=cal_y[k])
        c0, c1 = cell_edges[k], cell_edges[k + 1]
        cells = BootstrapTable(cell_label[c0:c1], cell_code[c0:c1],
                               np.zeros(c1 - c0, dtype=np.uint64), cell_counts[c0:c1],
                               cell_sums[c0:c1], EXACT_LEVEL)
        out[int(k)] = EvaluationStatistics(int(sizes[k]), model, None, _fit(cells, max_cells), ())
    return out
