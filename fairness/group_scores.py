"""ROC AUC per sensitive group, from a mergeable table of negatives and positives per group and score.

The disaggregated table of :mod:`modelgate.fairness.disaggregate` counts decisions at the
threshold; a group's ROC AUC needs its scores.  The evaluation pipeline scores each file in
its own task and merges their statistics, so the scores are kept as something that adds
up: per sensitive group, how many negatives and how many positives got each distinct score
(a :class:`GroupScoreTable`, one per sensitive feature).  :func:`merge_group_scores` adds
tables of any partitions in any order; the merged table does not depend on how the rows
were split.

Statistic
---------
A group's ROC AUC is the Mann-Whitney statistic over its rows of the table: the share of
(positive, negative) pairs of the group where the positive scores higher, ties counting
one half.  It is computed in exact integer arithmetic, so it equals scikit-learn's
``roc_auc_score`` on the group's rows.  A group without positives or without negatives
has no AUC (NaN).

Size, and when the AUC is estimated
-----------------------------------
The table has one row per distinct ``(group, score)`` pair.  Past ``max_distinct`` rows
(default 2**22, about 130 MB) every group's scores are pooled on a grid of width 2**-20,
halved until the table fits (many groups can need a coarser grid), and each group's AUC
counts the pairs sharing a cell as ties.  It is then no longer exact;
:attr:`GroupAuc.error_bound` bounds its error by the share of the group's pairs that share
a cell, counted one half instead of 0 or 1: ``sum_k pos_k * neg_k / (2 * P * N)``.  The
bound is 0 when the table is exact.

Hand-written rather than taken from a library: scikit-learn computes AUC from rows, not
from count tables that merge across partitions, and ``modelgate.evaluation.sufficient``
(which does this for the whole data set) may not be imported from ``fairness`` (the
evaluation core imports this one, and cores must not form a cycle).

References
----------
.. [1] Mann, H. B. and Whitney, D. R. (1947). On a test of whether one of two random
   variables is stochastically larger than the other.
.. [2] fairlearn, ``MetricFrame`` with ``sklearn.metrics.roc_auc_score`` per group.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from .disaggregate import MISSING_LABEL, DisaggregatedTable, encode_groups

__all__ = [
    "GroupAuc",
    "GroupScoreTable",
    "ScoreRanks",
    "group_roc_auc",
    "group_score_table",
    "group_score_table_from_codes",
    "merge_group_scores",
    "rank_scores",
    "with_group_auc",
]

MAX_DISTINCT = 1 << 22
FALLBACK_GRID = 1 << 20
_IntArray = npt.NDArray[np.int64]
_FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class GroupScoreTable:
    """Negatives and positives per group and distinct score of one sensitive feature.

    Attributes
    ----------
    feature : str
        The sensitive feature.
    labels : tuple of str
        Group labels; ``group`` indexes them.
    group, keys, neg, pos : ndarray
        One row per ``(group, key)``, sorted by group code then key: the key is the score
        (``grid == 0``) or the cell ``floor(score * grid)``; ``neg`` and ``pos`` count the
        rows with label 0 and 1.
    grid : int
        0 when the keys are the scores, else the number of cells scores were pooled into.
    """

    feature: str
    labels: tuple[str, ...]
    group: _IntArray
    keys: _FloatArray
    neg: _IntArray
    pos: _IntArray
    grid: int = 0


@dataclass(frozen=True, slots=True)
class ScoreRanks:
    """A batch's distinct scores, ascending, and each row's index into them.

    Computed once per batch by :func:`rank_scores` and shared by everything that counts rows
    per distinct score (the group score tables here, the evaluation's score and bootstrap
    tables), so no one sorts the rows.

    Attributes
    ----------
    keys : ndarray of float64
        The distinct scores, ascending (``-0.0`` as ``0.0``).
    rank : ndarray of int64
        Per row, the index of its score in ``keys``.
    """

    keys: _FloatArray
    rank: _IntArray


def rank_scores(score: npt.ArrayLike) -> ScoreRanks:
    """The distinct scores and each row's rank among them: a hash of the rows, then a sort of
    the distinct values only (scores of tabular models repeat: thousands per million rows).

    Parameters
    ----------
    score : array_like of shape (n,)
        Scores without NaN.

    Returns
    -------
    ScoreRanks

    Raises
    ------
    ValueError
        If ``score`` is not 1-D or holds NaN.

    Examples
    --------
    >>> r = rank_scores([0.7, 0.2, 0.7, 0.5])
    >>> r.keys.tolist(), r.rank.tolist()
    ([0.2, 0.5, 0.7], [2, 0, 2, 1])
    """
    s = np.asarray(score, dtype=np.float64)
    if s.ndim != 1:
        raise ValueError(f"score must be 1-D; got shape {s.shape}")
    codes, distinct = pd.factorize(s + 0.0)  # one cell for -0.0 and 0.0, as np.unique
    if len(codes) and codes.min() < 0:
        raise ValueError("score must not hold NaN")
    order = np.argsort(distinct)
    rank_of = np.empty(len(order), dtype=np.int64)
    rank_of[order] = np.arange(len(order), dtype=np.int64)
    return ScoreRanks(np.asarray(distinct, dtype=np.float64)[order], rank_of[codes])


@dataclass(frozen=True, slots=True)
class GroupAuc:
    """ROC AUC of one group, with the counts behind it.

    Attributes
    ----------
    group : str
    positives, negatives : int
        Rows with label 1 and 0.
    roc_auc : float
        NaN without positives or negatives.
    error_bound : float
        Most the AUC can differ from the exact one (0 when exact); NaN when ``roc_auc`` is.
    """

    group: str
    positives: int
    negatives: int
    roc_auc: float
    error_bound: float


def group_score_table(
    feature: str,
    y_true: npt.ArrayLike,
    score: npt.ArrayLike,
    sensitive: npt.ArrayLike,
    *,
    max_distinct: int = MAX_DISTINCT,
) -> GroupScoreTable:
    """Count negatives and positives per group of ``sensitive`` and distinct score.

    Parameters
    ----------
    feature : str
        Name of the sensitive feature.
    y_true : array_like of shape (n,)
        Labels, 0 or 1.
    score : array_like of shape (n,)
        Scores: probabilities of label 1, in [0, 1].
    sensitive : array_like of shape (n,)
        Values of the sensitive feature, encoded as by
        :func:`~modelgate.fairness.disaggregate.encode_groups`.
    max_distinct : int, default 2**22
        Most rows kept before the scores are pooled on the grid.

    Returns
    -------
    GroupScoreTable

    Raises
    ------
    ValueError
        On labels other than 0/1, scores outside [0, 1] or arrays of different lengths.

    Examples
    --------
    >>> t = group_score_table("g", [0, 1, 1, 0], [0.2, 0.9, 0.2, 0.2], ["a", "a", "b", "a"])
    >>> t.labels, t.group.tolist(), t.keys.tolist(), t.neg.tolist(), t.pos.tolist()
    (('a', 'b'), [0, 0, 1], [0.2, 0.9, 0.2], [2, 0, 0], [0, 1, 1])
    """
    labels, codes = encode_groups(sensitive)
    return group_score_table_from_codes(feature, y_true, score, labels, codes,
                                        max_distinct=max_distinct)


def group_score_table_from_codes(
    feature: str,
    y_true: npt.ArrayLike,
    score: npt.ArrayLike,
    labels: tuple[str, ...],
    codes: npt.ArrayLike,
    *,
    max_distinct: int = MAX_DISTINCT,
    ranks: ScoreRanks | None = None,
) -> GroupScoreTable:
    """:func:`group_score_table` from group labels and codes already encoded; with ``ranks``
    (:func:`rank_scores` of ``score``) the rows are counted into ``(group, score)`` cells
    instead of sorted, the same table.

    Examples
    --------
    >>> t = group_score_table_from_codes("g", [1, 0], [0.7, 0.1], ("x", "y"), [1, 1])
    >>> t.group.tolist(), t.neg.tolist(), t.pos.tolist()
    ([1, 1], [1, 0], [0, 1])
    """
    y = np.asarray(y_true)
    s = np.asarray(score, dtype=np.float64)
    c = np.asarray(codes, dtype=np.int64)
    if y.ndim != 1 or s.shape != y.shape or c.shape != y.shape:
        raise ValueError(f"y_true, score and codes of {feature!r} must be 1-D of one length; got "
                         f"shapes {y.shape}, {s.shape} and {c.shape}")
    if not np.all((y == 0) | (y == 1)):
        raise ValueError(f"y_true must contain only 0 and 1; found {np.unique(y)[:5]!r}")
    outside = ~((s >= 0.0) & (s <= 1.0))  # NaN too; the grid fallback needs [0, 1]
    if outside.any():
        raise ValueError(f"score must be in [0, 1]; found {int(outside.sum())} value(s) outside, "
                         f"e.g. {s[outside][:3]!r}")
    if c.size and (c.min() < 0 or c.max() >= len(labels)):
        raise ValueError(f"codes must be in 0..{len(labels) - 1}; got {c.min()}..{c.max()}")
    _check_max_distinct(max_distinct)
    if ranks is not None:
        if ranks.rank.shape != y.shape:
            raise ValueError(f"ranks of {feature!r} must have the length of y_true ({len(y)}); "
                             f"got {ranks.rank.size}")
        # a cell per (group, distinct score): counting beats sorting while the cells are few
        if len(labels) * len(ranks.keys) <= max(len(y), 1 << 16):
            return _bounded(_counted(feature, tuple(labels), c, y, ranks), max_distinct)
    pos = y.astype(np.int64)
    return _bounded(_collapse(feature, tuple(labels), c, s, 1 - pos, pos, grid=0), max_distinct)


def _counted(feature: str, labels: tuple[str, ...], group: _IntArray, y: npt.NDArray[Any],
             ranks: ScoreRanks) -> GroupScoreTable:
    """:func:`_collapse` of single rows, counted per ``(group, score rank)`` cell."""
    k = len(ranks.keys)
    cell = group * k + ranks.rank
    total = np.bincount(cell, minlength=len(labels) * k)
    pos = np.bincount(cell, weights=y, minlength=len(labels) * k).astype(np.int64)
    present = np.flatnonzero(total)
    return GroupScoreTable(feature, labels, (present // k).astype(np.int64),
                           ranks.keys[present % k] + 0.0, (total - pos)[present].astype(np.int64),
                           pos[present], 0)


def merge_group_scores(
    parts: Sequence[GroupScoreTable], *, max_distinct: int = MAX_DISTINCT
) -> GroupScoreTable:
    """Add the tables of several partitions of the same feature.

    Groups are matched by label: the merged labels are every label in first-seen order,
    the missing-value group last.  A part pooled on a grid pools the others onto it (the
    coarsest grid of any part).

    Examples
    --------
    >>> a = group_score_table("g", [0, 1], [0.2, 0.9], ["a", "b"])
    >>> b = group_score_table("g", [1, 0], [0.9, 0.3], ["b", "c"])
    >>> m = merge_group_scores([a, b])
    >>> m.labels, m.group.tolist(), m.keys.tolist(), m.pos.tolist()
    (('a', 'b', 'c'), [0, 1, 2], [0.2, 0.9, 0.3], [0, 2, 0])
    """
    if not parts:
        raise ValueError("merge_group_scores needs at least one GroupScoreTable; got none")
    feature = parts[0].feature
    if any(p.feature != feature for p in parts):
        raise ValueError(f"cannot merge tables of different features "
                         f"{sorted({p.feature for p in parts})!r}")
    _check_max_distinct(max_distinct)
    grid = min((p.grid for p in parts if p.grid), default=0)  # the coarsest grid of any part
    tables = [_pooled(p, grid) if grid else p for p in parts]
    order: dict[str, int] = {}
    for t in tables:
        for label in t.labels:
            if label != MISSING_LABEL:
                order.setdefault(label, len(order))
    if any(MISSING_LABEL in t.labels for t in tables):
        order[MISSING_LABEL] = len(order)
    group = np.concatenate([np.array([order[lb] for lb in t.labels], dtype=np.int64)[t.group]
                            for t in tables])
    merged = _collapse(feature, tuple(order), group, np.concatenate([t.keys for t in tables]),
                       np.concatenate([t.neg for t in tables]),
                       np.concatenate([t.pos for t in tables]), grid=grid)
    return _bounded(merged, max_distinct)


def group_roc_auc(table: GroupScoreTable) -> tuple[GroupAuc, ...]:
    """ROC AUC of every group of the table, in label order (groups without rows left out).

    Examples
    --------
    >>> t = group_score_table("g", [0, 1, 1, 0, 0, 1], [0.1, 0.8, 0.4, 0.4, 0.9, 0.2],
    ...                       ["a", "a", "a", "a", "b", "b"])
    >>> [(a.group, a.positives, a.negatives, a.roc_auc) for a in group_roc_auc(t)]
    [('a', 2, 2, 0.875), ('b', 1, 1, 0.0)]
    """
    if len(table.keys) == 0:
        return ()
    start = np.flatnonzero(np.r_[True, table.group[1:] != table.group[:-1]])
    below_all = np.cumsum(table.neg) - table.neg  # negatives scoring lower, from the table start
    lengths = np.diff(np.r_[start, len(table.keys)])
    below = below_all - np.repeat(below_all[start], lengths)  # ... within the row's group
    twice_u = np.add.reduceat(2 * table.pos * below + table.pos * table.neg, start)
    ties = np.add.reduceat(table.pos * table.neg, start)
    positives = np.add.reduceat(table.pos, start)
    negatives = np.add.reduceat(table.neg, start)
    out = []
    for i, code in enumerate(table.group[start]):
        pairs = int(positives[i]) * int(negatives[i])
        auc = int(twice_u[i]) / (2 * pairs) if pairs else float("nan")
        bound = (int(ties[i]) / (2 * pairs) if table.grid else 0.0) if pairs else float("nan")
        out.append(GroupAuc(table.labels[int(code)], int(positives[i]), int(negatives[i]), auc,
                            bound))
    return tuple(out)


def with_group_auc(table: DisaggregatedTable, scores: GroupScoreTable) -> DisaggregatedTable:
    """The disaggregated table with each group's ROC AUC (and its error bound) filled in.

    Raises
    ------
    ValueError
        If a group's positives or negatives differ between the two tables (they were not
        built from the same rows).

    Examples
    --------
    >>> from modelgate.fairness.disaggregate import disaggregate
    >>> y, g = [0, 1, 1, 0], ["a", "a", "b", "b"]
    >>> t = with_group_auc(disaggregate(y, [0, 1, 0, 0], g),
    ...                    group_score_table("g", y, [0.3, 0.6, 0.2, 0.4], g))
    >>> [(s.group, s.roc_auc, s.roc_auc_error_bound) for s in t.groups]
    [('a', 1.0, 0.0), ('b', 0.0, 0.0)]
    """
    aucs = {a.group: a for a in group_roc_auc(scores)}
    groups = []
    for stats in table.groups:
        auc = aucs.get(stats.group, GroupAuc(stats.group, 0, 0, float("nan"), float("nan")))
        if (auc.positives, auc.negatives) != (stats.positives, stats.negatives):
            raise ValueError(
                f"group {stats.group!r} of {scores.feature!r} has {stats.positives} positives and "
                f"{stats.negatives} negatives in the disaggregated table but {auc.positives} and "
                f"{auc.negatives} in the score table; build both from the same rows")
        groups.append(dataclasses.replace(stats, roc_auc=auc.roc_auc,
                                          roc_auc_error_bound=auc.error_bound))
    missing = set(aucs) - {g.group for g in table.groups}
    if missing:
        raise ValueError(f"the score table of {scores.feature!r} has groups the disaggregated "
                         f"table lacks: {sorted(missing)!r}")
    return dataclasses.replace(table, groups=tuple(groups))


def _collapse(feature: str, labels: tuple[str, ...], group: _IntArray, keys: _FloatArray,
              neg: _IntArray, pos: _IntArray, *, grid: int) -> GroupScoreTable:
    """Sum the counts of equal ``(group, key)`` rows; rows sorted by group, then key."""
    if len(keys) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return GroupScoreTable(feature, labels, empty, np.zeros(0), empty, empty, grid)
    # np.lexsort's order, about three times faster: by key, then stably (radix) by group code
    order = np.argsort(keys)
    order = order[np.argsort(group[order], kind="stable")]
    g, k = group[order], keys[order]
    start = np.flatnonzero(np.r_[True, (g[1:] != g[:-1]) | (k[1:] != k[:-1])])
    return GroupScoreTable(feature, labels, g[start].astype(np.int64), k[start] + 0.0,
                           np.add.reduceat(neg[order].astype(np.int64), start),
                           np.add.reduceat(pos[order].astype(np.int64), start), grid)


def _pooled(table: GroupScoreTable, grid: int = FALLBACK_GRID) -> GroupScoreTable:
    """The table on a grid of ``grid`` cells (score 1.0 in the last cell); ``grid`` is a power
    of two no finer than the table's own grid, so a pooled table's cells nest in the new ones."""
    if table.grid == grid:
        return table
    scores = table.keys / table.grid if table.grid else table.keys
    cell = np.minimum(np.floor(scores * grid), grid - 1)  # exact: powers of two
    return _collapse(table.feature, table.labels, table.group, cell, table.neg, table.pos,
                     grid=grid)


def _bounded(table: GroupScoreTable, max_distinct: int) -> GroupScoreTable:
    """The table, pooled on ever coarser grids (halving the cells) until it has at most
    ``max_distinct`` rows: with many groups the 2**-20 grid alone does not bound it."""
    while len(table.keys) > max_distinct and table.grid != 1:
        table = _pooled(table, table.grid // 2 if table.grid else FALLBACK_GRID)
    return table


def _check_max_distinct(max_distinct: object) -> None:
    if isinstance(max_distinct, bool) or not isinstance(max_distinct, int) or max_distinct < 1:
        raise ValueError(f"max_distinct must be an integer >= 1; got {max_distinct!r}")
