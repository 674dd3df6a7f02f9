"""The evaluation's ``promote`` step: a passed candidate becomes production and the champion
is archived."""

from __future__ import annotations

import logging

from modelgate.pipelines.context import Context
from modelgate.pipelines.evaluation import policy_provenance
from modelgate.pipelines.evaluation.run_refs import EvaluationBlocked, RunRef, candidate_row
from modelgate.store import models, runs

log = logging.getLogger("modelgate.evaluate")


def promote(ctx: Context, ref: RunRef) -> str:
    """Promote a passed candidate: it becomes production, the champion is archived."""
    run = runs.get_evaluation_run(ctx.db_url, ref.evaluation_run_id)
    if run.status != "passed":
        raise EvaluationBlocked(f"evaluation run {run.evaluation_run_id} is {run.status!r}, not passed")
    row = candidate_row(ctx, run)
    if row.stage == "production":
        return f"{row.model_name} v{row.version} is already in production"
    # checked when the run started too; this guards a promote task run on its own
    policy_provenance.check_promotion(runs.get_policy(ctx.db_url, run.evaluation_run_id),
                                      promote=True)
    from modelgate.pipelines.drift.monitor import reference_on_promotion

    # the sketch first: a version that cannot be monitored is not promoted
    sketched = reference_on_promotion(ctx, row) is not None
    archived = models.promote(ctx.db_url, run.model_version_id,
                              expected_champion_id=run.champion_version_id,
                              evaluation_run_id=run.evaluation_run_id)
    text = f"promoted {row.model_name} v{row.version} to production"
    if archived is not None:
        text += f"; archived version id {archived}"
    if sketched:
        text += "; built its drift reference sketch"
    log.info(text)
    return text
