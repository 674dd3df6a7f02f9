"""Estimated performance and data quality in the results store (migration 0021): the
estimator and quality schema of each model version (append-only), each drift run's estimates
and quality counts, and each interval's realised metrics once its labels arrived."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from modelgate.store.db import transaction


@dataclass(frozen=True, slots=True)
class EstimationReferenceRow:
    object_key: str
    method: str | None
    skipped_reason: str | None
    reference_metrics: dict[str, float | None]


def get_reference(url: str, model_version_id: int) -> EstimationReferenceRow | None:
    """The model version's estimation reference, or None when none was built."""
    with transaction(url) as cur:
        cur.execute("""SELECT object_key, method, skipped_reason FROM estimation_reference
                       WHERE model_version_id = %s""", (model_version_id,))
        head = cur.fetchone()
        cur.execute("""SELECT metric, realised FROM estimation_reference_metric
                       WHERE model_version_id = %s ORDER BY metric""", (model_version_id,))
        metrics = {str(m): (None if v is None else float(v)) for m, v in cur.fetchall()}
    if head is None:
        return None
    return EstimationReferenceRow(str(head[0]), head[1], head[2], metrics)


def put_reference(url: str, *, model_version_id: int, object_key: str, object_uri: str,
                  method: str | None, skipped_reason: str | None, n_rows: int,
                  schema: Sequence[Mapping[str, Any]],
                  reference_metrics: Mapping[str, float | None]) -> bool:
    """Record the reference once, with its metrics and schema rows, in one transaction; a
    second writer of the same version keeps the first (returns False)."""
    with transaction(url) as cur:
        cur.execute(
            """INSERT INTO estimation_reference (model_version_id, object_key, object_uri, method,
                   skipped_reason, n_rows, n_features)
               VALUES (%s, %s, %s, %s, %s, %s, %s)
               ON CONFLICT ON CONSTRAINT estimation_reference_pkey DO NOTHING RETURNING 1""",
            (model_version_id, object_key, object_uri, method, skipped_reason, n_rows, len(schema)),
        )
        if cur.fetchone() is None:
            return False
        cur.executemany(
            """INSERT INTO estimation_reference_metric (model_version_id, metric, realised)
               VALUES (%s, %s, %s)""",
            [(model_version_id, m, v) for m, v in reference_metrics.items()],
        )
        cur.executemany(
            """INSERT INTO quality_schema_feature (model_version_id, feature, kind, n_rows,
                   missing_rate, minimum, maximum, low, high, integral, domain_size)
               VALUES (%(model_version_id)s, %(feature)s, %(kind)s, %(n)s, %(missing_rate)s,
                   %(minimum)s, %(maximum)s, %(low)s, %(high)s, %(integral)s, %(domain_size)s)""",
            [{"model_version_id": model_version_id, **s} for s in schema],
        )
    return True


def clear_run(cur: Any, run_id: int) -> None:
    """Delete a run's estimates and quality rows (re-run, failure), inside ``cur``'s transaction."""
    cur.execute("DELETE FROM performance_estimate WHERE drift_run_id = %s", (run_id,))
    cur.execute("DELETE FROM quality_check WHERE drift_run_id = %s", (run_id,))


_ESTIMATE_INSERT = """
INSERT INTO performance_estimate (drift_run_id, metric, method, estimate, standard_error,
    lower_bound, upper_bound, confidence, n_rows, reference_value, max_worsening, verdict,
    undefined_reason)
VALUES (%(drift_run_id)s, %(metric)s, %(method)s, %(estimate)s, %(standard_error)s, %(lower)s,
    %(upper)s, %(confidence)s, %(n_rows)s, %(reference_value)s, %(max_worsening)s, %(verdict)s,
    %(undefined_reason)s)"""

_QUALITY_INSERT = """
INSERT INTO quality_check (drift_run_id, feature, kind, n_rows, n_missing, missing_rate,
    reference_missing_rate, n_type_mismatch, n_out_of_range, n_new_category, n_new_values,
    domain_checked, column_present, verdict, reasons)
VALUES (%(drift_run_id)s, %(feature)s, %(kind)s, %(n)s, %(n_missing)s, %(missing_rate)s,
    %(reference_missing_rate)s, %(n_type_mismatch)s, %(n_out_of_range)s, %(n_new_category)s,
    %(n_new_values)s, %(domain_checked)s, %(column_present)s, %(verdict)s, %(reasons)s)"""


def write_run(cur: Any, run_id: int, estimates: Sequence[Mapping[str, Any]],
              quality: Sequence[Mapping[str, Any]]) -> None:
    """Write a run's estimate rows and quality rows inside ``cur``'s transaction (replacing
    an earlier try's)."""
    clear_run(cur, run_id)
    if estimates:
        cur.executemany(_ESTIMATE_INSERT, [{"drift_run_id": run_id, "undefined_reason": None, **e}
                                           for e in estimates])
    if quality:
        cur.executemany(_QUALITY_INSERT, [{"drift_run_id": run_id, **q} for q in quality])


def write_realised(cur: Any, run_id: int, model_version_id: int,
                   realised: Sequence[tuple[dt.datetime, dt.datetime, int, Mapping[str, float | None]]]
                   ) -> None:
    """Record each interval's realised metrics ``(start, end, labelled rows, {metric: value})``
    inside ``cur``'s transaction (the run's own retry writes the same values again)."""
    cur.executemany(
        """INSERT INTO realised_performance (model_version_id, interval_start, interval_end, metric,
               realised, n_labelled, drift_run_id)
           VALUES (%s, %s, %s, %s, %s, %s, %s)
           ON CONFLICT ON CONSTRAINT realised_performance_pkey DO UPDATE SET
               realised = EXCLUDED.realised, n_labelled = EXCLUDED.n_labelled,
               drift_run_id = EXCLUDED.drift_run_id""",
        [(model_version_id, start, end, metric, value, labelled, run_id)
         for start, end, labelled, values in realised for metric, value in values.items()],
    )
