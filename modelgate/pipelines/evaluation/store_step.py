"""The evaluation's ``store`` step: the run's results as rows, written in one transaction."""

from __future__ import annotations

import logging
from typing import Any

from modelgate.pipelines.context import Context
from modelgate.pipelines.evaluation import attempts, model_tasks, segments_step
from modelgate.pipelines.evaluation.explain_step import ExplainResult
from modelgate.pipelines.evaluation.fairness_records import fairness_records
from modelgate.pipelines.evaluation.gate_step import DecisionResult
from modelgate.pipelines.evaluation.metrics_step import MetricsResult
from modelgate.pipelines.evaluation.policy_loading import load_checked_policy
from modelgate.pipelines.evaluation.report_step import report_key
from modelgate.pipelines.evaluation.run_refs import RunRef, candidate_row, get_pickle
from modelgate.store import runs

log = logging.getLogger("modelgate.evaluate")


def _rows_for_store(result: MetricsResult, fairness_reports: dict[str, Any], shap: ExplainResult,
                    decided: DecisionResult,
                    segments: dict[str, Any] | None = None) -> runs.EvaluationRows:
    """Every result's record, with what the result itself does not know beside it."""
    metrics: list[dict[str, Any]] = []
    for role, report in (("candidate", result.candidate), ("champion", result.champion)):
        if report is not None:
            metrics += [{"model_role": role, **m.to_record()} for m in report.metrics]
    if result.comparison is not None:
        metrics += [{"model_role": "delta", **d.to_record()} for d in result.comparison.deltas]
    calibration = [] if result.task != model_tasks.BINARY else [
        {"bin_index": i, **b.to_record()} for i, b in enumerate(result.candidate.calibration.bins)]
    fairness = fairness_records(fairness_reports)
    d = decided.decision
    return runs.EvaluationRows(
        metrics=metrics, calibration=calibration,
        fairness_groups=[g for s in fairness for g in s.group_rows()],
        fairness_metrics=[g for s in fairness for g in s.gap_rows()],
        shap_importance=[{"feature": f, "importance_rank": rank, "mean_abs_shap": v,
                          "mean_abs_shap_se": se}
                         for rank, ((f, v), se) in enumerate(
                             zip(shap.importance, shap.importance_se or [None] * len(shap.importance),
                                 strict=True), start=1)],
        shap_budget={"algorithm": shap.algorithm, "rows_explained": shap.rows_explained,
                     "background_rows": shap.background_rows,
                     "evaluations_per_row": shap.evaluations_per_row,
                     "max_additivity_error": shap.max_additivity_error,
                     "max_standard_error": shap.max_standard_error,
                     # "" on an explain result pickled before the space was kept
                     "output_space": getattr(shap, "output", "") or None},
        gate_checks=[c.to_record() for c in d.checks],
        gate={**d.to_record(), "policy_sha256": decided.policy_sha256,
              "had_champion": decided.had_champion},
        **(segments or {}),
    )


def store_results(ctx: Context, ref: RunRef) -> str:
    """Write every result row and the final status in one transaction; return the status.

    A decision is stored once per attempt: a retried step returns the stored one. What
    follows it (gauge, index page) never changes it (:func:`.attempts.after_decision`)."""
    run = runs.get_evaluation_run(ctx.db_url, ref.evaluation_run_id)
    row = candidate_row(ctx, run)
    decided: DecisionResult = get_pickle(ctx, f"{ref.prefix()}/decision.pkl")
    rows = _rows_for_store(get_pickle(ctx, f"{ref.prefix()}/metrics.pkl"),
                           get_pickle(ctx, f"{ref.prefix()}/fairness.pkl"),
                           get_pickle(ctx, f"{ref.prefix()}/explain.pkl"), decided,
                           segments_step.store_rows(segments_step.load_segments(ctx, ref),
                                                    load_checked_policy(ctx, ref).policy.segments))
    key = report_key(row, run)
    if not ctx.store.exists(key):
        raise FileNotFoundError(f"report {key!r} is missing; run the report step first")
    status = "passed" if decided.decision.passed else "blocked"
    try:
        runs.write_evaluation_results(ctx.db_url, ref.evaluation_run_id, rows, status=status,
                                      report_key=key, report_uri=ctx.store.uri(key))
        log.info("stored evaluation run %d: %s", ref.evaluation_run_id, status)
    except runs.AttemptDecided:  # a retried store step: the stored decision stands
        stored = runs.get_gate_decision(ctx.db_url, ref.evaluation_run_id)
        status = "passed" if stored is not None and stored[0] else "blocked"
        log.info("evaluation run %d attempt %d already stored its decision: %s",
                 ref.evaluation_run_id, run.attempt, status)
    # the gauge and reports/<model>/index.html: a failure is recorded beside the decision
    attempts.after_decision(ctx, ref.evaluation_run_id, run.attempt, model_name=row.model_name,
                            version=row.version, passed=status == "passed",
                            checks_breached=sum(c.effect != "none" for c in decided.decision.checks))
    return status
