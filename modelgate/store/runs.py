"""Evaluation runs in the results store.

A run row is created (or reset, when a run is re-run) before any work starts, so a run
that dies is never invisible: it stays ``running`` or becomes ``failed`` with a reason.
All results of a run are written by :func:`write_evaluation_results` in ONE transaction
together with the final status, so readers see either nothing or everything.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from modelgate.store.db import transaction

# Child tables of evaluation_run, cleared when a run is re-run so it gives the same rows.
EVALUATION_RESULT_TABLES = (
    "evaluation_metric", "fairness_group", "fairness_metric", "calibration_bin",
    "shap_importance", "shap_budget", "gate_check", "gate_decision",
)


@dataclass(frozen=True, slots=True)
class EvaluationRunRow:
    evaluation_run_id: int
    run_key: str
    model_version_id: int
    champion_version_id: int | None
    dataset_uri: str
    status: str
    failure_reason: str | None
    provider: str | None
    rows_scored: int | None
    scoring_rows_per_s: float | None
    scores_uri: str | None
    report_key: str | None
    report_uri: str | None
    dataset_sha256: str | None
    started_at: dt.datetime


_RUN_COLUMNS = (
    "evaluation_run_id, run_key, model_version_id, champion_version_id, dataset_uri, status, "
    "failure_reason, provider, rows_scored, scoring_rows_per_s, scores_uri, report_key, report_uri, "
    "dataset_sha256, started_at"
)


def start_evaluation_run(
    url: str, *, run_key: str, model_version_id: int, champion_version_id: int | None,
    dataset_uri: str,
) -> int:
    """Create the run row, or reset it (results cleared, status ``running``) on a re-run."""
    with transaction(url) as cur:
        cur.execute(
            """INSERT INTO evaluation_run (run_key, model_version_id, champion_version_id, dataset_uri)
               VALUES (%s, %s, %s, %s)
               ON CONFLICT ON CONSTRAINT evaluation_run_run_key_key DO UPDATE SET
                   model_version_id = EXCLUDED.model_version_id,
                   champion_version_id = EXCLUDED.champion_version_id,
                   dataset_uri = EXCLUDED.dataset_uri, status = 'running', failure_reason = NULL,
                   report_key = NULL, report_uri = NULL, started_at = now(), finished_at = NULL
               RETURNING evaluation_run_id""",
            (run_key, model_version_id, champion_version_id, dataset_uri),
        )
        run_id = int(cur.fetchone()[0])
        for table in EVALUATION_RESULT_TABLES:
            cur.execute(f"DELETE FROM {table} WHERE evaluation_run_id = %s", (run_id,))
    return run_id


def get_evaluation_run(url: str, run_id: int) -> EvaluationRunRow:
    with transaction(url) as cur:
        cur.execute(f"SELECT {_RUN_COLUMNS} FROM evaluation_run WHERE evaluation_run_id = %s", (run_id,))
        record = cur.fetchone()
    if record is None:
        raise LookupError(f"evaluation run {run_id} does not exist")
    return EvaluationRunRow(*record)


def record_scoring(
    url: str, run_id: int, *, provider: str, rows: int, seconds: float, dataset_sha256: str,
    scores_uri: str, provider_reason: str | None = None, tf32_allowed: bool | None = None,
) -> None:
    """Record how scoring went (provider that really ran and why, TF32, rows, speed)."""
    with transaction(url) as cur:
        cur.execute(
            """UPDATE evaluation_run SET provider = %s, rows_scored = %s, scoring_seconds = %s,
                   scoring_rows_per_s = %s, dataset_sha256 = %s, scores_uri = %s,
                   provider_reason = %s, tf32_allowed = %s
               WHERE evaluation_run_id = %s""",
            (provider, rows, seconds, rows / seconds if seconds > 0 else None, dataset_sha256,
             scores_uri, provider_reason, tf32_allowed, run_id),
        )


def fail_evaluation_run(url: str, run_id: int, reason: str) -> None:
    """Mark a run failed with its reason; any partial results are removed."""
    with transaction(url) as cur:
        for table in EVALUATION_RESULT_TABLES:
            cur.execute(f"DELETE FROM {table} WHERE evaluation_run_id = %s", (run_id,))
        cur.execute(
            """UPDATE evaluation_run SET status = 'failed', failure_reason = %s, finished_at = now()
               WHERE evaluation_run_id = %s""",
            (reason[:4000], run_id),
        )


@dataclass(frozen=True, slots=True)
class EvaluationRows:
    """Every result row of one evaluation run, ready for insertion."""

    metrics: Sequence[tuple[Any, ...]] = ()  # (role, name, value, lo, hi, n, undefined_reason)
    calibration: Sequence[tuple[Any, ...]] = ()  # (bin_index, lower, upper, n, mean_pred, observed)
    # (feature, group, n, base, sel, tpr, fpr, ppv, fnr, small)
    fairness_groups: Sequence[tuple[Any, ...]] = ()
    fairness_metrics: Sequence[tuple[Any, ...]] = ()  # (feature, metric, value, lo, hi)
    shap_importance: Sequence[tuple[Any, ...]] = ()  # (feature, rank, mean_abs)
    shap_budget: tuple[Any, ...] | None = None  # (algorithm, rows, background, evals/row, max err)
    # (check_id, kind, metric, feature, threshold, observed, lo, hi, n, verdict, severity, reason)
    gate_checks: Sequence[tuple[Any, ...]] = ()
    gate: tuple[Any, ...] | None = None  # (passed, summary, policy_sha256, had_champion)


_INSERTS: dict[str, str] = {
    "metrics": "INSERT INTO evaluation_metric (evaluation_run_id, model_role, metric_name, value, "
               "ci_lower, ci_upper, n, undefined_reason) VALUES (%s,%s,%s,%s,%s,%s,%s,%s)",
    "calibration": "INSERT INTO calibration_bin (evaluation_run_id, bin_index, bin_lower, bin_upper, "
                   "n, mean_predicted, observed_rate) VALUES (%s,%s,%s,%s,%s,%s,%s)",
    "fairness_groups": "INSERT INTO fairness_group (evaluation_run_id, sensitive_feature, group_label, "
                       "n, base_rate, selection_rate, tpr, fpr, ppv, fnr, is_small_group) "
                       "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
    "fairness_metrics": "INSERT INTO fairness_metric (evaluation_run_id, sensitive_feature, "
                        "metric_name, value, ci_lower, ci_upper) VALUES (%s,%s,%s,%s,%s,%s)",
    "shap_importance": "INSERT INTO shap_importance (evaluation_run_id, feature, importance_rank, "
                       "mean_abs_shap) VALUES (%s,%s,%s,%s)",
    "gate_checks": "INSERT INTO gate_check (evaluation_run_id, check_id, kind, metric_name, "
                   "sensitive_feature, threshold_text, observed, ci_lower, ci_upper, n, verdict, "
                   "severity, reason) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
}


def _with_run(run_id: int, rows: Iterable[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [(run_id, *row) for row in rows]


def write_evaluation_results(
    url: str, run_id: int, rows: EvaluationRows, *, status: str, report_key: str | None,
    report_uri: str | None,
) -> None:
    """Replace the run's results and set its final status, in one transaction."""
    if status not in ("passed", "blocked"):
        raise ValueError(f"status must be 'passed' or 'blocked', got {status!r}")
    with transaction(url) as cur:
        cur.execute("SELECT 1 FROM evaluation_run WHERE evaluation_run_id = %s FOR UPDATE", (run_id,))
        for table in EVALUATION_RESULT_TABLES:
            cur.execute(f"DELETE FROM {table} WHERE evaluation_run_id = %s", (run_id,))
        for field, sql in _INSERTS.items():
            values = _with_run(run_id, getattr(rows, field))
            if values:
                cur.executemany(sql, values)
        if rows.shap_budget is not None:
            cur.execute(
                "INSERT INTO shap_budget (evaluation_run_id, algorithm, rows_explained, "
                "background_rows, evaluations_per_row, max_additivity_error) VALUES (%s,%s,%s,%s,%s,%s)",
                (run_id, *rows.shap_budget),
            )
        if rows.gate is not None:
            cur.execute(
                "INSERT INTO gate_decision (evaluation_run_id, passed, summary, policy_sha256, "
                "had_champion) VALUES (%s,%s,%s,%s,%s)",
                (run_id, *rows.gate),
            )
        cur.execute(
            """UPDATE evaluation_run SET status = %s, failure_reason = NULL, report_key = %s,
                   report_uri = %s, finished_at = now() WHERE evaluation_run_id = %s""",
            (status, report_key, report_uri, run_id),
        )
