"""The evaluation's ``promote`` step: a passed candidate becomes production and the champion
is archived, after the ``reference_sketch`` step (:mod:`.reference_sketch_step`) made sure
of its drift reference sketch."""

from __future__ import annotations

import logging

from modelgate.pipelines.context import Context
from modelgate.pipelines.evaluation import policy_provenance
from modelgate.pipelines.evaluation.run_refs import EvaluationBlocked, RunRef, candidate_row
from modelgate.store import models, runs

log = logging.getLogger("modelgate.evaluate")


def promotion_candidate(ctx: Context, ref: RunRef) -> models.ModelVersionRow | None:
    """The candidate a passed run may promote; None when it is in production already.

    Raises :class:`EvaluationBlocked` when the run did not pass, and refuses a promotion under
    a looser policy not allowed (checked when the run started too; this guards a
    ``reference_sketch`` or ``promote`` task run on its own).
    """
    run = runs.get_evaluation_run(ctx.db_url, ref.evaluation_run_id)
    if run.status != "passed":
        raise EvaluationBlocked(f"evaluation run {run.evaluation_run_id} is {run.status!r}, not passed")
    row = candidate_row(ctx, run)
    if row.stage == "production":
        return None
    policy_provenance.check_promotion(runs.get_policy(ctx.db_url, run.evaluation_run_id),
                                      promote=True)
    return row


def promote(ctx: Context, ref: RunRef, sketch_key: str | None = None) -> str:
    """Promote a passed candidate: it becomes production, the champion is archived.

    ``sketch_key`` is what the ``reference_sketch`` step before it returned (the step graph
    runs it first: a version that cannot be monitored is not promoted), None for a model
    that is not monitored.
    """
    run = runs.get_evaluation_run(ctx.db_url, ref.evaluation_run_id)
    row = promotion_candidate(ctx, ref)
    if row is None:
        row = candidate_row(ctx, run)
        return f"{row.model_name} v{row.version} is already in production"
    archived = models.promote(ctx.db_url, run.model_version_id,
                              expected_champion_id=run.champion_version_id,
                              evaluation_run_id=run.evaluation_run_id)
    text = f"promoted {row.model_name} v{row.version} to production"
    if archived is not None:
        text += f"; archived version id {archived}"
    if sketch_key is not None:
        text += "; built its drift reference sketch"
    log.info(text)
    return text
