"""The weakest slices, found for you: a bounded search over single columns and pairs of columns.

:func:`find_weakest_slices` looks at every slice ``column = value`` of the columns given
and every slice ``a = x & b = y`` of their pairs that has at least ``min_rows`` rows (and a
complement as large), at most ``max_candidates`` of them: single columns first, then
pairs in order until the next pair's slices would pass the bound (the pairs left out are
named in the result).  For each candidate and each count metric (accuracy, precision,
recall, F1) it compares the slice with its complement and tests, one-sided, that the
slice is worse; every test of the search is one family, adjusted by Benjamini-Hochberg
(or BY / Holm).  The slices whose q-value is at most ``level`` are returned, the largest
shortfall first.

Why the count metrics only: a slice's confusion counts are four integers, so thousands of
candidates and their complements (the totals minus the slice) cost a few ``bincount``
calls, and their intervals are the Wilson intervals of the evaluation
(:mod:`.metric_intervals`: accuracy of the rows, recall of the positives, precision of
the predicted positives, F1 through the Jaccard index); the difference's interval is MOVER
with correlation 0 (disjoint rows) and its p-value the one :func:`~.segments.worse_p_value`
reads off that interval.  ROC AUC and the losses of a named column are in
:func:`~.segments.evaluate_segments`.

The Wilson interval is written here in closed form, vectorized over the candidates: scipy's
``binomtest(...).proportion_ci(method="wilson")`` (what
:func:`modelgate.intervals.wilson_interval` calls) takes one proportion at a time, thousands
of times too slow for the search; the tests hold the two equal.

Examples
--------
>>> from modelgate.fairness.disaggregate import encode_groups
>>> rng = np.random.default_rng(1)
>>> n = 4000
>>> y = rng.integers(0, 2, n)
>>> a, b = rng.integers(0, 4, n), rng.integers(0, 3, n)
>>> right = rng.random(n) < np.where((a == 2) & (b == 0), 0.55, 0.9)
>>> s = np.where(right, y, 1 - y) * 0.8 + 0.1
>>> found = find_weakest_slices(y, s, threshold=0.5, columns={"a": encode_groups(a),
...                                                            "b": encode_groups(b)})
>>> found.slices[0].name, sorted({s.name for s in found.slices})  # the slice, and the two it lies in
('a=2 & b=0', ['a=2', 'a=2 & b=0', 'b=0'])
>>> found.candidates, found.pairs_left_out
(19, ())
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
import numpy.typing as npt

from modelgate.records import finite_or_none

from .multiple_testing import CORRECTIONS, adjusted_p_values

__all__ = ["SEARCH_METRICS", "SliceCounts", "WeakSlice", "WeakSlices", "count_slices",
           "find_weakest_slices", "merge_slice_counts", "search_slices", "wilson_ends"]

#: The metrics the search compares (each from a slice's confusion counts).
SEARCH_METRICS = ("accuracy", "precision", "recall", "f1")
#: Most candidate slices one search tests (single columns first, then pairs).
DEFAULT_MAX_CANDIDATES = 2000

_Float = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class WeakSlice:
    """One slice where a metric is worse than in its complement (q-value at most the level)."""

    columns: tuple[str, ...]
    values: tuple[str, ...]
    n: int
    metric: str
    value: float
    ci_lower: float
    ci_upper: float
    rest_value: float
    difference: float
    difference_ci_lower: float
    difference_ci_upper: float
    p_value: float
    q_value: float

    @property
    def name(self) -> str:
        """``a=x`` or ``a=x & b=y``."""
        return " & ".join(f"{c}={v}" for c, v in zip(self.columns, self.values, strict=True))

    def to_record(self) -> dict[str, Any]:
        """The slice as plain values for the JSON result and the report."""
        return {"segment": self.name, "columns": list(self.columns), "values": list(self.values),
                "n": self.n, "metric_name": self.metric,
                **{key: finite_or_none(getattr(self, key)) for key in (
                    "value", "ci_lower", "ci_upper", "rest_value", "difference",
                    "difference_ci_lower", "difference_ci_upper", "p_value", "q_value")}}


@dataclass(frozen=True, slots=True)
class WeakSlices:
    """The result of a search: the slices found, and how large the search was.

    ``candidates`` counts the slices tested (each with every metric of
    :data:`SEARCH_METRICS` defined on it and its complement: ``tests``), ``pairs_left_out``
    the pairs of columns not searched because of ``max_candidates``.
    """

    slices: tuple[WeakSlice, ...]
    candidates: int
    tests: int
    min_rows: int
    max_candidates: int
    correction: str
    level: float
    confidence_level: float
    pairs_searched: tuple[tuple[str, str], ...]
    pairs_left_out: tuple[tuple[str, str], ...]

    def to_record(self) -> dict[str, Any]:
        """The search as the JSON result's ``weakest_slices`` record."""
        return {"slices": [s.to_record() for s in self.slices], "candidates": self.candidates,
                "tests": self.tests, "min_rows": self.min_rows,
                "max_candidates": self.max_candidates, "correction": self.correction,
                "level": self.level, "confidence_level": self.confidence_level,
                "metrics": list(SEARCH_METRICS),
                "pairs_searched": [list(p) for p in self.pairs_searched],
                "pairs_left_out": [list(p) for p in self.pairs_left_out]}


def wilson_ends(successes: npt.ArrayLike, trials: npt.ArrayLike,
                confidence_level: float) -> tuple[_Float, _Float]:
    """Wilson score intervals of many proportions at once (NaN where ``trials`` is 0).

    Examples
    --------
    >>> lo, hi = wilson_ends([195], [200], 0.95)
    >>> round(float(lo[0]), 4), round(float(hi[0]), 4)
    (0.9428, 0.9893)
    """
    from scipy.special import ndtri

    x = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    z = float(ndtri(0.5 + 0.5 * confidence_level))
    with np.errstate(invalid="ignore", divide="ignore"):
        centre = (x + z * z / 2) / (n + z * z)
        half = z / (n + z * z) * np.sqrt(np.maximum(x * (n - x) / n, 0.0) + z * z / 4)
        lower, upper = np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)
    bad = n <= 0
    lower[bad] = np.nan
    upper[bad] = np.nan
    return lower, upper


def find_weakest_slices(
    y_true: npt.ArrayLike,
    score: npt.ArrayLike,
    *,
    threshold: float,
    columns: Mapping[str, tuple[Sequence[str], npt.ArrayLike]],
    pairs: bool = True,
    min_rows: int = 100,
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
    correction: str = "bh",
    level: float = 0.05,
    confidence_level: float = 0.95,
) -> WeakSlices:
    """Slices of ``columns`` (and their pairs) where a count metric is worse than in the rest.

    Parameters
    ----------
    y_true, score : array_like of shape (n,)
        Labels (0/1) and the candidate's probabilities.
    threshold : float
        Decision threshold (``score >= threshold`` is positive).
    columns : mapping
        Column name -> ``(labels, codes)`` as from
        :func:`modelgate.fairness.disaggregate.encode_groups`.
    pairs : bool, default True
        Search the pairs of columns too.
    min_rows : int, default 100
        Fewest rows of a candidate slice and of its complement (>= 2).
    max_candidates : int, default 2000
        Most candidate slices (>= 1).
    correction : {"bh", "by", "holm"}, default "bh"
        How the family of all the search's tests is adjusted.
    level : float, default 0.05
        A slice is returned when its q-value is at most this.
    confidence_level : float, default 0.95
        Of the intervals (and of the p-values read off them).

    Returns
    -------
    WeakSlices
        Largest shortfall (most negative difference) first.

    Raises
    ------
    ValueError
        On codes of the wrong length or outside the labels, or options out of range.
    """
    return search_slices(count_slices(y_true, score, threshold=threshold, columns=columns,
                                      pairs=pairs),
                         min_rows=min_rows, max_candidates=max_candidates, correction=correction,
                         level=level, confidence_level=confidence_level)


@dataclass(frozen=True, slots=True)
class SliceCounts:
    """Confusion counts ``tn, fp, fn, tp`` of every slice of one column or one pair of columns.

    Mergeable (:func:`merge_slice_counts`): a partition's counts add up to the whole's.
    """

    columns: tuple[str, ...]
    labels: tuple[tuple[str, ...], ...]
    counts: npt.NDArray[np.int64]


def count_slices(y_true: npt.ArrayLike, score: npt.ArrayLike, *, threshold: float,
                 columns: Mapping[str, tuple[Sequence[str], npt.ArrayLike]],
                 pairs: bool = True) -> tuple[SliceCounts, ...]:
    """Every slice's confusion counts: each column's values, then (``pairs``) each pair's.

    Examples
    --------
    >>> t = count_slices([0, 1, 1], [0.2, 0.9, 0.1], threshold=0.5,
    ...                  columns={"a": (("x", "y"), [0, 1, 1])}, pairs=False)[0]
    >>> t.labels, t.counts.tolist()
    ((('x',), ('y',)), [[1, 0, 0, 0], [0, 0, 1, 1]])
    """
    y = np.asarray(y_true).astype(np.int64)
    predicted = (np.asarray(score, dtype=np.float64) >= threshold).astype(np.int64)
    cell = 2 * y + predicted  # tn, fp, fn, tp
    coded = {name: _codes(name, labels, codes, len(y)) for name, (labels, codes) in columns.items()}
    out = []
    for name, (labels, codes) in coded.items():
        out.append(SliceCounts((name,), tuple((v,) for v in labels),
                               _slice_counts(codes, len(labels), cell)))
    for first, second in combinations(coded, 2) if pairs else ():
        (la, ca), (lb, cb) = coded[first], coded[second]
        present, joint = _present_codes(ca * len(lb) + cb, len(la) * len(lb))
        out.append(SliceCounts((first, second),
                               tuple((la[int(k) // len(lb)], lb[int(k) % len(lb)]) for k in present),
                               _slice_counts(joint.astype(np.int64), len(present), cell)))
    return tuple(out)


def _present_codes(codes: npt.NDArray[np.int64], size: int) -> tuple[npt.NDArray[np.int64],
                                                                      npt.NDArray[np.int64]]:
    """``np.unique(codes, return_inverse=True)`` of codes in ``[0, size)``: counted, not
    sorted, where the codes' range is small."""
    if size > 1 << 22:
        present, inverse = np.unique(codes, return_inverse=True)
        return present, inverse.astype(np.int64)
    present = np.flatnonzero(np.bincount(codes, minlength=size))
    lookup = np.zeros(size, dtype=np.int64)
    lookup[present] = np.arange(present.size)
    return present, lookup[codes]


def merge_slice_counts(parts: Sequence[Sequence[SliceCounts]]) -> tuple[SliceCounts, ...]:
    """Add the slice counts of several partitions, slice by slice (labels sorted).

    Examples
    --------
    >>> a = SliceCounts(("c",), (("x",),), np.array([[1, 0, 0, 2]]))
    >>> b = SliceCounts(("c",), (("y",), ("x",)), np.array([[0, 1, 0, 0], [1, 1, 1, 1]]))
    >>> m = merge_slice_counts([[a], [b]])[0]
    >>> m.labels, m.counts.tolist()
    ((('x',), ('y',)), [[2, 1, 1, 3], [0, 1, 0, 0]])
    """
    if not parts:
        raise ValueError("merge_slice_counts needs at least one partition's counts; got none")
    layout = [t.columns for t in parts[0]]
    if any([t.columns for t in p] != layout for p in parts):
        raise ValueError(f"every partition must count the slices of {layout!r}")
    merged = []
    for i, names in enumerate(layout):
        total: dict[tuple[str, ...], npt.NDArray[np.int64]] = {}
        for p in parts:
            for label, row in zip(p[i].labels, p[i].counts, strict=True):
                total[label] = total.get(label, np.zeros(4, dtype=np.int64)) + row
        labels = tuple(sorted(total))
        merged.append(SliceCounts(names, labels,
                                  np.array([total[v] for v in labels], dtype=np.int64).reshape(-1, 4)))
    return tuple(merged)


def search_slices(tables: Sequence[SliceCounts], *, min_rows: int = 100,
                  max_candidates: int = DEFAULT_MAX_CANDIDATES, correction: str = "bh",
                  level: float = 0.05, confidence_level: float = 0.95) -> WeakSlices:
    """:func:`find_weakest_slices` on counted slices (single columns first, then pairs).

    Options as there; the total is the first table's (a column's slices cover every row).
    """
    if isinstance(min_rows, bool) or not isinstance(min_rows, int) or min_rows < 2:
        raise ValueError(f"min_rows must be an integer >= 2; got {min_rows!r}")
    if isinstance(max_candidates, bool) or not isinstance(max_candidates, int) or max_candidates < 1:
        raise ValueError(f"max_candidates must be an integer >= 1; got {max_candidates!r}")
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}; got {correction!r}")
    if not 0 < level < 1 or not 0 < confidence_level < 1:
        raise ValueError(f"level and confidence_level must lie in (0, 1); got {level!r}, "
                         f"{confidence_level!r}")
    total = tables[0].counts.sum(axis=0) if tables else np.zeros(4, dtype=np.int64)
    found: list[tuple[tuple[str, ...], list[tuple[str, ...]], npt.NDArray[np.int64]]] = []
    count = 0
    searched: list[tuple[str, str]] = []
    left_out: list[tuple[str, str]] = []
    for t in sorted(tables, key=lambda t: len(t.columns)):
        keep = _big_enough(t.counts, total, min_rows)
        if len(t.columns) == 2:
            pair = (t.columns[0], t.columns[1])
            if left_out or count + int(keep.sum()) > max_candidates:
                left_out.append(pair)
                continue
            searched.append(pair)
        found.append((t.columns, [t.labels[i] for i in np.flatnonzero(keep)], t.counts[keep]))
        count += int(keep.sum())
    if count > max_candidates:  # the single columns alone pass the bound
        raise ValueError(f"the single columns have {count:,} slices of at least {min_rows:,} rows, "
                         f"more than max_candidates ({max_candidates:,}); raise max_candidates or "
                         "min_rows, or name fewer columns")
    slices = _tested(found, total, confidence_level)
    p = np.array([t["p_value"] for t in slices], dtype=np.float64)
    q = adjusted_p_values(p, correction) if p.size else p
    out = [WeakSlice(**t, q_value=float(qi)) for t, qi in zip(slices, q.tolist(), strict=True)
           if qi <= level]
    out.sort(key=lambda s: (s.difference, s.q_value, s.name, s.metric))
    return WeakSlices(tuple(out), count, int(np.count_nonzero(~np.isnan(p))), min_rows,
                      max_candidates, correction, level, confidence_level, tuple(searched),
                      tuple(left_out))


def _codes(name: str, labels: Sequence[str], codes: npt.ArrayLike,
           n: int) -> tuple[list[str], npt.NDArray[np.int64]]:
    c = np.asarray(codes, dtype=np.int64)
    if c.shape != (n,):
        raise ValueError(f"slice column {name!r}: codes must have the length of y_true ({n}); "
                         f"got {c.size}")
    if c.size and (c.min() < 0 or c.max() >= len(labels)):
        raise ValueError(f"slice column {name!r}: codes must lie in [0, {len(labels)})")
    return [str(v) for v in labels], c


def _slice_counts(codes: npt.NDArray[np.int64], k: int, cell: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    return np.bincount(codes * 4 + cell, minlength=4 * k).reshape(k, 4).astype(np.int64)


def _big_enough(counts: npt.NDArray[np.int64], total: npt.NDArray[np.int64],
                min_rows: int) -> npt.NDArray[np.bool_]:
    n = counts.sum(axis=1)
    return (n >= min_rows) & (int(total.sum()) - n >= min_rows)


def _tested(found: list[tuple[tuple[str, ...], list[tuple[str, ...]], npt.NDArray[np.int64]]],
            total: npt.NDArray[np.int64], confidence_level: float) -> list[dict[str, Any]]:
    """Per candidate and metric defined on both sides: the WeakSlice fields but the q-value."""
    from scipy.special import ndtr, ndtri

    z = float(ndtri(0.5 + 0.5 * confidence_level))
    rows: list[dict[str, Any]] = []
    for names, labels, counts in found:
        if not len(labels):
            continue
        sides = (counts, total[None, :] - counts)
        stats = []
        for c in sides:
            tn, fp, fn, tp = (c[:, i].astype(np.float64) for i in range(4))
            n = tn + fp + fn + tp
            per_metric = {"accuracy": (tn + tp, n), "precision": (tp, tp + fp),
                          "recall": (tp, tp + fn), "jaccard": (tp, tp + fp + fn)}
            stats.append({m: (x, t, *wilson_ends(x, t, confidence_level))
                          for m, (x, t) in per_metric.items()})
        for metric in SEARCH_METRICS:
            ends = []
            for side in stats:
                x, t, lo, hi = side["jaccard" if metric == "f1" else metric]
                with np.errstate(invalid="ignore", divide="ignore"):
                    point = x / t
                if metric == "f1":  # F1 = 2 J / (1 + J), increasing in J
                    point, lo, hi = (2 * v / (1 + v) for v in (point, lo, hi))
                ends.append((point, lo, hi))
            (p1, l1, u1), (p2, l2, u2) = ends
            d = p1 - p2
            upper = d + np.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
            lower = d - np.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
            half = upper - d
            with np.errstate(invalid="ignore", divide="ignore"):
                # worse_p_value with margin 0 for a higher-is-better metric, per candidate
                p = np.where(half > 0, ndtr(d * z / half), np.where(d < 0, 0.0, 1.0))
            n_rows = counts.sum(axis=1)
            for i in np.flatnonzero(np.isfinite(d) & np.isfinite(half)):
                rows.append({"columns": names, "values": labels[i], "n": int(n_rows[i]),
                             "metric": metric, "value": float(p1[i]), "ci_lower": float(l1[i]),
                             "ci_upper": float(u1[i]), "rest_value": float(p2[i]),
                             "difference": float(d[i]), "difference_ci_lower": float(lower[i]),
                             "difference_ci_upper": float(upper[i]), "p_value": float(p[i])})
    return rows
