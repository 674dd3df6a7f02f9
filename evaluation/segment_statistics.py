"""Mergeable statistics per segment: the sufficient statistics of each slice's rows.

A *segment* is the set of rows with one value of a segment column (``region == "north"``),
or with one pair of values of two columns (``region == "north"`` and ``device ==
"ios"``).  Each segment keeps an :class:`~.sufficient.EvaluationStatistics` of its own
rows, what the whole evaluation keeps but the bootstrap cells (nothing resamples a
segment: :mod:`.segment_intervals`), and partitions add up by :func:`merge_segments` as the
whole does by :func:`~.sufficient.merge` (mapped and one-process runs agree).

The missing value is a segment of its own (label ``__missing__``, as for fairness groups,
:func:`modelgate.fairness.disaggregate.encode_groups`), so the segments of a column
partition the rows and the rest of a segment is the merge of its column's other
segments.

Examples
--------
>>> from modelgate.fairness.disaggregate import encode_groups
>>> seg = collect_segments([0, 1, 1, 0], [0.2, 0.9, 0.4, 0.7], threshold=0.5,
...                        columns={"region": encode_groups(["n", "s", "n", "s"])})
>>> seg[0].columns, seg[0].values, [p.n for p in seg[0].parts]
(('region',), (('n',), ('s',)), [2, 2])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .bootstrap_cells import MAX_CELLS, fit_table, merge_tables
from .segment_collect import NO_CELLS, batch_rows, cells_from_scores, collect_by_code
from .sufficient import MAX_DISTINCT, EvaluationStatistics, merge_models

__all__ = ["SegmentStatistics", "collect_segments", "merge_segments", "pair_codes",
           "segment_columns"]

_IntArray = npt.NDArray[np.intp]


@dataclass(frozen=True, slots=True)
class SegmentStatistics:
    """The segments of one column (or one pair of columns), each with its rows' statistics.

    Attributes
    ----------
    columns : tuple of str
        One column, or two for the segments of a pair.
    values : tuple of tuple of str
        Per segment, its value of each column (as labels), in a canonical order
        (:func:`_value_order`) so the same rows give the same order however partitioned.
    parts : tuple of EvaluationStatistics
        Per segment, the statistics of its rows.
    """

    columns: tuple[str, ...]
    values: tuple[tuple[str, ...], ...]
    parts: tuple[EvaluationStatistics, ...]


def pair_codes(first: tuple[Sequence[str], npt.ArrayLike],
               second: tuple[Sequence[str], npt.ArrayLike]) -> tuple[tuple[tuple[str, str], ...], _IntArray]:
    """Labels and codes of the pairs of values of two encoded columns that occur.

    Parameters
    ----------
    first, second : tuple
        ``(labels, codes)`` of each column, as from
        :func:`modelgate.fairness.disaggregate.encode_groups`.

    Returns
    -------
    tuple
        The pairs ``(label_1, label_2)`` present in the rows, and each row's pair code.

    Examples
    --------
    >>> labels, codes = pair_codes((("a", "b"), [0, 1, 1]), (("x", "y"), [1, 1, 0]))
    >>> labels, codes.tolist()
    ((('a', 'y'), ('b', 'x'), ('b', 'y')), [0, 2, 1])
    """
    a, b = np.asarray(first[1], dtype=np.intp), np.asarray(second[1], dtype=np.intp)
    if a.shape != b.shape:
        raise ValueError(f"pair_codes: the two columns' codes must have one length; got "
                         f"{a.size} and {b.size}")
    joint = a * max(len(second[0]), 1) + b
    present, codes = np.unique(joint, return_inverse=True)
    width = max(len(second[0]), 1)
    labels = tuple((str(first[0][int(k) // width]), str(second[0][int(k) % width])) for k in present)
    return labels, codes.astype(np.intp)


SegmentColumn = tuple[tuple[str, ...], tuple[tuple[str, ...], ...], _IntArray]


def segment_columns(n_rows: int, columns: Mapping[str, tuple[Sequence[str], npt.ArrayLike]],
                    pairs: Sequence[tuple[str, str]] = ()) -> list[SegmentColumn]:
    """Per column, then per pair: its names, each code's value labels, and the rows' codes,
    checked (one code per row, every code a label, every paired name a column).

    Raises
    ------
    ValueError
        Naming the column or pair and what was expected.
    """
    out: list[SegmentColumn] = []
    for name, (names, codes) in columns.items():
        c = np.asarray(codes, dtype=np.intp)
        if c.shape != (n_rows,):
            raise ValueError(f"segment column {name!r}: codes must have the length of y_true "
                             f"({n_rows}); got {c.size}")
        if c.size and (c.min() < 0 or c.max() >= len(names)):
            raise ValueError(f"segment column {name!r}: codes must lie in [0, {len(names)}) "
                             f"(one per label); got {int(c.min())}..{int(c.max())}")
        out.append(((name,), tuple((str(v),) for v in names), c))
    for first, second in pairs:
        for name in (first, second):
            if name not in columns:
                raise ValueError(f"segment pair ({first!r}, {second!r}): {name!r} is not a "
                                 f"segment column; expected one of {sorted(columns)!r}")
        joint, joint_codes = pair_codes(columns[first], columns[second])
        out.append(((first, second), joint, joint_codes))
    return out


def collect_segments(
    y_true: npt.ArrayLike,
    score: npt.ArrayLike,
    *,
    threshold: float,
    columns: Mapping[str, tuple[Sequence[str], npt.ArrayLike]],
    pairs: Sequence[tuple[str, str]] = (),
    max_cells: int = MAX_CELLS,
    max_distinct: int = MAX_DISTINCT,
) -> tuple[SegmentStatistics, ...]:
    """Statistics of every segment of each column and each pair of columns, on one partition.

    Parameters
    ----------
    y_true, score : array_like of shape (n,)
        Labels (0/1) and the candidate's probabilities, as for :func:`~.sufficient.collect`.
    threshold : float
        The candidate's decision threshold.
    columns : mapping
        Segment column name -> ``(labels, codes)`` as from
        :func:`modelgate.fairness.disaggregate.encode_groups` (missing values a label of
        their own).
    pairs : sequence of (str, str), optional
        Pairs of names of ``columns`` whose joint values are segments too.
    max_cells, max_distinct : int
        As for :func:`~.sufficient.collect`.

    Returns
    -------
    tuple of SegmentStatistics
        One per column, in the order given, then one per pair.

    Raises
    ------
    ValueError
        On codes whose length is not that of ``y_true``, a code without a label, or a
        pair naming a column not in ``columns``.
    """
    y = np.asarray(y_true)
    s = np.asarray(score)
    encoded = segment_columns(y.size, columns, pairs)
    # the rows checked, their losses and codes computed and their scores sorted once for
    # every column; per column each segment is what ``collect`` gives on its rows
    rows = (batch_rows(y, s, threshold, max_cells=max_cells, max_distinct=max_distinct)
            if y.size else None)
    out = []
    for column_names, labels, segment_codes in encoded:
        by_code = ({} if rows is None else
                   collect_by_code(rows, segment_codes, len(labels), max_cells=max_cells,
                                   max_distinct=max_distinct))
        found = {labels[k]: stats for k, stats in by_code.items()}
        kept = _value_order(found)
        out.append(SegmentStatistics(column_names, kept, tuple(found[v] for v in kept)))
    return tuple(out)


def merge_segments(parts: Sequence[Sequence[SegmentStatistics]], *,
                   max_distinct: int = MAX_DISTINCT,
                   max_cells: int = MAX_CELLS) -> tuple[SegmentStatistics, ...]:
    """Add the segment statistics of several partitions, segment by segment.

    Every partition must list the same columns and pairs in the same order; a segment
    seen in some partitions only is the merge of those.

    Examples
    --------
    >>> from modelgate.fairness.disaggregate import encode_groups
    >>> a = collect_segments([0, 1], [0.2, 0.9], threshold=0.5,
    ...                      columns={"r": encode_groups(["n", "s"])})
    >>> b = collect_segments([1, 1], [0.6, 0.4], threshold=0.5,
    ...                      columns={"r": encode_groups(["n", "n"])})
    >>> m = merge_segments([a, b])[0]
    >>> m.values, [p.n for p in m.parts], [p.candidate.tp for p in m.parts]
    ((('n',), ('s',)), [3, 1], [1, 1])
    """
    if not parts:
        raise ValueError("merge_segments needs at least one partition's segments; got none")
    layout = [seg.columns for seg in parts[0]]
    if any([seg.columns for seg in p] != layout for p in parts):
        raise ValueError(f"every partition must have the segment columns {layout!r}")
    merged = []
    for i, names in enumerate(layout):
        pieces: dict[tuple[str, ...], list[EvaluationStatistics]] = {}
        for p in parts:
            for value, stats in zip(p[i].values, p[i].parts, strict=True):
                pieces.setdefault(value, []).append(stats)
        found = {value: _merge_segment(stats, max_distinct, max_cells)
                 for value, stats in pieces.items()}
        kept = _value_order(found)
        merged.append(SegmentStatistics(names, kept, tuple(found[v] for v in kept)))
    return tuple(merged)


def _merge_segment(parts: Sequence[EvaluationStatistics], max_distinct: int,
                   max_cells: int) -> EvaluationStatistics:
    """:func:`~.sufficient.merge` of one segment's partitions, without cells while its score
    table stays exact; on the grid fallback the cells of every part (an exact part's rebuilt
    from its score table, fitted as ``collect`` fits them), as ``merge`` would add them."""
    candidate = merge_models([p.candidate for p in parts], max_distinct)
    cells = NO_CELLS
    if candidate.scores.grid:
        cells = merge_tables([p.bootstrap if p.candidate.scores.grid else
                              fit_table(cells_from_scores(p.candidate.scores, candidate.threshold),
                                   max_cells) for p in parts], max_cells=max_cells)
    return EvaluationStatistics(sum(p.n for p in parts), candidate, None, cells, ())


def _value_order(found: Mapping[tuple[str, ...], object]) -> tuple[tuple[str, ...], ...]:
    """Segments sorted by their labels, the missing value after every other (per column)."""
    from modelgate.fairness.disaggregate import MISSING_LABEL

    return tuple(sorted(found, key=lambda v: tuple((label == MISSING_LABEL, label) for label in v)))
