"""Multivariate and attribution drift steps of the drift pipeline.

Kept apart from :mod:`modelgate.pipelines.drift.feature_steps` so the per-feature pipeline stays as it is:
``prepare`` calls :func:`ensure_references` once per model version, the ``joint_drift`` task
calls :func:`joint_drift` per interval, and the report, store and decide steps read its result
with :func:`load_result`.

- Multivariate: the numeric features of the manifest, standardised by the reference, compared
  with the sliced Wasserstein distance (:mod:`modelgate.drift.multivariate`).
- Attribution: SHAP values (the project's estimator, a fixed budget) of at most
  ``ATTRIBUTION_LIVE_ROWS`` sampled live rows against the same background rows as the
  reference profile, which is measured once per model version on ``ATTRIBUTION_REFERENCE_ROWS``
  rows of the reference dataset (:mod:`modelgate.drift.attribution`).
"""

from __future__ import annotations

import logging
import pickle
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow.parquet as pq

from modelgate.onnx.manifest import Manifest
from modelgate.onnx.scoring import open_session, settings_from_os_environ
from modelgate.pipelines import stored_pickles
from modelgate.pipelines.context import Context, fetch_dataset, load_registered_model, safe_key_part
from modelgate.pipelines.drift.sample import interval_seed, sample_path
from modelgate.pipelines.drift.usable import scored_rows
from modelgate.pipelines.payloads import LiveSample
from modelgate.store import drift_joint, models

if TYPE_CHECKING:  # annotations only: drift.multivariate loads POT, imported where a step measures
    from modelgate.drift import AttributionDrift, MultivariateDrift

log = logging.getLogger("modelgate.drift")

ATTRIBUTION_REFERENCE_ROWS = 100
ATTRIBUTION_LIVE_ROWS = 50
BACKGROUND_ROWS = 100
SHAP_SEED = 0
_KEYS = {"multivariate": ("relative", "floor"), "attribution": ("relative", "floor")}


@dataclass(frozen=True, slots=True)
class JointResult:
    multivariate: MultivariateDrift | None  # None without a reference
    attribution: AttributionDrift | None  # None without a reference


def split_thresholds(spec: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, dict[str, float]]]:
    """Per-feature thresholds and the ``multivariate``/``attribution`` ones, checked.

    >>> split_thresholds({"relative": 2.0, "multivariate": {"floor": 0.1}})
    ({'relative': 2.0}, {'multivariate': {'floor': 0.1}, 'attribution': {}})
    """
    rest = dict(spec or {})
    joint = {}
    for name, allowed in _KEYS.items():
        part = dict(rest.pop(name, None) or {})
        unknown = sorted(set(part) - set(allowed))
        if unknown:
            raise ValueError(f"drift thresholds[{name!r}]: unknown key(s) {unknown}; "
                             f"expected {list(allowed)}")
        joint[name] = {k: float(v) for k, v in part.items()}
    return rest, joint


def _numeric(manifest: Manifest) -> list[str]:
    return [f.name for f in manifest.features if f.kind == "numeric"]


def _reference_prefix(row: models.ModelVersionRow) -> str:
    return f"references/{safe_key_part(row.model_name)}/{safe_key_part(row.version)}"


def ensure_references(ctx: Context, row: models.ModelVersionRow, reference_uri: str) -> None:
    """Build the multivariate reference and the attribution profile once per model version."""

    need_mv = bool(_numeric(row.manifest)) and drift_joint.get_multivariate_reference(
        ctx.db_url, row.model_version_id) is None
    need_attr = drift_joint.get_attribution_reference(ctx.db_url, row.model_version_id) is None
    if not (need_mv or need_attr):
        return
    if not reference_uri:
        log.warning("%s v%s has no multivariate/attribution reference and no reference dataset was "
                    "given; those checks are skipped", row.model_name, row.version)
        return
    work = ctx.scratch("joint-reference", row.model_name, row.version)
    data = fetch_dataset(ctx, reference_uri, work)
    if need_mv:
        _build_multivariate(ctx, row, data)
    if need_attr:
        _build_attribution(ctx, row, data, work)
    ctx.discard_scratch("joint-reference", row.model_name, row.version)


def _build_multivariate(ctx: Context, row: models.ModelVersionRow, data: Any) -> None:
    # imported here (and below): only the joint steps need POT and SHAP; the report,
    # store and decide tasks load this module for load_result
    from modelgate.drift import build_multivariate_reference

    features = _numeric(row.manifest)
    table = pq.read_table(data, columns=features)
    values = np.column_stack([table.column(f).to_numpy(zero_copy_only=False).astype(np.float64)
                              for f in features])
    reference = build_multivariate_reference(values, features=features)
    key = f"{_reference_prefix(row)}/multivariate.npz"
    uri = ctx.store.put_bytes(key, reference.to_bytes(), content_type="application/octet-stream")
    drift_joint.put_multivariate_reference(
        ctx.db_url, model_version_id=row.model_version_id, object_key=key, object_uri=uri,
        features=features, n_rows=reference.n, n_projections=int(reference.projections.shape[1]),
        baseline=reference.baseline)
    log.info("stored multivariate reference of %s v%s: %d features, %d rows", row.model_name,
             row.version, len(features), reference.n)


def _shap_values(scorer: Any, rows: Any, background: Any, features: list[str],
                 route: Any = None) -> Any:
    """SHAP values of what the model is judged on, per task: the positive class's probability
    (binary), each row's predicted class's probability (multiclass), the value (regression);
    exact and in the model's margin space when ``route`` (shap_trees.TreeRoute) has trees or
    a linear model."""
    from modelgate.pipelines import shap_trees
    from modelgate.reports import explain, explain_class

    options: dict[str, Any] = {"features": features, "seed": SHAP_SEED,
                               "max_rows": ATTRIBUTION_LIVE_ROWS}

    def one(chunk: Any) -> Any:
        task = scorer.manifest.task
        if route is not None and route.trees is not None:
            return shap_trees.explain_with_trees(route, scorer, chunk, background, seed=SHAP_SEED,
                                                 max_rows=ATTRIBUTION_LIVE_ROWS)[0]
        if task == "regression":
            return explain(scorer.predict_value, chunk, background, output="value", **options)
        if task == "multiclass_classification":
            return explain_class(scorer.predict_class_proba, chunk, background, **options)[0]
        return explain(scorer.predict_proba, chunk, background, **options)

    parts = [one(rows.iloc[i:i + ATTRIBUTION_LIVE_ROWS])
             for i in range(0, len(rows), ATTRIBUTION_LIVE_ROWS)]
    return np.concatenate([p.values for p in parts]), parts[0]


def _route(loaded: Any, scorer: Any, rows: Any, background: Any, features: list[str]) -> Any:
    """The exact route (trees or linear model) checked on ``rows`` and ``background``."""
    import pandas as pd

    from modelgate.pipelines import shap_trees

    frame = pd.concat([rows[features], background[features]], ignore_index=True)
    return shap_trees.tree_route(loaded.onnx_bytes, scorer, frame)


def _build_attribution(ctx: Context, row: models.ModelVersionRow, data: Any, work: Any) -> None:
    from modelgate.drift import build_attribution_reference

    loaded = load_registered_model(ctx, row, work)
    scorer = open_session(loaded, settings_from_os_environ())
    features = list(scorer.feature_names)
    frame = pq.read_table(data, columns=features).to_pandas()
    rng = np.random.default_rng(SHAP_SEED)
    order = rng.permutation(len(frame))
    background = frame.iloc[np.sort(order[:BACKGROUND_ROWS])]
    rows = frame.iloc[np.sort(order[BACKGROUND_ROWS:BACKGROUND_ROWS + ATTRIBUTION_REFERENCE_ROWS])]
    if len(rows) < 2:
        log.warning("reference of %s v%s has too few rows for an attribution profile", row.model_name,
                    row.version)
        return
    # exact values from the trees or linear model when the graph allows (its algorithm is
    # stored: every live interval then computes its values the same way)
    values, first = _shap_values(scorer, rows, background, features,
                                 _route(loaded, scorer, rows, background, features))
    reference = build_attribution_reference(values, features=features)
    key = f"{_reference_prefix(row)}/shap-background.parquet"
    background.to_parquet(work / "shap-background.parquet", index=False)
    uri = ctx.store.put_file(key, work / "shap-background.parquet",
                             content_type="application/vnd.apache.parquet")
    drift_joint.put_attribution_reference(
        ctx.db_url, model_version_id=row.model_version_id, reference=reference,
        algorithm=first.algorithm, evaluations_per_row=first.budget.evaluations_per_row,
        background_rows=len(background), background_key=key, background_uri=uri)
    log.info("stored attribution profile of %s v%s over %d rows", row.model_name, row.version, len(rows))


def result_key(prefix: str) -> str:
    return f"{prefix}/joint.pkl"


def joint_drift(ctx: Context, ref: Any, sample: LiveSample,
                thresholds: dict[str, Any] | None = None) -> str:
    """Multivariate and attribution drift of the interval's scored sample (one task)."""

    _, limits = split_thresholds(thresholds)
    result = JointResult(None, None)
    if sample["key"] is not None:
        frame = pq.read_table(sample_path(ctx, ref, sample["key"])).to_pandas()
        result = JointResult(_multivariate(ctx, ref, frame, limits["multivariate"], interval_seed(ref)),
                             _attribution(ctx, ref, scored_rows(frame), limits["attribution"],
                                          interval_seed(ref)))
    key = result_key(ref.prefix())
    ctx.store.put_bytes(key, pickle.dumps(result, protocol=5), content_type="application/octet-stream")
    return key


def _multivariate(ctx: Context, ref: Any, frame: Any, limits: dict[str, float], seed: int) -> Any:
    from modelgate.drift import MultivariateReference, multivariate_drift

    row = drift_joint.get_multivariate_reference(ctx.db_url, ref.model_version_id)
    if row is None:
        return None
    reference = MultivariateReference.from_bytes(ctx.store.get_bytes(row.object_key))
    values = frame[list(reference.features)].to_numpy(dtype=np.float64, na_value=np.nan)
    return multivariate_drift(reference, values, seed=seed, **limits)


def _attribution(ctx: Context, ref: Any, frame: Any, limits: dict[str, float], seed: int) -> Any:
    from modelgate.drift import AttributionReference, attribution_drift

    stored = drift_joint.get_attribution_reference(ctx.db_url, ref.model_version_id)
    if stored is None:
        return None
    reference = AttributionReference(
        stored.features, np.array(stored.shares), np.array(stored.mean_abs_shap), stored.n_rows,
        stored.baseline, stored.half_sizes, stored.null_sizes, stored.null_quantiles, stored.null_level)
    if len(frame) == 0:
        return attribution_drift(reference, np.empty((0, len(reference.features))), **limits)
    row = models.get_by_id(ctx.db_url, ref.model_version_id)
    work = ctx.scratch("joint-drift", ref.model_name, ref.version, ref.interval_start)
    loaded = load_registered_model(ctx, row, work)
    scorer = open_session(loaded, settings_from_os_environ())
    features = list(scorer.feature_names)
    background = pq.read_table(ctx.store.download(stored.background_key, work / "background.parquet"),
                               columns=features).to_pandas()
    take = np.sort(np.random.default_rng(seed).choice(len(frame), min(ATTRIBUTION_LIVE_ROWS, len(frame)),
                                                      replace=False))
    live = frame.iloc[take][features]
    route = None
    if stored.algorithm.endswith("_interventional"):  # the reference's values came from the model node
        route = _route(loaded, scorer, live, background, features)
        if route.trees is None:  # values of another kind would not compare with the reference's
            log.warning("attribution drift of %s v%s skipped: the reference was computed %s, which "
                        "these rows do not allow (%s)", ref.model_name, ref.version, stored.algorithm,
                        route.reason)
            ctx.discard_scratch("joint-drift", ref.model_name, ref.version, ref.interval_start)
            return None
    values, _ = _shap_values(scorer, live, background, features, route)
    order = [features.index(f) for f in reference.features]  # the store keeps shares by name
    ctx.discard_scratch("joint-drift", ref.model_name, ref.version, ref.interval_start)
    return attribution_drift(reference, values[:, order], **limits)


def load_result(ctx: Context, prefix: str) -> JointResult:
    """The run's result, or an empty one when the ``joint_drift`` step did not run."""
    key = result_key(prefix)
    if not ctx.store.exists(key):
        return JointResult(None, None)
    result: JointResult = stored_pickles.loads(ctx.store.get_bytes(key))
    return result


def breaches(result: JointResult) -> list[str]:
    """One line per breached multivariate/attribution check, for the decide step."""
    lines = []
    if result.multivariate is not None and result.multivariate.verdict == "drift":
        m = result.multivariate
        lines.append(f"multivariate ({len(m.features)} numeric features): sliced_wasserstein_{m.p} = "
                     f"{m.statistic:.4f} > threshold {m.threshold:.4f}")
    if result.attribution is not None and result.attribution.verdict == "drift":
        a = result.attribution
        lines.append(f"attribution: total_variation = {a.distance:.4f} > threshold {a.threshold:.4f}")
    return lines


def report_rows(result: JointResult) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """(JointDriftRow, ...) and (AttributionShareRow, ...) for the drift report."""
    from modelgate.reports import AttributionShareRow, JointDriftRow

    def verdict(v: str) -> str:
        return {"ok": "ok", "drift": "drift", "no_data": "warn"}[v]

    rows, shares = [], []
    if result.multivariate is not None:  # the numbers from its record, the feature names beside it
        m = result.multivariate.to_record()
        rows.append(JointDriftRow(
            "multivariate", f"sliced Wasserstein-{result.multivariate.p} ({m['n_projections']} directions)",
            m["statistic_value"], m["threshold"], m["baseline"], verdict(m["verdict"]),
            f"{', '.join(result.multivariate.features)}; {m['n_compared']} live rows"
            + (f", {m['n_incomplete_current']} incomplete left out" if m["n_incomplete_current"] else "")))
    if result.attribution is not None:
        a = result.attribution.to_record()
        rows.append(JointDriftRow(
            "attribution", "total variation of mean |SHAP| shares", a["statistic_value"], a["threshold"],
            a["baseline"], verdict(a["verdict"]),
            f"{a['n_current']} live rows explained vs {a['n_reference']} reference rows"))
        current = a["current_shares"]
        if current:
            shares = [AttributionShareRow(f, r, current[f]) for f, r in a["reference_shares"].items()]
    return tuple(rows), tuple(shares)


def metrics(ref: Any, *, drifting: bool, features_breached: int, adwin_change_points: int,
            result: JointResult) -> Any:
    """The run's metrics (see :mod:`modelgate.gauges`)."""
    from modelgate.gauges import drift_metrics

    m, a = result.multivariate, result.attribution
    return drift_metrics(
        ref.model_name, ref.version, drifting=drifting, features_breached=features_breached,
        adwin_change_points=adwin_change_points,
        multivariate=None if m is None or m.statistic is None else (m.statistic, m.threshold),
        attribution=None if a is None or a.distance is None else (a.distance, a.threshold))
