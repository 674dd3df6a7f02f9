"""Drift per segment: every feature tested within every slice of the data, false discoveries controlled.

A segment is one value of a segment column (``region = "north"``). Within it, the interval's
rows of each feature are compared with the reference's rows of the same segment (not with
the whole reference: a segment's own distribution is not drift). Each comparison is a test
with a p-value under "this slice did not change":

* a numeric feature: the two-sample Kolmogorov-Smirnov test (``scipy.stats.ks_2samp``, exact
  for small samples, asymptotic otherwise); conservative when values tie;
* a categorical feature: Pearson's chi-square test of homogeneity of the 2 x k table of
  reference and current counts (``scipy.stats.chi2_contingency``, no continuity correction),
  categories absent from both sides dropped.

The Jensen-Shannon size-aware null of :mod:`.js_null` is not used for the p-value: it is a
1,000-draw bootstrap, whose smallest p-value (1/1001) could never pass a Benjamini-Hochberg
cut of ``level / m`` for a family of hundreds of (feature, segment) tests.

The family is every (feature, segment) test made in one interval, all segment columns
together, and its adjusted p-values come from the shared multiple-testing core
(:func:`modelgate.evaluation.adjusted_p_values`, Benjamini-Hochberg by default): a test is
flagged when its q-value is at most ``level``. Under no change anywhere, BH bounds the chance
that *any* slice is flagged by ``level``, however many segments are cut (``bench/RESULTS.md``,
``bench/bench_segment_drift.py``). A segment with fewer than ``min_rows`` rows on either side
is ``insufficient_data``: not tested, not in the family.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from modelgate.evaluation import adjusted_p_values
from numpy.typing import ArrayLike, NDArray
from scipy import stats

__all__ = ["DEFAULT_MIN_SEGMENT_ROWS", "SegmentDrift", "SegmentDriftFamily", "segment_drift",
           "segment_labels"]

#: Fewest rows a segment needs on each side (reference and current) to be tested.
DEFAULT_MIN_SEGMENT_ROWS = 30

Status = Literal["drift", "no_drift", "insufficient_data"]


@dataclass(frozen=True, slots=True)
class SegmentDrift:
    """One feature within one segment, in one interval.

    Attributes
    ----------
    feature, segment_column, segment_value : str
        What was tested (the segment's value as text).
    kind : {"numeric", "categorical"}
    test : {"ks", "chi2"}
    n_reference, n_current : int
        Rows of the segment with a value of the feature, on each side.
    statistic, p_value, q_value : float or None
        The test's statistic (KS distance; Pearson's chi-square), its p-value and its adjusted
        p-value in the family; None when the segment was not tested.
    status : {"drift", "no_drift", "insufficient_data"}
    """

    feature: str
    segment_column: str
    segment_value: str
    kind: str
    test: str
    n_reference: int
    n_current: int
    statistic: float | None
    p_value: float | None
    q_value: float | None
    status: Status

    def to_record(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__slots__}


@dataclass(frozen=True, slots=True)
class SegmentDriftFamily:
    """Every (feature, segment) test of one interval and how the family was corrected.

    Attributes
    ----------
    rows : tuple of SegmentDrift
        Sorted by segment column, segment value, feature.
    level : float
        Largest q-value flagged.
    correction : str
        ``"bh"``, ``"by"`` or ``"holm"`` (:data:`modelgate.evaluation.CORRECTIONS`).
    family_size : int
        Tests made (rows not ``insufficient_data``).
    min_rows : int
    """

    rows: tuple[SegmentDrift, ...]
    level: float
    correction: str
    family_size: int
    min_rows: int

    @property
    def flagged(self) -> tuple[SegmentDrift, ...]:
        """The drifted (feature, segment) pairs, smallest q-value first."""
        hits = [r for r in self.rows if r.status == "drift"]
        return tuple(sorted(hits, key=lambda r: (r.q_value, r.p_value)))


def _text(values: ArrayLike, name: str) -> NDArray[np.object_]:
    """Values as text, missing (None, NaN) as None."""
    arr = np.asarray(values, dtype=object)
    if arr.ndim != 1:
        raise ValueError(f"column {name!r} must be one-dimensional, got shape {arr.shape!r}")
    out = np.empty(arr.shape, dtype=object)
    for i, v in enumerate(arr.tolist()):
        missing = v is None or (isinstance(v, float) and math.isnan(v))
        out[i] = None if missing else str(v)
    return out


def segment_labels(values: ArrayLike, name: str) -> NDArray[np.object_]:
    """A segment column's values as the segments name them: text, missing (None, NaN) as None.

    >>> segment_labels([1, None, "a", float("nan")], "region").tolist()
    ['1', None, 'a', None]
    """
    return _text(values, name)


def _numbers(values: ArrayLike, name: str) -> NDArray[np.float64]:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"numeric feature {name!r} has a value that is not a number") from exc
    if arr.ndim != 1:
        raise ValueError(f"column {name!r} must be one-dimensional, got shape {arr.shape!r}")
    return arr


def _chi2(reference: NDArray[np.object_], current: NDArray[np.object_]) -> tuple[float, float]:
    categories = sorted({*reference.tolist(), *current.tolist()})
    if len(categories) < 2:  # one category on both sides: the same distribution
        return 0.0, 1.0
    index = {c: i for i, c in enumerate(categories)}
    table = np.zeros((2, len(categories)), dtype=np.int64)
    np.add.at(table[0], [index[v] for v in reference.tolist()], 1)
    np.add.at(table[1], [index[v] for v in current.tolist()], 1)
    result = stats.chi2_contingency(table, correction=False)
    return float(result.statistic), float(result.pvalue)


def _check_columns(reference: Mapping[str, ArrayLike], current: Mapping[str, ArrayLike],
                   segments: Sequence[str], features: Sequence[str]) -> tuple[int, int]:
    lengths = []
    for side, table in (("reference", reference), ("current", current)):
        missing = [c for c in [*segments, *features] if c not in table]
        if missing:
            raise ValueError(f"segment drift: the {side} data has no column(s) {missing}")
        sizes = {c: len(np.asarray(table[c], dtype=object)) for c in [*segments, *features]}
        if len(set(sizes.values())) > 1:
            raise ValueError(f"segment drift: the {side} columns differ in length: {sizes}")
        lengths.append(next(iter(sizes.values()), 0))
    return lengths[0], lengths[1]


def segment_drift(reference: Mapping[str, ArrayLike], current: Mapping[str, ArrayLike],
                  segments: Sequence[str], features: Sequence[str], *,
                  categorical: Collection[str] = (), min_rows: int = DEFAULT_MIN_SEGMENT_ROWS,
                  level: float = 0.05, correction: str = "bh") -> SegmentDriftFamily:
    """Test every feature within every segment of every segment column, as one family.

    Parameters
    ----------
    reference, current : mapping of column name to array_like
        The reference data and the interval's rows, each with the segment columns and the
        features (columns of one length per side).
    segments : sequence of str
        Segment columns; each of their values seen on either side is a segment. Rows whose
        segment value is missing belong to no segment of that column.
    features : sequence of str
        Features to test (a segment column may not be one).
    categorical : collection of str, default ()
        Features tested as categories (chi-square); the others are numeric (KS).
    min_rows : int, default :data:`DEFAULT_MIN_SEGMENT_ROWS`
        Fewest rows with a value, on each side, for a segment to be tested.
    level : float, default 0.05
        Largest q-value flagged as drift.
    correction : {"bh", "by", "holm"}, default "bh"

    Returns
    -------
    SegmentDriftFamily

    Raises
    ------
    ValueError
        On a column missing or of the wrong length, a segment column among the features, a
        non-numeric value in a numeric feature, ``min_rows < 2``, ``level`` outside (0, 1) or
        an unknown correction.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> ref = {"region": np.repeat(["n", "s"], 200), "age": rng.normal(40, 10, 400)}
    >>> cur = {"region": np.repeat(["n", "s"], 100),
    ...        "age": np.r_[rng.normal(40, 10, 100), rng.normal(55, 10, 100)]}
    >>> [(r.segment_value, r.status) for r in segment_drift(ref, cur, ["region"], ["age"]).rows]
    [('n', 'no_drift'), ('s', 'drift')]
    """
    if overlap := sorted(set(segments) & set(features)):
        raise ValueError(f"segment drift: column(s) {overlap} are both a segment and a feature")
    if isinstance(min_rows, bool) or not isinstance(min_rows, int) or min_rows < 2:
        raise ValueError(f"min_rows must be an integer >= 2, got {min_rows!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    _check_columns(reference, current, segments, features)
    cats = set(categorical)
    ref_vals = {f: _text(reference[f], f) if f in cats else _numbers(reference[f], f) for f in features}
    cur_vals = {f: _text(current[f], f) if f in cats else _numbers(current[f], f) for f in features}
    pending: list[dict[str, Any]] = []
    for column in segments:
        ref_seg, cur_seg = _text(reference[column], column), _text(current[column], column)
        for value in sorted({*ref_seg.tolist(), *cur_seg.tolist()} - {None}):
            in_ref, in_cur = ref_seg == value, cur_seg == value
            for feature in features:
                a, b = ref_vals[feature][in_ref], cur_vals[feature][in_cur]
                kind = "categorical" if feature in cats else "numeric"
                if kind == "categorical":
                    a, b = a[a != None], b[b != None]  # noqa: E711 (elementwise on an object array)
                else:
                    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
                row: dict[str, Any] = {
                    "feature": feature, "segment_column": column, "segment_value": value,
                    "kind": kind, "test": "chi2" if kind == "categorical" else "ks",
                    "n_reference": int(a.size), "n_current": int(b.size),
                    "statistic": None, "p_value": None}
                if a.size >= min_rows and b.size >= min_rows:
                    if kind == "categorical":
                        row["statistic"], row["p_value"] = _chi2(a, b)
                    else:
                        result = stats.ks_2samp(a, b)
                        row["statistic"], row["p_value"] = float(result.statistic), float(result.pvalue)
                pending.append(row)
    p = np.array([np.nan if r["p_value"] is None else r["p_value"] for r in pending])
    q = adjusted_p_values(p, correction)
    rows = []
    for r, qv in zip(pending, q.tolist(), strict=True):
        tested = r["p_value"] is not None
        status: Status = ("insufficient_data" if not tested
                          else "drift" if qv <= level else "no_drift")
        rows.append(SegmentDrift(**r, q_value=qv if tested else None, status=status))
    rows.sort(key=lambda r: (r.segment_column, r.segment_value, r.feature))
    return SegmentDriftFamily(rows=tuple(rows), level=level, correction=correction,
                              family_size=int(np.count_nonzero(~np.isnan(p))), min_rows=min_rows)
