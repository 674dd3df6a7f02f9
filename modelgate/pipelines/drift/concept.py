"""Concept drift: the labels that have arrived, joined to the scored live rows they belong
to, fed oldest interval first to the persisted ADWIN detector on the model's error stream
(:mod:`modelgate.drift.error_stream`).

Labels are checked as ``modelgate evaluate`` checks them (``model_labels``) before any
comparison; a labels partition that cannot be used is quarantined by this run and skipped,
and the other intervals are fed. What was fed is stored by the ``store`` step in one
transaction with the detector state, compare-and-swapped on the elements it had seen.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from modelgate.drift import AdwinDetector, bounded_absolute_errors, classification_errors
from modelgate.onnx.manifest import Manifest
from modelgate.pipelines.context import Context
from modelgate.pipelines.drift.estimation import realised_metrics, task_of
from modelgate.pipelines.drift.feature_steps import DriftRef, load_references, put_pickle, quarantine
from modelgate.pipelines.drift.names import SCORE_FEATURE
from modelgate.pipelines.drift.partitions import (
    LABEL,
    BadPartition,
    labels_frame,
    partition_dates,
    partition_files,
    partition_name,
)
from modelgate.pipelines.drift.usable import scored_rows
from modelgate.store import drift_runs, models

log = logging.getLogger("modelgate.drift")


@dataclass(frozen=True, slots=True)
class ConceptResult:
    #: ``ChangePoint.to_record()`` with the ``event_time`` of the element (None: the live data
    #: has no event time)
    change_points: tuple[dict[str, Any], ...]
    consumed: tuple[tuple[dt.datetime, dt.datetime, int], ...]  # (start, end, labelled rows)
    state: bytes | None
    seen_before: int
    seen_after: int
    rows_labelled: int
    timeline: tuple[tuple[int, float], ...]  # (stream position, rolling error rate)
    error_sum: float = 0.0  # sum of the error stream over the rows_labelled rows
    #: (start, end, labelled rows, {metric: realised value}) of each interval fed
    realised: tuple[tuple[dt.datetime, dt.datetime, int, dict[str, float | None]], ...] = ()


ROLLING_WINDOW = 200


def _labelled_errors(ctx: Context, ref: DriftRef, labels_uri: str, scores_key: str,
                     start: dt.datetime, manifest: Manifest) -> tuple[Any, Any, Any] | None:
    """Errors (prediction != label) of one scored interval in event-time order and its
    realised metrics, or None when its labels have not arrived yet.

    Raises
    ------
    BadPartition
        The interval's labels partition cannot be used (see :mod:`.evaluation.partitions`).
    """
    work = ctx.scratch("labels", ref.model_name, ref.version, start.isoformat())
    days = partition_dates(start, start + dt.timedelta(days=1))  # one, or none off midnight
    files = partition_files(ctx, labels_uri, days[0], work) if days else []
    if not files:
        return None
    day = days[0]
    id_column = manifest.id_column
    if not id_column:
        raise ValueError("labels are joined by the manifest's id_column, which is not set")
    scored_path = ctx.store.download(scores_key, work / "scored.parquet")
    labels = labels_frame(files, partition_name(day), labels_uri, manifest,
                          pq.read_schema(scored_path).field(id_column).type)
    scored = scored_rows(pq.read_table(scored_path).to_pandas())  # rows set aside have no score
    joined = scored.merge(labels, on=id_column, how="inner", validate="one_to_one")
    if "event_time" in joined.columns:
        joined = joined.sort_values(["event_time", id_column], kind="stable")
    errors = _error_stream(ctx, ref, manifest, joined[LABEL].to_numpy(),
                           joined["__prediction__"].to_numpy())
    times = joined["event_time"].to_numpy() if "event_time" in joined.columns else None
    realised = (realised_metrics(task_of(manifest), joined[LABEL].to_numpy(), joined)
                if len(joined) else None)
    return errors, times, realised


def _error_stream(ctx: Context, ref: DriftRef, manifest: Manifest, labels: Any,
                  predicted: Any) -> Any:
    """What ADWIN watches, per task (see :mod:`modelgate.drift.error_stream`), from labels
    already encoded by ``model_labels`` (0/1, class index, or value)."""
    if manifest.task == "regression":
        scale = load_references(ctx, ref)[SCORE_FEATURE].scale  # std of reference predictions
        return bounded_absolute_errors(labels.astype(np.float64), predicted, scale=scale)
    return classification_errors(labels, predicted)


def concept_drift(ctx: Context, ref: DriftRef, labels_uri: str, delta: float = 0.002) -> str:
    """Feed every newly labelled interval (oldest first) to the persisted ADWIN detector."""
    manifest = models.get_by_id(ctx.db_url, ref.model_version_id).manifest
    state, seen = drift_runs.load_detector(ctx.db_url, ref.model_version_id)
    detector = AdwinDetector.from_bytes(state) if state else AdwinDetector(delta=delta)
    points, consumed, timeline, labelled, error_sum, realised = [], [], [], 0, 0.0, []
    for start, end, scores_key in drift_runs.pending_label_intervals(
            ctx.db_url, ref.model_version_id, ref.end()):
        try:
            found = (_labelled_errors(ctx, ref, labels_uri, scores_key, start, manifest)
                     if labels_uri else None)
        except BadPartition as bad:
            quarantine(ctx, ref, bad, start, end)
            continue
        if found is None:
            continue
        errors, times, metrics = found
        if metrics is not None:
            realised.append((start, end, len(errors), metrics))
        first = detector.n_seen
        for cp in detector.update_many(errors):
            when = None if times is None else _as_datetime(times[cp.position - first])
            points.append({**cp.to_record(), "event_time": when})
        timeline += _rolling(errors, first)
        consumed.append((start, end, len(errors)))
        labelled += len(errors)
        error_sum += float(np.sum(errors))
    result = ConceptResult(tuple(points), tuple(consumed),
                           detector.to_bytes() if consumed else None, seen, detector.n_seen,
                           labelled, tuple(timeline), error_sum, tuple(realised))
    log.info("drift run %d: fed %d labelled rows from %d interval(s) to ADWIN, %d change point(s)",
             ref.drift_run_id, labelled, len(consumed), len(points))
    return put_pickle(ctx, f"{ref.prefix()}/concept.pkl", result)


def _as_datetime(value: Any) -> dt.datetime:
    return pd.Timestamp(value).to_pydatetime()


def _rolling(errors: Any, first: int) -> list[tuple[int, float]]:
    if len(errors) == 0:
        return []
    window = min(ROLLING_WINDOW, len(errors))
    cumulative = np.concatenate([[0.0], np.cumsum(errors)])
    ends = np.arange(window, len(errors) + 1)
    rates = (cumulative[ends] - cumulative[ends - window]) / window
    step = max(1, len(ends) // 200)
    return [(first + int(e) - 1, float(r)) for e, r in zip(ends[::step], rates[::step], strict=True)]
