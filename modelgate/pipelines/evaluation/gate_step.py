"""The gate: the checked policy applied to the results (``decide``, pure: nothing is promoted),
and a blocked decision made the run's failure (``enforce_gate``)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from modelgate.evaluation import decide as gate_decide
from modelgate.pipelines.context import Context
from modelgate.pipelines.evaluation import segments_step
from modelgate.pipelines.evaluation.metrics_step import MetricsResult
from modelgate.pipelines.evaluation.policy_loading import load_checked_policy
from modelgate.pipelines.evaluation.run_refs import (
    EvaluationBlocked,
    RunRef,
    candidate_row,
    get_pickle,
    put_pickle,
)
from modelgate.store import runs

if TYPE_CHECKING:  # annotations only
    from modelgate.evaluation import GateDecision

log = logging.getLogger("modelgate.evaluate")


@dataclass(frozen=True, slots=True)
class DecisionResult:
    decision: GateDecision
    policy_sha256: str
    had_champion: bool


def decide(ctx: Context, ref: RunRef) -> str:
    """Apply the promotion policy ``prepare`` checked to the results (pure decision; nothing
    is promoted here)."""
    candidate_row(ctx, runs.get_evaluation_run(ctx.db_url, ref.evaluation_run_id))  # pinned archive
    checked = load_checked_policy(ctx, ref)
    policy, policy_sha = checked.policy, checked.sha256
    metrics_result: MetricsResult = get_pickle(ctx, f"{ref.prefix()}/metrics.pkl")
    fairness_reports = get_pickle(ctx, f"{ref.prefix()}/fairness.pkl")
    champion = metrics_result.champion.by_name() if metrics_result.champion else None
    deltas = metrics_result.comparison.by_name() if metrics_result.comparison else None
    found = segments_step.load_segments(ctx, ref)
    decision = gate_decide(metrics_result.candidate.by_name(), champion, fairness_reports,
                           policy, deltas=deltas, segments=None if found is None else found.report)
    # each blocking or warning check's line: "blocked: breached" reads apart from
    # "blocked: inconclusive at n = 228", with the interval and the group counts
    log.info("gate decision for run %d: %s", ref.evaluation_run_id, decision.summary)
    result = DecisionResult(decision, policy_sha, champion is not None)
    return put_pickle(ctx, f"{ref.prefix()}/decision.pkl", result)


def enforce_gate(ctx: Context, ref: RunRef) -> None:
    """Raise :class:`EvaluationBlocked` listing each breach when the stored decision blocked."""
    record = runs.get_gate_decision(ctx.db_url, ref.evaluation_run_id)
    if record is None:
        raise LookupError(f"evaluation run {ref.evaluation_run_id} has no stored gate decision")
    passed, summary = record
    if not passed:
        raise EvaluationBlocked(summary)
