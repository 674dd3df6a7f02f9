"""The evaluation's ``metrics`` step: every metric with its interval, for the candidate, the
champion and their paired difference, from the merged statistics."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from modelgate.evaluation import performance_from_statistics
from modelgate.onnx.manifest import Manifest
from modelgate.pipelines.context import Context
from modelgate.pipelines.evaluation import model_tasks, segments_step
from modelgate.pipelines.evaluation.policy_loading import load_checked_policy
from modelgate.pipelines.evaluation.run_refs import RunRef, candidate_row, put_pickle
from modelgate.pipelines.evaluation.score_step import BOOTSTRAP_SEED, N_BOOTSTRAP, load_statistics
from modelgate.store import runs

if TYPE_CHECKING:  # annotations only
    from modelgate.evaluation import (
        ComparisonReport,
        MulticlassReport,
        PairedComparison,
        PerformanceReport,
        RegressionReport,
    )

log = logging.getLogger("modelgate.evaluate")


@dataclass(frozen=True, slots=True)
class MetricsResult:
    candidate: PerformanceReport | MulticlassReport | RegressionReport
    champion: PerformanceReport | MulticlassReport | RegressionReport | None  # same kind, same rows
    comparison: ComparisonReport | PairedComparison | None  # paired deltas
    distinct_scores: int | None = None  # rows of the candidate's merged score table (binary)
    auc_error_bound: float = 0.0  # 0: AUC exact; else the largest |reported - exact|
    task: str = "binary_classification"


def compute_metrics(ctx: Context, ref: RunRef) -> str:
    """Performance metrics of the candidate (and champion, paired) with bootstrap intervals,
    from the merged statistics (exact point metrics; multinomial bootstrap over the counts)."""
    run = runs.get_evaluation_run(ctx.db_url, ref.evaluation_run_id)
    manifest = candidate_row(ctx, run).manifest  # pinned archive
    if model_tasks.task_of(manifest) != model_tasks.BINARY:
        return _compute_task_metrics(ctx, ref, manifest, champion=run.champion_version_id is not None)
    merged = load_statistics(ctx, ref)
    statistics = merged.statistics
    assert statistics is not None  # a binary run's partitions always carry their statistics
    summary = performance_from_statistics(statistics, n_bootstrap=N_BOOTSTRAP, seed=BOOTSTRAP_SEED)
    log.info("metrics on %d rows with %d bootstrap resamples over %d count cells; %d distinct "
             "scores, AUC %s", statistics.n, N_BOOTSTRAP, len(statistics.bootstrap.cells),
             summary.distinct_scores, "exact" if summary.auc_error_bound == 0 else
             f"within {summary.auc_error_bound:.2e} (scores on a grid)")
    result = MetricsResult(summary.candidate, summary.champion, summary.comparison,
                           summary.distinct_scores, summary.auc_error_bound)
    # the segments' metrics and the weakest slices, beside the whole's (segments.pkl)
    segments_step.compute_segments(ctx, ref, getattr(merged, "segments", None),
                                   load_checked_policy(ctx, ref).policy.segments,
                                   n_bootstrap=N_BOOTSTRAP, seed=BOOTSTRAP_SEED)
    return put_pickle(ctx, f"{ref.prefix()}/metrics.pkl", result)


def _compute_task_metrics(ctx: Context, ref: RunRef, manifest: Manifest, *,
                          champion: bool) -> str:
    """Multiclass or regression metrics from the partitions' scored columns, concatenated."""
    task = model_tasks.task_of(manifest)
    scored = load_statistics(ctx, ref).partitions
    model_tasks.check_memory(manifest, sum(p[2] for p in scored), champion=champion,
                                n_bootstrap=N_BOOTSTRAP, limit_mb=ctx.settings.eval_memory_limit_mb)
    probabilities = None
    with ctx.attempt_scratch("evaluation", ref.run_key, "metrics") as work:
        if task == model_tasks.MULTICLASS:
            table, probabilities = model_tasks.read_multiclass_scores(ctx, scored, manifest,
                                                                      champion, work)
        else:
            table = model_tasks.read_scores(
                ctx, scored, model_tasks.score_columns(manifest, champion), work)
        candidate, champion_report, comparison = model_tasks.compute_metrics(
            table, manifest, champion=champion, n_bootstrap=N_BOOTSTRAP, seed=BOOTSTRAP_SEED,
            probabilities=probabilities)
        # the segments' metrics from the same rows (segments.pkl)
        segments_step.compute_task_segments(ctx, ref, load_checked_policy(ctx, ref).policy.segments,
                                            manifest, table, probabilities, scored, work,
                                            n_bootstrap=N_BOOTSTRAP, seed=BOOTSTRAP_SEED)
    log.info("%s metrics on %d rows with %d bootstrap resamples%s", task, table.num_rows,
             N_BOOTSTRAP, " (paired with the champion)" if champion else "")
    result = MetricsResult(candidate, champion_report, comparison, task=task)
    return put_pickle(ctx, f"{ref.prefix()}/metrics.pkl", result)
