"""Read-only summaries of runs for the report index page, report headers and the demo."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal

from modelgate.store.db import transaction

#: A query the demo shows analysts (the documented views are in sql/README.md).
ANALYST_EXAMPLE_QUERY = "SELECT * FROM analytics.latest_gate_decision"

_LISTED_EVALUATIONS = """
SELECT r.evaluation_run_id, v.version, COALESCE(r.finished_at, r.started_at), r.status,
       EXISTS (SELECT 1 FROM gate_check g WHERE g.evaluation_run_id = r.evaluation_run_id
               AND g.verdict = 'fail' AND g.severity = 'warn'),
       r.report_key
FROM evaluation_run r JOIN model_version v USING (model_version_id)
WHERE v.model_name = %s AND r.report_key IS NOT NULL AND r.status IN ('passed', 'blocked')
"""

_LISTED_DRIFT_RUNS = """
SELECT r.drift_run_id, v.version, r.interval_start,
       CASE WHEN r.status = 'degraded' AND r.verdict = 'drift' THEN 'drift' ELSE r.status END,
       FALSE, r.report_key
FROM drift_run r JOIN model_version v USING (model_version_id)
WHERE v.model_name = %s AND r.report_key IS NOT NULL
  AND r.status IN ('ok', 'drift', 'no_data', 'degraded')
"""


@dataclass(frozen=True, slots=True)
class ListedRun:
    """A finished run with a report: ``when`` is an evaluation's finish time or a drift
    run's interval start; ``warned``: a passed evaluation had a failing warn-severity check."""

    kind: Literal["evaluation", "drift"]
    run_id: int
    version: str
    when: dt.datetime
    status: str
    warned: bool
    report_key: str


def listed_runs(url: str, model_name: str) -> list[ListedRun]:
    """The model's evaluation runs (passed or blocked) and drift runs (ok, drift, no_data, degraded)
    that have a report, evaluations first."""
    found: list[ListedRun] = []
    with transaction(url) as cur:
        for kind, sql in (("evaluation", _LISTED_EVALUATIONS), ("drift", _LISTED_DRIFT_RUNS)):
            cur.execute(sql, (model_name,))
            found.extend(ListedRun(kind, int(i), str(v), when, status, bool(warned), key)  # type: ignore[arg-type]
                         for i, v, when, status, warned, key in cur.fetchall())
    return found


@dataclass(frozen=True, slots=True)
class ProductionDrift:
    """The production version's drift flag and its latest drift run (None fields: no run yet)."""

    version: str
    is_drifting: bool
    status: str | None
    interval_start: dt.datetime | None
    interval_end: dt.datetime | None
    n_features_breached: int | None


def production_drift(url: str, model_name: str) -> ProductionDrift | None:
    """The model's production version and its latest drift run by interval end, or None
    when no version is in production."""
    with transaction(url) as cur:
        cur.execute(
            """SELECT mv.version, mv.is_drifting, d.status, d.interval_start, d.interval_end,
                      d.n_features_breached
               FROM model_version mv LEFT JOIN LATERAL (
                   SELECT * FROM drift_run dr WHERE dr.model_version_id = mv.model_version_id
                   ORDER BY dr.interval_end DESC LIMIT 1) d ON true
               WHERE mv.model_name = %s AND mv.stage = 'production'""",
            (model_name,),
        )
        record = cur.fetchone()
    return None if record is None else ProductionDrift(*record)


@dataclass(frozen=True, slots=True)
class EvaluationSummary:
    evaluation_run_id: int
    status: str
    provider: str | None
    rows_scored: int | None
    scoring_rows_per_s: float | None
    report_key: str | None
    failure_reason: str | None
    gate_summary: str | None


def latest_evaluation(url: str, model_version_id: int) -> EvaluationSummary | None:
    """The model version's most recently started evaluation run and its gate summary."""
    with transaction(url) as cur:
        cur.execute(
            """SELECT r.evaluation_run_id, r.status, r.provider, r.rows_scored, r.scoring_rows_per_s,
                      r.report_key, r.failure_reason, g.summary
               FROM evaluation_run r LEFT JOIN gate_decision g USING (evaluation_run_id)
               WHERE r.model_version_id = %s ORDER BY r.started_at DESC LIMIT 1""",
            (model_version_id,),
        )
        record = cur.fetchone()
    return None if record is None else EvaluationSummary(*record)


@dataclass(frozen=True, slots=True)
class DriftIntervalSummary:
    drift_run_id: int
    status: str
    rows_sampled: int | None
    n_features_breached: int | None
    report_key: str | None
    failure_reason: str | None
    breached_features: str | None  # comma-separated, by drift rank
    change_points: int


def drift_interval(url: str, model_version_id: int,
                   interval_start: dt.datetime) -> DriftIntervalSummary | None:
    """The drift run of a model version starting at ``interval_start``, summarised."""
    with transaction(url) as cur:
        cur.execute(
            """SELECT drift_run_id, status, rows_sampled, n_features_breached, report_key,
                      failure_reason,
                      (SELECT string_agg(feature, ', ' ORDER BY drift_rank) FROM feature_drift f
                       WHERE f.drift_run_id = r.drift_run_id AND f.verdict = 'drift'),
                      (SELECT count(*) FROM concept_drift_change c WHERE c.drift_run_id = r.drift_run_id)
               FROM drift_run r WHERE model_version_id = %s AND interval_start = %s""",
            (model_version_id, interval_start))
        record = cur.fetchone()
    return None if record is None else DriftIntervalSummary(*record)
