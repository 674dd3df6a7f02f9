"""The bootstrap's cell table: rows counted per (label, candidate cell, champion cell).

Why
---
A multinomial bootstrap over a count table costs ``resamples x cells``, not rows, and
tables of partitions add up, so a mapped run and a one-process run give the same
numbers.  Its replicates are only as good as the cells: with fixed-width score bins a
confident model puts most rows into one or two bins, the replicated AUC counts every
pair inside a bin as a tie and the interval is the wrong width (zero width when every
score shares a bin).  Here the cells converge to the rows instead:

* **Exact while it fits.**  A cell is one distinct ``(label, candidate score, champion
  score)``; while there are at most ``max_cells`` of them (every test-sized set), the
  multinomial draw over the cells *is* the row bootstrap.
* **Else the finest relative-width grid that fits.**  A score ``s < 1/2`` is cut to the
  leading ``level`` mantissa bits of ``s``, a score ``s >= 1/2`` to those of ``1 - s``
  (exact in float64), so cells are narrow in both tails where a confident model's
  scores crowd, and the level is the finest (largest, 52 = exact) at which the table
  has at most ``max_cells`` cells.  Cutting is hierarchical (level ``l - 1`` merges
  pairs of level-``l`` cells), the count at a level only grows with the rows, so the
  level of a merged table is that of all its rows together whatever the partitioning.
  Each model's cell also carries its predicted label, so a cell never straddles the
  threshold and the confusion counts of every resample are exact.

Replicates
----------
Confusion counts are exact; the log loss and Brier score of a resample use the cell's
mean loss (the expectation of the resampled rows' loss given the cell counts, exact on
the data).  ROC AUC counts pairs in different cells exactly and the ``a x b`` resampled
positive-negative pairs inside a cell at that cell's concordance on the data (pairs
ordered right plus half the ties, from the merged per-score table), again the expected
value given the cell counts.  So every replicate lies in its metric's range, the
replicate on the data is the exact point estimate (no shift onto it), and at the exact
level every replicate is that of the row bootstrap.  When the score table itself is on
its ``2**-20`` fallback grid (past ``2**22`` distinct scores) the concordance is that of
the grid, within the reported AUC error bound.

Each resample also carries the squared standard errors of its mean log loss and Brier
score (from the cells' mean losses) for their studentized intervals, and :func:`delong_variance`
gives DeLong's AUC variance from the per-score table for the logit-scale AUC interval
(:mod:`modelgate.evaluation.metric_intervals`).

Coverage by simulation (AUC, accuracy, log loss, paired deltas at n = 200 to 200,000) is
in ``bench/RESULTS.md`` (``bench/bench_coverage.py``).

References
----------
.. [1] Efron, B. and Tibshirani, R. (1993). An Introduction to the Bootstrap, ch. 13.
.. [2] Mann, H. B. and Whitney, D. R. (1947). On a test of whether one of two random
   variables is stochastically larger than the other.
.. [3] DeLong, E. R., DeLong, D. M. and Clarke-Pearson, D. L. (1988). Comparing the areas
   under two or more correlated receiver operating characteristic curves: a
   nonparametric approach. Biometrics 44(3), 837-845.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

__all__ = ["EXACT_LEVEL", "MAX_CELLS", "BootstrapTable", "correct_pairs", "delong_variance",
           "jackknife_metrics",
           "merge_tables",
           "replicate_metrics",
           "score_codes", "table_from_rows"]

_FloatArray = npt.NDArray[np.float64]
_IntArray = npt.NDArray[np.int64]
_Codes = npt.NDArray[np.uint64]

MAX_CELLS = 1 << 15
EXACT_LEVEL = 52  # float64 mantissa bits
_HALF_BITS = 0x3FE  # exponent bits of 0.5; 0.5's float64 bits are this << 52
_PACKED_LEVEL = 19  # up to here, label and both codes fit one uint64 (1 + 2 x 31 bits)


@dataclass(frozen=True, slots=True)
class BootstrapTable:
    """Rows per ``(label, candidate code, champion code)`` cell, sorted by that key.

    A code is ``score cell << 1 | predicted label`` (see :func:`score_codes`); codes
    sort as the scores do.  ``loss_sums`` has one row per cell: candidate log loss,
    candidate squared error, champion log loss, champion squared error (champion
    codes and columns 0 without a champion).  ``level`` is the mantissa bits kept
    (52: every distinct score is its own cell).
    """

    label: npt.NDArray[np.int8]
    candidate: _Codes
    champion: _Codes
    counts: _IntArray
    loss_sums: _FloatArray
    level: int

    @property
    def cells(self) -> _Codes:
        """The cell keys as rows ``(label, candidate code, champion code)``."""
        return np.column_stack([self.label.astype(np.uint64), self.candidate, self.champion])


def score_codes(score: _FloatArray, threshold: float, level: int) -> _Codes:
    """Sortable cell code per score: the score cut to ``level`` mantissa bits, and the predicted label.

    Parameters
    ----------
    score : ndarray of float64
        Scores in [0, 1].
    threshold : float
        ``score >= threshold`` is predicted positive (the code's lowest bit).
    level : int
        Mantissa bits kept, 0 to 52 (52 keeps every distinct score apart).

    Returns
    -------
    ndarray of uint64
        Non-decreasing in the score; equal codes share a cell.

    Examples
    --------
    >>> s = np.array([0.1, 0.3, 0.5, 0.9, 0.999, 1.0])
    >>> c = score_codes(s, 0.5, 52)
    >>> bool(np.all(np.diff(c.astype(np.float64)) > 0))
    True
    >>> len(np.unique(score_codes(np.array([0.3, 0.31]), 0.5, 2)))  # one cell at 2 bits
    1
    """
    s = np.asarray(score, dtype=np.float64) + 0.0  # -0.0 -> 0.0
    low = s < 0.5
    bits = np.where(low, s, 1.0 - s).view(np.uint64) >> np.uint64(EXACT_LEVEL - level)
    half = np.uint64(_HALF_BITS << level)
    cell = np.where(low, bits, 2 * half + np.uint64(1) - bits)
    return (cell << np.uint64(1)) | (s >= threshold).astype(np.uint64)


def table_from_rows(y: npt.NDArray[np.int8], candidate: _Codes, champion: _Codes,
                    losses: _FloatArray, *, max_cells: int,
                    candidate_cells: tuple[_IntArray, _Codes] | None = None,
                    champion_cells: tuple[_IntArray, _Codes] | None = None) -> BootstrapTable:
    """Count rows per cell at the exact level (codes from ``score_codes(..., 52)``), then fit.

    ``candidate_cells`` is ``candidate`` already factorized, when the caller has it: each
    row's index into distinct codes, and those codes (then ``candidate`` is not hashed again);
    ``champion_cells`` likewise for ``champion``.

    Examples
    --------
    >>> y = np.array([0, 1, 1], dtype=np.int8)
    >>> c = score_codes(np.array([0.2, 0.9, 0.9]), 0.5, 52)
    >>> t = table_from_rows(y, c, np.zeros(3, np.uint64), np.ones((3, 4)), max_cells=16)
    >>> t.counts.tolist(), t.level
    ([1, 2], 52)
    """
    table = _aggregate_rows(y.astype(np.int8), candidate, champion, losses, candidate_cells,
                            champion_cells)
    return fit_table(table, max_cells)


def _aggregate_rows(label: npt.NDArray[np.int8], cand: _Codes, champ: _Codes,
                    sums: _FloatArray, cand_cells: tuple[_IntArray, _Codes] | None = None,
                    champ_cells: tuple[_IntArray, _Codes] | None = None) -> BootstrapTable:
    """:func:`_aggregate` of single rows at the exact level, by hashing instead of sorting.

    Scores repeat (a model's scores take a few hundred to a few hundred thousand values per
    million rows), so each code is factorized and every row counted into its cell with
    ``bincount``, and the rows are grouped by a stable radix sort of the 16-bit cell keys, so
    each cell's losses are added in row order by ``reduceat`` as the sort of rows adds them
    (the same sums to the last bit). More than 2**16 possible cells (continuous scores) fall
    back to the sort.
    """
    codes_c, distinct_c = cand_cells if cand_cells is not None else pd.factorize(cand)
    codes_h, distinct_h = champ_cells if champ_cells is not None else pd.factorize(champ)
    kc, kh = len(distinct_c), len(distinct_h)
    if len(label) == 0 or label.min() < 0 or label.max() > 1 or 2 * kc * kh > 1 << 16:
        return _aggregate(label, cand, champ, np.ones(len(label), dtype=np.int64), sums, EXACT_LEVEL)
    key = (label.astype(np.int64) * kc + codes_c) * kh + codes_h
    size = 2 * kc * kh
    counts = np.bincount(key, minlength=size)
    present = np.flatnonzero(counts)
    # Rows grouped by cell in row order (a stable radix sort of 16-bit keys), each cell's
    # losses added by reduceat exactly as the sort of rows adds them.
    order_rows = np.argsort(key.astype(np.uint16), kind="stable")
    starts = np.concatenate(([0], np.cumsum(counts[present])[:-1]))
    cell_sums = np.add.reduceat(sums[order_rows], starts, axis=0).astype(np.float64)
    lab = (present // (kc * kh)).astype(np.int8)
    c = np.asarray(distinct_c, dtype=np.uint64)[(present // kh) % kc]
    h = np.asarray(distinct_h, dtype=np.uint64)[present % kh]
    order = np.lexsort((h, c, lab))  # the cells in the order the sort of rows gives them
    return BootstrapTable(lab[order], c[order], h[order], counts[present][order].astype(np.int64),
                          cell_sums[order], EXACT_LEVEL)


def merge_tables(parts: Sequence[BootstrapTable], *, max_cells: int) -> BootstrapTable:
    """Add tables: all are cut to the coarsest level among them, added, then fitted."""
    level = min(p.level for p in parts)
    cut = [_coarsen_table(p, level) for p in parts]
    table = _aggregate(np.concatenate([p.label for p in cut]),
                       np.concatenate([p.candidate for p in cut]),
                       np.concatenate([p.champion for p in cut]),
                       np.concatenate([p.counts for p in cut]),
                       np.concatenate([p.loss_sums for p in cut]), level)
    return fit_table(table, max_cells)


def replicate_metrics(draws: _FloatArray, table: BootstrapTable, model: int,
                      twice_kappa: _FloatArray, inverse: _IntArray,
                      predicted: npt.NDArray[np.bool_]) -> dict[str, _FloatArray]:
    """Every metric per row of ``draws`` (resampled counts per cell) for one model.

    ``inverse`` maps each cell to the model's marginal cell (sorted by score),
    ``predicted`` says which marginal cells are predicted positive and ``twice_kappa``
    is twice each marginal cell's concordance (:func:`within_concordance`).
    """
    from scipy import sparse

    k = len(predicted)
    onehot = sparse.csr_matrix((np.ones(len(inverse)), (np.arange(len(inverse)),
                                                        table.label.astype(np.int64) * k + inverse)),
                               shape=(len(inverse), 2 * k))
    by_cell = np.asarray((onehot.T @ draws.T).T)
    neg, pos = by_cell[:, :k], by_cell[:, k:]
    n_pos = pos.sum(axis=1)
    n = n_pos + neg.sum(axis=1)
    tp, fp = pos[:, predicted].sum(axis=1), neg[:, predicted].sum(axis=1)
    below = np.cumsum(neg, axis=1) - neg
    twice_u = 2.0 * np.einsum("ij,ij->i", pos, below) + (pos * neg) @ twice_kappa
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_loss = table.loss_sums[:, 2 * model:2 * model + 2] / table.counts[:, None]
        losses = draws @ mean_loss
        auc = twice_u / (2.0 * n_pos * (n - n_pos))
        # squared standard error of the mean log loss, from the cells' mean losses (exact
        # with distinct-score cells; coarser cells leave out the spread inside a cell)
        second = draws @ (mean_loss[:, 0] ** 2)
        loss_var = np.maximum(second / n - (losses[:, 0] / n) ** 2, 0.0) / (n - 1.0)
        second = draws @ (mean_loss[:, 1] ** 2)
        brier_var = np.maximum(second / n - (losses[:, 1] / n) ** 2, 0.0) / (n - 1.0)
        return {
            "roc_auc": auc,
            "log_loss_var": loss_var,
            "brier_var": brier_var,
            "accuracy": (n - n_pos - fp + tp) / n,
            "precision": tp / (tp + fp),
            "recall": tp / n_pos,
            "f1": 2.0 * tp / (tp + fp + n_pos),
            "log_loss": losses[:, 0] / n,
            "brier": losses[:, 1] / n,
        }


def delong_variance(neg: npt.ArrayLike, pos: npt.ArrayLike) -> float:
    """DeLong's variance of the AUC from negatives and positives per distinct score.

    Written here rather than taken from a library because no library computes it from
    counts per distinct score (scikit-learn has no AUC variance; published DeLong
    implementations take per-row scores): a positive at score ``k`` has placement value
    ``(negatives below k + neg_k / 2) / n_neg``, a negative ``(positives above k +
    pos_k / 2) / n_pos`` (ties count one half), and the variance is ``S10 / n_pos +
    S01 / n_neg`` with ``S10``, ``S01`` the sample variances of the two classes'
    placement values (DeLong, DeLong and Clarke-Pearson 1988).  Rows sharing a score
    share its placement value, so this is the row-level DeLong variance, in
    O(distinct scores), and tables of partitions add up before it is computed.  NaN
    with fewer than two positives or negatives.

    Examples
    --------
    Negatives at scores 1, 2, positives at 2, 3 (AUC 7/8; by hand: placements of the
    positives 3/4 and 1, of the negatives 1 and 3/4, so S10 = S01 = 1/32):

    >>> delong_variance([1, 1, 0], [0, 1, 1])
    0.03125
    """
    neg_f, pos_f = np.asarray(neg, dtype=np.float64), np.asarray(pos, dtype=np.float64)
    n_pos, n_neg = pos_f.sum(), neg_f.sum()
    if n_pos < 2 or n_neg < 2:
        return float("nan")
    below = np.cumsum(neg_f) - neg_f
    above = n_pos - np.cumsum(pos_f)
    v10 = (below + neg_f / 2.0) / n_neg
    v01 = (above + pos_f / 2.0) / n_pos
    auc = float(np.dot(pos_f, v10) / n_pos)
    s10 = float(np.dot(pos_f, (v10 - auc) ** 2)) / (n_pos - 1.0)
    s01 = float(np.dot(neg_f, (v01 - auc) ** 2)) / (n_neg - 1.0)
    return float(s10 / n_pos + s01 / n_neg)


def correct_pairs(table: BootstrapTable, *, positives_only: bool = False) -> tuple[int, int, int, int]:
    """Rows both models classify correctly, only the candidate, only the champion, neither.

    A code's lowest bit is its predicted label, so every cell falls in one of the four.
    ``positives_only``: of the positive rows only (both models find it, only the
    candidate, only the champion, neither: the paired table of the recall).

    Examples
    --------
    >>> y = np.array([0, 1, 1], dtype=np.int8)
    >>> s, h = np.array([0.2, 0.9, 0.3]), np.array([0.7, 0.8, 0.6])
    >>> t = table_from_rows(y, score_codes(s, 0.5, 52), score_codes(h, 0.5, 52),
    ...                     np.zeros((3, 4)), max_cells=16)
    >>> correct_pairs(t)
    (1, 1, 1, 0)
    >>> correct_pairs(t, positives_only=True)
    (1, 0, 1, 0)
    """
    one = np.uint64(1)
    label = table.label.astype(np.uint64)
    new, old = (table.candidate & one) == label, (table.champion & one) == label
    c = table.counts if not positives_only else np.where(label == one, table.counts, 0)
    return (int(c[new & old].sum()), int(c[new & ~old].sum()), int(c[~new & old].sum()),
            int(c[~new & ~old].sum()))


def jackknife_metrics(table: BootstrapTable, model: int, twice_kappa: _FloatArray,
                      inverse: _IntArray, predicted: npt.NDArray[np.bool_]) -> dict[str, _FloatArray]:
    """Every metric with one row of each cell removed (one value per cell), in O(cells).

    The statistic is the one :func:`replicate_metrics` computes on a count vector,
    evaluated at ``counts - 1`` in one cell: counts lose the row, losses its cell's
    mean loss, and ROC AUC loses the row's pairs: a positive in marginal cell ``k``
    the negatives below ``k`` (and those in ``k`` at the cell's concordance), a
    negative the positives above ``k`` (likewise).  NaN where removing the row leaves
    the metric undefined (the last positive, say).

    Examples
    --------
    >>> y = np.array([0, 0, 1, 1], dtype=np.int8)
    >>> c = score_codes(np.array([0.1, 0.6, 0.4, 0.9]), 0.5, 52)
    >>> t = table_from_rows(y, c, np.zeros(4, np.uint64), np.zeros((4, 4)), max_cells=16)
    >>> keys, inverse, predicted = marginal_cells(t.candidate)
    >>> jackknife_metrics(t, 0, np.ones(len(keys)), inverse, predicted)["roc_auc"].tolist()  # AUC 3/4
    [0.5, 1.0, 1.0, 0.5]
    """
    k = len(predicted)
    lab = table.label.astype(np.int64)
    pos = np.bincount(inverse, weights=table.counts * lab, minlength=k)
    neg = np.bincount(inverse, weights=table.counts * (1 - lab), minlength=k)
    n_pos, n = pos.sum(), float(table.counts.sum())
    below = np.cumsum(neg) - neg  # negatives in cells under each marginal cell
    above = n_pos - np.cumsum(pos)  # positives in cells over it
    twice_u = 2.0 * np.dot(pos, below) + np.dot(pos * neg, twice_kappa)
    j = inverse
    lost = np.where(lab == 1, 2.0 * below[j] + neg[j] * twice_kappa[j],
                    2.0 * above[j] + pos[j] * twice_kappa[j])
    pred = predicted[j].astype(np.float64)
    n1, n_pos1 = n - 1.0, n_pos - lab
    tp1 = pos[predicted].sum() - lab * pred
    fp1 = neg[predicted].sum() - (1 - lab) * pred
    sums = table.loss_sums[:, 2 * model:2 * model + 2]
    with np.errstate(invalid="ignore", divide="ignore"):  # one row: nothing left, NaN
        losses = (sums.sum(axis=0) - sums / table.counts[:, None]) / n1
        return {
            "roc_auc": (twice_u - lost) / (2.0 * n_pos1 * (n1 - n_pos1)),
            "accuracy": (n1 - n_pos1 - fp1 + tp1) / n1,
            "precision": tp1 / (tp1 + fp1),
            "recall": tp1 / n_pos1,
            "f1": 2.0 * tp1 / (tp1 + fp1 + n_pos1),
            "log_loss": losses[:, 0],
            "brier": losses[:, 1],
        }


def marginal_cells(codes: _Codes) -> tuple[_Codes, _IntArray, npt.NDArray[np.bool_]]:
    """A model's distinct codes (in score order), each cell's index among them, and which
    are predicted positive."""
    keys, inverse = np.unique(codes, return_inverse=True)
    return keys, inverse.astype(np.int64), (keys & np.uint64(1)).astype(bool)


def within_concordance(score_keys: _FloatArray, neg: _IntArray, pos: _IntArray,
                       threshold: float, level: int, marginal: _Codes) -> _FloatArray:
    """Twice the share of a marginal cell's positive-negative pairs ordered right (ties half).

    ``score_keys``, ``neg`` and ``pos`` are the merged per-score table (scores sorted);
    ``marginal`` the model's sorted cell codes.  A cell with no pair gets 1 (never used:
    its resamples have no pair either).

    Examples
    --------
    >>> keys = np.array([0.1, 0.2, 0.3])  # exact cells: no pair shares one
    >>> within_concordance(keys, np.array([1, 0, 0]), np.array([0, 1, 1]), 0.9, 52,
    ...                    score_codes(keys, 0.9, 52)).tolist()
    [1.0, 1.0, 1.0]
    >>> one = score_codes(np.array([0.3]), 0.9, 0)  # [0.25, 0.5) is one cell at level 0
    >>> within_concordance(np.array([0.3, 0.4]), np.array([1, 0]), np.array([0, 1]), 0.9, 0,
    ...                    one).tolist()  # the positive above the negative
    [2.0]
    """
    codes = score_codes(score_keys, threshold, level)
    start = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    neg64, pos64 = neg.astype(np.int64), pos.astype(np.int64)
    below = np.cumsum(neg64) - neg64
    below -= np.repeat(below[start], np.diff(np.r_[start, len(codes)]))
    twice_w = np.add.reduceat(2 * pos64 * below + pos64 * neg64, start)
    pairs = np.add.reduceat(pos64, start) * np.add.reduceat(neg64, start)
    with np.errstate(invalid="ignore", divide="ignore"):
        kappa = np.where(pairs > 0, twice_w / np.maximum(pairs, 1), 1.0)
    found = np.searchsorted(codes[start], marginal)
    found = np.minimum(found, len(start) - 1)
    return np.where(codes[start][found] == marginal, kappa[found], 1.0).astype(np.float64)


# ----------------------------------------------------------------------------- internals


def _coarsen(codes: _Codes, level: int, to_level: int) -> _Codes:
    """Codes of ``level`` cut to ``to_level`` bits (the same as coding the scores at it)."""
    if to_level == level:
        return codes
    shift = np.uint64(level - to_level)
    pred, cell = codes & np.uint64(1), codes >> np.uint64(1)
    half, to_half = np.uint64(_HALF_BITS << level), np.uint64(_HALF_BITS << to_level)
    one = np.uint64(1)
    low = cell < half
    high_bits = (2 * half + one - np.where(low, half, cell)) >> shift
    cut = np.where(low, cell >> shift, 2 * to_half + one - high_bits)
    return (cut << one) | pred


def _coarsen_table(t: BootstrapTable, level: int) -> BootstrapTable:
    if level == t.level:
        return t
    return BootstrapTable(t.label, _coarsen(t.candidate, t.level, level),
                          _coarsen(t.champion, t.level, level), t.counts, t.loss_sums, level)


def _starts(label: npt.NDArray[np.int8], cand: _Codes, champ: _Codes,
            level: int) -> tuple[_IntArray, _IntArray]:
    """Stable sort order of the keys and the first position of each distinct key in it."""
    if level <= _PACKED_LEVEL:  # codes < 2**(12 + level): the key packs into one uint64
        width = np.uint64(12 + level)
        key = (label.astype(np.uint64) << np.uint64(62)) | (cand << width) | champ
        order = np.argsort(key, kind="stable")
        packed = key[order]
        return order, np.flatnonzero(np.r_[True, packed[1:] != packed[:-1]])
    order = np.lexsort((champ, cand, label))
    lab, c, h = label[order], cand[order], champ[order]
    new = np.r_[True, (lab[1:] != lab[:-1]) | (c[1:] != c[:-1]) | (h[1:] != h[:-1])]
    return order, np.flatnonzero(new)


def _aggregate(label: npt.NDArray[np.int8], cand: _Codes, champ: _Codes, counts: _IntArray,
               sums: _FloatArray, level: int) -> BootstrapTable:
    order, start = _starts(label, cand, champ, level)
    # lexsort is stable: the float sums of a cell add in the order given (partition order)
    return BootstrapTable(label[order][start], cand[order][start], champ[order][start],
                          np.add.reduceat(counts[order], start).astype(np.int64),
                          np.add.reduceat(sums[order], start, axis=0).astype(np.float64), level)


def _n_cells(t: BootstrapTable, level: int) -> int:
    _, start = _starts(t.label, _coarsen(t.candidate, t.level, level),
                       _coarsen(t.champion, t.level, level), level)
    return len(start)


def fit_table(t: BootstrapTable, max_cells: int) -> BootstrapTable:
    """The table at the finest level <= its own with at most ``max_cells`` cells (level 0
    when even that has more: scores spread over more binades than ``max_cells``)."""
    if len(t.counts) <= max_cells:
        return t
    lo, hi, best = 0, t.level - 1, 0
    if hi > _PACKED_LEVEL:  # settle the cheap packed levels first
        if _n_cells(t, _PACKED_LEVEL) <= max_cells:
            lo = best = _PACKED_LEVEL
        else:
            hi = _PACKED_LEVEL - 1
    while lo <= hi:  # cells only merge as the level drops, so the count is monotone
        mid = (lo + hi) // 2
        if _n_cells(t, mid) <= max_cells:
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    cut = _coarsen_table(t, best)
    return _aggregate(cut.label, cut.candidate, cut.champion, cut.counts, cut.loss_sums, best)
