"""Drift and estimated performance per segment of one drift run's attempt in the results store
(migrations 0041, 0042)."""

from __future__ import annotations

from typing import Any

from psycopg2.extras import execute_batch

from modelgate.store.db import transaction

_COLUMNS = ("segment_column", "segment_value", "feature", "kind", "test", "n_reference", "n_current",
            "statistic", "p_value", "q_value", "status")


def put_segment_drift(url: str, drift_run_id: int, attempt: int, family: Any) -> int:
    """Write every row of ``family`` (a :class:`modelgate.drift.SegmentDriftFamily`) under the
    attempt, in one transaction; returns the rows written. The rows are never changed: a second
    write of the same attempt fails on the primary key."""
    rows = [(drift_run_id, attempt, *(getattr(r, c) for c in _COLUMNS), family.correction,
             family.level, family.min_rows, family.family_size) for r in family.rows]
    if not rows:
        return 0
    with transaction(url) as cur:  # pages of rows per round trip, as the evaluation's segments
        execute_batch(
            cur,
            f"""INSERT INTO segment_drift (drift_run_id, attempt, {", ".join(_COLUMNS)}, correction,
                                           level, min_rows, family_size)
                VALUES ({", ".join(["%s"] * (len(_COLUMNS) + 6))})""", rows, page_size=500)
    return len(rows)


def flagged(url: str, drift_run_id: int, attempt: int) -> list[dict[str, Any]]:
    """The attempt's drifted (feature, segment) rows, smallest q-value first."""
    with transaction(url) as cur:
        cur.execute(
            f"""SELECT {", ".join(_COLUMNS)} FROM segment_drift
                WHERE drift_run_id = %s AND attempt = %s AND status = 'drift'
                ORDER BY q_value, p_value, segment_column, segment_value, feature""",
            (drift_run_id, attempt))
        return [dict(zip(_COLUMNS, r, strict=True)) for r in cur.fetchall()]


_ESTIMATE_COLUMNS = ("segment_column", "segment_value", "metric", "method", "n_rows", "estimate",
                     "standard_error", "lower_bound", "upper_bound", "confidence", "reference_value",
                     "max_worsening", "p_value", "q_value", "status", "reason")


def put_segment_estimates(url: str, drift_run_id: int, attempt: int, monitoring: Any, *, method: str,
                          confidence: float) -> int:
    """Write every estimate of ``monitoring`` (a :class:`modelgate.drift.SegmentMonitoring`) under
    the attempt, in one transaction; returns the rows written (never changed: a second write of
    the same attempt fails on the primary key)."""
    rows = []
    for e in monitoring.estimates:
        record = {**e.to_record(), "method": method, "confidence": confidence,
                  "lower_bound": e.lower, "upper_bound": e.upper}
        rows.append((drift_run_id, attempt, *(record[c] for c in _ESTIMATE_COLUMNS),
                     monitoring.correction, monitoring.level, monitoring.family_size))
    if not rows:
        return 0
    with transaction(url) as cur:
        execute_batch(
            cur,
            f"""INSERT INTO segment_estimate (drift_run_id, attempt, {", ".join(_ESTIMATE_COLUMNS)},
                                              correction, level, family_size)
                VALUES ({", ".join(["%s"] * (len(_ESTIMATE_COLUMNS) + 5))})""", rows, page_size=500)
    return len(rows)


def breached_estimates(url: str, drift_run_id: int, attempt: int) -> list[dict[str, Any]]:
    """The attempt's breached (segment, metric) estimate checks, smallest q-value first."""
    with transaction(url) as cur:
        cur.execute(
            f"""SELECT {", ".join(_ESTIMATE_COLUMNS)}, family_size FROM segment_estimate
                WHERE drift_run_id = %s AND attempt = %s AND status = 'breach'
                ORDER BY q_value, p_value, segment_column, segment_value, metric""",
            (drift_run_id, attempt))
        return [dict(zip((*_ESTIMATE_COLUMNS, "family_size"), r, strict=True)) for r in cur.fetchall()]


def attempt_rows(url: str, drift_run_id: int, attempt: int
                 ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every segment drift row and every segment estimate row of the attempt (with the family's
    size, correction and level), for the report."""
    with transaction(url) as cur:
        cur.execute(
            f"""SELECT {", ".join(_COLUMNS)}, family_size, correction, level FROM segment_drift
                WHERE drift_run_id = %s AND attempt = %s
                ORDER BY segment_column, segment_value, feature""", (drift_run_id, attempt))
        drift = [dict(zip((*_COLUMNS, "family_size", "correction", "level"), r, strict=True))
                 for r in cur.fetchall()]
        cur.execute(
            f"""SELECT {", ".join(_ESTIMATE_COLUMNS)}, family_size, correction, level FROM segment_estimate
                WHERE drift_run_id = %s AND attempt = %s
                ORDER BY segment_column, segment_value, metric""", (drift_run_id, attempt))
        estimates = [dict(zip((*_ESTIMATE_COLUMNS, "family_size", "correction", "level"), r, strict=True))
                     for r in cur.fetchall()]
    return drift, estimates
