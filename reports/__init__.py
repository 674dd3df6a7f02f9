"""Reports core: SHAP explanations, their summaries, the report views and the HTML and
chart renderers; plain views in, HTML and images out.

This is the core's public surface: what the pipelines, the CLI, the DAGs and the benchmarks use,
imported from here (``from modelgate.reports import ...``; tests/layers/test_import_layers.py fails on an
inner module imported from outside the core). A name is imported from its module on first use (PEP
562), so importing the package or one inner module loads no other (pandas, scipy, POT, matplotlib,
jinja2 and ONNX are slow to import, and every Airflow task process that imports the package would
pay for them). No module is named like a public name (``explain`` lives in ``explanation``), since
a submodule, once imported, would take the package attribute of its name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from modelgate.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from .drift_segment_views import SegmentDriftRow, SegmentEstimateRow
    from .drift_views import (
        AttributionShareRow,
        ChangePointRow,
        DriftReportView,
        FeatureDriftRow,
        HistogramView,
        JointDriftRow,
        QuarantineRow,
    )
    from .exact_explanation import GraphModel, check_trees, explain_trees
    from .explain_errors import interval_quantile, interval_words, pooled_standard_errors
    from .explain_estimators import exact_values, permutation_values
    from .explain_masking import MaskedEvaluator
    from .explanation import (
        DEFAULT_N_PERMUTATIONS,
        Explanation,
        choose_algorithm,
        explain,
        explain_class,
        global_importance,
        importance_standard_errors,
        select_error_rows,
        select_rows,
    )
    from .html import render_drift_report, render_evaluation_report, render_model_index
    from .index_views import IndexRow, IndexVerdict, ModelIndexView
    from .onnx_linear import read_linear_model
    from .onnx_trees import UnsupportedGraph, read_tree_ensemble
    from .segment_views import SegmentRow, SegmentSection, WeakSliceRow
    from .shap_summaries import GroupShap, ShapSummary, shap_by_group, shap_summary
    from .summary_views import (
        EstimateRow,
        GroupShapSection,
        LabelledPerformance,
        QualityRow,
        ShapClassSection,
        ShapSwarmRow,
    )
    from .tree_shap import interventional_tree_shap
    from .views import (
        CalibrationRow,
        ErrorGroupRow,
        EvaluationReportView,
        FairnessSection,
        GapRow,
        GateCheckRow,
        GateView,
        GroupRow,
        MetricRow,
        WaterfallImage,
    )
    from .waterfall import waterfall_png

#: Public name -> (module, name in the module), imported on first use.
_LAZY = {
    "DEFAULT_N_PERMUTATIONS": ("explanation", "DEFAULT_N_PERMUTATIONS"),
    "Explanation": ("explanation", "Explanation"),
    "choose_algorithm": ("explanation", "choose_algorithm"),
    "explain": ("explanation", "explain"),
    "explain_class": ("explanation", "explain_class"),
    "global_importance": ("explanation", "global_importance"),
    "importance_standard_errors": ("explanation", "importance_standard_errors"),
    "select_error_rows": ("explanation", "select_error_rows"),
    "select_rows": ("explanation", "select_rows"),
    "interval_quantile": ("explain_errors", "interval_quantile"),
    "interval_words": ("explain_errors", "interval_words"),
    "pooled_standard_errors": ("explain_errors", "pooled_standard_errors"),
    "exact_values": ("explain_estimators", "exact_values"),
    "permutation_values": ("explain_estimators", "permutation_values"),
    "MaskedEvaluator": ("explain_masking", "MaskedEvaluator"),
    "GraphModel": ("exact_explanation", "GraphModel"),
    "check_trees": ("exact_explanation", "check_trees"),
    "explain_trees": ("exact_explanation", "explain_trees"),
    "render_drift_report": ("html", "render_drift_report"),
    "render_evaluation_report": ("html", "render_evaluation_report"),
    "render_model_index": ("html", "render_model_index"),
    "read_linear_model": ("onnx_linear", "read_linear_model"),
    "UnsupportedGraph": ("onnx_trees", "UnsupportedGraph"),
    "read_tree_ensemble": ("onnx_trees", "read_tree_ensemble"),
    "SegmentDriftRow": ("drift_segment_views", "SegmentDriftRow"),
    "SegmentEstimateRow": ("drift_segment_views", "SegmentEstimateRow"),
    "SegmentRow": ("segment_views", "SegmentRow"),
    "SegmentSection": ("segment_views", "SegmentSection"),
    "WeakSliceRow": ("segment_views", "WeakSliceRow"),
    "GroupShap": ("shap_summaries", "GroupShap"),
    "ShapSummary": ("shap_summaries", "ShapSummary"),
    "shap_by_group": ("shap_summaries", "shap_by_group"),
    "shap_summary": ("shap_summaries", "shap_summary"),
    "EstimateRow": ("summary_views", "EstimateRow"),
    "GroupShapSection": ("summary_views", "GroupShapSection"),
    "LabelledPerformance": ("summary_views", "LabelledPerformance"),
    "QualityRow": ("summary_views", "QualityRow"),
    "ShapClassSection": ("summary_views", "ShapClassSection"),
    "ShapSwarmRow": ("summary_views", "ShapSwarmRow"),
    "interventional_tree_shap": ("tree_shap", "interventional_tree_shap"),
    "AttributionShareRow": ("drift_views", "AttributionShareRow"),
    "CalibrationRow": ("views", "CalibrationRow"),
    "ChangePointRow": ("drift_views", "ChangePointRow"),
    "DriftReportView": ("drift_views", "DriftReportView"),
    "ErrorGroupRow": ("views", "ErrorGroupRow"),
    "EvaluationReportView": ("views", "EvaluationReportView"),
    "FairnessSection": ("views", "FairnessSection"),
    "FeatureDriftRow": ("drift_views", "FeatureDriftRow"),
    "GapRow": ("views", "GapRow"),
    "GateCheckRow": ("views", "GateCheckRow"),
    "GateView": ("views", "GateView"),
    "GroupRow": ("views", "GroupRow"),
    "HistogramView": ("drift_views", "HistogramView"),
    "IndexRow": ("index_views", "IndexRow"),
    "IndexVerdict": ("index_views", "IndexVerdict"),
    "JointDriftRow": ("drift_views", "JointDriftRow"),
    "MetricRow": ("views", "MetricRow"),
    "ModelIndexView": ("index_views", "ModelIndexView"),
    "QuarantineRow": ("drift_views", "QuarantineRow"),
    "WaterfallImage": ("views", "WaterfallImage"),
    "waterfall_png": ("waterfall", "waterfall_png"),
}

__all__ = [
    "AttributionShareRow",
    "CalibrationRow",
    "ChangePointRow",
    "DEFAULT_N_PERMUTATIONS",
    "DriftReportView",
    "ErrorGroupRow",
    "EstimateRow",
    "EvaluationReportView",
    "Explanation",
    "FairnessSection",
    "FeatureDriftRow",
    "GapRow",
    "GateCheckRow",
    "GateView",
    "GraphModel",
    "GroupRow",
    "GroupShap",
    "GroupShapSection",
    "HistogramView",
    "IndexRow",
    "IndexVerdict",
    "JointDriftRow",
    "LabelledPerformance",
    "MaskedEvaluator",
    "MetricRow",
    "ModelIndexView",
    "QualityRow",
    "QuarantineRow",
    "SegmentDriftRow",
    "SegmentEstimateRow",
    "SegmentRow",
    "SegmentSection",
    "ShapClassSection",
    "ShapSummary",
    "ShapSwarmRow",
    "UnsupportedGraph",
    "WaterfallImage",
    "WeakSliceRow",
    "check_trees",
    "choose_algorithm",
    "exact_values",
    "explain",
    "explain_class",
    "explain_trees",
    "global_importance",
    "importance_standard_errors",
    "interval_quantile",
    "interval_words",
    "interventional_tree_shap",
    "permutation_values",
    "pooled_standard_errors",
    "read_linear_model",
    "read_tree_ensemble",
    "render_drift_report",
    "render_evaluation_report",
    "render_model_index",
    "select_error_rows",
    "select_rows",
    "shap_by_group",
    "shap_summary",
    "waterfall_png",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__, globals())
