"""Estimated performance per segment in the drift run's segment step (issue #43 item 4).

Each segment of the interval's scored sample (one value of a segment column the monitoring config
names) is estimated on its own rows by the model version's estimator, exactly as the interval is
(:func:`modelgate.pipelines.drift.estimation.estimate_rows`: the same evidence minimum, the same
limits from ``thresholds["performance"]`` and the same baseline, the reference's realised value).
:func:`modelgate.drift.segment_family` then judges the estimates and the segments' drift tests as
one family. Per-segment realised performance (once labels land) is not computed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq
from numpy.typing import NDArray

from modelgate.drift import segment_labels
from modelgate.pipelines import stored_pickles
from modelgate.pipelines.context import Context
from modelgate.pipelines.drift.estimation import EstimationReference, estimate_rows, split_thresholds
from modelgate.pipelines.drift.sample import sample_path
from modelgate.store import estimation


def estimate_by_segment(reference: EstimationReference, frame: pd.DataFrame,
                        segments: Mapping[str, NDArray[np.object_]], *, limits: Mapping[str, float],
                        baseline: Mapping[str, float | None],
                        evidence: Mapping[str, float] | None = None) -> list[dict[str, Any]]:
    """One record per (segment, metric) for :func:`modelgate.drift.segment_family`.

    Parameters
    ----------
    reference : EstimationReference
        The model version's estimator.
    frame : DataFrame
        The interval's scored rows (``__score__``, ``__proba_<k>__``, features).
    segments : mapping of column to ndarray of str or None
        Each segment column's labels (:func:`modelgate.drift.segment_labels`), aligned with
        ``frame``'s rows; a row whose label is None is in no segment of that column.
    limits, baseline : mapping
        Largest worsening per metric and the reference's realised values.
    evidence : mapping, optional
        The ``estimation`` thresholds (``min_rows``, ``min_expected_per_class``).

    Returns
    -------
    list of dict
        Segment columns in the given order, their values sorted, metrics in the task's order.
    """
    out = []
    for column, labels in segments.items():
        if len(labels) != len(frame):
            raise ValueError(f"segment column {column!r} has {len(labels)} labels for {len(frame)} rows")
        for value in sorted(set(labels.tolist()) - {None}):
            rows = frame[labels == value]
            for r in estimate_rows(reference, rows, dict(limits), dict(baseline),
                                   evidence=dict(evidence or {})):
                out.append({"segment_column": column, "segment_value": value, "metric": r["metric"],
                            "method": r["method"], "confidence": r["confidence"], "n_rows": r["n_rows"],
                            "estimate": r["estimate"], "standard_error": r["standard_error"],
                            "lower": r["lower"], "upper": r["upper"],
                            "reference_value": r["reference_value"], "max_worsening": r["max_worsening"],
                            "reason": r["undefined_reason"] if r["estimate"] is None else None})
    return out


def interval_estimates(ctx: Context, ref: Any, sample_key: str, columns: Sequence[str],
                       thresholds: dict[str, Any] | None) -> tuple[list[dict[str, Any]], str | None]:
    """The interval's per-segment estimate records and the estimation method; none (and None)
    when the model version has no estimator (no labelled reference)."""
    stored = estimation.get_reference(ctx.db_url, ref.model_version_id)
    if stored is None or stored.method is None:
        return [], None
    reference: EstimationReference = stored_pickles.loads(ctx.store.get_bytes(stored.object_key))
    if reference.estimator is None:
        return [], None
    table = pq.read_table(sample_path(ctx, ref, sample_key))
    if "__prediction__" in table.column_names:  # the rows that were scored
        table = table.filter(pc.is_valid(table["__prediction__"]))
    # labels from the arrow values, as the drift tests read them (pandas turns ints with
    # nulls into floats, which would name the segments differently)
    labels = {c: segment_labels(table.column(c).to_pylist(), c) for c in columns}
    _, limits = split_thresholds(thresholds)
    records = estimate_by_segment(reference, table.to_pandas(), labels, limits=limits["performance"],
                                  baseline=stored.reference_metrics, evidence=limits["estimation"])
    return records, reference.method
