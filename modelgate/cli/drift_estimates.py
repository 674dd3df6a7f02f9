"""``modelgate drift``'s estimated performance and data-quality sections (issue #24).

Data quality (every run): a schema is inferred from the reference file's feature columns and
the current file counted against it (:mod:`modelgate.drift.quality`). Estimated performance
(with ``--model``, when the reference file holds the manifest's label column): both files are
scored with the model, a calibrator (classifiers) or a nanny error model (regression: |e| and
e^2 from the features and the prediction, NannyML's DLE) is fitted on the labelled reference, and
the current file's performance is estimated from its scores (and, for regression, its features)
(:mod:`modelgate.drift.performance_estimation`, :mod:`modelgate.drift.regression_estimation`).
The reference's realised metrics are printed beside the estimates as their baseline.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["estimates_json", "quality_json"]


def _read(path: Path, columns: list[str]) -> Any:
    import pyarrow.parquet as pq

    present = [c for c in columns if c in pq.read_schema(path).names]
    return pq.read_table(path, columns=present).to_pandas()


def quality_json(reference: Path, current: Path, kinds: dict[str, Any]) -> dict[str, Any]:
    """The ``quality`` section: per-feature counts and the default policy's verdict."""
    from modelgate.drift import QualityPolicy, check_quality, decide_quality, infer_schema

    ref, cur = _read(reference, list(kinds)), _read(current, list(kinds))
    missing = [f for f in kinds if f not in ref.columns]
    if missing:
        raise ValueError(f"reference file lacks feature columns {missing}")
    schema = infer_schema({f: ref[f] for f in kinds}, kinds)
    qualities = check_quality(schema, {f: cur[f] for f in kinds if f in cur.columns}, n_rows=len(cur))
    policy = QualityPolicy()
    return {"policy": {name: getattr(policy, name) for name in QualityPolicy.__slots__},
            "features": [q.to_record() for q in qualities],
            "decision": decide_quality(qualities, policy).to_record()}


def estimates_json(model: Path, reference: Path, current: Path, *,
                   confidence: float = 0.95) -> tuple[dict[str, Any] | None, str]:
    """The ``estimated_performance`` section, or None with the reason it was skipped."""
    import pyarrow.parquet as pq

    from modelgate.onnx.artifact import verify
    from modelgate.onnx.scoring import open_session, settings_from_os_environ

    loaded = verify(model)
    manifest = loaded.manifest
    label = manifest.label.column
    if label not in pq.read_schema(reference).names:
        return None, f"the reference has no label column {label!r}"
    scorer = open_session(loaded, settings_from_os_environ())
    features = [f.name for f in manifest.features]
    ref, cur = _read(reference, [*features, label]), _read(current, features)
    if ref[label].isna().any():
        return None, f"the reference's label column {label!r} has missing values"
    section: dict[str, Any] = {"task": manifest.task, "confidence": confidence,
                               "n_reference": len(ref), "n_current": len(cur)}
    if manifest.task == "regression":
        categorical = [f.name for f in manifest.features if f.kind == "categorical"]
        section.update(_regression(scorer, ref, cur, label, features, categorical, confidence))
    elif manifest.task == "multiclass_classification":
        section.update(_multiclass(scorer, ref, cur, label, manifest, confidence))
    else:
        section.update(_binary(scorer, ref, cur, label, manifest, confidence))
    return section, "estimated"


def _binary(scorer: Any, ref: Any, cur: Any, label: str, manifest: Any,
            confidence: float) -> dict[str, Any]:
    from modelgate.drift import ModelOutputs, estimate, fit_estimator
    from modelgate.evaluation import binary_labels

    task = "binary_classification"
    y = binary_labels(ref[label].to_numpy(), column=label, positive=manifest.label.positive,
                      negative=manifest.label.negative)
    ref_scores, cur_scores = scorer.predict_proba(ref), scorer.predict_proba(cur)
    calibrator = fit_estimator(task, y, ModelOutputs(scores=ref_scores))
    threshold = float(manifest.threshold)
    return {"method": "cbpe_isotonic", "threshold": threshold,
            "reference": estimate(task, calibrator, ModelOutputs(scores=ref_scores), threshold=threshold,
                                  confidence=confidence).to_record(),
            "reference_realised": _realised(y, ref_scores, ref_scores >= threshold),
            "current": estimate(task, calibrator, ModelOutputs(scores=cur_scores), threshold=threshold,
                                confidence=confidence).to_record()}


def _multiclass(scorer: Any, ref: Any, cur: Any, label: str, manifest: Any,
                confidence: float) -> dict[str, Any]:
    from modelgate.drift import ModelOutputs, estimate, fit_estimator
    from modelgate.evaluation import class_indices

    task = "multiclass_classification"
    classes = tuple(manifest.output.classes or ())
    y = class_indices(ref[label].to_numpy(), classes, column=label)
    reference = fit_estimator(task, y, ModelOutputs(probabilities=scorer.predict_class_proba(ref)),
                              classes=tuple(str(c) for c in classes))
    return {"method": "cbpe_isotonic_one_vs_rest",
            "current": estimate(task, reference, ModelOutputs(probabilities=scorer.predict_class_proba(cur)),
                                confidence=confidence).to_record()}


def _regression(scorer: Any, ref: Any, cur: Any, label: str, features: list[str],
                categorical: list[str], confidence: float) -> dict[str, Any]:
    from modelgate.drift import ModelOutputs, NannyErrorModel, estimate, fit_estimator

    task = "regression"
    ref_pred = scorer.predict_value(ref)
    y = ref[label].to_numpy(dtype=np.float64)
    model = fit_estimator(task, y, ModelOutputs(predictions=ref_pred, features=ref[features]),
                          categorical=categorical)
    assert isinstance(model, NannyErrorModel)
    err = y - ref_pred
    present = [f for f in features if f in cur.columns]
    if present != features:
        raise ValueError(f"current file lacks feature column(s) "
                         f"{[f for f in features if f not in cur.columns]}")
    current = ModelOutputs(predictions=scorer.predict_value(cur), features=cur[features])
    return {"method": "nanny_error_model", "n_reference_held_back": model.n_holdout,
            "reference_realised": {"mae": float(np.mean(np.abs(err))),
                                   "rmse": float(np.sqrt(np.mean(err * err)))},
            "current": estimate(task, model, current, confidence=confidence).to_record()}


def _realised(y: np.ndarray, scores: np.ndarray, predicted: np.ndarray) -> dict[str, float | None]:
    """The reference's own metrics (it has labels), the baseline the estimates are read against."""
    from modelgate.drift import expected_roc_auc

    tp = float(np.sum(predicted & (y == 1)))
    fp, fn = float(np.sum(predicted & (y == 0))), float(np.sum(~predicted & (y == 1)))
    n = float(y.size)

    def ratio(a: float, b: float) -> float | None:
        return a / b if b > 0 else None

    # Expected AUC with 0/1 "probabilities" is the realised AUC (ties count one half).
    return {"roc_auc": expected_roc_auc(scores, y.astype(np.float64)) if 0 < y.sum() < n else None,
            "accuracy": ratio(n - fp - fn, n), "precision": ratio(tp, tp + fp),
            "recall": ratio(tp, tp + fn), "f1": ratio(2 * tp, 2 * tp + fp + fn)}


def print_quality_text(quality: dict[str, Any], shown: Any) -> None:
    """The quality table: counts per feature and the verdict."""
    print(f"{'feature':<24} {'missing':>8} {'ref':>8} {'type':>6} {'range':>6} {'new cat':>8}  verdict")
    verdicts = quality["decision"]["verdicts"]
    for q in quality["features"]:
        rate = "-" if q["missing_rate"] is None else f"{q['missing_rate']:.4f}"
        ref = "-" if q["reference_missing_rate"] is None else f"{q['reference_missing_rate']:.4f}"
        print(f"{shown(q['feature'])[:24]:<24} {rate:>8} {ref:>8} {q['n_type_mismatch']:>6} "
              f"{q['n_out_of_range']:>6} {q['n_new_category']:>8}  {verdicts[q['feature']]}")
    breached = quality["decision"]["breached"]
    print(f"{len(breached)} feature(s) with quality problems: {', '.join(map(shown, breached)) or '-'}")


def print_estimates_text(section: dict[str, Any] | None, skipped: str | None) -> None:
    """Estimated metrics of the current file with their intervals."""
    if section is None:
        print(f"estimated performance: not estimated ({skipped})")
        return
    current = section["current"]
    if section["task"] == "regression":
        for name in ("mae", "rmse"):
            print(f"estimated {name}: {current[name]:.4f} [{current[name + '_lower']:.4f}, "
                  f"{current[name + '_upper']:.4f}] (reference {section['reference_realised'][name]:.4f})")
        return
    baseline = section.get("reference_realised", {})
    for m in current["metrics"]:
        if m["estimate"] is None:
            print(f"estimated {m['metric']}: undefined")
            continue
        ref = baseline.get(m["metric"])
        tail = "" if ref is None else f" (reference {ref:.4f})"
        print(f"estimated {m['metric']}: {m['estimate']:.4f} [{m['lower']:.4f}, {m['upper']:.4f}]{tail}")
