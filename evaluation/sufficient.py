"""Mergeable sufficient statistics for evaluation: memory bounded by the tables, not the rows.

Scoring summarises each partition of the held-out data into an
:class:`EvaluationStatistics`; :func:`merge` adds partitions together (in any number of
steps, by any number of workers) and
:func:`modelgate.evaluation.performance.performance_from_statistics` computes the same
metrics as :func:`modelgate.evaluation.metrics.evaluate` from the merged tables.

What is kept, per model
-----------------------
* Exact counts ``n``, ``n_pos``, ``tp``, ``fp`` at the model's threshold and the sums of
  the log loss and the squared error: accuracy, precision, recall, F1, log loss and
  Brier score are exact.
* A :class:`ScoreTable`: negatives and positives per distinct score.  ROC AUC is the
  Mann-Whitney statistic over this table (ties count one half), in exact integer
  arithmetic, so it equals scikit-learn's ``roc_auc_score``.  The table has at most
  ``max_distinct`` rows (default 2**22, about 100 MB): beyond that the scores are
  truncated to a grid of width ``2**-20`` and the AUC is reported with its error bound
  ``sum_k pos_k * neg_k / (2 * n_pos * n_neg)`` (the share of positive-negative pairs
  that share a grid cell, counted one half instead of 0 or 1), which
  :attr:`~.performance.PerformanceSummary.auc_error_bound` carries (0 when the table is exact).
* A uniform reliability table (count, score sum, label sum per bin).

The bootstrap over these tables, the intervals and the paired deltas are in
:mod:`modelgate.evaluation.performance`.

References
----------
.. [1] Efron, B. and Tibshirani, R. (1993). An Introduction to the Bootstrap, ch. 13.
.. [2] Mann, H. B. and Whitney, D. R. (1947). On a test of whether one of two random
   variables is stochastically larger than the other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from modelgate.fairness.group_scores import ScoreRanks

from .bootstrap_cells import (
    EXACT_LEVEL,
    MAX_CELLS,
    BootstrapTable,
    merge_tables,
    score_codes,
    table_from_rows,
)

__all__ = [
    "BootstrapTable",
    "EvaluationStatistics",
    "GroupCounts",
    "ModelStatistics",
    "ScoreTable",
    "collect",
    "merge",
]

_FloatArray = npt.NDArray[np.float64]
_IntArray = npt.NDArray[np.int64]
MAX_DISTINCT = 1 << 22
FALLBACK_GRID = 1 << 20
CALIBRATION_BINS = 10


@dataclass(frozen=True, slots=True)
class ScoreTable:
    """Negatives and positives per distinct score (``grid == 0``) or per grid cell.

    ``keys`` are sorted: the distinct scores, or the cell indices ``floor(score * grid)``.
    """

    keys: _FloatArray
    neg: _IntArray
    pos: _IntArray
    grid: int = 0


@dataclass(frozen=True, slots=True)
class ModelStatistics:
    """Everything the point metrics of one model need, additive over rows."""

    threshold: float
    n: int
    n_pos: int
    tp: int
    fp: int
    log_loss_sum: float
    squared_error_sum: float
    scores: ScoreTable
    calibration_n: _IntArray
    calibration_score_sum: _FloatArray
    calibration_label_sum: _FloatArray


@dataclass(frozen=True, slots=True)
class GroupCounts:
    """Confusion counts ``tn, fp, fn, tp`` per group of one sensitive feature."""

    feature: str
    labels: tuple[str, ...]
    counts: _IntArray


@dataclass(frozen=True, slots=True)
class EvaluationStatistics:
    """Sufficient statistics of one partition, or of several merged."""

    n: int
    candidate: ModelStatistics
    champion: ModelStatistics | None
    bootstrap: BootstrapTable
    groups: tuple[GroupCounts, ...]



def collect(
    y_true: npt.ArrayLike,
    score: npt.ArrayLike,
    *,
    threshold: float,
    champion_score: npt.ArrayLike | None = None,
    champion_threshold: float | None = None,
    groups: Mapping[str, tuple[tuple[str, ...], npt.ArrayLike]] | None = None,
    max_cells: int = MAX_CELLS,
    max_distinct: int = MAX_DISTINCT,
    ranks: ScoreRanks | None = None,
) -> EvaluationStatistics:
    """Summarise one partition of scored rows.

    Parameters
    ----------
    y_true : array_like of shape (n,)
        Labels, 0 or 1.
    score : array_like of shape (n,)
        Candidate's probability of label 1, in [0, 1].
    threshold : float
        Candidate's decision threshold (``score >= threshold`` is positive).
    champion_score : array_like of shape (n,), optional
        Champion's probabilities on the same rows.
    champion_threshold : float, optional
        Champion's threshold; required with ``champion_score``.
    groups : mapping, optional
        Sensitive feature name -> ``(labels, codes)`` as from
        :func:`modelgate.fairness.disaggregate.encode_groups`.
    max_cells : int, default 2**15
        Most cells of the bootstrap table (>= 16); the bootstrap costs
        ``n_bootstrap x cells``.  Scores are cut to the finest grid that fits.
    max_distinct : int, default 2**22
        Most distinct scores kept before falling back to the grid (whose table has at
        most 2**20 rows whatever ``max_distinct`` is).
    ranks : ScoreRanks, optional
        :func:`modelgate.fairness.group_scores.rank_scores` of ``score``, when the caller
        has it (it serves the group score tables too): the candidate's rows are then
        counted per distinct score instead of sorted. The same statistics either way.

    Returns
    -------
    EvaluationStatistics

    Raises
    ------
    ValueError
        On labels other than 0/1, scores outside [0, 1], mismatched lengths or options.

    Examples
    --------
    >>> s = collect([0, 1, 1, 0], [0.2, 0.9, 0.4, 0.4], threshold=0.5)
    >>> s.n, s.candidate.tp, s.candidate.fp, s.candidate.scores.pos.tolist()
    (4, 1, 0, [0, 1, 1])
    """
    from .binary_inputs import check_labels_scores, check_options

    y, s = check_labels_scores(y_true, score, "score")
    check_options(threshold, 0, 0.5, 0)
    check_sizes(max_cells, max_distinct)
    if ranks is not None and ranks.rank.shape != s.shape:
        raise ValueError(f"ranks must have one rank per score ({len(s)}); got {ranks.rank.size}")
    losses = [row_losses(y, s)]
    cand = _model_statistics(y, s, threshold, ranks, losses[0])
    champ = None
    champ_code = np.zeros(len(y), dtype=np.uint64)
    if champion_score is not None:
        if champion_threshold is None:
            raise ValueError("champion_threshold is required with champion_score")
        _, h = check_labels_scores(y, champion_score, "champion_score")
        check_options(champion_threshold, 0, 0.5, 0)
        losses.append(row_losses(y, h))
        champ = _model_statistics(y, h, champion_threshold, losses=losses[1])
        champ_code = score_codes(h, champion_threshold, EXACT_LEVEL)
    else:
        losses.append(np.zeros((len(y), 2)))
    if ranks is None:
        table = table_from_rows(y, score_codes(s, threshold, EXACT_LEVEL), champ_code,
                                np.hstack(losses), max_cells=max_cells)
    else:  # codes of the distinct scores, each distinct (level 52 keeps scores apart)
        cells = score_codes(ranks.keys, threshold, EXACT_LEVEL)
        alone = (np.zeros(len(y), dtype=np.int64), np.zeros(1, dtype=np.uint64))  # all code 0
        table = table_from_rows(y, cells[ranks.rank], champ_code, np.hstack(losses),
                                max_cells=max_cells, candidate_cells=(ranks.rank, cells),
                                champion_cells=alone if champion_score is None else None)
    counted = tuple(_group_counts(name, labels, codes, y, s >= threshold)
                    for name, (labels, codes) in (groups or {}).items())
    stats = EvaluationStatistics(len(y), cand, champ, table, counted)
    return merge([stats], max_distinct=max_distinct, max_cells=max_cells)


def merge(parts: Sequence[EvaluationStatistics], *, max_distinct: int = MAX_DISTINCT,
          max_cells: int = MAX_CELLS) -> EvaluationStatistics:
    """Add the statistics of several partitions (in the order given).

    Counts add exactly; float sums add in the order given, so the same partitions in
    the same order give bit-identical results.  The bootstrap table ends at the finest
    level whose cells for all the rows fit ``max_cells``, however they were partitioned.

    Examples
    --------
    >>> a = collect([0, 1], [0.2, 0.9], threshold=0.5)
    >>> b = collect([1, 0], [0.2, 0.7], threshold=0.5)
    >>> m = merge([a, b])
    >>> m.n, m.candidate.scores.keys.tolist(), m.candidate.scores.neg.tolist()
    (4, [0.2, 0.7, 0.9], [1, 1, 0])
    """
    if not parts:
        raise ValueError("merge needs at least one EvaluationStatistics; got none")
    first = parts[0]
    if any((p.champion is None) != (first.champion is None) for p in parts):
        raise ValueError("cannot merge partitions scored with and without a champion")
    check_sizes(max_cells, max_distinct)
    features = [g.feature for g in first.groups]
    if any([g.feature for g in p.groups] != features for p in parts):
        raise ValueError(f"every partition must count the sensitive features {features!r}")
    champion = None if first.champion is None else merge_models(
        [p.champion for p in parts if p.champion is not None], max_distinct)
    return EvaluationStatistics(
        n=sum(p.n for p in parts),
        candidate=merge_models([p.candidate for p in parts], max_distinct),
        champion=champion,
        bootstrap=merge_tables([p.bootstrap for p in parts], max_cells=max_cells),
        groups=tuple(_merge_groups([p.groups[i] for p in parts]) for i in range(len(features))),
    )



# ----------------------------------------------------------------------------- internals


def check_sizes(max_cells: object, max_distinct: object) -> None:
    """Refuse a ``max_cells`` below 16 or a ``max_distinct`` below 1 (or not integers)."""
    if isinstance(max_cells, bool) or not isinstance(max_cells, int) or max_cells < 16:
        raise ValueError(f"max_cells must be an integer >= 16; got {max_cells!r}")
    if isinstance(max_distinct, bool) or not isinstance(max_distinct, int) or max_distinct < 1:
        raise ValueError(f"max_distinct must be an integer >= 1; got {max_distinct!r}")


def row_losses(y: npt.NDArray[np.int8], s: _FloatArray) -> _FloatArray:
    """Per row: log loss (clipped as scikit-learn) and squared error."""
    eps = np.finfo(np.float64).eps
    p = np.clip(np.where(y == 1, s, 1.0 - s), eps, 1 - eps)
    return np.column_stack([-np.log(p), (y - s) ** 2])


def _model_statistics(y: npt.NDArray[np.int8], s: _FloatArray, threshold: float,
                      ranks: ScoreRanks | None = None,
                      losses: _FloatArray | None = None) -> ModelStatistics:
    keys, inverse = (np.unique(s, return_inverse=True) if ranks is None
                     else (ranks.keys, ranks.rank))
    pos = np.bincount(inverse, weights=y, minlength=len(keys)).astype(np.int64)
    neg = np.bincount(inverse, minlength=len(keys)).astype(np.int64) - pos
    predicted = s >= threshold
    losses = row_losses(y, s) if losses is None else losses  # the caller's, when it has them
    edges = np.linspace(0.0, 1.0, CALIBRATION_BINS + 1)
    cal = np.searchsorted(edges[1:-1], s)
    return ModelStatistics(
        threshold=float(threshold), n=len(y), n_pos=int(y.sum()),
        tp=int(np.count_nonzero(predicted & (y == 1))), fp=int(np.count_nonzero(predicted & (y == 0))),
        log_loss_sum=float(losses[:, 0].sum()), squared_error_sum=float(losses[:, 1].sum()),
        scores=ScoreTable(keys, neg, pos),
        calibration_n=np.bincount(cal, minlength=CALIBRATION_BINS).astype(np.int64),
        calibration_score_sum=np.bincount(cal, weights=s, minlength=CALIBRATION_BINS).astype(np.float64),
        calibration_label_sum=np.bincount(cal, weights=y, minlength=CALIBRATION_BINS).astype(np.float64),
    )


def _group_counts(feature: str, labels: tuple[str, ...], codes: npt.ArrayLike,
                  y: npt.NDArray[np.int8], predicted: npt.NDArray[np.bool_]) -> GroupCounts:
    c = np.asarray(codes, dtype=np.int64)
    if c.shape != y.shape:
        raise ValueError(f"group codes of {feature!r} must have the length of y_true ({len(y)}); "
                         f"got {c.size}")
    cell = c * 4 + 2 * y.astype(np.int64) + predicted
    counts = np.bincount(cell, minlength=4 * len(labels)).reshape(len(labels), 4)
    return GroupCounts(feature, tuple(labels), counts.astype(np.int64))


def _merge_scores(tables: Sequence[ScoreTable], max_distinct: int) -> ScoreTable:
    grid = max(t.grid for t in tables)
    if grid:
        tables = [to_grid(t) for t in tables]
    keys, inverse = np.unique(np.concatenate([t.keys for t in tables]), return_inverse=True)
    neg = np.bincount(inverse, weights=np.concatenate([t.neg for t in tables]), minlength=len(keys))
    pos = np.bincount(inverse, weights=np.concatenate([t.pos for t in tables]), minlength=len(keys))
    merged = ScoreTable(keys, neg.astype(np.int64), pos.astype(np.int64), grid)
    return to_grid(merged) if len(keys) > max_distinct else merged


def to_grid(table: ScoreTable) -> ScoreTable:
    """The table on the fallback grid of ``FALLBACK_GRID`` equal score cells (itself if on it)."""
    if table.grid:
        return table
    # floor(score * grid), with score 1.0 in the last cell
    cell = np.minimum(np.floor(table.keys * FALLBACK_GRID), FALLBACK_GRID - 1)
    keys, inverse = np.unique(cell, return_inverse=True)
    neg = np.bincount(inverse, weights=table.neg, minlength=len(keys)).astype(np.int64)
    pos = np.bincount(inverse, weights=table.pos, minlength=len(keys)).astype(np.int64)
    return ScoreTable(keys, neg, pos, FALLBACK_GRID)


def merge_models(parts: Sequence[ModelStatistics], max_distinct: int) -> ModelStatistics:
    """One model's statistics of several parts merged, in order; the parts' thresholds must agree."""
    threshold = parts[0].threshold
    if any(p.threshold != threshold for p in parts):
        raise ValueError(f"cannot merge statistics at different thresholds "
                         f"{sorted({p.threshold for p in parts})!r}")
    return ModelStatistics(
        threshold=threshold, n=sum(p.n for p in parts), n_pos=sum(p.n_pos for p in parts),
        tp=sum(p.tp for p in parts), fp=sum(p.fp for p in parts),
        log_loss_sum=sum((p.log_loss_sum for p in parts), 0.0),  # in order: reproducible
        squared_error_sum=sum((p.squared_error_sum for p in parts), 0.0),
        scores=_merge_scores([p.scores for p in parts], max_distinct),
        calibration_n=np.sum([p.calibration_n for p in parts], axis=0),
        calibration_score_sum=_sum_arrays([p.calibration_score_sum for p in parts]),
        calibration_label_sum=_sum_arrays([p.calibration_label_sum for p in parts]),
    )


def _sum_arrays(arrays: Sequence[_FloatArray]) -> _FloatArray:
    total = np.zeros_like(arrays[0])
    for a in arrays:
        total = total + a
    return total


def _merge_groups(parts: Sequence[GroupCounts]) -> GroupCounts:
    """Union of the groups in first-seen order, the missing-value group last."""
    from modelgate.fairness.disaggregate import MISSING_LABEL

    order: dict[str, int] = {}
    for p in parts:
        for label in p.labels:
            if label != MISSING_LABEL:
                order.setdefault(label, len(order))
    if any(MISSING_LABEL in p.labels for p in parts):
        order[MISSING_LABEL] = len(order)
    counts = np.zeros((len(order), 4), dtype=np.int64)
    for p in parts:
        counts[[order[label] for label in p.labels]] += p.counts
    return GroupCounts(parts[0].feature, tuple(order), counts)

