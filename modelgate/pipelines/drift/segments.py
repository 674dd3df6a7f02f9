"""Drift per segment in the drift run (issue #43 item 4): every feature tested within every value
of the segment columns the monitoring config names, one false-discovery-controlled family.

The config's ``thresholds`` take ``"segments": ["region", ...]`` (the segment columns, features of
the model) or ``"segments": {"columns": [...], "min_rows": 30, "level": 0.05, "correction": "bh"}``.
The step reads the interval's scored sample and the reference dataset's rows (``reference`` of the
monitoring config), tests with :func:`modelgate.drift.segment_drift`, estimates each segment's
performance from its scores when the model version has an estimator
(:mod:`modelgate.pipelines.drift.segment_estimates`, judged against ``thresholds["performance"]``),
adjusts the drift tests and the estimate checks as one family
(:func:`modelgate.drift.segment_family`) and writes one ``segment_drift`` row per (segment,
feature) and one ``segment_estimate`` row per (segment, metric) under the run's attempt. A flagged
(feature, segment) or a breached (segment, metric) makes the interval ``drift``, like a breached
feature.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import pyarrow.parquet as pq

from modelgate.drift import segment_drift as drift_by_segment
from modelgate.drift import segment_family
from modelgate.evaluation import adjusted_p_values
from modelgate.onnx.manifest import Manifest
from modelgate.pipelines.context import Context, fetch_dataset
from modelgate.pipelines.drift.estimation import CONFIDENCE, ERROR_METRICS
from modelgate.pipelines.drift.names import shown_feature
from modelgate.pipelines.drift.sample import sample_path
from modelgate.pipelines.drift.segment_estimates import interval_estimates
from modelgate.pipelines.payloads import LiveSample
from modelgate.reports import SegmentDriftRow, SegmentEstimateRow
from modelgate.store import drift_runs, models, monitors
from modelgate.store import segment_drift as segment_store

log = logging.getLogger("modelgate.drift")

_KEYS = ("columns", "min_rows", "level", "correction")


@dataclass(frozen=True, slots=True)
class SegmentSpec:
    """The segment columns and how their family of tests is judged."""

    columns: tuple[str, ...]
    min_rows: int = 30
    level: float = 0.05
    correction: str = "bh"


def split_thresholds(spec: dict[str, Any] | None) -> tuple[dict[str, Any], SegmentSpec | None]:
    """The other thresholds and the ``segments`` ones, checked.

    >>> split_thresholds({"relative": 2.0, "segments": ["region"]})
    ({'relative': 2.0}, SegmentSpec(columns=('region',), min_rows=30, level=0.05, correction='bh'))
    >>> split_thresholds({"segments": {"columns": ["a"], "level": 0.1}})[1].level
    0.1
    >>> split_thresholds({"segments": {"cols": ["a"]}})
    Traceback (most recent call last):
    ...
    ValueError: drift thresholds['segments']: unknown key(s) ['cols']; expected ['columns', ...]
    """

    rest = dict(spec or {})
    part = rest.pop("segments", None)
    if not part:
        return rest, None
    if isinstance(part, list):
        part = {"columns": part}
    if not isinstance(part, dict):
        raise ValueError(f"drift thresholds['segments'] must be a list of columns or a mapping; got {part!r}")
    unknown = sorted(set(part) - set(_KEYS))
    if unknown:
        raise ValueError(f"drift thresholds['segments']: unknown key(s) {unknown}; expected {list(_KEYS)}")
    columns = part.get("columns")
    if not isinstance(columns, list) or not columns or not all(isinstance(c, str) and c for c in columns):
        raise ValueError("drift thresholds['segments']['columns'] must be a non-empty list of column "
                         f"names; got {columns!r}")
    min_rows, level = part.get("min_rows", 30), part.get("level", 0.05)
    if isinstance(min_rows, bool) or not isinstance(min_rows, int) or min_rows < 2:
        raise ValueError("drift thresholds['segments']['min_rows'] must be an integer >= 2; "
                         f"got {min_rows!r}")
    if isinstance(level, bool) or not isinstance(level, int | float) or not 0 < level < 1:
        raise ValueError(f"drift thresholds['segments']['level'] must lie in (0, 1); got {level!r}")
    correction = part.get("correction", "bh")
    try:  # the shared core's check of the name
        adjusted_p_values([0.5], correction)
    except ValueError as exc:
        raise ValueError(f"drift thresholds['segments']: {exc}") from None
    return rest, SegmentSpec(tuple(columns), min_rows, float(level), correction)


def check_segment_columns(spec: SegmentSpec | None, manifest: Manifest, version: str, *, where: str) -> None:
    """Refuse segment columns the model version does not have as features (the live sample keeps
    only the features)."""
    if spec is None:
        return
    known = [f.name for f in manifest.features]
    unknown = [c for c in spec.columns if c not in known]
    if unknown:
        raise ValueError(f"{where} segment column(s) {unknown} are not features of v{version} "
                         f"(features: {known})")


def segment_drift(ctx: Context, ref: Any, sample: LiveSample, thresholds: dict[str, Any] | None,
                  reference_uri: str) -> int:
    """Test every feature within every segment and store the rows; the number flagged (0, with
    nothing stored, when the config names no segment or the interval has no sample)."""

    _, spec = split_thresholds(thresholds)
    if spec is None or sample["key"] is None:
        return 0
    row = models.get_by_id(ctx.db_url, ref.model_version_id)
    check_segment_columns(spec, row.manifest, row.version, where="drift thresholds['segments']:")
    uri = reference_uri or getattr(monitors.get(ctx.db_url, ref.model_name), "reference_uri", "")
    if not uri:
        raise ValueError(f"segment drift of {ref.model_name} needs the reference dataset: the monitoring "
                         "config names none (`modelgate monitor set --reference URI`)")
    kinds = {f.name: f.kind for f in row.manifest.features}
    features = [f for f in kinds if f not in spec.columns]
    columns = [*spec.columns, *features]
    reference_file = fetch_dataset(ctx, uri, ctx.scratch("segments", ref.model_name, ref.version))
    reference = pq.read_table(reference_file, columns=columns).to_pydict()
    current = pq.read_table(sample_path(ctx, ref, sample["key"]), columns=columns).to_pydict()
    family = drift_by_segment(reference, current, list(spec.columns), features,
                              categorical=[f for f in features if kinds[f] == "categorical"],
                              min_rows=spec.min_rows, level=spec.level, correction=spec.correction)
    estimates, method = interval_estimates(ctx, ref, sample["key"], spec.columns, thresholds)
    judged = segment_family(estimates, family, level=spec.level, correction=spec.correction,
                            lower_is_better=ERROR_METRICS)
    assert judged.drift is not None
    attempt = drift_runs.get_drift_run(ctx.db_url, ref.drift_run_id).attempt
    segment_store.put_segment_drift(ctx.db_url, ref.drift_run_id, attempt, judged.drift)
    if method is not None:
        segment_store.put_segment_estimates(ctx.db_url, ref.drift_run_id, attempt, judged, method=method,
                                            confidence=CONFIDENCE)
    for hit in judged.drift.flagged:
        log.warning("drift run %d: %s drifted in segment %s=%s (%s, q = %.2g of %d tests)",
                    ref.drift_run_id, hit.feature, hit.segment_column, hit.segment_value, hit.test,
                    hit.q_value, judged.family_size)
    for e in judged.breaches:
        log.warning("drift run %d: estimated %s in segment %s=%s breached (q = %.2g of %d tests)",
                    ref.drift_run_id, e.metric, e.segment_column, e.segment_value, e.q_value,
                    judged.family_size)
    return len(judged.drift.flagged) + len(judged.breaches)


def breach_lines(ctx: Context, drift_run_id: int) -> list[str]:
    """One line per flagged (feature, segment) and breached (segment, metric) estimate of the
    run's latest attempt, smallest q first."""
    attempt = drift_runs.get_drift_run(ctx.db_url, drift_run_id).attempt
    return ([f"{r['feature']} in segment {r['segment_column']}={r['segment_value']}: {r['test']} "
             f"p = {r['p_value']:.2g}, q = {r['q_value']:.2g}"
             for r in segment_store.flagged(ctx.db_url, drift_run_id, attempt)]
            + [f"estimated {r['metric']} in segment {r['segment_column']}={r['segment_value']} = "
               f"{r['estimate']:.4f} (interval [{r['lower_bound']:.4f}, {r['upper_bound']:.4f}]) vs "
               f"reference {r['reference_value']:.4f}: worse by more than {r['max_worsening']:.4f}, "
               f"p = {r['p_value']:.2g}, q = {r['q_value']:.2g} of {r['family_size']} segment tests"
               for r in segment_store.breached_estimates(ctx.db_url, drift_run_id, attempt)])


def _worsening(r: dict[str, Any]) -> float:
    """How far the estimate is below its reference (above, for an error metric); unknown last."""
    if r["estimate"] is None or r["reference_value"] is None:
        return -math.inf
    gap = r["estimate"] - r["reference_value"]
    return gap if r["metric"] in ERROR_METRICS else -gap


def report_rows(drift: list[dict[str, Any]], estimates: list[dict[str, Any]]
                ) -> tuple[tuple[SegmentDriftRow, ...], tuple[SegmentEstimateRow, ...], str]:
    """The report's segment rows (:func:`modelgate.store.segment_drift.attempt_rows`' dicts):
    drift flagged first (smallest q), estimates breached first then weakest first (largest
    worsening against the reference), and one sentence on the family.

    >>> est = [{"segment_column": "r", "segment_value": v, "metric": "accuracy", "n_rows": 90,
    ...         "estimate": e, "lower_bound": e - 0.1, "upper_bound": e + 0.1, "reference_value": 0.9,
    ...         "max_worsening": None, "q_value": None, "status": "not_judged",
    ...         "reason": "no limit configured for this metric", "family_size": 0,
    ...         "correction": "bh", "level": 0.05} for v, e in (("a", 0.85), ("b", 0.7))]
    >>> [r.segment for r in report_rows([], est)[1]]
    ['r=b', 'r=a']
    """
    verdict = {"drift": "drift", "no_drift": "ok", "insufficient_data": "warn",
               "breach": "breach", "ok": "ok", "not_judged": "warn"}
    drift_rows = tuple(SegmentDriftRow(
        f"{r['segment_column']}={r['segment_value']}", shown_feature(r["feature"]), r["test"],
        r["n_reference"], r["n_current"], r["statistic"], r["p_value"], r["q_value"], verdict[r["status"]])
        for r in sorted(drift, key=lambda r: (r["q_value"] is None, r["q_value"] or 0.0,
                                              r["p_value"] or 0.0)))
    estimate_rows = tuple(SegmentEstimateRow(
        f"{r['segment_column']}={r['segment_value']}", r["metric"], r["n_rows"], r["estimate"],
        r["lower_bound"], r["upper_bound"], r["reference_value"], r["max_worsening"], r["q_value"],
        verdict[r["status"]], r["reason"] or "")
        for r in sorted(estimates, key=lambda r: (r["status"] != "breach", -_worsening(r))))
    if not drift and not estimates:
        return drift_rows, estimate_rows, ""
    first = (drift or estimates)[0]
    name = {"bh": "Benjamini-Hochberg", "by": "Benjamini-Yekutieli", "holm": "Holm"}[first["correction"]]
    n_estimates = sum(1 for r in estimates if r["q_value"] is not None)
    text = (f"One family of {first['family_size']} tests ({first['family_size'] - n_estimates} drift "
            f"test(s) of a feature within a segment, {n_estimates} check(s) of a segment's estimated "
            f"performance against its limit), adjusted by {name}; flagged when q <= {first['level']:g}. "
            "Segments too small to test are shown and not judged.")
    return drift_rows, estimate_rows, text


def report_section(ctx: Context, drift_run_id: int
                   ) -> tuple[tuple[SegmentDriftRow, ...], tuple[SegmentEstimateRow, ...], str]:
    """The report's segment rows of the run's latest attempt (:func:`report_rows`)."""
    attempt = drift_runs.get_drift_run(ctx.db_url, drift_run_id).attempt
    return report_rows(*segment_store.attempt_rows(ctx.db_url, drift_run_id, attempt))
