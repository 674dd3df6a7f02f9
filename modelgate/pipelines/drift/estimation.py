"""Estimated performance and data quality steps of the drift pipeline (issue #24).

Kept apart from :mod:`modelgate.pipelines.drift.feature_steps` as :mod:`.joint` is:

- :func:`ensure_reference`, called with the reference sketch (``modelgate monitor set`` and
  promotion), fits once per model version on its held-out reference: the quality schema
  (:func:`modelgate.drift.quality.infer_schema`) and, when the reference holds the model's
  labels, the performance estimator (an isotonic calibrator for binary models, one per class
  for multiclass, a nanny error model for regression: |e| and e^2 from the features and the
  prediction; a version fitted before it keeps its pickled binned error model), with the
  reference's own realised metrics, the baseline an estimated drop is measured from. The pickled
  :class:`EstimationReference` goes to the object store, its rows to ``estimation_reference``,
  ``estimation_reference_metric`` and ``quality_schema_feature`` (append-only).
- :func:`estimate_interval` (the ``estimate`` step) counts the interval's sampled live rows
  against the schema and estimates the metrics from their scores alone; the ``report``,
  ``store`` and ``decide`` steps read its :class:`EstimationResult` with :func:`load_result`.
- :func:`realised_metrics` is what the labels gave, computed by the concept-drift step for
  every interval whose labels it feeds (on time or late), stored beside the estimates.

Thresholds (the monitoring config's ``thresholds``, beside the drift ones):
``{"performance": {"roc_auc": 0.05}, "quality": {"max_out_of_range_rate": 0.02,
"max_breached_features": 0}}``. A ``performance`` limit breaches when the estimate is worse than
the reference's realised value by more than the limit (lower for ``roc_auc``, ``accuracy``,
``precision``, ``recall``, ``f1``; higher for ``mae``, ``rmse``). A ``quality`` section sets the
:class:`~modelgate.drift.quality.QualityPolicy` limits and breaches when more than
``max_breached_features`` (default 0) features breach them. Without a section the estimates and
quality verdicts are stored and shown (flagged) but do not make the run's verdict ``drift``.
"""

from __future__ import annotations

import logging
import math
import pickle
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from modelgate.drift import (
    MIN_ESTIMATE_ROWS,
    MIN_EXPECTED_PER_CLASS,
    ClassificationEstimate,
    ModelOutputs,
    QualityPolicy,
    check_quality,
    decide_quality,
    estimate,
    estimate_evidence,
    estimator_refusal,
    expected_roc_auc,
    fit_estimator,
    infer_schema,
)
from modelgate.evaluation import LabelError, model_labels
from modelgate.onnx.manifest import Manifest
from modelgate.onnx.scoring import open_session, score_parquet, settings_from_os_environ
from modelgate.pipelines import stored_pickles
from modelgate.pipelines.context import Context, fetch_dataset, load_registered_model, safe_key_part
from modelgate.pipelines.drift.sample import sample_path
from modelgate.pipelines.drift.usable import scored_rows
from modelgate.pipelines.payloads import LiveSample
from modelgate.reports import EstimateRow, QualityRow
from modelgate.store import estimation, models

if TYPE_CHECKING:  # annotations only
    from modelgate.drift import (
        BinnedErrorModel,
        FeatureSchema,
        IsotonicCalibrator,
        MulticlassReference,
        NannyErrorModel,
    )

log = logging.getLogger("modelgate.drift")

CONFIDENCE = 0.95
CLASSIFICATION_METRICS = ("roc_auc", "accuracy", "precision", "recall", "f1")
REGRESSION_METRICS = ("mae", "rmse")
#: Metrics that get worse as they grow.
ERROR_METRICS = frozenset(REGRESSION_METRICS)
_POLICY_KEYS = ("max_type_mismatch_rate", "max_out_of_range_rate", "max_new_category_rate",
                "max_missing_rate_increase")
_QUALITY_KEYS = (*_POLICY_KEYS, "max_breached_features")
#: The ``estimation`` section: the evidence an estimate needs (:mod:`modelgate.drift.evidence`).
_EVIDENCE_KEYS = ("min_rows", "min_expected_per_class")
METHODS = {"binary_classification": "cbpe_isotonic",
           "multiclass_classification": "cbpe_isotonic_one_vs_rest",
           "regression": "nanny_error_model"}


def task_of(manifest: Manifest) -> str:
    return manifest.task


def metrics_of(task: str) -> tuple[str, ...]:
    """The metrics estimated for a task.

    >>> metrics_of("regression")
    ('mae', 'rmse')
    """
    return REGRESSION_METRICS if task == "regression" else CLASSIFICATION_METRICS


def split_thresholds(spec: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, dict[str, float]]]:
    """The other thresholds and the ``performance``/``quality`` ones, checked.

    >>> split_thresholds({"relative": 2.0, "performance": {"roc_auc": 0.05}})
    ({'relative': 2.0}, {'performance': {'roc_auc': 0.05}, 'quality': {}, 'estimation': {}})
    >>> split_thresholds({"performance": {"auc": 0.05}})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: drift thresholds['performance']: unknown metric(s) ['auc']; expected some of [...]
    """
    rest = dict(spec or {})
    out: dict[str, dict[str, float]] = {}
    for name, allowed in (("performance", CLASSIFICATION_METRICS + REGRESSION_METRICS),
                          ("quality", _QUALITY_KEYS), ("estimation", _EVIDENCE_KEYS)):
        part = rest.pop(name, None) or {}
        if not isinstance(part, dict):
            raise ValueError(f"drift thresholds[{name!r}] must be a mapping; got {part!r}")
        unknown = sorted(set(part) - set(allowed))
        if unknown:
            what = "metric(s)" if name == "performance" else "key(s)"
            raise ValueError(f"drift thresholds[{name!r}]: unknown {what} {unknown}; expected some "
                             f"of {list(allowed)}")
        for key, value in part.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
                raise ValueError(f"drift thresholds[{name!r}][{key!r}] must be a number >= 0; "
                                 f"got {value!r}")
        out[name] = {k: float(v) for k, v in part.items()}
    if out["quality"]:
        _policy(out["quality"])  # rates must be in [0, 1]
    return rest, out


def check_threshold_metrics(spec: dict[str, Any] | None, task: str, version: str, *,
                            where: str) -> None:
    """Refuse ``performance`` limits on metrics the model's task does not estimate.

    >>> check_threshold_metrics({"performance": {"mae": 1.0}}, "regression", "1", where="x:")
    >>> check_threshold_metrics({"performance": {"f1": 0.1}}, "regression", "1",
    ...                         where="x:")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: x: performance limit(s) on ['f1'] that v1 (regression) does not estimate (...)
    """
    named = sorted((spec or {}).get("performance") or {})
    wrong = [m for m in named if m not in metrics_of(task)]
    if wrong:
        raise ValueError(f"{where} performance limit(s) on {wrong} that v{version} ({task}) does not "
                         f"estimate (metrics: {list(metrics_of(task))})")


def _policy(limits: dict[str, float]) -> Any:
    return QualityPolicy(**{k: v for k, v in limits.items() if k in _POLICY_KEYS})


# --- per model version -----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class EstimationReference:
    """What every interval of a model version is judged against (pickled in the object store)."""

    task: str
    method: str | None  # None: no labelled reference, quality only
    threshold: float | None  # binary: the manifest's
    classes: tuple[str, ...]  # multiclass: the probability columns' classes
    # BinnedErrorModel: references pickled before the nanny model
    estimator: IsotonicCalibrator | MulticlassReference | NannyErrorModel | BinnedErrorModel | None
    schema: tuple[FeatureSchema, ...]  # one per feature
    reference_metrics: dict[str, float | None]


def _kinds(manifest: Manifest) -> dict[str, Any]:
    return {f.name: f.kind for f in manifest.features}


def _columns(frame: pd.DataFrame, kinds: dict[str, Any]) -> dict[str, Any]:
    """Feature values as the quality checks read them: categorical ones as plain objects (a
    pandas category column would count its unused categories)."""
    return {f: (frame[f].astype(object) if kind == "categorical" else frame[f])
            for f, kind in kinds.items() if f in frame.columns}


def reference_key(row: models.ModelVersionRow) -> str:
    return f"references/{safe_key_part(row.model_name)}/{safe_key_part(row.version)}/estimation.pkl"


def ensure_reference(ctx: Context, row: models.ModelVersionRow, reference_uri: str) -> None:
    """Fit and store the version's quality schema and performance estimator once."""
    if estimation.get_reference(ctx.db_url, row.model_version_id) is not None:
        return
    if not reference_uri:
        log.warning("%s v%s has no estimation reference and no reference dataset was given; "
                    "estimates and quality checks are skipped", row.model_name, row.version)
        return
    work = ctx.scratch("estimation-reference", row.model_name, row.version)
    data = fetch_dataset(ctx, reference_uri, work)
    kinds = _kinds(row.manifest)
    frame = pq.read_table(data, columns=[c for c in kinds if c in pq.read_schema(data).names]).to_pandas()
    missing = [f for f in kinds if f not in frame.columns]
    if missing:
        raise ValueError(f"reference {reference_uri} lacks feature column(s) {missing} of "
                         f"{row.model_name} v{row.version}")
    schema = infer_schema(_columns(frame, kinds), kinds)
    reference, skipped = _fit(ctx, row, data, work, schema, frame)
    key = reference_key(row)
    uri = ctx.store.put_bytes(key, pickle.dumps(reference, protocol=5),
                              content_type="application/octet-stream")
    estimation.put_reference(ctx.db_url, model_version_id=row.model_version_id, object_key=key,
                             object_uri=uri, method=reference.method, skipped_reason=skipped,
                             n_rows=len(frame), schema=[s.to_record() for s in schema],
                             reference_metrics=reference.reference_metrics)
    log.info("stored estimation reference of %s v%s: %s, schema of %d features", row.model_name,
             row.version, reference.method or f"no estimator ({skipped})", len(schema))
    ctx.discard_scratch("estimation-reference", row.model_name, row.version)


def _reference_labels(manifest: Manifest, data: Any) -> Any | None:
    """The reference's labels encoded as the model compares them, or None when unusable."""
    label = manifest.label.column
    if label not in pq.read_schema(data).names:
        return None
    try:
        return model_labels(pq.read_table(data, columns=[label]).column(label).to_numpy(
            zero_copy_only=False), manifest.to_dict())
    except LabelError:
        return None


def _skipped_reason(manifest: Manifest, data: Any) -> str:
    label = manifest.label.column
    if label not in pq.read_schema(data).names:
        return f"the reference has no label column {label!r}"
    return f"the reference's label column {label!r} has missing or unknown values"


def _fit(ctx: Context, row: models.ModelVersionRow, data: Any, work: Any,
         schema: tuple[Any, ...], features: pd.DataFrame) -> tuple[EstimationReference, str | None]:
    """The version's estimation reference, and why it has no estimator (None: it has one)."""
    manifest = row.manifest
    task = task_of(manifest)
    threshold = manifest.threshold if task == "binary_classification" else None
    labels = _reference_labels(manifest, data)
    if labels is None:
        return EstimationReference(task, None, threshold, (), None, schema, {}), \
            _skipped_reason(manifest, data)
    scorer = open_session(load_registered_model(ctx, row, work), settings_from_os_environ())
    scored = pq.read_table(score_parquet(scorer, data, work / "estimation-scores.parquet").output_path)
    frame = scored.to_pandas().rename(columns=lambda c: f"__{c}__")
    classes = _classes(manifest, frame)
    refused = _refusal(task, labels, frame, classes)
    if refused is not None:  # no estimator: nothing estimated from it (issue #39.4)
        return EstimationReference(task, None, threshold, classes, None, schema, {}), refused
    kinds = _kinds(manifest)
    if task == "regression":
        outputs = ModelOutputs(predictions=frame["__prediction__"].to_numpy(np.float64),
                               features=features[list(kinds)])
        labels = labels.astype(np.float64)
    elif task == "multiclass_classification":
        outputs = ModelOutputs(probabilities=_probabilities(frame, classes))
    else:
        outputs = ModelOutputs(scores=frame["__score__"].to_numpy(np.float64))
    estimator = fit_estimator(task, labels, outputs, classes=classes,
                              categorical=[f for f, k in kinds.items() if k == "categorical"])
    return EstimationReference(task, METHODS[task], threshold, classes, estimator, schema,
                               realised_metrics(task, labels, frame)), None


def _refusal(task: str, labels: Any, frame: pd.DataFrame, classes: tuple[str, ...]) -> str | None:
    """Why no estimator may be fitted on this labelled reference (:mod:`modelgate.drift.evidence`)."""
    if task == "regression":
        return estimator_refusal(task, labels, frame["__prediction__"].to_numpy(np.float64))
    if task == "multiclass_classification":
        return estimator_refusal(task, labels, _probabilities(frame, classes),
                                 classes=tuple(range(len(classes))))
    return estimator_refusal(task, labels, frame["__score__"].to_numpy(np.float64))


def _classes(manifest: Manifest, scored: pd.DataFrame) -> tuple[str, ...]:
    n = sum(1 for c in scored.columns if c.startswith("__proba_"))
    named = manifest.output.classes
    return tuple(str(c) for c in named) if named and len(named) == n else tuple(str(k) for k in range(n))


def _probabilities(frame: pd.DataFrame, classes: tuple[str, ...]) -> Any:
    return np.column_stack([frame[f"__proba_{k}__"].to_numpy(np.float64) for k in range(len(classes))])


# --- realised ---------------------------------------------------------------------------------

def realised_metrics(task: str, labels: Any, scored: pd.DataFrame) -> dict[str, float | None]:
    """The metrics the labels give on scored rows (``__score__``, ``__prediction__`` and, for
    multiclass, ``__proba_<k>__`` columns); ``None`` where undefined (e.g. precision with no
    predicted positive). Multiclass: accuracy, and the unweighted mean over classes of the
    one-vs-rest metrics, as the estimates are averaged.

    >>> frame = pd.DataFrame({"__score__": [0.9, 0.8, 0.3, 0.1], "__prediction__": [1, 1, 0, 0]})
    >>> realised_metrics("binary_classification", np.array([1, 0, 1, 0]), frame)
    {'roc_auc': 0.75, 'accuracy': 0.5, 'precision': 0.5, 'recall': 0.5, 'f1': 0.5}
    """
    if task == "regression":
        err = np.asarray(labels, dtype=np.float64) - scored["__prediction__"].to_numpy(np.float64)
        return {"mae": float(np.mean(np.abs(err))), "rmse": float(np.sqrt(np.mean(err * err)))}
    y = np.asarray(labels)
    predicted = scored["__prediction__"].to_numpy()
    if task == "multiclass_classification":
        classes = sorted(int(c[len("__proba_"):-2]) for c in scored.columns if c.startswith("__proba_"))
        per_class = [_binary_realised(y == k, scored[f"__proba_{k}__"].to_numpy(np.float64),
                                      predicted == k) for k in classes]
        # a sample scored before the probabilities were kept has none: accuracy only
        out = {m: float(np.mean([c[m] for c in per_class])) if per_class else math.nan
               for m in CLASSIFICATION_METRICS}
        out["accuracy"] = float(np.mean(predicted == y))
    else:
        out = _binary_realised(y == 1, scored["__score__"].to_numpy(np.float64), predicted == 1)
    return {m: (v if math.isfinite(v) else None) for m, v in out.items()}


def _binary_realised(positive: Any, scores: Any, predicted: Any) -> dict[str, float]:
    tp = float(np.sum(predicted & positive))
    fp, fn = float(np.sum(predicted & ~positive)), float(np.sum(~predicted & positive))
    n = float(positive.size)

    def ratio(a: float, b: float) -> float:
        return a / b if b > 0 else math.nan

    # the expected AUC with 0/1 probabilities is the realised AUC (ties count one half)
    return {"roc_auc": expected_roc_auc(scores, positive.astype(np.float64)) if 0 < tp + fn < n
            else math.nan,
            "accuracy": ratio(n - fp - fn, n), "precision": ratio(tp, tp + fp),
            "recall": ratio(tp, tp + fn), "f1": ratio(2 * tp, 2 * tp + fp + fn)}


# --- per interval -----------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class EstimationResult:
    """One interval's quality counts and estimates (empty without a reference or rows)."""

    quality: tuple[Any, ...] = ()  # FeatureQuality per feature
    quality_decision: Any | None = None  # QualityDecision
    max_breached_features: float | None = None  # None: quality not thresholded
    estimates: tuple[dict[str, Any], ...] = ()  # performance_estimate rows
    method: str | None = None

    def quality_rows(self) -> list[dict[str, Any]]:
        """``quality_check`` rows: counts, verdict and reasons per feature."""
        if self.quality_decision is None:
            return []
        verdicts = dict(self.quality_decision.verdicts)
        return [{**q.to_record(), "verdict": verdicts[q.feature],
                 "reasons": [r for f, r in self.quality_decision.reasons if f == q.feature]}
                for q in self.quality]

    def breaches(self) -> list[str]:
        """One line per thresholded breach, for the ``decide`` step."""
        lines = [f"estimated {e['metric']} = {_text(e['estimate'])} vs reference "
                 f"{_text(e['reference_value'])}: worse by more than {_text(e['max_worsening'])} "
                 f"(interval [{_text(e['lower'])}, {_text(e['upper'])}])"
                 for e in self.estimates if e["verdict"] == "breach"]
        d = self.quality_decision
        if d is not None and self.max_breached_features is not None \
                and d.n_breached > self.max_breached_features:
            lines.append(f"data quality: {d.n_breached} feature(s) breached the quality limits "
                         f"(at most {self.max_breached_features:g} allowed): "
                         + "; ".join(f"{f}: {r}" for f, r in d.reasons))
        return lines


def _text(value: float | None) -> str:
    """A number for a breach line (``-`` when undefined).

    >>> _text(0.12345), _text(None)
    ('0.1235', '-')
    """
    return "-" if value is None else f"{value:.4f}"


def result_key(prefix: str) -> str:
    return f"{prefix}/estimation.pkl"


def estimate_interval(ctx: Context, ref: Any, sample: LiveSample,
                      thresholds: dict[str, Any] | None = None) -> str:
    """Quality counts and estimated performance of the interval's scored sample (one step)."""
    _, limits = split_thresholds(thresholds)
    stored = estimation.get_reference(ctx.db_url, ref.model_version_id)
    result = EstimationResult()
    if stored is not None and sample["key"] is not None:
        reference: EstimationReference = stored_pickles.loads(ctx.store.get_bytes(stored.object_key))
        frame = pq.read_table(sample_path(ctx, ref, sample["key"])).to_pandas()
        kinds = {s.feature: s.kind for s in reference.schema}
        quality = check_quality(reference.schema, _columns(frame, kinds), n_rows=len(frame))
        policy = _policy(limits["quality"]) if limits["quality"] else QualityPolicy()
        result = EstimationResult(
            quality, decide_quality(quality, policy),
            limits["quality"].get("max_breached_features", 0.0) if limits["quality"] else None,
            estimate_rows(reference, scored_rows(frame), limits["performance"], stored.reference_metrics,
                           evidence=limits["estimation"]),
            reference.method)
    key = result_key(ref.prefix())
    ctx.store.put_bytes(key, pickle.dumps(result, protocol=5), content_type="application/octet-stream")
    log.info("drift run %d: %d quality breach(es), %d metric(s) estimated", ref.drift_run_id,
             0 if result.quality_decision is None else result.quality_decision.n_breached,
             len(result.estimates))
    return key


def _estimate(reference: EstimationReference, frame: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Each metric's record (estimate, standard_error, lower, upper) on the interval's scores."""
    assert reference.estimator is not None
    if reference.task == "regression":
        outputs = ModelOutputs(predictions=frame["__score__"].to_numpy(np.float64), features=frame)
    elif reference.task == "multiclass_classification":
        outputs = ModelOutputs(probabilities=_probabilities(frame, reference.classes))
    else:
        outputs = ModelOutputs(scores=frame["__score__"].to_numpy(np.float64))
    est = estimate(reference.task, reference.estimator, outputs, threshold=reference.threshold,
                   confidence=CONFIDENCE)
    if not isinstance(est, ClassificationEstimate):
        r = est.to_record()
        return {m: {"estimate": r[m], "standard_error": r[f"{m}_standard_error"],
                    "lower": r[f"{m}_lower"], "upper": r[f"{m}_upper"]} for m in REGRESSION_METRICS}
    return {m.metric: m.to_record() for m in est.metrics}


def estimate_rows(reference: EstimationReference, frame: pd.DataFrame, limits: dict[str, float],
                   baseline: dict[str, float | None], *, evidence: dict[str, float] | None = None
                   ) -> tuple[dict[str, Any], ...]:
    """One row per metric; below the evidence an estimate needs, its values are None and its
    verdict ``insufficient_data``, with the reason (:func:`modelgate.drift.evidence.estimate_evidence`)."""
    if reference.method is None or len(frame) == 0:
        return ()
    undefined = _undefined(reference, frame, evidence or {})
    rows = []
    every_undefined = all(undefined.values())  # e.g. one row: nothing is computed from it
    estimated = ({m: {} for m in undefined} if every_undefined else _estimate(reference, frame))
    for metric, r in estimated.items():
        if undefined.get(metric):
            rows.append({"metric": metric, "method": reference.method, "estimate": None,
                         "standard_error": None, "lower": None, "upper": None, "confidence": CONFIDENCE,
                         "n_rows": len(frame), "reference_value": baseline.get(metric),
                         "max_worsening": limits.get(metric), "verdict": "insufficient_data",
                         "undefined_reason": undefined[metric]})
            continue
        limit, base, value = limits.get(metric), baseline.get(metric), r["estimate"]
        verdict = "no_data" if value is None else "ok"
        if limit is not None and value is not None and base is not None:
            worse = value - base if metric in ERROR_METRICS else base - value
            verdict = "breach" if worse > limit else "ok"
        rows.append({"metric": metric, "method": reference.method, **r, "confidence": CONFIDENCE,
                     "n_rows": len(frame), "reference_value": base, "max_worsening": limit,
                     "verdict": verdict, "undefined_reason": None if value is not None
                     else "undefined on this interval's scores"})
    return tuple(rows)


def _undefined(reference: EstimationReference, frame: pd.DataFrame, evidence: dict[str, float]
               ) -> dict[str, str | None]:
    """Per metric, why it cannot be estimated on ``frame`` (None: it can)."""
    positives = negatives = predicted = classes = None
    if reference.task == "binary_classification" and reference.estimator is not None:
        scores = frame["__score__"].to_numpy(np.float64)
        p = reference.estimator.apply(scores)
        positives, negatives = float(p.sum()), float((1.0 - p).sum())
        if reference.threshold is not None:
            predicted = float(np.count_nonzero(scores >= reference.threshold))
    elif reference.task == "multiclass_classification" and reference.estimator is not None and len(frame):
        raw = _probabilities(frame, reference.classes)
        expected, argmax = reference.estimator.apply(raw).sum(axis=0), np.argmax(raw, axis=1)
        classes = {c: (float(expected[k]), float(np.count_nonzero(argmax == k)))
                   for k, c in enumerate(reference.classes)}
    return {m: estimate_evidence(m, len(frame), expected_positives=positives,
                                 expected_negatives=negatives, predicted_positives=predicted,
                                 classes=classes,
                                 min_rows=int(evidence.get("min_rows", MIN_ESTIMATE_ROWS)),
                                 min_expected_per_class=evidence.get("min_expected_per_class",
                                                                     MIN_EXPECTED_PER_CLASS))
            for m in metrics_of(reference.task)}


def load_result(ctx: Context, prefix: str) -> EstimationResult:
    """The run's result, or an empty one when the ``estimate`` step did not run."""
    key = result_key(prefix)
    if not ctx.store.exists(key):
        return EstimationResult()
    result: EstimationResult = stored_pickles.loads(ctx.store.get_bytes(key))
    return result


def report_rows(result: EstimationResult) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """(QualityRow, ...) and (EstimateRow, ...) for the drift report."""
    def verdict(v: str) -> str:
        return {"ok": "ok", "breach": "breach", "no_data": "warn", "insufficient_data": "warn"}[v]

    quality = tuple(QualityRow(
        q["feature"], q["kind"], q["n"], q["missing_rate"], q["reference_missing_rate"],
        q["n_type_mismatch"], q["n_out_of_range"], q["n_new_category"], verdict(q["verdict"]),
        "; ".join(q["reasons"])) for q in result.quality_rows())
    estimates = tuple(EstimateRow(e["metric"], e["estimate"], e["lower"], e["upper"],
                                  e["reference_value"], e["max_worsening"], verdict(e["verdict"]))
                      for e in result.estimates)
    return quality, estimates


def headline(result: EstimationResult) -> str:
    """The report summary's first words about quality (read before drift); empty without checks.

    >>> headline(EstimationResult())
    ''
    """
    d = result.quality_decision
    if d is None:
        return ""
    if not d.n_breached:
        return "Data quality: ok. "
    return f"Data quality: {d.n_breached} feature(s) breached ({', '.join(d.breached)}). "
