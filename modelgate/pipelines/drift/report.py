"""The drift pipeline's ``report`` step: the run's HTML report (:func:`render_report`).

Kept apart from :mod:`modelgate.pipelines.drift.feature_steps` (the other steps) to keep both readable; it
reads what the earlier steps stored: the per-feature results, the concept-drift, joint-drift and
estimation results, and the quarantined partitions. Data quality is shown first, then the
estimated performance, then the drift tables.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from modelgate.drift import NumericReference, summarise
from modelgate.pipelines.context import Context
from modelgate.pipelines.drift import estimation as drift_estimation
from modelgate.pipelines.drift import joint as drift_joint
from modelgate.pipelines.drift import segments as drift_segments
from modelgate.pipelines.drift import verdict as drift_verdict
from modelgate.pipelines.drift.feature_steps import DriftRef, collect_features, get_pickle, load_references
from modelgate.pipelines.drift.names import SCORE_FEATURE, shown_feature
from modelgate.pipelines.drift.realised import with_realised
from modelgate.pipelines.drift.sample import sample_path
from modelgate.pipelines.payloads import LiveSample
from modelgate.pipelines.report_keys import drift_report_key
from modelgate.reports import (
    ChangePointRow,
    DriftReportView,
    FeatureDriftRow,
    HistogramView,
    LabelledPerformance,
    QuarantineRow,
    render_drift_report,
)
from modelgate.store import drift_runs, estimation, models, monitors

TOP_HISTOGRAMS = 4


def view_verdict(verdict: str) -> str:
    return {"ok": "ok", "drift": "drift", "no_data": "warn", "insufficient_data": "warn"}[verdict]


def _histogram(ref_sketch: Any, values: Any) -> tuple[tuple[str, ...], tuple[float, ...], tuple[float, ...]]:
    if isinstance(ref_sketch, NumericReference):
        edges = ref_sketch.edges
        finite = values[np.isfinite(values)].astype(np.float64)
        # bin i is [edges[i], edges[i+1]) with open outer bins, as in the reference sketch
        index = np.searchsorted(edges[1:-1], finite, side="right")
        counts = np.bincount(index, minlength=len(edges) - 1)
        labels = tuple(f"[{a:.3g}, {b:.3g})" for a, b in zip(edges[:-1], edges[1:], strict=True))
        current = counts / max(counts.sum(), 1)
        return labels, tuple(map(float, ref_sketch.probabilities)), tuple(map(float, current))
    cats = list(ref_sketch.categories)
    ref_p = np.asarray(ref_sketch.counts, dtype=np.float64) / max(ref_sketch.n, 1)
    strs = np.array(["__missing__" if v is None else str(v) for v in values], dtype=object)
    cur = np.array([np.count_nonzero(strs == c) for c in cats], dtype=np.float64)
    return tuple(cats), tuple(map(float, ref_p)), tuple(map(float, cur / max(len(strs), 1)))


def _labelled_performance(ctx: Context, ref: DriftRef, concept: Any) -> Any:
    """The report's performance on the newly labelled rows: the mean of ADWIN's error stream."""
    if not concept.rows_labelled:
        return None
    regression = models.get_by_id(ctx.db_url, ref.model_version_id).manifest.task == "regression"
    name = ("mean of min(|prediction - label| / std of reference predictions, 1)" if regression
            else "error rate (prediction differs from label)")
    error = min(1.0, max(0.0, getattr(concept, "error_sum", 0.0) / concept.rows_labelled))
    return LabelledPerformance(concept.rows_labelled, error, name, classification=not regression)


def render_report(ctx: Context, ref: DriftRef, sample: LiveSample, features: list[str]) -> str:
    summary = summarise(collect_features(ctx, ref, features))
    concept = get_pickle(ctx, f"{ref.prefix()}/concept.pkl")  # a concept.ConceptResult
    rows = tuple(FeatureDriftRow(
        shown_feature(r["feature"]), "model output" if r["feature"] == SCORE_FEATURE else r["kind"],
        r["wasserstein"], r["wasserstein_normalised"],
        r["js_divergence_base2"] or 0.0, r["threshold"] or 0.0, view_verdict(r["verdict"]),
        r["n_current"], r["n_missing_current"], tuple(r["unseen_categories"]),
        "js" if r["statistic_name"] == "js_divergence" else "wasserstein_normalised")
        for r in (f.to_record() for f in summary.features))
    histograms = []
    if sample["key"] is not None:
        refs = load_references(ctx, ref)
        table = pq.read_table(sample_path(ctx, ref, sample["key"]))
        for f in [f for f in summary.features if f.verdict != "no_data"][:TOP_HISTOGRAMS]:
            values = table.column(f.feature).to_numpy(zero_copy_only=False)
            histograms.append(HistogramView(shown_feature(f.feature), *_histogram(refs[f.feature], values)))
    joint = drift_joint.load_result(ctx, ref.prefix())
    joint_rows, attribution_shares = drift_joint.report_rows(joint)
    estimated = drift_estimation.load_result(ctx, ref.prefix())
    quality_rows, estimate_rows = drift_estimation.report_rows(estimated)
    estimate_rows = with_realised(estimate_rows, getattr(concept, "realised", ()), ref.start())
    segment_drift, segment_estimates, segment_family = drift_segments.report_section(ctx, ref.drift_run_id)
    joint_breaches = (drift_joint.breaches(joint) + estimated.breaches()
                      + drift_segments.breach_lines(ctx, ref.drift_run_id))
    quarantined = monitors.quarantined_by_run(ctx.db_url, ref.drift_run_id)
    judged = drift_verdict.interval_verdict(sample["rows"], summary.features, drifting=False)[0] == "ok"
    evidence = _evidence_headline(ctx, ref, sample, summary.features)
    verdict = ("drift" if judged and (summary.n_breached or joint_breaches)
               else ("ok" if judged and not quarantined
                     and not drift_runs.set_aside(ctx.db_url, ref.drift_run_id)[0] else "warn"))
    text = (drift_estimation.headline(estimated)
            + f"{summary.n_breached} of {len(summary.features)} feature(s) breached"
            + (f": {', '.join(map(shown_feature, summary.breached))}" if summary.breached else "")
            + (f"; no data for {', '.join(map(shown_feature, summary.no_data))}" if summary.no_data else "")
            + (f"; also breached: {'; '.join(joint_breaches)}" if joint_breaches else "")
            + f". ADWIN: {len(concept.change_points)} change point(s) over "
              f"{concept.rows_labelled} newly labelled row(s).")
    view = DriftReportView(
        model_name=ref.model_name, model_version=ref.version, interval_start=ref.interval_start,
        interval_end=ref.interval_end, run_id=str(ref.drift_run_id), rows_sampled=sample["rows"],
        features=rows, histograms=tuple(histograms), error_rate=concept.timeline,
        change_points=tuple(ChangePointRow(c["stream_position"], _event_time_text(c["event_time"]),
                                           c["error_rate_before"], c["error_rate_after"])
                            for c in concept.change_points),
        summary=(_quarantine_headline(quarantined) + evidence
                 + (text if sample["rows"] else "No live rows in this interval. " + text)),
        verdict=verdict, joint=joint_rows, attribution_shares=attribution_shares,
        labelled=_labelled_performance(ctx, ref, concept),
        quarantined=tuple(QuarantineRow(q.source, q.partition, q.reason) for q in quarantined),
        quality=quality_rows, estimates=estimate_rows, segment_drift=segment_drift,
        segment_estimates=segment_estimates, segment_family=segment_family)
    run = drift_runs.get_drift_run(ctx.db_url, ref.drift_run_id)  # this attempt's row
    key = drift_report_key(ref.model_name, ref.version, run_id=run.drift_run_id, attempt=run.attempt,
                           interval_start=run.interval_start)
    ctx.store.put_bytes(key, render_drift_report(view).encode(), content_type="text/html")
    return key


def _evidence_headline(ctx: Context, ref: DriftRef, sample: LiveSample, features: Any) -> str:
    """Too few values, rows set aside unscored, no estimator (:func:`.verdict.headline`)."""
    stored = estimation.get_reference(ctx.db_url, ref.model_version_id)
    return drift_verdict.headline(sample["rows"], features,
                                  set_aside=drift_runs.set_aside(ctx.db_url, ref.drift_run_id)[1],
                                  estimator_skipped=None if stored is None else stored.skipped_reason)


def _quarantine_headline(quarantined: list[monitors.Quarantine]) -> str:
    """The report's first words when the run left partitions out (empty when none)."""
    if not quarantined:
        return ""
    return (f"Degraded: {len(quarantined)} partition(s) quarantined and left out ("
            + ", ".join(f"{q.source} {q.partition}" for q in quarantined) + "). ")


def _event_time_text(when: dt.datetime | None) -> str:
    """A change point's event time for the report, to the second in UTC; said to be unknown,
    not left blank, when the live data has no ``event_time`` column."""
    if when is None:
        return "unknown (the live data has no event_time column)"
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
