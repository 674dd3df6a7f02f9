"""Metrics per segment, each compared with the rest of the data, with false discoveries controlled.

For every segment of :mod:`.segment_statistics` (one value of a column, or one pair of
values of two columns) :func:`evaluate_segments` reports:

* ``n`` and every binary metric of :data:`~.metrics.METRIC_NAMES` on the segment's rows,
  with a closed-form interval (:mod:`.segment_intervals`: Wilson, logit-scale Wald with
  DeLong's variance as for the whole data, Hall's skewness-corrected interval of a mean
  for the log loss and Brier score in place of the whole data's studentized bootstrap),
  so a segment costs O(its cells), no resample;
* the same on the *rest* (every other row: the column's total, one merge of its
  segments, minus the segment's statistics, as every statistic is a sum over rows);
* the difference ``segment - rest`` with its MOVER interval (Zou and Donner 2008) from
  the two intervals and correlation 0: the segment and its rest share no row, so the two
  estimates are independent; with Wilson intervals this is Newcombe's (1998) method 10
  for two independent proportions;
* a one-sided p-value that the segment is *worse* than the rest
  (:func:`worse_p_value`), and its q-value: the p-value adjusted over the family of every
  judged (segment, metric) of the report (:func:`~.multiple_testing.adjusted_p_values`,
  Benjamini-Hochberg by default).

Segments with fewer than ``min_rows`` rows (default :data:`DEFAULT_MIN_ROWS`), or whose
rest has fewer, are reported with their metrics and intervals but *not judged*: no
difference, p-value or q-value, and they do not enter the family.  A metric undefined on
the segment or the rest (ROC AUC of a segment with one class) is not judged either.

The p-value is the one the MOVER interval implies: the half-width of the difference's
interval on the side facing "not worse" is read as ``z`` standard errors (``z`` the
normal quantile of the interval's level), and ``p = Phi((d + margin) / se)`` for a
higher-is-better metric (``Phi((margin - d) / se)`` for a lower-is-better one).  At
the interval's own level the test and the interval agree: ``p < (1 - level) / 2``
exactly when the interval lies wholly past the margin.  Why not a separate test per
metric: one rule for every metric keeps the p-value consistent with the interval the
report shows; its level under the null is checked by simulation (``bench/bench_segments.py``).

Examples
--------
>>> from modelgate.fairness.disaggregate import encode_groups
>>> from modelgate.evaluation.segment_statistics import collect_segments
>>> rng = np.random.default_rng(0)
>>> y = rng.integers(0, 2, 600)
>>> s = np.clip(0.5 * y + rng.uniform(0, 0.5, 600), 0, 1)
>>> region = np.array(["n", "s", "e"])[rng.integers(0, 3, 600)]
>>> stats = collect_segments(y, s, threshold=0.5, columns={"region": encode_groups(region)})
>>> report = evaluate_segments(stats, n_bootstrap=200)
>>> [(seg.values, seg.n, seg.judged) for seg in report.segments]
[(('e',), 210, True), (('n',), 197, True), (('s',), 193, True)]
>>> report.family_size, report.correction
(21, 'bh')
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from modelgate.intervals import mover_difference
from modelgate.records import finite_or_none

from .metrics import METRIC_NAMES, MetricEstimate
from .multiple_testing import CORRECTIONS, adjusted_p_values
from .policy import HIGHER_IS_BETTER
from .segment_intervals import (
    ColumnTotal,
    closed_form_estimates,
    column_total,
    loss_power_sums,
    rest_estimates,
)
from .segment_statistics import SegmentStatistics
from .sufficient import ModelStatistics

__all__ = ["DEFAULT_MIN_ROWS", "SegmentMetric", "SegmentReport", "SegmentResult",
           "compare_with_rest", "evaluate_segments", "not_judged", "with_q_values",
           "worse_p_value"]

#: Fewest rows a segment (and its rest) needs to be judged.  At 100 rows the Wilson,
#: logit-Wald and studentized intervals hold their level (``bench/RESULTS.md``,
#: "Coverage of the binary intervals", n = 200 and below), and one row moves a rate by
#: at most 0.01.
DEFAULT_MIN_ROWS = 100


@dataclass(frozen=True, slots=True)
class SegmentMetric:
    """One metric on one segment, on its rest, and the comparison of the two.

    ``difference`` is ``value - rest_value`` in the metric's units (whatever its
    direction); ``p_value`` is one-sided, that the segment is worse than the rest
    (lower for a higher-is-better metric); ``q_value`` the p-value adjusted over the
    report's family.  The comparison's fields are NaN when the segment is not judged or
    the metric is undefined on either side (``undefined_reason`` says why).
    """

    name: str
    higher_is_better: bool
    value: float
    ci_lower: float
    ci_upper: float
    rest_value: float
    rest_ci_lower: float
    rest_ci_upper: float
    difference: float
    difference_ci_lower: float
    difference_ci_upper: float
    p_value: float
    q_value: float
    undefined_reason: str | None = None

    def to_record(self) -> dict[str, Any]:
        """The metric as plain values (NaN as None), keyed by the stored column names."""
        record: dict[str, Any] = {"metric_name": self.name, "higher_is_better": self.higher_is_better,
                                  "undefined_reason": self.undefined_reason}
        for key in ("value", "ci_lower", "ci_upper", "rest_value", "rest_ci_lower", "rest_ci_upper",
                    "difference", "difference_ci_lower", "difference_ci_upper", "p_value",
                    "q_value"):
            record[key] = finite_or_none(getattr(self, key))
        return record


@dataclass(frozen=True, slots=True)
class SegmentResult:
    """One segment: its column(s), value(s), size, and every metric.

    ``judged`` is False for a segment (or rest) below the minimum size; ``reason`` then
    says which and how many rows it has.  ``n_pos`` (label positives) is None for the
    multiclass and regression segments (:mod:`.segment_rows`).
    """

    columns: tuple[str, ...]
    values: tuple[str, ...]
    n: int
    n_pos: int | None
    judged: bool
    reason: str | None
    metrics: tuple[SegmentMetric, ...]

    @property
    def name(self) -> str:
        """``column=value``, or ``a=x & b=y`` for a pair: how reasons name the segment.

        >>> SegmentResult(("a", "b"), ("x", "y"), 5, 1, False, None, ()).name
        'a=x & b=y'
        """
        return " & ".join(f"{c}={v}" for c, v in zip(self.columns, self.values, strict=True))

    def to_record(self) -> dict[str, Any]:
        """The segment as the JSON result's record: identity, size, and every metric by name.

        >>> SegmentResult(("a",), ("x",), 5, 1, False, "small", ()).to_record()
        ... # doctest: +NORMALIZE_WHITESPACE
        {'segment': 'a=x', 'columns': ['a'], 'values': ['x'], 'n': 5, 'positives': 1,
         'judged': False, 'not_judged_reason': 'small', 'metrics': {}}
        """
        return {"segment": self.name, "columns": list(self.columns), "values": list(self.values),
                "n": self.n, "positives": self.n_pos, "judged": self.judged,
                "not_judged_reason": self.reason,
                "metrics": {m.name: {k: v for k, v in m.to_record().items() if k != "metric_name"}
                            for m in self.metrics}}


@dataclass(frozen=True, slots=True)
class SegmentReport:
    """Every segment of every column and pair, and how the family of tests was formed.

    ``family_size`` counts the (segment, metric) tests whose p-values were adjusted
    together by ``correction`` (see :data:`~.multiple_testing.CORRECTIONS`).
    """

    segments: tuple[SegmentResult, ...]
    min_rows: int
    correction: str
    confidence_level: float
    n_bootstrap: int
    seed: int
    family_size: int

    @property
    def family(self) -> str:
        """The family of tests in words, as reasons and reports state it.

        >>> print(SegmentReport((), 100, "bh", 0.95, 0, 0, 12).family)  # doctest: +NORMALIZE_WHITESPACE
        12 tests (segment x metric, one-sided: segment worse than the rest),
        Benjamini-Hochberg (false-discovery rate)
        """
        return (f"{self.family_size} tests (segment x metric, one-sided: segment worse than "
                f"the rest), {CORRECTIONS[self.correction]}")

    def to_rows(self) -> list[dict[str, Any]]:
        """One ``segment_metric`` row per segment x metric (the caller adds the run and attempt)."""
        return [{"segment": seg.name, "segment_columns": list(seg.columns),
                 "segment_values": list(seg.values), "n": seg.n, "positives": seg.n_pos,
                 "judged": seg.judged, "not_judged_reason": seg.reason,
                 "correction": self.correction, **m.to_record()}
                for seg in self.segments for m in seg.metrics]


def worse_p_value(difference: float, interval: tuple[float, float], higher_is_better: bool,
                  confidence_level: float, margin: float = 0.0) -> float:
    """One-sided p-value that a segment is worse than the rest by more than ``margin``.

    The null hypothesis is "the segment is at most ``margin`` worse"; the standard error
    is the difference's interval half-width on the side facing that null over the
    normal quantile of ``confidence_level`` (see the module's docstring).

    Parameters
    ----------
    difference : float
        ``segment - rest``.
    interval : tuple of float
        Its interval at ``confidence_level``.
    higher_is_better : bool
        The metric's direction.
    confidence_level : float
        The interval's central coverage.
    margin : float, default 0
        Worsening allowed (>= 0), in the metric's units.

    Returns
    -------
    float
        In [0, 1]; NaN when the difference or the needed end is NaN.

    Examples
    --------
    A difference of -0.05 whose interval reaches 0 exactly on the better side:

    >>> round(worse_p_value(-0.05, (-0.1, 0.0), True, 0.95), 4)
    0.025
    >>> round(worse_p_value(0.02, (-0.01, 0.05), False, 0.95, margin=0.02), 4)
    0.5
    """
    from scipy.special import ndtr, ndtri

    lower, upper = interval
    z = float(ndtri(0.5 + 0.5 * confidence_level))
    # distance from the worst tolerated difference, positive when worse than it
    if higher_is_better:
        excess, half = -margin - difference, upper - difference
    else:
        excess, half = difference - margin, difference - lower
    if not (math.isfinite(excess) and math.isfinite(half)):
        return float("nan")
    if half <= 0:  # a degenerate interval: the point alone decides
        return 0.0 if excess > 0 else 1.0
    return float(ndtr(-excess * z / half))


def evaluate_segments(stats: Sequence[SegmentStatistics], *, min_rows: int = DEFAULT_MIN_ROWS,
                      n_bootstrap: int = 1000, confidence_level: float = 0.95, seed: int = 0,
                      correction: str = "bh") -> SegmentReport:
    """Every segment's metrics, intervals and comparison with its rest.

    Parameters
    ----------
    stats : sequence of SegmentStatistics
        From :func:`~.segment_statistics.collect_segments` or
        :func:`~.segment_statistics.merge_segments`.
    min_rows : int, default :data:`DEFAULT_MIN_ROWS`
        Fewest rows a segment and its rest need to be judged (>= 2).
    n_bootstrap : int, default 1000
        The run's resamples, recorded in the report; the segment intervals are closed-form
        (:mod:`.segment_intervals`) and draw none, and 0, as for the whole data, gives
        NaN intervals (no segment judged).
    confidence_level : float, default 0.95
        Coverage of every interval.
    seed : int, default 0
        The run's seed, recorded in the report.
    correction : {"bh", "by", "holm"}, default "bh"
        How the p-values of the family are adjusted.

    Returns
    -------
    SegmentReport

    Raises
    ------
    ValueError
        On a ``min_rows`` below 2 or an unknown correction.
    """
    if isinstance(min_rows, bool) or not isinstance(min_rows, int) or min_rows < 2:
        raise ValueError(f"min_rows must be an integer >= 2; got {min_rows!r}")
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {', '.join(CORRECTIONS)}; got {correction!r}")

    def summary(part: ModelStatistics, sums: np.ndarray) -> Mapping[str, MetricEstimate]:
        found = closed_form_estimates(part, sums, confidence_level)
        if n_bootstrap == 0:  # no intervals asked for, as for the whole data
            nan = float("nan")
            return {k: replace(e, ci_lower=nan, ci_upper=nan) for k, e in found.items()}
        return found

    def rest_summary(total: ColumnTotal, part: ModelStatistics,
                     sums: np.ndarray) -> Mapping[str, MetricEstimate]:
        found = rest_estimates(total, part, sums, confidence_level)
        if n_bootstrap == 0:
            nan = float("nan")
            return {k: replace(e, ci_lower=nan, ci_upper=nan) for k, e in found.items()}
        return found

    results: list[SegmentResult] = []
    first: ColumnTotal | None = None
    for column in stats:
        # each rest is the column's total minus the segment, read off the total's prefix
        # sums at the segment's keys (no second pass, no merge or table per rest); every
        # column covers the same rows, so the first column's score table serves them all
        total = column_total(column.parts, first)
        first = first or total
        for value, part in zip(column.values, column.parts, strict=True):
            own_sums = loss_power_sums(part)
            own = summary(part.candidate, own_sums)
            rest_n = total.stats.n - part.n
            reason = not_judged(part.n, rest_n if rest_n > 0 else None, min_rows)
            other = (None if reason is not None
                     else rest_summary(total, part.candidate, own_sums))
            metrics = tuple(compare_with_rest(own[name], None if other is None else other[name],
                                              HIGHER_IS_BETTER[name], confidence_level)
                            for name in METRIC_NAMES)
            results.append(SegmentResult(column.columns, value, part.n, part.candidate.n_pos,
                                         reason is None, reason, metrics))
    return with_q_values(results, SegmentReport((), min_rows, correction, confidence_level,
                                                 n_bootstrap, seed, 0))


def not_judged(n: int, rest_n: int | None, min_rows: int) -> str | None:
    """Why a segment of ``n`` rows with a rest of ``rest_n`` is not judged (None: it is).

    >>> not_judged(120, 30, 100)
    'the rest of the data has 30 rows, fewer than the minimum of 100'
    """
    if n < min_rows:
        return f"segment has {n:,} rows, fewer than the minimum of {min_rows:,}"
    if rest_n is None or rest_n < min_rows:
        return (f"the rest of the data has {rest_n or 0:,} rows, fewer than the minimum of "
                f"{min_rows:,}")
    return None


def compare_with_rest(own: MetricEstimate, rest: MetricEstimate | None, higher_is_better: bool,
                      confidence_level: float) -> SegmentMetric:
    """A segment's estimate against its rest's, for the segments of every task.

    Parameters
    ----------
    own, rest : MetricEstimate
        The metric on the segment's rows and on every other row (``rest`` None: the
        segment is not judged, and only its own estimate is reported).
    higher_is_better : bool
        The metric's direction, which way "worse" is.
    confidence_level : float
        Coverage of the intervals, and the level the p-value is read at.

    Returns
    -------
    SegmentMetric
        The difference ``own - rest`` with its MOVER interval (correlation 0: the segment
        and its rest share no row) and :func:`worse_p_value`; the q-value NaN (set over the
        family by :func:`with_q_values`).  Not judged (NaN p-value, with the reason) where
        either estimate is undefined or lacks an interval.
    """
    nan = float("nan")
    if rest is None:
        return SegmentMetric(own.name, higher_is_better, own.value, own.ci_lower, own.ci_upper,
                             nan, nan, nan, nan, nan, nan, nan, nan, own.undefined_reason)
    reason = own.undefined_reason or (None if rest.undefined_reason is None
                                      else f"on the rest: {rest.undefined_reason}")
    ends = (own.ci_lower, own.ci_upper, rest.ci_lower, rest.ci_upper)
    difference, interval, p = own.value - rest.value, (nan, nan), nan
    if reason is None and all(math.isfinite(e) for e in (own.value, rest.value, *ends)):
        # independent estimates (disjoint rows): correlation 0
        interval = mover_difference(own.value, (own.ci_lower, own.ci_upper), rest.value,
                                    (rest.ci_lower, rest.ci_upper), 0.0)
        p = worse_p_value(difference, interval, higher_is_better, confidence_level)
    elif reason is None:
        reason = "no interval (no bootstrap resamples, or too few rows)"
    return SegmentMetric(own.name, higher_is_better, own.value, own.ci_lower, own.ci_upper,
                         rest.value, rest.ci_lower, rest.ci_upper, difference, interval[0],
                         interval[1], p, nan, reason)


def with_q_values(results: list[SegmentResult], template: SegmentReport) -> SegmentReport:
    """``template`` holding ``results``, each p-value's q-value adjusted over the family
    (every judged segment metric) by the template's correction."""
    p = np.array([m.p_value for r in results for m in r.metrics], dtype=np.float64)
    q = adjusted_p_values(p, template.correction) if p.size else p
    flat = iter(q.tolist())
    segments = tuple(replace(r, metrics=tuple(replace(m, q_value=next(flat)) for m in r.metrics))
                     for r in results)
    return replace(template, segments=segments, family_size=int(np.count_nonzero(~np.isnan(p))))
