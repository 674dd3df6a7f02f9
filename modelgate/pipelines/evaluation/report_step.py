"""The evaluation's ``report`` step: the run's results as a report view, rendered to HTML
and stored at the attempt's report key."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from typing import Any

from modelgate.pipelines.context import Context
from modelgate.pipelines.evaluation import model_tasks, policy_provenance, segments_step, shap_report
from modelgate.pipelines.evaluation.explain_step import ExplainResult
from modelgate.pipelines.evaluation.fairness_records import driving_text, fairness_records
from modelgate.pipelines.evaluation.gate_step import DecisionResult
from modelgate.pipelines.evaluation.metrics_step import MetricsResult
from modelgate.pipelines.evaluation.policy_loading import load_checked_policy
from modelgate.pipelines.evaluation.run_refs import RunRef, candidate_row, get_pickle, model_row
from modelgate.pipelines.report_keys import evaluation_report_key
from modelgate.reports import (
    DEFAULT_N_PERMUTATIONS,
    CalibrationRow,
    ErrorGroupRow,
    EvaluationReportView,
    FairnessSection,
    GapRow,
    GateCheckRow,
    GateView,
    GroupRow,
    MetricRow,
    WaterfallImage,
    interval_words,
    render_evaluation_report,
)
from modelgate.store import models, runs
from modelgate.store.summaries import production_drift


def report_key(row: models.ModelVersionRow, run: runs.EvaluationRunRow) -> str:
    """The report's object key for this attempt of the run (:mod:`.report_keys`): the report
    step and the store step read the same run row, so they agree."""
    return evaluation_report_key(row.model_name, row.version, run_id=run.evaluation_run_id,
                                 attempt=run.attempt, started_at=run.started_at)


def _metric_rows(result: MetricsResult) -> tuple[Any, ...]:
    """The candidate's metrics beside the champion's and the paired deltas, from their records."""
    deltas = {} if result.comparison is None else {
        r["metric_name"]: r for r in (d.to_record() for d in result.comparison.deltas)}
    rows = []
    for m in (m.to_record() for m in result.candidate.metrics):
        if m["value"] is None:
            continue  # undefined metrics are reported by the gate with their reason
        # a value without an interval (a regression on one row, no resamples) is shown, its
        # interval n/a: leaving it out read as if the metric were not computed
        d = deltas.get(m["metric_name"], {})
        rows.append(MetricRow(m["metric_name"], m["value"], m["ci_lower"], m["ci_upper"],
                              d.get("champion"), d.get("value"), d.get("ci_lower"), d.get("ci_upper"),
                              m["n"]))
    return tuple(rows)


def shown_verdict(check: dict[str, Any]) -> str:
    """A gate check's verdict as the report shows it: ``inconclusive`` as it is (whether it
    blocked or warned is in the decision), a breach or failure that only warned as ``warn``.

    >>> [shown_verdict({"verdict": v, "effect": e})
    ...  for v, e in (("breach", "warn"), ("breach", "block"), ("inconclusive", "warn"))]
    ['warn', 'breach', 'inconclusive']
    """
    if check["effect"] == "warn" and check["verdict"] != "inconclusive":
        return "warn"
    return str(check["verdict"])


def _nan_if_none(value: float | None) -> float:
    """A record's undefined number (None) as the views' NaN, which pages show as ``n/a``."""
    return math.nan if value is None else value


def _fairness_sections(reports: dict[str, Any], checks: Sequence[dict[str, Any]]) -> tuple[Any, ...]:
    """One report section per sensitive feature; a multiclass model's per class (one-vs-rest).

    ``checks`` are the gate's check records: a gap shows its fairness check's limit and verdict
    (``skipped`` when no check judged it)."""
    judged = {(c["sensitive_feature"], c["metric_name"]): c for c in checks if c["kind"] == "fairness"}
    nan = _nan_if_none
    sections = []
    for s in fairness_records(reports):
        gaps = []
        for g in s.gaps:
            check = judged.get((s.sensitive_feature, g["metric_name"]))
            gaps.append(GapRow(g["metric_name"], nan(g["value"]), nan(g["ci_lower"]), nan(g["ci_upper"]),
                               None if check is None else check["upper"],
                               "skipped" if check is None else shown_verdict(check),
                               driving_text(g, s.rate_groups or s.error_groups)))
        rates = tuple(GroupRow(g["group_label"], g["n"], nan(g["base_rate"]), nan(g["selection_rate"]),
                               nan(g["tpr"]), nan(g["fpr"]), nan(g["ppv"]), nan(g["fnr"]),
                               g["is_small_group"], g["positives"], g["negatives"],
                               g["predicted_positives"], nan(g["accuracy"]), nan(g["roc_auc"]),
                               nan(g["roc_auc_error_bound"]), g.get("tpr_ci_lower"),
                               g.get("tpr_ci_upper"), g.get("fpr_ci_lower"), g.get("fpr_ci_upper"))
                       for g in s.rate_groups)
        errors = tuple(ErrorGroupRow(g["group_label"], g["n"], nan(g["mae"]), nan(g["rmse"]),
                                     nan(g["mean_prediction"]), nan(g["mean_error"]), g["is_small_group"])
                       for g in s.error_groups)
        title = (f"{s.sensitive_feature} — class {s.class_label} (one-vs-rest)" if s.one_vs_rest
                 else s.sensitive_feature)
        sections.append(FairnessSection(title, rates, tuple(gaps), errors))
    return tuple(sections)


def _gate_view(decision: dict[str, Any], checks: Sequence[dict[str, Any]]) -> Any:
    """The gate's decision and checks, from their records."""
    rows = tuple(GateCheckRow(c["kind"], c["metric_name"], c["sensitive_feature"], c["threshold_text"],
                              c["observed"], c["ci_lower"], c["ci_upper"], c["n"], shown_verdict(c),
                              c["severity"], c["reason"]) for c in checks)
    return GateView(decision["passed"], decision["summary"], rows)


def render_report(ctx: Context, ref: RunRef) -> str:
    """Render the self-contained HTML report, store it, return a link for people."""
    run = runs.get_evaluation_run(ctx.db_url, ref.evaluation_run_id)
    row = candidate_row(ctx, run)
    metrics_result: MetricsResult = get_pickle(ctx, f"{ref.prefix()}/metrics.pkl")
    fairness_reports = get_pickle(ctx, f"{ref.prefix()}/fairness.pkl")
    shap: ExplainResult = get_pickle(ctx, f"{ref.prefix()}/explain.pkl")
    decided: DecisionResult = get_pickle(ctx, f"{ref.prefix()}/decision.pkl")
    binary = metrics_result.task == model_tasks.BINARY
    calibration = tuple(
        CalibrationRow(**b.to_record()) for b in metrics_result.candidate.calibration.bins
        if b.n > 0) if binary else ()
    checks = [c.to_record() for c in decided.decision.checks]
    view = EvaluationReportView(
        title=f"Evaluation of {row.model_name} v{row.version}", model_name=row.model_name,
        model_version=row.version, model_sha256=row.sha256,
        data_fingerprint=str(run.dataset_sha256), dataset_name=run.dataset_uri,
        run_id=f"{run.evaluation_run_id} ({ref.run_key})",
        created_at=run.started_at.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        provider=run.provider or "unknown", rows_scored=run.rows_scored or 0,
        metrics=_metric_rows(metrics_result), calibration=calibration,
        fairness=_fairness_sections(fairness_reports, checks),
        shap_importance=shap.importance,
        waterfalls=tuple(WaterfallImage(label, why, png) for label, why, png in shap.waterfalls),
        gate=_gate_view(decided.decision.to_record(), checks),
        drift_context=_drift_context(ctx, row.model_name),
        budget_notes=(f"{shap.algorithm} SHAP, {shap.rows_explained} rows explained "
                      f"({shap.global_rows} for global importance), background {shap.background_rows} "
                      f"rows, " + ("" if shap.algorithm.endswith("_interventional") else
                                   f"{shap.evaluations_per_row} coalitions/row, ") + "max additivity error "
                      f"{shap.max_additivity_error:.1e}, " + _shap_error_note(shap) + "; "
                      + _metrics_note(metrics_result)),
        **policy_provenance.report_fields(runs.get_policy(ctx.db_url, ref.evaluation_run_id)),
        champion_version=(None if run.champion_version_id is None
                          else model_row(ctx, run.champion_version_id).version),
        **shap_report.report_views(getattr(shap, "summaries", None)),
        shap_output_space=getattr(shap, "output", ""),  # "" on a result pickled before it was kept
        **segments_step.report_parts(segments_step.load_segments(ctx, ref),
                                     load_checked_policy(ctx, ref).policy.segments),
    )
    key = report_key(row, run)
    ctx.store.put_bytes(key, render_evaluation_report(view).encode(), content_type="text/html")
    return ctx.store.link(key, expiry_s=ctx.settings.presign_expiry_s)


def _space_words(output: str) -> str:
    """How the report names the space the values explain."""
    return {"logit": "log-odds (margin before the sigmoid), not the probability",
            "margin": "class score (margin before the softmax), not the probability",
            "value": "predicted value"}.get(output, output or "probability")


def _shap_error_note(shap: ExplainResult) -> str:
    """How far off the SHAP values may be, for the report's budget line."""
    if shap.algorithm == "exact":
        return "values exact (every coalition evaluated)"
    if shap.algorithm.endswith("_interventional"):
        model = "trees" if shap.algorithm.startswith("tree") else "linear model"
        return (f"values exact (interventional SHAP read from the graph's {model}), explaining "
                f"the {_space_words(shap.output)}")
    worst = max(zip(shap.importance_se, shap.importance, strict=True), default=None)
    top = (f"; largest on the importance of {worst[1][0]}: mean |SHAP| {worst[1][1]:.4f} "
           f"+/- {worst[0]:.4f}") if worst else ""

    return (f"values estimated: largest standard error of a value {shap.max_standard_error:.1e} "
            f"(waterfalls show +/- 1 standard error and hatch values whose "
            f"{interval_words(DEFAULT_N_PERMUTATIONS)} crosses 0; each standard error is pooled "
            "with its row's, so it cannot vanish where the pairs happened to agree)" + top)


def _metrics_note(result: MetricsResult) -> str:
    """How the metrics were computed, for the report's budget line."""
    if result.task == model_tasks.MULTICLASS:
        return ("multiclass: SHAP explains each row's predicted class; fairness is one-vs-rest "
                "per class; metrics exact on every row")
    if result.task == model_tasks.REGRESSION:
        return "regression: SHAP explains the predicted value; metrics exact on every row"
    return ("ROC AUC " + ("exact" if result.auc_error_bound == 0 else
                          f"within {result.auc_error_bound:.1e} (scores pooled on a grid)")
            + f" from {result.distinct_scores} distinct scores")


def _drift_context(ctx: Context, model_name: str) -> str | None:
    """The production model's latest drift status, shown beside a candidate's evaluation."""
    record = production_drift(ctx.db_url, model_name)
    if record is None:
        return None
    version, drifting, status = record.version, record.is_drifting, record.status
    start, end, breached = record.interval_start, record.interval_end, record.n_features_breached
    if status is None:
        return f"Production model v{version}: no drift run recorded yet."
    return (f"Production model v{version} is {'DRIFTING' if drifting else 'not drifting'}; "
            f"latest drift run {start:%Y-%m-%d}..{end:%Y-%m-%d}: {status}"
            f"{f', {breached} feature(s) breached' if breached else ''}.")
