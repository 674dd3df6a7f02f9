"""Drift per segment of one drift run's attempt in the results store (migration 0041)."""

from __future__ import annotations

from typing import Any

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
    with transaction(url) as cur:
        cur.executemany(
            f"""INSERT INTO segment_drift (drift_run_id, attempt, {", ".join(_COLUMNS)}, correction,
                                           level, min_rows, family_size)
                VALUES ({", ".join(["%s"] * (len(_COLUMNS) + 6))})""", rows)
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
