"""Drift core: reference sketches, per-feature and joint drift, data quality, performance
estimation without labels and the concept-drift detector; numpy in, frozen dataclasses out.

This is the core's public surface: what the pipelines, the CLI, the DAGs and the benchmarks use,
imported from here (``from modelgate.drift import ...``; tests/layers/test_import_layers.py fails on an
inner module imported from outside the core). A name is imported from its module on first use (PEP
562), so importing the package or one inner module loads no other (POT, matplotlib, jinja2 and ONNX
are slow to import); a name its module shares (``threshold_multiple``) is bound at import, since the
submodule, once imported, would otherwise take the attribute.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from modelgate.lazy_exports import lazy_exports

from .threshold_multiple import threshold_multiple

if TYPE_CHECKING:
    from .adwin import AdwinDetector
    from .attribution import (
        AttributionDrift,
        AttributionReference,
        attribution_drift,
        build_attribution_reference,
    )
    from .by_segment import (
        DEFAULT_MIN_SEGMENT_ROWS,
        SegmentDrift,
        SegmentDriftFamily,
        segment_drift,
        segment_labels,
    )
    from .data_drift import (
        DriftThresholds,
        FeatureDrift,
        categorical_drift_from_counts,
        numeric_drift,
        numeric_drift_sorted,
        summarise,
    )
    from .error_stream import bounded_absolute_errors, classification_errors
    from .estimators import ModelOutputs, estimate, fit_estimator
    from .evidence import MIN_ESTIMATE_ROWS, MIN_EXPECTED_PER_CLASS, estimate_evidence, estimator_refusal
    from .multivariate import (
        MultivariateDrift,
        MultivariateReference,
        build_multivariate_reference,
        multivariate_drift,
    )
    from .performance_estimation import (
        BINARY_METRICS,
        ClassificationEstimate,
        IsotonicCalibrator,
        MulticlassReference,
        estimate_binary,
        estimate_multiclass,
        expected_roc_auc,
        fit_isotonic,
        fit_multiclass,
    )
    from .quality import FeatureSchema, QualityPolicy, check_quality, decide_quality, infer_schema
    from .reference import (
        MISSING,
        CategoricalReference,
        NumericReference,
        build_categorical_reference_from_counts,
        build_numeric_reference,
    )
    from .regression_estimation import BinnedErrorModel, NannyErrorModel, estimate_regression, fit_nanny_model
    from .segment_estimates import SegmentEstimate, SegmentMonitoring, segment_family, worsening_p_value
    from .threshold_multiple import worst_first

#: Public name -> (module, name in the module), imported on first use.
_LAZY = {
    "AdwinDetector": ("adwin", "AdwinDetector"),
    "AttributionDrift": ("attribution", "AttributionDrift"),
    "AttributionReference": ("attribution", "AttributionReference"),
    "attribution_drift": ("attribution", "attribution_drift"),
    "build_attribution_reference": ("attribution", "build_attribution_reference"),
    "DriftThresholds": ("data_drift", "DriftThresholds"),
    "FeatureDrift": ("data_drift", "FeatureDrift"),
    "categorical_drift_from_counts": ("data_drift", "categorical_drift_from_counts"),
    "numeric_drift": ("data_drift", "numeric_drift"),
    "numeric_drift_sorted": ("data_drift", "numeric_drift_sorted"),
    "summarise": ("data_drift", "summarise"),
    "bounded_absolute_errors": ("error_stream", "bounded_absolute_errors"),
    "classification_errors": ("error_stream", "classification_errors"),
    "ModelOutputs": ("estimators", "ModelOutputs"),
    "estimate": ("estimators", "estimate"),
    "fit_estimator": ("estimators", "fit_estimator"),
    "MIN_ESTIMATE_ROWS": ("evidence", "MIN_ESTIMATE_ROWS"),
    "MIN_EXPECTED_PER_CLASS": ("evidence", "MIN_EXPECTED_PER_CLASS"),
    "estimate_evidence": ("evidence", "estimate_evidence"),
    "estimator_refusal": ("evidence", "estimator_refusal"),
    "MultivariateDrift": ("multivariate", "MultivariateDrift"),
    "MultivariateReference": ("multivariate", "MultivariateReference"),
    "build_multivariate_reference": ("multivariate", "build_multivariate_reference"),
    "multivariate_drift": ("multivariate", "multivariate_drift"),
    "BINARY_METRICS": ("performance_estimation", "BINARY_METRICS"),
    "ClassificationEstimate": ("performance_estimation", "ClassificationEstimate"),
    "IsotonicCalibrator": ("performance_estimation", "IsotonicCalibrator"),
    "MulticlassReference": ("performance_estimation", "MulticlassReference"),
    "estimate_binary": ("performance_estimation", "estimate_binary"),
    "estimate_multiclass": ("performance_estimation", "estimate_multiclass"),
    "expected_roc_auc": ("performance_estimation", "expected_roc_auc"),
    "fit_isotonic": ("performance_estimation", "fit_isotonic"),
    "fit_multiclass": ("performance_estimation", "fit_multiclass"),
    "FeatureSchema": ("quality", "FeatureSchema"),
    "QualityPolicy": ("quality", "QualityPolicy"),
    "check_quality": ("quality", "check_quality"),
    "decide_quality": ("quality", "decide_quality"),
    "infer_schema": ("quality", "infer_schema"),
    "CategoricalReference": ("reference", "CategoricalReference"),
    "MISSING": ("reference", "MISSING"),
    "NumericReference": ("reference", "NumericReference"),
    "build_categorical_reference_from_counts": ("reference", "build_categorical_reference_from_counts"),
    "build_numeric_reference": ("reference", "build_numeric_reference"),
    "BinnedErrorModel": ("regression_estimation", "BinnedErrorModel"),
    "NannyErrorModel": ("regression_estimation", "NannyErrorModel"),
    "estimate_regression": ("regression_estimation", "estimate_regression"),
    "fit_nanny_model": ("regression_estimation", "fit_nanny_model"),
    "DEFAULT_MIN_SEGMENT_ROWS": ("by_segment", "DEFAULT_MIN_SEGMENT_ROWS"),
    "SegmentDrift": ("by_segment", "SegmentDrift"),
    "SegmentDriftFamily": ("by_segment", "SegmentDriftFamily"),
    "segment_drift": ("by_segment", "segment_drift"),
    "segment_labels": ("by_segment", "segment_labels"),
    "SegmentEstimate": ("segment_estimates", "SegmentEstimate"),
    "SegmentMonitoring": ("segment_estimates", "SegmentMonitoring"),
    "segment_family": ("segment_estimates", "segment_family"),
    "worsening_p_value": ("segment_estimates", "worsening_p_value"),
    "worst_first": ("threshold_multiple", "worst_first"),
}

__all__ = [
    "AdwinDetector",
    "AttributionDrift",
    "AttributionReference",
    "BINARY_METRICS",
    "BinnedErrorModel",
    "CategoricalReference",
    "ClassificationEstimate",
    "DEFAULT_MIN_SEGMENT_ROWS",
    "DriftThresholds",
    "FeatureDrift",
    "FeatureSchema",
    "IsotonicCalibrator",
    "MIN_ESTIMATE_ROWS",
    "MIN_EXPECTED_PER_CLASS",
    "MISSING",
    "ModelOutputs",
    "MulticlassReference",
    "MultivariateDrift",
    "MultivariateReference",
    "NannyErrorModel",
    "NumericReference",
    "QualityPolicy",
    "SegmentDrift",
    "SegmentDriftFamily",
    "SegmentEstimate",
    "SegmentMonitoring",
    "attribution_drift",
    "bounded_absolute_errors",
    "build_attribution_reference",
    "build_categorical_reference_from_counts",
    "build_multivariate_reference",
    "build_numeric_reference",
    "categorical_drift_from_counts",
    "check_quality",
    "classification_errors",
    "decide_quality",
    "estimate",
    "estimate_binary",
    "estimate_evidence",
    "estimate_multiclass",
    "estimate_regression",
    "estimator_refusal",
    "expected_roc_auc",
    "fit_estimator",
    "fit_isotonic",
    "fit_multiclass",
    "fit_nanny_model",
    "infer_schema",
    "multivariate_drift",
    "numeric_drift",
    "numeric_drift_sorted",
    "segment_drift",
    "segment_family",
    "segment_labels",
    "summarise",
    "threshold_multiple",
    "worst_first",
    "worsening_p_value",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__, globals())
