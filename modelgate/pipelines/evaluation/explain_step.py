"""The evaluation's ``explain`` step: SHAP values of a seeded sample of held-out rows, by the
algorithm the model's graph allows (:mod:`modelgate.pipelines.shap_trees`)."""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from modelgate.onnx.manifest import Manifest
from modelgate.pipelines import shap_trees
from modelgate.pipelines.context import Context, load_registered_model
from modelgate.pipelines.evaluation import model_tasks, partitions, row_sample, shap_report
from modelgate.pipelines.evaluation.run_refs import RunRef, candidate_row, put_pickle
from modelgate.pipelines.evaluation.score_step import (
    labels_from_scores,
    load_statistics,
)
from modelgate.reports import explain as shap_explain
from modelgate.reports import (
    explain_class,
    global_importance,
    importance_standard_errors,
    select_error_rows,
    select_rows,
)
from modelgate.store import runs

log = logging.getLogger("modelgate.evaluate")


SHAP_GLOBAL_ROWS = 50


SHAP_SEED = 0


# Rows drawn (seeded, across partitions) for SHAP: the background, the global sample and
# the rows the waterfalls are chosen from all come from this sample, so memory does not
# grow with the dataset.
SHAP_SAMPLE_ROWS = 5000


@dataclass(frozen=True, slots=True)
class ExplainResult:
    importance: tuple[tuple[str, float], ...]
    global_rows: int
    waterfalls: tuple[tuple[str, str, bytes], ...]  # (row label, why chosen, png)
    algorithm: str
    background_rows: int
    evaluations_per_row: int
    max_additivity_error: float
    rows_explained: int
    # estimator's standard error of each importance (same order; 0 when exact), and the
    # largest standard error of any value explained
    importance_se: tuple[float, ...] = ()
    max_standard_error: float = 0.0
    # beeswarm and per-group SHAP of the global sample (shap_report.ShapSummaries)
    summaries: Any = None
    # the space the values explain ("probability", "logit", "margin", "value"), and why
    # the graph's SHAP values were not read from its trees (shap_trees.TreeRoute.reason)
    output: str = ""
    algorithm_note: str = ""


def explain(ctx: Context, ref: RunRef) -> str:
    """SHAP values through batched ONNX Runtime calls: global importance and waterfalls."""
    # matplotlib, for the waterfalls, loads when a run explains: ``modelgate evaluate`` imports
    # this module at start for ExplainResult
    from modelgate.reports import waterfall_png

    run = runs.get_evaluation_run(ctx.db_url, ref.evaluation_run_id)
    row = candidate_row(ctx, run)
    task = model_tasks.task_of(row.manifest)
    columns = (["score", "prediction"] if task == model_tasks.BINARY
               else model_tasks.prediction_columns(row.manifest))
    sensitive, label = list(row.manifest.sensitive_features), row.manifest.label.column
    # The scoring engine (onnx, onnxruntime: seconds) is imported where the session opens: the
    # report and store tasks import this module (explain.pkl's class) and never score.
    from modelgate.onnx.scoring import open_session, settings_from_os_environ

    with ctx.attempt_scratch("explain", ref.run_key) as work:
        loaded = load_registered_model(ctx, row, work)
        scorer = open_session(loaded, settings_from_os_environ())
    features = list(scorer.feature_names)
    # the seeded sample's scores first; the features only of the rows explained, read from the
    # row groups that hold them
    parts = load_statistics(ctx, ref).partitions
    offsets = partitions.sample_positions([rows for _, _, rows, _ in parts], SHAP_SAMPLE_ROWS, SHAP_SEED)
    table = row_sample.sample_scores(ctx.store, parts, offsets, [label, *(
        c for c in dict.fromkeys([*columns, *sensitive]) if c != label)])
    rng = np.random.default_rng(SHAP_SEED)
    in_background = np.sort(rng.choice(table.num_rows, min(100, table.num_rows), replace=False))
    in_sample = np.sort(rng.choice(table.num_rows, min(SHAP_GLOBAL_ROWS, table.num_rows), replace=False))
    if task == model_tasks.BINARY:
        y = labels_from_scores(table, row.manifest)
        scores, preds = table.column("score").to_numpy(), table.column("prediction").to_numpy()
        chosen = select_rows(scores, y, preds, seed=SHAP_SEED)
        described = [f"(score {scores[i]:.3f}, label {int(y[i])})" for i in chosen.indices]
    else:
        chosen, described = _chosen_rows(table, row.manifest)
    needed = np.union1d(np.union1d(in_background, in_sample), np.asarray(chosen.indices, dtype=np.int64))
    feature_rows, names = row_sample.sample_features(ctx.store, parts, offsets, needed, features,
                                                     id_column=row.manifest.id_column)
    data = feature_rows.to_pandas().set_axis(needed)  # indexed by position in the sample
    background = data.loc[in_background]
    sample = data.loc[in_sample]
    # exact from the trees when the graph is a tree ensemble whose output they reproduce
    # on every row of the sample and the background
    route = shap_trees.tree_route(loaded.onnx_bytes, scorer,
                                  data.loc[np.union1d(in_sample, in_background)][features])
    explainer = _explainer(scorer, task, features, route)
    overall = _explain_with_progress(explainer, sample, background)
    explained = None  # multiclass: each row explains its predicted class; one summary per class
    if task == model_tasks.MULTICLASS:
        classes = model_tasks.classes_of(row.manifest)
        explained = [classes[int(k)] for k in table.column("prediction").take(in_sample).to_pylist()]
    summaries = shap_report.summarise(
        overall, {s: table.column(s).take(in_sample).to_pylist() for s in sensitive},
        explained_class=explained)
    labels = [f"{names[i]} {words}" for i, words in zip(chosen.indices, described, strict=True)]
    # the waterfalls' rows are computed the way the global importance was
    picked = _explain_with_progress(explainer, data.loc[list(chosen.indices)], background,
                                    algorithm=overall.algorithm)
    titles = [f"{names[i]}: {', '.join(reasons)}" for i, reasons in zip(chosen.indices, chosen.reasons,
                                                                        strict=True)]
    if task == model_tasks.MULTICLASS:
        classes, predicted = model_tasks.classes_of(row.manifest), table.column("prediction").to_numpy()
        titles = shap_report.multiclass_titles(titles, [classes[predicted[i]] for i in chosen.indices],
                                               space=picked.output)
    waterfalls = tuple((label, ", ".join(reasons), waterfall_png(picked, k, title=title))
                       for k, (reasons, label, title) in enumerate(zip(chosen.reasons, labels, titles,
                                                                       strict=True)))
    gaps = [np.abs(e.base_values + e.values.sum(axis=1) - e.model_output).max() for e in (overall, picked)]
    importance = global_importance(overall)
    errors = importance_standard_errors(overall)
    result = ExplainResult(
        importance=importance, global_rows=len(sample), waterfalls=waterfalls,
        algorithm=overall.algorithm, background_rows=len(background),
        evaluations_per_row=overall.budget.evaluations_per_row,
        max_additivity_error=float(max(gaps)), rows_explained=len(sample) + len(chosen.indices),
        importance_se=tuple(errors[f] for f, _ in importance),
        max_standard_error=float(max(e.standard_errors.max(initial=0.0) for e in (overall, picked))),
        summaries=summaries, output=overall.output, algorithm_note=route.reason,
    )
    log.info("explained %d rows (%s, %d evaluations/row, background %d), max additivity error %.2e, "
             "max standard error %.2e", result.rows_explained, result.algorithm,
             result.evaluations_per_row, result.background_rows, result.max_additivity_error,
             result.max_standard_error)
    return put_pickle(ctx, f"{ref.prefix()}/explain.pkl", result)


def _explainer(scorer: Any, task: str, features: list[str], route: Any = None) -> Any:
    """``explainer(rows, background, seed)`` -> Explanation of what a report explains per
    task: the positive class's probability (binary), each row's predicted class's
    probability (multiclass) or the predicted value (regression); exact tree values (in
    the trees' margin space) when ``route`` has trees."""
    def explainer(rows: Any, background: Any, seed: int, algorithm: str = "auto") -> Any:
        if route is not None and route.trees is not None and algorithm in (
                "auto", "tree_interventional", "linear_interventional"):
            return shap_trees.explain_with_trees(route, scorer, rows, background, seed=seed)[0]
        options: dict[str, Any] = {"features": features, "seed": seed, "algorithm": algorithm}
        if task == model_tasks.REGRESSION:
            return shap_explain(scorer.predict_value, rows, background, output="value", **options)
        if task == model_tasks.MULTICLASS:
            return explain_class(scorer.predict_class_proba, rows, background, **options)[0]
        return shap_explain(scorer.predict_proba, rows, background, **options)

    return explainer


def _chosen_rows(table: pa.Table, manifest: Manifest) -> tuple[Any, list[str]]:
    """Rows of a multiclass or regression model worth a waterfall (largest and smallest
    error, random), and how each is described after its name; the error is ``1 - p(true class)`` or
    ``|prediction - label|``."""

    y = model_tasks.targets(table, manifest)
    pred = table.column("prediction").to_numpy()
    if model_tasks.task_of(manifest) == model_tasks.REGRESSION:
        chosen = select_error_rows(np.abs(pred - y), seed=SHAP_SEED)
        return chosen, [f"(prediction {pred[i]:.4g}, label {y[i]:.4g})"
                        for i in chosen.indices]
    classes = model_tasks.classes_of(manifest)
    proba = np.column_stack([table.column(f"proba_{k}").to_numpy() for k in range(len(classes))])
    chosen = select_error_rows(1.0 - proba[np.arange(len(y)), y], seed=SHAP_SEED)
    score = table.column("score").to_numpy()
    return chosen, [f"(explained: predicted class {classes[pred[i]]!s} p={score[i]:.3f}, "
                    f"label {classes[y[i]]!s})" for i in chosen.indices]


SHAP_CHUNK_ROWS = 10


def _explain_with_progress(explainer: Any, rows: Any, background: Any, algorithm: str = "auto") -> Any:
    """Explain ``rows`` a chunk at a time with ``explainer(rows, background, seed, algorithm)``,
    logging rows/s and an ETA; one merged Explanation. Every chunk runs the algorithm the first
    chose (a smaller last chunk could otherwise fit the exact budget when the others did not)."""

    parts: list[Any] = []
    start = time.perf_counter()
    for first in range(0, len(rows), SHAP_CHUNK_ROWS):
        parts.append(explainer(rows.iloc[first:first + SHAP_CHUNK_ROWS], background,
                               SHAP_SEED + first, parts[0].algorithm if parts else algorithm))
        done, elapsed = min(first + SHAP_CHUNK_ROWS, len(rows)), time.perf_counter() - start
        log.info("SHAP: %d/%d rows (%.1f rows/s, ETA %.0f s)", done, len(rows), done / elapsed,
                 (len(rows) - done) * elapsed / done, extra={"progress": (done, len(rows), "rows")})
    return dataclasses.replace(parts[0], **{
        name: np.concatenate([getattr(p, name) for p in parts])
        for name in ("values", "base_values", "model_output", "feature_values", "standard_errors")})
