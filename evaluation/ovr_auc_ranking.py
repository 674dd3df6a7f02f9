"""One-vs-rest ROC AUC of every class on every bootstrap resample, from one ranking a class.

The point estimate of :func:`~modelgate.evaluation.multiclass.evaluate_multiclass` and the
percentile fallback of its macro AUC's interval (a class with fewer than two rows, or fewer
than two others, has no DeLong variance) use these: each class keeps one ranking of the rows
(from its lowest positive up; the rows below count only by their total weight), and a chunk
of resamples is summed along it at once. Resample weights are whole counts, so every sum is
exact and the AUC is the same number whatever the order of summation.

Hand-written (on scikit-learn's definition, tested equal to it to 1e-12) because calling
scikit-learn once per resample and class costs a full pass each.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["ClassRanking", "ovr_auc", "ovr_auc_one", "rank_class"]

_FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class ClassRanking:
    """One class's one-vs-rest ranking, reduced to what its AUC needs.

    ``window`` holds the rows (in order of the class's probability) from the lowest tie
    group holding a row of the class to the top: every row below it is a negative below
    every positive, so only its total weight matters. ``positives`` are the class's rows in
    the same order, ``group_of`` the tie group (0..G-1) of each, and ``starts``/``ends``
    each group's bounds in ``window``.
    """

    window: npt.NDArray[np.int32]
    positives: npt.NDArray[np.int32]
    group_starts: npt.NDArray[np.intp]  # first positive of each group, in ``positives``
    starts: npt.NDArray[np.intp]
    ends: npt.NDArray[np.intp]


def rank_class(y: npt.NDArray[np.int64], column: _FloatArray, k: int,
                order: npt.NDArray[np.intp] | None = None) -> ClassRanking:
    # any sort will do: rows of one tie group are summed together, exactly
    values = np.ascontiguousarray(column)
    order = np.argsort(values) if order is None else order
    values = values[order]
    pos_at = np.flatnonzero(y[order] == k)
    if pos_at.size == 0:
        empty = np.empty(0, dtype=np.intp)
        return ClassRanking(np.empty(0, np.int32), np.empty(0, np.int32), empty, empty, empty)
    # tie groups holding a positive: where the positives' values change
    new_group = np.r_[True, values[pos_at[1:]] != values[pos_at[:-1]]]
    group_starts = np.flatnonzero(new_group)
    group_values = values[pos_at[group_starts]]
    starts = np.searchsorted(values, group_values, side="left")
    ends = np.searchsorted(values, group_values, side="right")
    lowest = starts[0]
    return ClassRanking(order[lowest:].astype(np.int32), order[pos_at].astype(np.int32),
                         group_starts, starts - lowest, ends - lowest)


def ovr_auc_one(w: npt.NDArray[np.integer], total: _FloatArray, r: ClassRanking) -> _FloatArray:
    """One class's one-vs-rest ROC AUC per resample, ties counted one half.

    The weights are bootstrap counts (integers), so every sum below is exact and the AUC is
    the same number whatever the order of summation.
    """
    if r.positives.size == 0:
        return np.full(w.shape[0], np.nan)
    prefix = np.cumsum(w[:, r.window], axis=1, dtype=_running_sum_dtype(w.shape[1]))
    at_start = np.zeros((w.shape[0], len(r.starts)))
    at_start[:, 1:] = prefix[:, r.starts[1:] - 1]  # the window opens at the first group
    at_end = prefix[:, r.ends - 1].astype(np.float64)
    in_window = prefix[:, -1].astype(np.float64)
    pos = np.add.reduceat(w[:, r.positives], r.group_starts, axis=1, dtype=np.int64).astype(np.float64)
    pos_below = np.cumsum(pos, axis=1) - pos
    below = (total - in_window)[:, None] + at_start - pos_below
    tied = at_end - at_start - pos
    n_pos = pos.sum(axis=1)
    n_neg = total - n_pos
    with np.errstate(invalid="ignore", divide="ignore"):
        auc = (pos * (below + 0.5 * tied)).sum(axis=1) / (n_pos * n_neg)
    auc[(n_pos == 0) | (n_neg == 0)] = np.nan
    return auc


def ovr_auc(w: _FloatArray, rankings: list[ClassRanking]) -> _FloatArray:
    """One-vs-rest ROC AUC per resample (rows) and class (columns); NaN when undefined."""
    total = w.sum(axis=1)
    counts = w.astype(_count_dtype(float(w.max(initial=0))))
    return np.column_stack([ovr_auc_one(counts, total, r) for r in rankings])


def _running_sum_dtype(n_rows: int) -> type[np.integer]:
    """The integer type of running sums of whole counts over ``n_rows`` rows: they sum to the
    row count, exact in int32 below 2^31 rows (a function of its own, so that its edge is
    tested without 2^31 rows).

    Examples
    --------
    >>> _running_sum_dtype(2**31 - 1).__name__, _running_sum_dtype(2**31).__name__
    ('int32', 'int64')
    """
    return np.int32 if n_rows < 2**31 else np.int64


def _count_dtype(largest: float) -> type[np.integer]:
    """The integer type bootstrap counts up to ``largest`` are gathered in: bytes below 256
    (almost always: a row drawn 256 times in one resample is all but impossible), else int32.

    Examples
    --------
    >>> _count_dtype(255.0).__name__, _count_dtype(256.0).__name__
    ('uint8', 'int32')
    """
    return np.uint8 if largest < 256 else np.int32
