"""One disaggregation primitive: confusion counts and rates per group of a sensitive feature.

Every group-fairness metric in :mod:`modelgate.fairness.metrics` is a thin function of the
``(groups, 4)`` confusion-count table built here (fairlearn builds its metrics on its
``MetricFrame`` in the same way).

Conventions
-----------
* Group labels are strings: ``str(value)`` of each distinct value of the sensitive
  column, in ascending order of the values (``np.unique`` order).
* Missing values (``None``, NaN, ``pd.NA``, NaT) form their own group labelled
  :data:`MISSING_LABEL` (``"__missing__"``), listed last.  They are never dropped.
* A rate whose denominator is zero is NaN in :class:`GroupStats`: TPR and FNR for a
  group with no positive labels, FPR with no negative labels, PPV with no predicted
  positives.  (fairlearn reports 0 in these cases; see :mod:`modelgate.fairness.metrics`.)
* Groups with fewer than ``min_group_size`` rows are flagged ``small_group``; they are
  reported, never dropped.
* Each rate has a Wilson score interval (:meth:`GroupStats.rate_interval`), in its record at
  95 % unless asked otherwise: never a point, however few the rows (24 of 24 gives
  [0.862, 1]).  One or two counts from 0 or from all (up to three, from 51 to 100 trials)
  take Brown, Cai and DasGupta's Poisson end instead (the modified Wilson interval,
  :func:`~modelgate.fairness.score_intervals.modified_wilson_bounds`): with Wilson's end there
  the 95 % intervals held a TPR of 0.977 on about six positives a group in only 92.2-92.4 %
  of groups (``bench/RESULTS.md``, "Fairness gap intervals at the boundary").
* Each group carries the rows behind its rates (``positives`` for TPR and FNR,
  ``negatives`` for FPR, ``predicted_positives`` for PPV) and its accuracy, all exact from
  the counts; its ROC AUC needs the scores and is filled in by
  :func:`modelgate.fairness.group_scores.with_group_auc` (NaN otherwise).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from modelgate.records import finite_or_none

from .score_intervals import modified_wilson_bounds

__all__ = [
    "MISSING_LABEL",
    "RATE_NAMES",
    "DisaggregatedTable",
    "GroupStats",
    "disaggregate",
    "encode_groups",
    "encode_groups_from_codes",
    "group_counts",
    "highest_and_lowest",
    "one_group_reason",
    "table_from_counts",
]

MISSING_LABEL = "__missing__"
#: The group rates that are proportions, each with its numerator and denominator counts.
RATE_NAMES = ("tpr", "fpr", "selection_rate", "ppv")
_IntArray = npt.NDArray[np.intp]


@dataclass(frozen=True, slots=True)
class GroupStats:
    """Confusion counts and rates of one group.

    Attributes
    ----------
    group : str
        Group label (``str`` of the sensitive value, or ``"__missing__"``).
    n : int
        Rows in the group.
    tp, fp, tn, fn : int
        Confusion counts (label 1 is positive).
    base_rate : float
        Share of rows with label 1.
    selection_rate : float
        Share of rows predicted 1.
    tpr, fpr, ppv, fnr : float
        True positive rate, false positive rate, positive predictive value (precision)
        and false negative rate; NaN when the denominator is zero.
    small_group : bool
        ``n < min_group_size``.
    roc_auc : float
        ROC AUC of the scores within the group (binary models, from
        :func:`modelgate.fairness.group_scores.with_group_auc`); NaN when not computed or
        the group lacks positives or negatives.
    roc_auc_error_bound : float
        Bound on the error of ``roc_auc`` (0 when exact; see
        :mod:`modelgate.fairness.group_scores`); NaN when ``roc_auc`` is.
    """

    group: str
    n: int
    tp: int
    fp: int
    tn: int
    fn: int
    base_rate: float
    selection_rate: float
    tpr: float
    fpr: float
    ppv: float
    fnr: float
    small_group: bool
    roc_auc: float = float("nan")
    roc_auc_error_bound: float = float("nan")

    @property
    def positives(self) -> int:
        """Rows with label 1: the denominator of ``tpr`` and ``fnr``."""
        return self.tp + self.fn

    @property
    def negatives(self) -> int:
        """Rows with label 0: the denominator of ``fpr``."""
        return self.tn + self.fp

    @property
    def predicted_positives(self) -> int:
        """Rows predicted 1: the denominator of ``ppv``."""
        return self.tp + self.fp

    def rate_interval(self, rate: str, confidence_level: float = 0.95) -> tuple[float, float]:
        """Modified Wilson interval of one of the group's rates (NaN when the rate is undefined).

        Parameters
        ----------
        rate : {"tpr", "fpr", "selection_rate", "ppv"}
            The rate: true positives of the positives, false positives of the negatives,
            predicted positives of the rows, true positives of the predicted positives.
        confidence_level : float, default 0.95
            Coverage, in (0, 1).

        Raises
        ------
        ValueError
            If ``rate`` is not one of those.

        Examples
        --------
        >>> g = GroupStats("F", 30, 24, 1, 5, 0, 0.8, 25 / 30, 1.0, 1 / 6, 0.96, 0.0, False)
        >>> [round(v, 4) for v in g.rate_interval("tpr")]
        [0.862, 1.0]
        """
        from scipy.special import ndtri

        counts = {"tpr": (self.tp, self.positives), "fpr": (self.fp, self.negatives),
                  "selection_rate": (self.predicted_positives, self.n),
                  "ppv": (self.tp, self.predicted_positives)}
        if rate not in counts:
            raise ValueError(f"rate must be one of {RATE_NAMES!r}; got {rate!r}")
        if not 0.0 < confidence_level < 1.0:
            raise ValueError(f"confidence_level must be a number in (0, 1); got {confidence_level!r}")
        lower, upper = modified_wilson_bounds(*counts[rate],
                                              float(ndtri(0.5 + confidence_level / 2.0)))
        return float(lower), float(upper)

    @property
    def accuracy(self) -> float:
        """Share of the group's rows predicted right; NaN for an empty group."""
        return (self.tp + self.tn) / self.n if self.n else float("nan")

    def to_record(self, confidence_level: float = 0.95) -> dict[str, Any]:
        """The group's rates as a ``fairness_group`` row (the caller adds the run, the
        sensitive feature and, one-vs-rest, the class).

        Parameters
        ----------
        confidence_level : float, default 0.95
            Coverage of the rates' (modified) Wilson intervals.

        Returns
        -------
        dict
            ``group_label``, ``n``, ``base_rate``, ``selection_rate``, ``tpr``, ``fpr``,
            ``ppv``, ``fnr`` (None where undefined) and ``is_small_group``; then the counts
            behind the rates, ``positives``, ``negatives`` and ``predicted_positives``, and
            ``accuracy``, ``roc_auc`` and ``roc_auc_error_bound`` (None where undefined or
            not computed); then ``<rate>_ci_lower`` and ``<rate>_ci_upper``, the modified Wilson
            interval of ``tpr``, ``fpr``, ``selection_rate`` and ``ppv`` (None where the
            rate is undefined).

        Examples
        --------
        >>> g = GroupStats("F", 10, 0, 2, 8, 0, 0.0, 0.2, float("nan"), 0.2, 0.0, float("nan"),
        ...                small_group=True)
        >>> record = g.to_record()
        >>> record["group_label"], record["tpr"], record["fpr"], record["is_small_group"]
        ('F', None, 0.2, True)
        >>> record["positives"], record["negatives"], record["accuracy"], record["roc_auc"]
        (0, 10, 0.8, None)
        >>> record["tpr_ci_lower"], round(record["fpr_ci_lower"], 4), round(record["fpr_ci_upper"], 4)
        (None, 0.0355, 0.5098)
        """
        auc = finite_or_none(self.roc_auc)
        ends = {}
        for rate in RATE_NAMES:
            lower, upper = self.rate_interval(rate, confidence_level)
            ends[f"{rate}_ci_lower"], ends[f"{rate}_ci_upper"] = (finite_or_none(lower),
                                                                  finite_or_none(upper))
        return {"group_label": self.group, "n": self.n,
                "base_rate": finite_or_none(self.base_rate),
                "selection_rate": finite_or_none(self.selection_rate),
                "tpr": finite_or_none(self.tpr), "fpr": finite_or_none(self.fpr),
                "ppv": finite_or_none(self.ppv), "fnr": finite_or_none(self.fnr),
                "is_small_group": self.small_group,
                "positives": self.positives, "negatives": self.negatives,
                "predicted_positives": self.predicted_positives,
                "accuracy": finite_or_none(self.accuracy), "roc_auc": auc,
                "roc_auc_error_bound": None if auc is None else finite_or_none(
                    self.roc_auc_error_bound), **ends}


@dataclass(frozen=True, slots=True)
class DisaggregatedTable:
    """Per-group statistics of one sensitive feature, groups in label order (missing last)."""

    groups: tuple[GroupStats, ...]
    n: int
    min_group_size: int

    def group(self, label: str) -> GroupStats:
        """Return the statistics of the group labelled ``label``.

        Raises
        ------
        KeyError
            If there is no such group.
        """
        for stats in self.groups:
            if stats.group == label:
                return stats
        raise KeyError(f"no group {label!r}; groups are {[g.group for g in self.groups]!r}")

    def counts(self) -> npt.NDArray[np.int64]:
        """Return the ``(groups, 4)`` count table, columns ``tn, fp, fn, tp``."""
        return np.array([[g.tn, g.fp, g.fn, g.tp] for g in self.groups], dtype=np.int64)


def disaggregate(
    y_true: npt.ArrayLike,
    y_pred: npt.ArrayLike,
    sensitive: npt.ArrayLike,
    *,
    min_group_size: int = 30,
) -> DisaggregatedTable:
    """Confusion counts and rates per group of one sensitive feature.

    Parameters
    ----------
    y_true : array_like of shape (n,)
        True labels, 0 or 1.
    y_pred : array_like of shape (n,)
        Predicted labels, 0 or 1.
    sensitive : array_like of shape (n,)
        Sensitive feature values (numbers, strings, booleans, or objects); missing
        values form the group ``"__missing__"``.
    min_group_size : int, default 30
        Groups with fewer rows are flagged ``small_group`` (still reported).

    Returns
    -------
    DisaggregatedTable

    Raises
    ------
    ValueError
        If the arrays differ in length, are empty, labels are not 0/1, or two distinct
        sensitive values have the same string form.

    Examples
    --------
    >>> t = disaggregate([1, 1, 0, 0, 1, 0], [1, 0, 1, 0, 1, 1], ["a", "a", "a", "b", "b", None])
    >>> [(g.group, g.n, g.tpr, g.fpr) for g in t.groups]
    [('a', 3, 0.5, 1.0), ('b', 2, 1.0, 0.0), ('__missing__', 1, nan, 1.0)]
    """
    labels, counts = group_counts(y_true, y_pred, sensitive)
    return table_from_counts(labels, counts, min_group_size=min_group_size)


def table_from_counts(
    labels: tuple[str, ...], counts: npt.ArrayLike, *, min_group_size: int = 30
) -> DisaggregatedTable:
    """The table of :func:`disaggregate` from group labels and ``(groups, 4)`` counts.

    This is how merged per-partition counts (``tn, fp, fn, tp`` per group) become a table.

    Examples
    --------
    >>> t = table_from_counts(("a", "b"), [[1, 0, 0, 2], [0, 1, 1, 0]], min_group_size=3)
    >>> [(g.group, g.n, g.tpr, g.small_group) for g in t.groups]
    [('a', 3, 1.0, False), ('b', 2, 0.0, True)]
    """
    table = np.asarray(counts, dtype=np.int64)
    if table.shape != (len(labels), 4) or (table < 0).any():
        raise ValueError(f"counts must be non-negative with shape ({len(labels)}, 4); got "
                         f"shape {table.shape!r}")
    if isinstance(min_group_size, bool) or not isinstance(min_group_size, int | np.integer) or (
        min_group_size < 1
    ):
        raise ValueError(f"min_group_size must be an integer >= 1; got {min_group_size!r}")
    groups = tuple(_group_stats(label, row, min_group_size) for label, row in zip(labels, table,
                                                                                 strict=True))
    return DisaggregatedTable(groups, int(table.sum()), int(min_group_size))


def group_counts(
    y_true: npt.ArrayLike, y_pred: npt.ArrayLike, sensitive: npt.ArrayLike
) -> tuple[tuple[str, ...], npt.NDArray[np.int64]]:
    """Group labels and the ``(groups, 4)`` table of counts ``tn, fp, fn, tp``.

    Examples
    --------
    >>> labels, counts = group_counts([1, 0, 1], [1, 1, 0], [2, 1, 2])
    >>> labels, counts.tolist()
    (('1', '2'), [[0, 1, 0, 0], [0, 0, 1, 1]])
    """
    y = _binary(y_true, "y_true")
    p = _binary(y_pred, "y_pred")
    if p.shape != y.shape:
        raise ValueError(f"y_pred must have the length of y_true ({y.size}); got {p.size}")
    labels, codes = encode_groups(sensitive)
    if codes.shape != y.shape:
        raise ValueError(f"sensitive must have the length of y_true ({y.size}); got {codes.size}")
    cell = codes * 4 + (2 * y + p)
    counts = np.bincount(cell, minlength=4 * len(labels)).reshape(len(labels), 4)
    return labels, counts.astype(np.int64)


def highest_and_lowest(labels: Sequence[str], values: npt.NDArray[np.float64]
                       ) -> tuple[str, str]:
    """The groups of the largest and smallest finite value: the first at the maximum, the
    last at the minimum, so that equal values (a gap of 0) name two groups, not one twice.

    >>> highest_and_lowest(("a", "b", "c"), np.array([0.5, np.nan, 0.5]))
    ('a', 'c')
    """
    lowest = len(values) - 1 - int(np.nanargmin(values[::-1]))
    return labels[int(np.nanargmax(values))], labels[lowest]


def one_group_reason(labels: Sequence[str]) -> str | None:
    """Why no gap exists when the sensitive column holds a single value (None otherwise):
    said as the column's, not as a rate short of groups.

    >>> one_group_reason(("__missing__",)), one_group_reason(("a", "b")) is None
    ('every value of the sensitive column is missing: no gap between groups', True)
    """
    if len(labels) != 1:
        return None
    only = ("every value of the sensitive column is missing" if labels[0] == MISSING_LABEL
            else f"one group only, {labels[0]!r}")
    return f"{only}: no gap between groups"


def encode_groups(sensitive: npt.ArrayLike) -> tuple[tuple[str, ...], _IntArray]:
    """Map a sensitive column to string labels and integer group codes.

    Missing values get the label ``"__missing__"`` and the last code.

    Examples
    --------
    >>> labels, codes = encode_groups([3.0, float("nan"), 1.0, 3.0])
    >>> labels, codes.tolist()
    (('1.0', '3.0', '__missing__'), [1, 2, 0, 1])
    """
    arr = np.asarray(sensitive)
    if arr.ndim != 1:
        raise ValueError(f"sensitive must be one-dimensional; got shape {arr.shape!r}")
    if arr.dtype.kind in "biu":
        return _encode_integers(arr)
    if arr.dtype.kind == "S":
        arr = arr.astype(str)
    if arr.dtype.kind == "U":
        uniques, codes = np.unique(arr, return_inverse=True)
        return _labels(list(uniques), has_missing=False), codes.astype(np.intp)
    if arr.dtype.kind in "fcmMO":
        return _encode_with_missing(arr)
    raise ValueError(f"sensitive has unsupported dtype {arr.dtype!r}")


def encode_groups_from_codes(categories: npt.ArrayLike, codes: npt.ArrayLike
                             ) -> tuple[tuple[str, ...], _IntArray]:
    """:func:`encode_groups` of a dictionary-encoded column: ``categories[codes]``, ``-1`` missing.

    The labels and codes are those :func:`encode_groups` gives for the decoded values when
    every category occurs in ``codes`` (a dictionary built from the rows themselves); the
    work is per category, then one ``take`` per row, instead of hashing every row's value.

    Examples
    --------
    >>> labels, codes = encode_groups_from_codes(["b", "a"], [0, -1, 1, 0])
    >>> labels, codes.tolist()
    (('a', 'b', '__missing__'), [1, 2, 0, 1])
    """
    cats = np.asarray(categories, dtype=object)
    rows = np.asarray(codes)
    if cats.ndim != 1 or rows.ndim != 1:
        raise ValueError("categories and codes must be one-dimensional")
    labels, code_of = encode_groups(cats) if cats.size else ((), np.zeros(0, dtype=np.intp))
    if labels and labels[-1] == MISSING_LABEL:
        raise ValueError("categories must not hold missing values; mark missing rows with code -1")
    missing = rows < 0
    has_missing = bool(missing.any())
    # code -1 takes the last entry: the missing group's code, after every label
    lookup = np.append(code_of, len(labels)).astype(np.intp)
    out = lookup[rows]
    return ((*labels, MISSING_LABEL) if has_missing else tuple(labels)), out


def _encode_integers(arr: npt.NDArray[np.generic]) -> tuple[tuple[str, ...], _IntArray]:
    if arr.size == 0:
        return (), np.zeros(0, dtype=np.intp)
    # a type that holds every value: unsigned values from 2**63 on do not fit int64
    values = arr.astype(np.uint64 if arr.dtype.kind == "u" else np.int64)
    low = values.min()  # of values' own type: a Python int from 2**63 on would not fit int64
    if int(values.max()) - int(low) > 4 * arr.size + 65536:  # sparse values: sort
        uniques, codes = np.unique(arr, return_inverse=True)
        return _labels(list(uniques), has_missing=False), codes.astype(np.intp)
    offsets = (values - low).astype(np.intp)  # dense values: one pass, no sort
    present = np.bincount(offsets) > 0
    code_of = np.cumsum(present) - 1
    uniques = np.flatnonzero(present).astype(values.dtype) + low
    if arr.dtype.kind == "b":
        return _labels([bool(v) for v in uniques], has_missing=False), code_of[offsets]
    return _labels(list(uniques), has_missing=False), code_of[offsets].astype(np.intp)


def _encode_with_missing(arr: npt.NDArray[np.generic]) -> tuple[tuple[str, ...], _IntArray]:
    missing = np.asarray(pd.isna(arr), dtype=bool)
    codes_present, uniques = pd.factorize(arr[~missing])  # hashing, first-seen order
    values = list(uniques)
    try:  # natural order of the values; by string form when they do not compare
        order = sorted(range(len(values)), key=lambda i: values[i])
    except TypeError:
        order = sorted(range(len(values)), key=lambda i: str(values[i]))
    rank = np.empty(len(values), dtype=np.intp)
    rank[order] = np.arange(len(values))
    codes = np.full(arr.shape, len(values), dtype=np.intp)
    codes[~missing] = rank[codes_present]
    return _labels([values[i] for i in order], has_missing=bool(missing.any())), codes


def _labels(values: list[object], *, has_missing: bool) -> tuple[str, ...]:
    labels = [str(v.item()) if isinstance(v, np.generic) else str(v) for v in values]
    if len(set(labels)) != len(labels):
        seen: dict[str, object] = {}
        for value, label in zip(values, labels, strict=True):
            if label in seen:
                raise ValueError(f"sensitive values {seen[label]!r} and {value!r} both have the "
                                 f"label {label!r}; make the column one type")
            seen[label] = value
    if MISSING_LABEL in labels:
        raise ValueError(f"sensitive contains the reserved label {MISSING_LABEL!r}, used for "
                         "missing values; rename that value")
    return (*labels, MISSING_LABEL) if has_missing else tuple(labels)


def _binary(values: npt.ArrayLike, name: str) -> _IntArray:
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty one-dimensional array; got shape "
                         f"{arr.shape!r}")
    if arr.dtype.kind == "b":
        return arr.astype(np.intp)
    ok = arr.dtype.kind in "iuf" and bool(np.all((arr == 0) | (arr == 1)))
    if not ok:
        found = np.unique(arr[~((arr == 0) | (arr == 1))])[:3] if arr.dtype.kind in "iuf" else (
            arr.dtype)
        raise ValueError(f"{name} must contain only 0 and 1; found {found!r}")
    return arr.astype(np.intp)


def _group_stats(label: str, row: npt.NDArray[np.int64], min_group_size: int) -> GroupStats:
    tn, fp, fn, tp = (int(v) for v in row)
    n = tn + fp + fn + tp

    def ratio(num: int, den: int) -> float:
        return num / den if den else float("nan")

    return GroupStats(
        group=label, n=n, tp=tp, fp=fp, tn=tn, fn=fn,
        base_rate=ratio(tp + fn, n), selection_rate=ratio(tp + fp, n),
        tpr=ratio(tp, tp + fn), fpr=ratio(fp, fp + tn), ppv=ratio(tp, tp + fp),
        fnr=ratio(fn, tp + fn), small_group=n < min_group_size,
    )
