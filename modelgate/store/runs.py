"""Evaluation runs in the results store.

A run row is created (or reset, when a run is re-run) before any work starts, so a run
that dies is never invisible: it stays ``running`` or becomes ``failed`` with a reason.
All results of a run are written by :func:`write_evaluation_results` in ONE transaction
together with the final status, so readers see either nothing or everything.

Each start of a run is an attempt (``evaluation_attempt``, migration 0029, kept in step with
the run row by a trigger). The gate's decision and checks are keyed by attempt and written
once: a re-run adds its own beside the earlier attempts', and a stored decision never becomes
``failed`` (:func:`fail_evaluation_run` records a later failure beside it instead).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from psycopg2.extras import execute_batch

from modelgate.store.db import transaction

# Child tables of evaluation_run holding its results.
EVALUATION_RESULT_TABLES = (
    "evaluation_metric", "fairness_group", "fairness_metric", "calibration_bin",
    "shap_importance", "shap_budget", "gate_check", "gate_decision", "segment_metric",
    "segment_gate_check",
)
# Those that hold the latest attempt's results only, cleared when a run is re-run; the gate's
# decision and checks are keyed by attempt and kept (migration 0029).
LATEST_ATTEMPT_TABLES = tuple(t for t in EVALUATION_RESULT_TABLES
                              if t not in ("gate_check", "gate_decision", "segment_metric",
                                           "segment_gate_check"))


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
    archive_sha256: str | None = None
    attempt: int = 1  # how many times the run was started (migration 0022)


_RUN_COLUMNS = (
    "evaluation_run_id, run_key, model_version_id, champion_version_id, dataset_uri, status, "
    "failure_reason, provider, rows_scored, scoring_rows_per_s, scores_uri, report_key, report_uri, "
    "dataset_sha256, started_at, archive_sha256, attempt"
)


class RunKeyConflict(LookupError):
    """A run key is already used by a run of another model version or archive."""


class PromotionEvidenceKept(RunKeyConflict):
    """A run key belongs to the run a promotion rests on; that run is never reset."""


def start_evaluation_run(
    url: str, *, run_key: str, model_version_id: int, champion_version_id: int | None,
    dataset_uri: str, archive_sha256: str,
) -> int:
    """Create the run row, or reset it (the latest attempt's metrics, fairness, calibration,
    SHAP and policy columns cleared, status ``running``, ``attempt`` one more, so its report
    gets a key of its own) on a re-run. Earlier attempts keep their ``evaluation_attempt``
    row, gate decision and gate checks.

    The archive sha256 is pinned on the row: every step of the run uses that archive's
    manifest. A run key already used by another model version or archive is never taken
    over (:class:`RunKeyConflict`), nor is the key of a run that promoted its version
    (:class:`PromotionEvidenceKept`; the database refuses it too, migration 0020).
    """
    with transaction(url) as cur:
        cur.execute(
            """INSERT INTO evaluation_run (run_key, model_version_id, champion_version_id, dataset_uri,
                                           archive_sha256, heartbeat_at)
               VALUES (%s, %s, %s, %s, %s, now())
               ON CONFLICT ON CONSTRAINT evaluation_run_run_key_key DO UPDATE SET
                   champion_version_id = EXCLUDED.champion_version_id,
                   dataset_uri = EXCLUDED.dataset_uri, status = 'running', failure_reason = NULL,
                   attempt = evaluation_run.attempt + 1,
                   report_key = NULL, report_uri = NULL, started_at = now(), finished_at = NULL,
                   heartbeat_at = now(), policy_text = NULL, policy_source = NULL,
                   policy_source_path = NULL, policy_diff = NULL, policy_looser_than_model = NULL,
                   looser_policy_allowed = NULL
               WHERE evaluation_run.model_version_id = EXCLUDED.model_version_id
                 AND evaluation_run.archive_sha256 IS NOT DISTINCT FROM EXCLUDED.archive_sha256
                 AND evaluation_run.promoted_at IS NULL
               RETURNING evaluation_run_id""",
            (run_key, model_version_id, champion_version_id, dataset_uri, archive_sha256),
        )
        inserted = cur.fetchone()
        if inserted is None:
            cur.execute("""SELECT evaluation_run_id FROM evaluation_run
                           WHERE run_key = %s AND promoted_at IS NOT NULL AND model_version_id = %s
                             AND archive_sha256 IS NOT DISTINCT FROM %s""",
                        (run_key, model_version_id, archive_sha256))
            promoted = cur.fetchone()
            if promoted is not None:
                raise PromotionEvidenceKept(
                    f"run key {run_key!r} is evaluation run {promoted[0]}, which promoted its "
                    "version; its evidence is kept and not re-run")
            raise RunKeyConflict(
                f"run key {run_key!r} belongs to a run of another model version or archive; "
                f"it is not reused for model version id {model_version_id} "
                f"(archive sha256 {archive_sha256})")
        run_id = int(inserted[0])
        for table in LATEST_ATTEMPT_TABLES:
            cur.execute(f"DELETE FROM {table} WHERE evaluation_run_id = %s", (run_id,))
    return run_id


@dataclass(frozen=True, slots=True)
class PolicyProvenance:
    """The policy a run was judged by and where it came from (``evaluation_run.policy_*``).

    ``diff`` holds the differences from the model's own policy as records
    (:meth:`modelgate.evaluation.policy_diff.PolicyChange.to_record`); ``changes`` those from
    the policy of the version's previous decided attempt ``previous`` (run id, attempt), and
    ``sha256`` hashes every source (``evaluation_attempt``, migration 0029; None and empty on
    runs recorded before it).
    """

    text: str
    source: str
    source_path: str
    diff: list[dict[str, Any]]
    looser_than_model: bool
    looser_allowed: bool
    sha256: str | None = None
    previous: tuple[int, int] | None = None
    changes: tuple[dict[str, Any], ...] = ()
    looser_than_previous: bool = False

    @property
    def looser(self) -> bool:
        """Looser than the model's own policy or than the previous decided attempt's."""
        return self.looser_than_model or self.looser_than_previous


def record_policy(url: str, run_id: int, policy: PolicyProvenance) -> None:
    """Store the run's policy provenance, once per attempt: only into a running run's empty
    columns (a trigger refuses any later change; a re-run resets them first), and into its
    current attempt's row, which keeps it."""
    with transaction(url) as cur:
        cur.execute(
            """UPDATE evaluation_run SET policy_text = %s, policy_source = %s,
                   policy_source_path = %s, policy_diff = %s, policy_looser_than_model = %s,
                   looser_policy_allowed = %s
               WHERE evaluation_run_id = %s AND status = 'running' AND policy_source IS NULL
               RETURNING attempt""",
            (policy.text, policy.source, policy.source_path, json.dumps(policy.diff),
             policy.looser_than_model, policy.looser_allowed, run_id),
        )
        updated = cur.fetchone()
        if updated is None:
            raise LookupError(f"evaluation run {run_id} is not running or already recorded its policy")
        previous = policy.previous or (None, None)
        cur.execute(
            """UPDATE evaluation_attempt SET policy_text = %s, policy_sha256 = %s,
                   policy_source = %s, policy_source_path = %s, policy_diff = %s,
                   policy_looser_than_model = %s, previous_evaluation_run_id = %s,
                   previous_attempt = %s, policy_changes = %s, policy_looser_than_previous = %s,
                   looser_policy_allowed = %s
               WHERE evaluation_run_id = %s AND attempt = %s AND status = 'running'""",
            (policy.text, policy.sha256, policy.source, policy.source_path,
             json.dumps(policy.diff), policy.looser_than_model, previous[0], previous[1],
             json.dumps(list(policy.changes)), policy.looser_than_previous,
             policy.looser_allowed, run_id, updated[0]),
        )


def get_policy(url: str, run_id: int) -> PolicyProvenance | None:
    """The run's stored policy provenance; None when it recorded none."""
    with transaction(url) as cur:
        cur.execute(
            """SELECT r.policy_text, r.policy_source, r.policy_source_path, r.policy_diff,
                      r.policy_looser_than_model, r.looser_policy_allowed, a.policy_sha256,
                      a.previous_evaluation_run_id, a.previous_attempt, a.policy_changes,
                      a.policy_looser_than_previous
               FROM evaluation_run r LEFT JOIN evaluation_attempt a
                    ON a.evaluation_run_id = r.evaluation_run_id AND a.attempt = r.attempt
               WHERE r.evaluation_run_id = %s AND r.policy_source IS NOT NULL""",
            (run_id,))
        record = cur.fetchone()
    if record is None:
        return None
    previous = None if record[7] is None else (int(record[7]), int(record[8]))
    text, source, path, diff, looser, allowed, sha = record[:7]
    return PolicyProvenance(text, source, path, diff, looser, allowed, sha, previous,
                            tuple(record[9] or ()), bool(record[10]))


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


def fail_evaluation_run(url: str, run_id: int, reason: str) -> bool:
    """Mark a run failed with its reason; returns False when it had a decision already.

    Results are written in one transaction with the final status, so a run that fails before
    that has none. A decision, once stored, stands: a failure after it (its promotion refused
    because production changed meanwhile, a step run again after the decision) leaves the
    status ``passed`` or ``blocked`` and is recorded beside it in ``evaluation_step_failure``
    (step ``after_decision``). A run that promoted its version stays ``passed`` too.
    """
    with transaction(url) as cur:
        cur.execute(
            """UPDATE evaluation_run SET status = 'failed', failure_reason = %s, finished_at = now()
               WHERE evaluation_run_id = %s AND promoted_at IS NULL
                 AND status NOT IN ('passed', 'blocked')""",
            (reason[:4000], run_id),
        )
        if cur.rowcount == 1:
            return True
        cur.execute(
            """INSERT INTO evaluation_step_failure (evaluation_run_id, attempt, step, reason)
               SELECT evaluation_run_id, attempt, 'after_decision', %s FROM evaluation_run
               WHERE evaluation_run_id = %s AND status IN ('passed', 'blocked')""",
            (reason[:4000], run_id),
        )
    return False


def fail_lost_runs(url: str, *, key_prefix: str, model_name: str, version: str,
                   reason: str) -> list[tuple[int, str]]:
    """Mark the runs of ``model_name`` ``version`` whose run key starts with ``key_prefix``
    failed with ``reason`` if they are still ``running``; returns (run id, model name) of
    each run marked."""
    with transaction(url) as cur:
        cur.execute(
            """UPDATE evaluation_run r SET status = 'failed', failure_reason = %s, finished_at = now()
               FROM model_version mv
               WHERE mv.model_version_id = r.model_version_id AND mv.model_name = %s
                 AND mv.version = %s AND left(r.run_key, char_length(%s)) = %s
                 AND r.status = 'running'
               RETURNING r.evaluation_run_id, mv.model_name""",
            (reason[:4000], model_name, version, key_prefix, key_prefix),
        )
        return [(int(r[0]), str(r[1])) for r in cur.fetchall()]


def beat(url: str, run_id: int) -> None:
    """Record a sign of life of the process running ``run_id`` (only while it is running)."""
    with transaction(url) as cur:
        cur.execute("UPDATE evaluation_run SET heartbeat_at = now() "
                    "WHERE evaluation_run_id = %s AND status = 'running'", (run_id,))


def abandon_stale_runs(url: str, model_name: str, *, stale_minutes: int, by_run_key: str) -> list[int]:
    """Mark the model's ``running`` runs with no heartbeat for ``stale_minutes`` abandoned.

    Their process died without recording anything (killed, machine lost); the reason names
    the last heartbeat and the run that noticed. Returns the ids marked.
    """
    with transaction(url) as cur:
        cur.execute(
            """UPDATE evaluation_run r SET status = 'abandoned', finished_at = now(),
                   failure_reason = 'abandoned: no heartbeat since '
                       || to_char(COALESCE(r.heartbeat_at, r.started_at) AT TIME ZONE 'UTC',
                                  'YYYY-MM-DD"T"HH24:MI:SS"Z"')
                       || ' (more than ' || %s || ' min); noticed by run ' || %s
               FROM model_version mv
               WHERE mv.model_version_id = r.model_version_id AND mv.model_name = %s
                 AND r.status = 'running' AND r.run_key <> %s
                 AND COALESCE(r.heartbeat_at, r.started_at) < now() - make_interval(mins => %s)
               RETURNING r.evaluation_run_id""",
            (stale_minutes, by_run_key, model_name, by_run_key, stale_minutes),
        )
        return sorted(int(r[0]) for r in cur.fetchall())


def record_refusal(url: str, *, run_key: str, model_name: str, version: str, dataset_uri: str,
                   reason: str) -> int:
    """Record an evaluation refused before its run row could exist (e.g. unknown version)."""
    with transaction(url) as cur:
        cur.execute(
            """INSERT INTO evaluation_refusal (run_key, model_name, version, dataset_uri, reason)
               VALUES (%s, %s, %s, %s, %s) RETURNING evaluation_refusal_id""",
            (run_key, model_name, version, dataset_uri, reason[:4000]),
        )
        return int(cur.fetchone()[0])


Record = Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class EvaluationRows:
    """Every result row of one evaluation run, as records keyed by column name.

    The records are the results' ``to_record()`` with what a result does not know added
    beside it (the model role of a metric, the sensitive feature of a group); keys that are
    not columns of the table are ignored. A ``fairness_group`` record holds a classifier's
    rates or a regression model's errors: the columns it lacks are stored NULL.
    """

    metrics: Sequence[Record] = ()  # model_role + MetricEstimate/MetricDelta.to_record()
    calibration: Sequence[Record] = ()  # bin_index + CalibrationBin.to_record()
    fairness_groups: Sequence[Record] = ()  # sensitive_feature, class_label + group record
    fairness_metrics: Sequence[Record] = ()  # sensitive_feature + FairnessEstimate.to_record()
    shap_importance: Sequence[Record] = ()  # feature, importance_rank, mean_abs_shap[, _se]
    shap_budget: Record | None = None  # algorithm, rows_explained, ..., max_standard_error, output_space
    gate_checks: Sequence[Record] = ()  # GateCheck.to_record()
    segment_metrics: Sequence[Record] = ()  # SegmentReport.to_rows()
    segment_gate_checks: Sequence[Record] = ()  # SegmentVerdict.to_record()
    gate: Record | None = None  # GateDecision.to_record() + policy_sha256, had_champion


_INSERTS: dict[str, str] = {
    "metrics": """INSERT INTO evaluation_metric (evaluation_run_id, model_role, metric_name, value,
                      ci_lower, ci_upper, n, undefined_reason)
                  VALUES (%(evaluation_run_id)s, %(model_role)s, %(metric_name)s, %(value)s,
                      %(ci_lower)s, %(ci_upper)s, %(n)s, %(undefined_reason)s)""",
    "calibration": """INSERT INTO calibration_bin (evaluation_run_id, bin_index, bin_lower, bin_upper, n,
                          mean_predicted, observed_rate)
                      VALUES (%(evaluation_run_id)s, %(bin_index)s, %(bin_lower)s, %(bin_upper)s, %(n)s,
                          %(mean_predicted)s, %(observed_rate)s)""",
    "fairness_groups": """INSERT INTO fairness_group (evaluation_run_id, sensitive_feature, group_label, n,
                              base_rate, selection_rate, tpr, fpr, ppv, fnr, is_small_group,
                              class_label, mae, rmse, mean_prediction, mean_error, positives,
                              negatives, predicted_positives, accuracy, roc_auc, roc_auc_error_bound,
                              tpr_ci_lower, tpr_ci_upper, fpr_ci_lower, fpr_ci_upper,
                              selection_rate_ci_lower, selection_rate_ci_upper, ppv_ci_lower,
                              ppv_ci_upper)
                          VALUES (%(evaluation_run_id)s, %(sensitive_feature)s, %(group_label)s, %(n)s,
                              %(base_rate)s, %(selection_rate)s, %(tpr)s, %(fpr)s, %(ppv)s, %(fnr)s,
                              %(is_small_group)s, %(class_label)s, %(mae)s, %(rmse)s,
                              %(mean_prediction)s, %(mean_error)s, %(positives)s, %(negatives)s,
                              %(predicted_positives)s, %(accuracy)s, %(roc_auc)s,
                              %(roc_auc_error_bound)s, %(tpr_ci_lower)s, %(tpr_ci_upper)s,
                              %(fpr_ci_lower)s, %(fpr_ci_upper)s, %(selection_rate_ci_lower)s,
                              %(selection_rate_ci_upper)s, %(ppv_ci_lower)s, %(ppv_ci_upper)s)""",
    "fairness_metrics": """INSERT INTO fairness_metric (evaluation_run_id, sensitive_feature, metric_name,
                               value, ci_lower, ci_upper, driving_rate, highest_group, lowest_group)
                           VALUES (%(evaluation_run_id)s, %(sensitive_feature)s, %(metric_name)s,
                               %(value)s, %(ci_lower)s, %(ci_upper)s, %(driving_rate)s,
                               %(highest_group)s, %(lowest_group)s)""",
    "shap_importance": """INSERT INTO shap_importance (evaluation_run_id, feature, importance_rank,
                              mean_abs_shap, mean_abs_shap_se)
                          VALUES (%(evaluation_run_id)s, %(feature)s, %(importance_rank)s,
                              %(mean_abs_shap)s, %(mean_abs_shap_se)s)""",
    "gate_checks": """INSERT INTO gate_check (evaluation_run_id, attempt, check_id, kind, metric_name,
                          sensitive_feature, threshold_text, observed, ci_lower, ci_upper, n, verdict,
                          severity, reason, basis, on_inconclusive, min_group_positives,
                          min_group_negatives, required_positives, required_negatives,
                          rows_to_decide, group_positives_to_decide, group_negatives_to_decide,
                          rows_to_decide_if_equal, group_positives_to_decide_if_equal,
                          group_negatives_to_decide_if_equal)
                      VALUES (%(evaluation_run_id)s, %(attempt)s, %(check_id)s, %(kind)s, %(metric_name)s,
                          %(sensitive_feature)s, %(threshold_text)s, %(observed)s, %(ci_lower)s,
                          %(ci_upper)s, %(n)s, %(verdict)s, %(severity)s, %(reason)s, %(basis)s,
                          %(on_inconclusive)s, %(min_group_positives)s,
                          %(min_group_negatives)s, %(required_positives)s, %(required_negatives)s,
                          %(rows_to_decide)s, %(group_positives_to_decide)s,
                          %(group_negatives_to_decide)s, %(rows_to_decide_if_equal)s,
                          %(group_positives_to_decide_if_equal)s,
                          %(group_negatives_to_decide_if_equal)s)""",
    "segment_metrics": """INSERT INTO segment_metric (evaluation_run_id, attempt, segment, segment_columns,
                              segment_values, metric_name, n, positives, judged, not_judged_reason,
                              higher_is_better, value, ci_lower, ci_upper, rest_value, rest_ci_lower,
                              rest_ci_upper, difference, difference_ci_lower, difference_ci_upper,
                              p_value, q_value, correction, undefined_reason)
                          VALUES (%(evaluation_run_id)s, %(attempt)s, %(segment)s, %(segment_columns)s,
                              %(segment_values)s, %(metric_name)s, %(n)s, %(positives)s, %(judged)s,
                              %(not_judged_reason)s, %(higher_is_better)s, %(value)s, %(ci_lower)s,
                              %(ci_upper)s, %(rest_value)s, %(rest_ci_lower)s, %(rest_ci_upper)s,
                              %(difference)s, %(difference_ci_lower)s, %(difference_ci_upper)s,
                              %(p_value)s, %(q_value)s, %(correction)s, %(undefined_reason)s)""",
    "segment_gate_checks": """INSERT INTO segment_gate_check (evaluation_run_id, attempt, check_id, segment,
                                  segment_columns, segment_values, metric_name, kind, n, observed,
                                  ci_lower, ci_upper, lower, upper, p_value, q_value, verdict)
                              VALUES (%(evaluation_run_id)s, %(attempt)s, %(check_id)s, %(segment)s,
                                  %(segment_columns)s, %(segment_values)s, %(metric_name)s, %(kind)s,
                                  %(n)s, %(observed)s, %(ci_lower)s, %(ci_upper)s, %(lower)s,
                                  %(upper)s, %(p_value)s, %(q_value)s, %(verdict)s)""",
}
# A fairness_group record carries either rates and counts (classifiers) or errors (regression).
_FAIRNESS_GROUP_NULLS = dict.fromkeys(
    ("base_rate", "selection_rate", "tpr", "fpr", "ppv", "fnr", "mae", "rmse", "mean_prediction",
     "mean_error", "positives", "negatives", "predicted_positives", "accuracy", "roc_auc",
     "roc_auc_error_bound", "tpr_ci_lower", "tpr_ci_upper", "fpr_ci_lower", "fpr_ci_upper",
     "selection_rate_ci_lower", "selection_rate_ci_upper", "ppv_ci_lower", "ppv_ci_upper"))


def _with_run(run_id: int, records: Iterable[Record]) -> list[dict[str, Any]]:
    return [{"evaluation_run_id": run_id, **record} for record in records]


class AttemptDecided(LookupError):
    """The run's current attempt already stored its decision; it is never rewritten."""


def write_evaluation_results(
    url: str, run_id: int, rows: EvaluationRows, *, status: str, report_key: str | None,
    report_uri: str | None,
) -> None:
    """Store the current attempt's results and set its final status, in one transaction.

    The latest-attempt tables (metrics, fairness, calibration, SHAP) are replaced; the gate's
    decision and checks are added under the attempt, beside earlier attempts'.

    Raises
    ------
    AttemptDecided
        The current attempt already has a decision (a re-run adds an attempt instead).
    """
    if status not in ("passed", "blocked"):
        raise ValueError(f"status must be 'passed' or 'blocked', got {status!r}")
    with transaction(url) as cur:
        cur.execute("SELECT attempt FROM evaluation_run WHERE evaluation_run_id = %s FOR UPDATE",
                    (run_id,))
        (attempt,) = cur.fetchone() or (None,)
        if attempt is None:
            raise LookupError(f"evaluation run {run_id} does not exist")
        if _has_decision(cur, run_id, attempt):
            raise AttemptDecided(f"attempt {attempt} of evaluation run {run_id} already stored its "
                                 "decision; re-run the evaluation to add an attempt")
        for table in LATEST_ATTEMPT_TABLES:
            cur.execute(f"DELETE FROM {table} WHERE evaluation_run_id = %s", (run_id,))
        for field, sql in _INSERTS.items():
            records = getattr(rows, field)
            if field == "fairness_groups":
                records = [{**_FAIRNESS_GROUP_NULLS, **r} for r in records]
            elif field == "shap_importance":  # a record without a standard error stores NULL
                records = [{"mean_abs_shap_se": None, **r} for r in records]
            elif field in ("gate_checks", "segment_metrics", "segment_gate_checks"):
                records = [{**r, "attempt": attempt} for r in records]
            values = _with_run(run_id, records)
            if values:  # pages of rows per round trip: a run stores hundreds of segment rows
                execute_batch(cur, sql, values, page_size=500)
        if rows.shap_budget is not None:
            cur.execute(
                """INSERT INTO shap_budget (evaluation_run_id, algorithm, rows_explained, background_rows,
                       evaluations_per_row, max_additivity_error, max_standard_error, output_space)
                   VALUES (%(evaluation_run_id)s, %(algorithm)s, %(rows_explained)s, %(background_rows)s,
                       %(evaluations_per_row)s, %(max_additivity_error)s, %(max_standard_error)s,
                       %(output_space)s)""",
                {"evaluation_run_id": run_id, "max_standard_error": None, "output_space": None,
                 **rows.shap_budget},
            )
        if rows.gate is not None:
            cur.execute(
                """INSERT INTO gate_decision (evaluation_run_id, attempt, passed, summary, policy_sha256,
                       had_champion)
                   VALUES (%(evaluation_run_id)s, %(attempt)s, %(passed)s, %(summary)s,
                       %(policy_sha256)s, %(had_champion)s)""",
                {"evaluation_run_id": run_id, "attempt": attempt, **rows.gate},
            )
        cur.execute(
            """UPDATE evaluation_run SET status = %s, failure_reason = NULL, report_key = %s,
                   report_uri = %s, finished_at = now() WHERE evaluation_run_id = %s""",
            (status, report_key, report_uri, run_id),
        )


def _has_decision(cur: Any, run_id: int, attempt: int) -> bool:
    cur.execute("SELECT 1 FROM gate_decision WHERE evaluation_run_id = %s AND attempt = %s",
                (run_id, attempt))
    return cur.fetchone() is not None


def get_gate_decision(url: str, run_id: int) -> tuple[bool, str] | None:
    """The run's current attempt's gate decision as ``(passed, summary)``, or None before
    its ``store``."""
    with transaction(url) as cur:
        cur.execute("""SELECT g.passed, g.summary FROM gate_decision g
                       JOIN evaluation_run r ON r.evaluation_run_id = g.evaluation_run_id
                                            AND r.attempt = g.attempt
                       WHERE g.evaluation_run_id = %s""", (run_id,))
        record = cur.fetchone()
    return None if record is None else (bool(record[0]), str(record[1]))


def ended_run_keys(url: str, *, ended_before: dt.timedelta) -> list[str]:
    """Keys of the evaluation runs that ended (``passed``, ``blocked``, ``failed`` or
    ``abandoned``) more than ``ended_before`` ago, by the database's clock."""
    with transaction(url) as cur:
        cur.execute(
            """SELECT run_key FROM evaluation_run
               WHERE status IN ('passed', 'blocked', 'failed', 'abandoned')
                 AND finished_at < now() - %s ORDER BY run_key""", (ended_before,))
        return [str(r[0]) for r in cur.fetchall()]


def stored_object_references(url: str) -> set[str]:
    """Every object key or URI a stored row holds: each text column of the application's
    tables named ``*_key`` or ``*_uri`` (run keys aside), found in the catalogue, so a
    column added later is covered too."""
    from psycopg2 import sql

    with transaction(url) as cur:
        cur.execute(
            r"""SELECT table_name, column_name FROM information_schema.columns
                WHERE table_schema = 'public' AND data_type = 'text' AND column_name <> 'run_key'
                  AND (column_name LIKE '%\_key' OR column_name LIKE '%\_uri')
                ORDER BY 1, 2""")
        columns = cur.fetchall()
        found: set[str] = set()
        for table, column in columns:
            cur.execute(sql.SQL("SELECT DISTINCT {c} FROM {t} WHERE {c} IS NOT NULL").format(
                c=sql.Identifier(column), t=sql.Identifier(table)))
            found.update(str(r[0]) for r in cur.fetchall())
    return found
