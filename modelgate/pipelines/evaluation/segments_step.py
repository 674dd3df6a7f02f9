"""Segments in the evaluation run (issue #43): statistics per slice while scoring, the
segments' metrics and the weakest slices after the merge, and their records for the gate,
the store, the JSON result and the report.

The segment columns are the run's policy's ``segments.columns`` (``evaluate --segments`` and
the DAG's ``segments`` parameter add theirs to the policy the ``prepare`` step checks and
stores: :func:`modelgate.evaluation.segment_policy.with_segment_columns`). Each partition's
scoring summarises every segment's rows (:func:`modelgate.evaluation.segment_statistics.collect_segments`)
and counts every slice of the columns and their pairs for the weakest-slice search
(:func:`modelgate.evaluation.weakest_slices.count_slices`); both merge like the run's own
statistics, so a mapped run and a one-process run find the same. Multiclass and regression
models keep their scored rows, segment columns included, and their segments are evaluated
from those rows in the metrics step (:func:`compute_task_segments`,
:mod:`modelgate.evaluation.segment_rows`); the weakest-slice search is binary only.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from modelgate.pipelines.context import Context
from modelgate.pipelines.evaluation import model_tasks
from modelgate.pipelines.evaluation.run_refs import RunRef, get_pickle, put_pickle
from modelgate.pipelines.refusals import InputRefused

if TYPE_CHECKING:  # annotations only: the step imports the cores where it computes
    from pathlib import Path

    import pyarrow as pa

    from modelgate.evaluation import SegmentPolicy, SegmentReport, SegmentStatistics, SliceCounts, WeakSlices
    from modelgate.onnx.manifest import Manifest

log = logging.getLogger("modelgate.evaluate")

#: The metrics the report draws a forest plot of when the policy judges none: those of
#: these the task's segments report (binary: roc_auc, accuracy; multiclass: accuracy,
#: macro_f1; regression: rmse, r2).
REPORTED_METRICS = ("roc_auc", "accuracy", "macro_f1", "rmse", "r2")

#: Most distinct values a segment column may hold. Every value is a slice reported, stored
#: and drawn one by one: an id or a raw measurement given as a segment column makes thousands
#: of one-row slices, none judged, at many times the run's cost (``bench/RESULTS.md``,
#: "Acceptance on unseen data, issues #38 and #43").
MAX_SEGMENT_VALUES = 1000


class SegmentColumnRefused(InputRefused):
    """A segment column with more distinct values than :data:`MAX_SEGMENT_VALUES`: refused by
    the ``prepare`` step before any scoring
    (:mod:`~modelgate.pipelines.evaluation.segment_values`), and again here while scoring, as
    a guard (the files can change between the two)."""


def too_many_values(name: str, counted: str) -> str:
    """The refusal of segment column ``name`` that has ``counted`` (``"1,001 distinct values"``).

    >>> too_many_values("user_id", "1,001 distinct values")[:71]
    "segment column 'user_id' has 1,001 distinct values, more than the 1,000"
    """
    return (f"segment column {name!r} has {counted}, more than the {MAX_SEGMENT_VALUES:,} a "
            "segment column may have: segment by a column of categories (a numeric column "
            "binned first, e.g. into deciles), not an id or a raw measurement")


def _refuse_many_values(name: str, n_values: int) -> None:
    if n_values > MAX_SEGMENT_VALUES:
        raise SegmentColumnRefused(too_many_values(name, f"{n_values:,} distinct values"))


def _encoded_columns(table: pa.Table, names: Sequence[str]) -> dict[str, Any]:
    """Each segment column's labels and codes, refusing one with too many values."""
    encoded = {}
    for name in names:
        encoded[name] = _segment_codes(table.column(name))
        _refuse_many_values(name, len(encoded[name][0]))
    return encoded


@dataclass(frozen=True, slots=True)
class SegmentParts:
    """One partition's (or several merged) segment statistics and slice counts."""

    segments: tuple[SegmentStatistics, ...]
    slices: tuple[SliceCounts, ...]


@dataclass(frozen=True, slots=True)
class SegmentsResult:
    """The run's segments evaluated, and the weakest slices found (None: no search)."""

    report: SegmentReport
    weakest: WeakSlices | None


def columns_of(section: SegmentPolicy | None) -> tuple[str, ...]:
    """The columns a run's scoring must keep for its segments (pairs name columns listed)."""
    if section is None:
        return ()
    return tuple(dict.fromkeys([*section.columns, *(c for p in section.pairs for c in p)]))


def collect_batch(table: pa.Table, y: Any, score: Any, threshold: float | None,
                  section: SegmentPolicy | None) -> SegmentParts | None:
    """One batch of scored rows summarised per segment and counted per slice."""
    # the cores are imported where they compute (here and below): the gate and store tasks load this module
    from modelgate.evaluation import collect_segments, count_slices

    names = columns_of(section)
    if section is None or not names or threshold is None:
        return None
    encoded = _encoded_columns(table, names)
    singles = {c: encoded[c] for c in section.columns}
    return SegmentParts(collect_segments(y, score, threshold=threshold, columns=singles,
                                         pairs=section.pairs),
                        count_slices(y, score, threshold=threshold, columns=encoded, pairs=True))


def _segment_codes(column: pa.ChunkedArray) -> tuple[tuple[str, ...], Any]:
    """A segment column's labels and per-row codes, as ``encode_groups`` gives them: a string
    column through its arrow dictionary and an integer column without nulls as integers, not
    one Python object per row (a third of collecting at a million rows)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from modelgate.fairness.disaggregate import encode_groups, encode_groups_from_codes

    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        encoded = pc.dictionary_encode(column.combine_chunks())  # the rows' own values only
        return encode_groups_from_codes(encoded.dictionary.to_numpy(zero_copy_only=False),
                                        encoded.indices.fill_null(-1).to_numpy())
    if pa.types.is_integer(column.type) and column.null_count == 0:
        return encode_groups(column.to_numpy())
    return encode_groups(column.to_pandas().to_numpy(dtype=object))


def merge_parts(parts: Sequence[SegmentParts | None]) -> SegmentParts | None:
    """The parts added up (None when no part has segments)."""
    from modelgate.evaluation import merge_segments, merge_slice_counts

    present = [p for p in parts if p is not None]
    if not present:
        return None
    return SegmentParts(merge_segments([p.segments for p in present]),
                        merge_slice_counts([p.slices for p in present]))


def _key(ref: RunRef) -> str:
    return f"{ref.prefix()}/segments.pkl"


def compute_segments(ctx: Context, ref: RunRef, merged: SegmentParts | None,
                     section: SegmentPolicy | None, *, n_bootstrap: int, seed: int) -> str | None:
    """Evaluate every segment and search the weakest slices; pickled beside the metrics."""
    from modelgate.evaluation import DEFAULT_MIN_ROWS, evaluate_segments, search_slices

    if merged is None or section is None:
        return None
    for merged_column in merged.segments:  # partitions' values add up past the limit too
        if len(merged_column.columns) == 1:
            _refuse_many_values(merged_column.columns[0], len(merged_column.values))
    min_rows = section.min_rows or DEFAULT_MIN_ROWS
    report = evaluate_segments(merged.segments, min_rows=min_rows, n_bootstrap=n_bootstrap,
                               seed=seed, correction=section.correction)
    weakest = None
    if merged.slices:
        try:
            weakest = search_slices(merged.slices, min_rows=min_rows,
                                    correction=section.correction, level=section.level)
        except ValueError as exc:  # more single-column slices than the search takes
            log.warning("weakest-slice search skipped: %s", exc)
    log.info("segments: %d segment(s) of %s, %d judged; %s", len(report.segments),
             ", ".join(" x ".join(s.columns) for s in merged.segments),
             sum(s.judged for s in report.segments),
             "no weakest-slice search" if weakest is None else
             f"weakest-slice search: {len(weakest.slices)} slice(s) of {weakest.candidates} found")
    return put_pickle(ctx, _key(ref), SegmentsResult(report, weakest))


def compute_task_segments(ctx: Context, ref: RunRef, section: SegmentPolicy | None,
                          manifest: Manifest, table: pa.Table, probabilities: Any,
                          partitions: Sequence[tuple[str, str, int, str]], work: Path, *,
                          n_bootstrap: int, seed: int) -> str | None:
    """A multiclass or regression run's segments from its scored rows; pickled beside the metrics.

    ``table`` holds the label (and, for regression, the ``prediction``) of every partition's
    scores in partition order, ``probabilities`` the multiclass candidate's ``[N, C]`` (first
    of the list); the segment columns are read from the same scores, in the same order.
    """
    from modelgate.evaluation import (
        DEFAULT_MIN_ROWS,
        evaluate_multiclass_segments,
        evaluate_regression_segments,
    )
    names = columns_of(section)
    if section is None or not names:
        return None
    segment_table = model_tasks.read_scores(ctx, partitions, names, work)
    # every column a pair names is encoded; only the policy's columns are segments of their own
    encoded = _encoded_columns(segment_table, names)
    singles = {c: encoded[c] for c in section.columns}
    options: dict[str, Any] = {"columns": singles, "pairs": section.pairs,
                               "min_rows": section.min_rows or DEFAULT_MIN_ROWS,
                               "n_bootstrap": n_bootstrap, "seed": seed,
                               "correction": section.correction}
    y = model_tasks.targets(table, manifest)
    if model_tasks.task_of(manifest) == model_tasks.MULTICLASS:
        report = evaluate_multiclass_segments(y, probabilities[0],
                                              classes=model_tasks.classes_of(manifest), **options)
    else:
        report = evaluate_regression_segments(y, table.column("prediction").to_numpy(), **options)
    log.info("segments: %d segment(s) of %s, %d judged; no weakest-slice search (binary only)",
             len(report.segments), ", ".join(dict.fromkeys(" x ".join(s.columns)
                                                          for s in report.segments)),
             sum(s.judged for s in report.segments))
    return put_pickle(ctx, _key(ref), SegmentsResult(report, None))


def load_segments(ctx: Context, ref: RunRef) -> SegmentsResult | None:
    """The run's segments result, or None when the run evaluated no segment."""
    key = _key(ref)
    return get_pickle(ctx, key) if ctx.store.exists(key) else None


def store_rows(result: SegmentsResult | None, section: SegmentPolicy | None) -> dict[str, Any]:
    """The ``segment_metrics`` and ``segment_gate_checks`` records of the run's rows."""
    from modelgate.evaluation import segment_verdicts

    if result is None:
        return {}
    verdicts = segment_verdicts(section, result.report) if section is not None else ()
    return {"segment_metrics": result.report.to_rows(),
            "segment_gate_checks": [v.to_record() for v in verdicts]}


def segments_json(result: SegmentsResult | None) -> dict[str, Any] | None:
    """The JSON result's ``segments`` key: one record per segment, and the family of tests."""
    if result is None:
        return None
    r = result.report
    return {"min_rows": r.min_rows, "correction": r.correction, "family": r.family,
            "confidence_level": r.confidence_level,
            "records": [s.to_record() for s in r.segments],
            "weakest_slices": None if result.weakest is None else result.weakest.to_record()}


def report_parts(result: SegmentsResult | None, section: SegmentPolicy | None) -> dict[str, Any]:
    """The report view's ``segments``, ``weakest_slices`` and ``weakest_slices_note``."""
    import math

    from modelgate.evaluation import segment_verdicts
    from modelgate.reports import SegmentRow, SegmentSection, WeakSliceRow

    if result is None:
        return {}
    verdicts = segment_verdicts(section, result.report) if section is not None else ()
    judged_metrics = [t.metric for t in section.thresholds] if section is not None else []
    reported = [m.name for m in result.report.segments[0].metrics] if result.report.segments else []
    shown = [m for m in dict.fromkeys(judged_metrics or REPORTED_METRICS) if m in reported]
    sections = []
    for metric in shown:
        worst: dict[str, str] = {}
        for v in verdicts:
            if v.metric == metric and v.verdict in ("breach", "inconclusive", "pass"):
                rank = {"breach": 2, "inconclusive": 1, "pass": 0}[v.verdict]
                if rank >= {"breach": 2, "inconclusive": 1, "pass": 0}.get(worst.get(v.segment, ""), -1):
                    worst[v.segment] = v.verdict
        rows = []
        for seg in result.report.segments:
            m = {x.name: x for x in seg.metrics}[metric]

            def shown_number(x: float, judged: bool = seg.judged) -> float | None:
                return x if judged else None
            rows.append(SegmentRow(seg.name, seg.n, m.value, m.ci_lower, m.ci_upper,
                                   shown_number(m.rest_value), shown_number(m.difference),
                                   shown_number(m.difference_ci_lower),
                                   shown_number(m.difference_ci_upper), shown_number(m.p_value),
                                   shown_number(m.q_value), worst.get(seg.name, ""),
                                   seg.reason or m.undefined_reason or ""))
        rows.sort(key=lambda r: (r.q_value is None or math.isnan(r.q_value),
                                 r.q_value if r.q_value is not None else 1.0, r.segment))
        higher = next(x.higher_is_better for x in result.report.segments[0].metrics
                      if x.name == metric) if result.report.segments else True
        sections.append(SegmentSection(metric, higher, tuple(rows), result.report.family))
    out: dict[str, Any] = {"segments": tuple(sections)}
    weak = result.weakest
    if weak is not None:
        out["weakest_slices"] = tuple(
            WeakSliceRow(s.name, s.metric, s.n, s.value, s.rest_value, s.difference,
                         s.difference_ci_lower, s.difference_ci_upper, s.q_value)
            for s in weak.slices)
        left = (f"; pairs not searched (over {weak.max_candidates:,} candidates): "
                + ", ".join(" x ".join(p) for p in weak.pairs_left_out)) if weak.pairs_left_out else ""
        out["weakest_slices_note"] = (
            f"{weak.candidates:,} candidate slices of at least {weak.min_rows:,} rows (the segment "
            f"columns and their pairs), {weak.tests:,} one-sided tests of accuracy, precision, "
            f"recall and F1 against the rest, {weak.correction.upper()} at {weak.level:g}{left}.")
    return out
