"""Cell tables of the multiclass bootstrap: resamples drawn over cells of rows, not over rows.

Why
---
A percentile interval of a count metric (accuracy, macro and weighted F1, a class's recall
or precision) needs only how many rows of each ``(true class, predicted class)`` cell a
resample draws, and the counts of a row bootstrap over ``K`` cells are multinomial with the
cells' shares: drawing them costs ``resamples x K``, not ``resamples x rows``, with the same
distribution (the resampled values are those of the row bootstrap in law, not draw for draw).
Two models compared on the same rows share one table of ``(true, candidate's, champion's
predicted class)`` cells, so their deltas stay paired.

A per-row loss (the log loss, a log-loss difference) is cut into at most
:data:`MAX_LOSS_CELLS` cells of nearby values, the finest leading-mantissa-bits grid that fits
(as :mod:`~modelgate.evaluation.bootstrap_cells` cuts scores), and a resample's mean loss uses
each cell's mean: the expectation of the resampled rows' losses given the cell counts, exact
on the data. The spread left out inside a cell is at most that of values sharing their
leading bits (at 1M rows about ``2^-6`` relative), against a whole column's spread.

When the cells are nearly as many as the rows a multinomial draw (one binomial per cell) is
slower than drawing rows, so the rows are drawn (:func:`modelgate.intervals.bootstrap_indices`)
and counted per cell: the row bootstrap itself.

Hand-written: the draw is numpy's; only the choice of cells is ours.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from modelgate.intervals import bootstrap_indices

__all__ = ["MAX_LOSS_CELLS", "CellTable", "class_cells", "resampled_counts", "value_cells"]

MAX_LOSS_CELLS = 1 << 12
_CHUNK_ELEMENTS = 1 << 22
# a multinomial draw costs about 8 row draws per cell (numpy 2.4, measured): fewer rows a
# cell than that and drawing rows is cheaper
ROWS_PER_CELL = 8
_MANTISSA_BITS = 52


@dataclass(frozen=True, slots=True)
class CellTable:
    """Rows grouped into cells: ``cell`` (each row's cell) and ``counts`` (rows per cell)."""

    cell: npt.NDArray[np.intp]
    counts: npt.NDArray[np.int64]


def _table(keys: npt.NDArray[np.generic]) -> CellTable:
    _, cell, counts = np.unique(keys, return_inverse=True, return_counts=True)
    return CellTable(cell.astype(np.intp, copy=False).ravel(), counts.astype(np.int64))


def class_cells(y: npt.NDArray[np.int64], predicted: Sequence[npt.NDArray[np.int64]],
                n_classes: int) -> tuple[CellTable, npt.NDArray[np.int64], list[npt.NDArray[np.int64]]]:
    """Cells of distinct ``(true class, each model's predicted class)``; returns the table, each
    cell's true class and each model's predicted class of each cell.

    Examples
    --------
    >>> t, y_c, (p_c,) = class_cells(np.array([0, 1, 0, 2]), [np.array([0, 1, 0, 1])], 3)
    >>> t.counts.tolist(), y_c.tolist(), p_c.tolist()
    ([2, 1, 1], [0, 1, 2], [0, 1, 1])
    """
    columns = [y, *predicted]
    if n_classes ** len(columns) < 2**62:
        key = np.zeros(len(y), dtype=np.int64)
        for column in columns:
            key = key * n_classes + column
        table = _table(key)
    else:  # too many classes for one integer key
        table = _table(np.column_stack(columns))
    first = np.zeros(len(table.counts), dtype=np.intp)
    first[table.cell[::-1]] = np.arange(len(y) - 1, -1, -1)  # a row of each cell
    return table, y[first], [p[first] for p in predicted]


def value_cells(values: npt.NDArray[np.float64], max_cells: int = MAX_LOSS_CELLS
                ) -> tuple[CellTable, npt.NDArray[np.float64]]:
    """Cells of values sharing their leading mantissa bits, at the finest level (52: exact)
    with at most ``max_cells`` cells; returns the table and each cell's mean value.

    The level is found by bisection: a level's cells merge pairs of the next level's, so the
    count only grows with the level. Level 0 keeps sign and exponent (at most 4,096 cells:
    the coarsest level, taken even when over ``max_cells``).

    Examples
    --------
    >>> t, mean = value_cells(np.array([1.0, 1.0 + 2**-40, 3.0, 1.0]), max_cells=2)
    >>> t.counts.tolist(), float(mean[1])
    ([3, 1], 3.0)
    """
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)

    def codes(level: int) -> npt.NDArray[np.uint64]:
        return bits & np.uint64(~((1 << (_MANTISSA_BITS - level)) - 1) & (2**64 - 1))

    low, high = 0, _MANTISSA_BITS - 1
    if len(np.unique(bits)) <= max_cells:
        low = high = _MANTISSA_BITS
    while low < high:  # the finest level at most max_cells: low fits, high + 1 does not
        mid = (low + high + 1) // 2
        if len(np.unique(codes(mid))) <= max_cells:
            low = mid
        else:
            high = mid - 1
    table = _table(codes(low))
    return table, np.bincount(table.cell, weights=values) / table.counts


def resampled_counts(table: CellTable, *, n_bootstrap: int, seed: int
                     ) -> Iterator[npt.NDArray[np.float64]]:
    """Chunks of resamples as float64 counts per cell, shape ``(chunk, cells)``; each row
    sums to the rows of the table. Multinomial over the cells, or rows drawn and counted
    per cell when there are fewer than 8 rows a cell (the same law).

    Examples
    --------
    >>> t = CellTable(np.array([0, 0, 1]), np.array([2, 1]))
    >>> [c.sum(axis=1).tolist() for c in resampled_counts(t, n_bootstrap=2, seed=0)]
    [[3.0, 3.0]]
    """
    n, k = len(table.cell), len(table.counts)
    if k * ROWS_PER_CELL <= n:
        rng = np.random.default_rng(seed)
        share = table.counts / n
        chunk = max(1, _CHUNK_ELEMENTS // k)
        for start in range(0, n_bootstrap, chunk):
            size = min(chunk, n_bootstrap - start)
            yield rng.multinomial(n, share, size=size).astype(np.float64)
        return
    for idx in bootstrap_indices(n, n_bootstrap=n_bootstrap, seed=seed):
        b = idx.shape[0]
        flat = (table.cell[idx] + (np.arange(b, dtype=np.intp) * k)[:, None]).ravel()
        yield np.bincount(flat, minlength=b * k).reshape(b, k).astype(np.float64)
