"""The evaluation's ``fairness`` step: the fairness reports per sensitive feature from the
merged statistics."""

from __future__ import annotations

import logging

from modelgate.fairness.disaggregate import table_from_counts
from modelgate.fairness.group_scores import with_group_auc
from modelgate.fairness.metrics import fairness_report_from_table
from modelgate.onnx.manifest import Manifest
from modelgate.pipelines.context import Context
from modelgate.pipelines.evaluation import model_tasks
from modelgate.pipelines.evaluation.run_refs import RunRef, candidate_row, put_pickle
from modelgate.pipelines.evaluation.score_step import BOOTSTRAP_SEED, N_BOOTSTRAP, load_statistics
from modelgate.store import runs

log = logging.getLogger("modelgate.evaluate")


# Groups below the minimum group size (MODELGATE_MIN_GROUP_SIZE, default 30) are reported and
# flagged but kept out of the gaps the gate judges: a gap driven by a handful of rows is noise,
# not evidence. Each gap lists the groups it left out (FairnessEstimate.excluded_groups) and the
# report flags them.
INCLUDE_SMALL_GROUPS_IN_GAPS = False


def compute_fairness(ctx: Context, ref: RunRef) -> str:
    """One disaggregated table and the gaps per sensitive feature, with bootstrap intervals,
    from the partitions' merged group counts."""
    manifest = candidate_row(ctx, runs.get_evaluation_run(ctx.db_url, ref.evaluation_run_id)).manifest
    if model_tasks.task_of(manifest) != model_tasks.BINARY:
        return _compute_task_fairness(ctx, ref, manifest)
    reports = {}
    merged = load_statistics(ctx, ref)
    assert merged.statistics is not None  # a binary run's partitions always carry their statistics
    scores = {t.feature: t for t in merged.group_scores}
    for counted in merged.statistics.groups:
        feature = counted.feature
        table = table_from_counts(counted.labels, counted.counts,
                                  min_group_size=ctx.settings.min_group_size)
        if feature in scores:  # statistics pickled before group score tables existed have none
            table = with_group_auc(table, scores[feature])
        reports[feature] = fairness_report_from_table(
            table, sensitive_feature=feature,
            include_small_groups=INCLUDE_SMALL_GROUPS_IN_GAPS,
            n_bootstrap=N_BOOTSTRAP, seed=BOOTSTRAP_SEED,
        )
        small = [g.group for g in reports[feature].table.groups if g.small_group]
        if small:
            log.warning("sensitive feature %r: groups smaller than %d rows are reported and "
                        "flagged, and left out of the gaps: %s",
                        feature, ctx.settings.min_group_size, small)
    return put_pickle(ctx, f"{ref.prefix()}/fairness.pkl", reports)


def _compute_task_fairness(ctx: Context, ref: RunRef, manifest: Manifest) -> str:
    """Multiclass (one-vs-rest per class) or regression (group errors) fairness from the
    partitions' scored columns, concatenated."""
    columns = [manifest.label.column, "prediction", *manifest.sensitive_features]
    with ctx.attempt_scratch("evaluation", ref.run_key, "fairness") as work:
        table = model_tasks.read_scores(ctx, load_statistics(ctx, ref).partitions,
                                           list(dict.fromkeys(columns)), work)
    reports = model_tasks.compute_fairness(
        table, manifest, min_group_size=ctx.settings.min_group_size,
        include_small_groups=INCLUDE_SMALL_GROUPS_IN_GAPS, n_bootstrap=N_BOOTSTRAP,
        seed=BOOTSTRAP_SEED)
    for feature, report in reports.items():
        small = model_tasks.small_groups(report)
        if small:
            log.warning("sensitive feature %r: groups smaller than %d rows are reported and "
                        "flagged, and left out of the gaps: %s",
                        feature, ctx.settings.min_group_size, small)
    return put_pickle(ctx, f"{ref.prefix()}/fairness.pkl", reports)
