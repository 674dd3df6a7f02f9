"""Read-only summaries of runs for the report index page, report headers and the demo."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal

from modelgate.drift import threshold_multiple, worst_first
from modelgate.store.db import transaction

#: A query the demo shows analysts (the documented views are in sql/README.md).
ANALYST_EXAMPLE_QUERY = "SELECT * FROM analytics.latest_gate_decision"


def analyst_hint(db_url: str, psql: str = "psql") -> str:
    """A psql command that reads the documented views as the analyst role (migration 0004's
    ``modelgate_analyst``, which may read the views and no table). A password in the URL is
    left out (psql asks for it when the server wants one).

    >>> print(analyst_hint("postgresql://postgres:pw@/h/mg"))  # doctest: +NORMALIZE_WHITESPACE
    psql 'postgresql://postgres@/h/mg' -c 'SET ROLE modelgate_analyst'
    -c 'SELECT * FROM analytics.latest_gate_decision'
    """
    from modelgate.store.db import redact_url

    url = redact_url(db_url).replace(":***@", "@")
    # SET ROLE: the role is NOLOGIN (people log in as their own members of it); the demo's
    # superuser may take it, and then sees exactly what an analyst sees.
    return f"{psql} '{url}' -c 'SET ROLE modelgate_analyst' -c '{ANALYST_EXAMPLE_QUERY}'"

# Every attempt of every evaluation run (migration 0029): each decided attempt links its own report.
_LISTED_EVALUATIONS = """
SELECT a.evaluation_run_id, v.version, COALESCE(a.finished_at, a.started_at), a.status,
       EXISTS (SELECT 1 FROM gate_check c WHERE c.evaluation_run_id = a.evaluation_run_id
               AND c.attempt = a.attempt AND c.effect = 'warn'),
       CASE WHEN a.status IN ('passed', 'blocked') THEN a.report_key END, v.stage,
       COALESCE(a.failure_reason, g.summary, ''), a.attempt, a.policy_source
FROM evaluation_attempt a JOIN evaluation_run r USING (evaluation_run_id)
     JOIN model_version v USING (model_version_id)
     LEFT JOIN gate_decision g ON g.evaluation_run_id = a.evaluation_run_id AND g.attempt = a.attempt
WHERE v.model_name = %s AND (a.status IN ('failed', 'abandoned')
                             OR (a.report_key IS NOT NULL AND a.status IN ('passed', 'blocked')))
"""

_LISTED_DRIFT_RUNS = """
SELECT r.drift_run_id, v.version, r.interval_start,
       CASE WHEN r.status = 'degraded' AND r.verdict = 'drift' THEN 'drift' ELSE r.status END,
       FALSE,
       CASE WHEN r.status IN ('ok', 'drift', 'no_data', 'insufficient_data', 'degraded')
            THEN r.report_key END, v.stage,
       COALESCE(r.failure_reason, r.degraded_reason, r.evidence_reason, ''), r.attempt, NULL
FROM drift_run r JOIN model_version v USING (model_version_id)
WHERE v.model_name = %s AND (r.status IN ('failed', 'abandoned')
                             OR (r.report_key IS NOT NULL
                                 AND r.status IN ('ok', 'drift', 'no_data', 'insufficient_data', 'degraded')))
"""


@dataclass(frozen=True, slots=True)
class ListedRun:
    """A finished run with a report, or a failed or abandoned one (``report_key`` None):
    ``when`` is an evaluation's finish time or a drift run's interval start; ``warned``: a
    passed evaluation had a check whose effect was warn; ``stage``: the version's stage now;
    ``note``: the failure reason or the gate's summary ("" when none); ``attempt``: which
    attempt of the run (every attempt of an evaluation run is listed); ``policy_source``: an
    evaluation attempt's policy source (None when it recorded none)."""

    kind: Literal["evaluation", "drift"]
    run_id: int
    version: str
    when: dt.datetime
    status: str
    warned: bool
    report_key: str | None
    stage: str = ""
    note: str = ""
    attempt: int = 1
    policy_source: str | None = None


def listed_runs(url: str, model_name: str) -> list[ListedRun]:
    """The model's evaluation attempts (passed or blocked) and drift runs (ok, drift, no_data,
    degraded) that have a report, and its failed and abandoned ones, evaluations first."""
    found: list[ListedRun] = []
    with transaction(url) as cur:
        for kind, sql in (("evaluation", _LISTED_EVALUATIONS), ("drift", _LISTED_DRIFT_RUNS)):
            cur.execute(sql, (model_name,))
            found.extend(ListedRun(kind, int(i), str(v), when, status, bool(warned), key,  # type: ignore[arg-type]
                                   stage, note, int(attempt), source)
                         for i, v, when, status, warned, key, stage, note, attempt, source
                         in cur.fetchall())
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
    blocking_reasons: list[str]  # "<check id>: <reason>" of each failed blocking check


def latest_evaluation(url: str, model_version_id: int) -> EvaluationSummary | None:
    """The model version's most recently started evaluation run and its gate summary."""
    with transaction(url) as cur:
        cur.execute(
            """SELECT r.evaluation_run_id, r.status, r.provider, r.rows_scored, r.scoring_rows_per_s,
                      r.report_key, r.failure_reason, g.summary,
                      ARRAY(SELECT c.check_id || ': ' || c.reason FROM gate_check c
                            WHERE c.evaluation_run_id = r.evaluation_run_id AND c.attempt = r.attempt
                              AND c.verdict = 'fail' AND c.severity = 'block' ORDER BY c.check_id)
               FROM evaluation_run r LEFT JOIN gate_decision g
                    ON g.evaluation_run_id = r.evaluation_run_id AND g.attempt = r.attempt
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
    breached_features: list[str]  # stored names, by drift rank
    change_points: int
    worst_feature: str | None  # the feature whose statistic is the largest multiple of its threshold
    worst_ratio: float | None  # that multiple


def drift_interval(url: str, model_version_id: int,
                   interval_start: dt.datetime) -> DriftIntervalSummary | None:
    """The drift run of a model version starting at ``interval_start``, summarised."""
    with transaction(url) as cur:
        cur.execute(
            """SELECT drift_run_id, status, rows_sampled, n_features_breached, report_key,
                      failure_reason,
                      ARRAY(SELECT feature FROM feature_drift f
                            WHERE f.drift_run_id = r.drift_run_id AND f.verdict = 'drift'
                            ORDER BY drift_rank),
                      (SELECT count(*) FROM concept_drift_change c WHERE c.drift_run_id = r.drift_run_id),
                      ARRAY(SELECT feature FROM feature_drift f WHERE f.drift_run_id = r.drift_run_id
                            ORDER BY feature),
                      ARRAY(SELECT statistic_value FROM feature_drift f
                            WHERE f.drift_run_id = r.drift_run_id ORDER BY feature),
                      ARRAY(SELECT threshold FROM feature_drift f
                            WHERE f.drift_run_id = r.drift_run_id ORDER BY feature)
               FROM drift_run r
               WHERE model_version_id = %s AND interval_start = %s""",
            (model_version_id, interval_start))
        record = cur.fetchone()
    if record is None:
        return None
    names, values, thresholds = record[-3:]
    order = worst_first(names, values, thresholds)  # the report's definition of "worst"
    worst = order[0] if order and values[order[0]] is not None else None
    return DriftIntervalSummary(
        record[0], record[1], record[2], record[3], record[4], record[5], record[6], record[7],
        worst_feature=None if worst is None else names[worst],
        worst_ratio=None if worst is None else threshold_multiple(values[worst], thresholds[worst]))


def latest_drift_interval(url: str, model_version_id: int) -> DriftIntervalSummary | None:
    """The drift run of a model version's latest interval, summarised (None before any run)."""
    with transaction(url) as cur:
        cur.execute("SELECT max(interval_start) FROM drift_run WHERE model_version_id = %s",
                    (model_version_id,))
        record = cur.fetchone()
    start = None if record is None else record[0]
    return None if start is None else drift_interval(url, model_version_id, start)
