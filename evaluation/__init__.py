"""Evaluation core: metrics with intervals (binary, multiclass, regression), the
mergeable statistics they are computed from, the promotion policy and the gate.

This is the core's public surface: what the pipelines, the CLI, the DAGs and the benchmarks use,
imported from here (``from modelgate.evaluation import ...``; tests/layers/test_import_layers.py fails on
an inner module imported from outside the core). A name is imported from its module on first use
(PEP 562), so importing the package or one inner module loads no other (POT, matplotlib, jinja2 and
ONNX are slow to import); a name its module shares (``policy_text``) is bound at import, since the
submodule, once imported, would otherwise take the attribute.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from modelgate.lazy_exports import lazy_exports

from .policy_text import policy_text

if TYPE_CHECKING:
    from .gate import GateDecision, decide
    from .labels import LabelError, binary_labels, class_indices, model_labels
    from .metric_results import METRIC_NAMES, ComparisonReport, PairedComparison, PerformanceReport
    from .metrics import compare, evaluate
    from .multiclass import MulticlassReport, evaluate_multiclass, multiclass_memory_bytes
    from .multiclass_compare import compare_multiclass, evaluate_and_compare_multiclass
    from .multiple_testing import adjusted_p_values
    from .performance import performance_from_statistics
    from .policy import (
        Policy,
        PolicyError,
        check_policy_for_task,
        default_policy,
        default_policy_path,
        load_policy,
        merge_policies,
    )
    from .policy_diff import PolicyChange, diff_policies
    from .regression import RegressionReport, compare_regression, evaluate_regression
    from .segment_gate import segment_checks, segment_verdicts
    from .segment_policy import SegmentPolicy, with_segment_columns
    from .segment_rows import evaluate_multiclass_segments, evaluate_regression_segments
    from .segment_statistics import SegmentStatistics, collect_segments, merge_segments
    from .segments import DEFAULT_MIN_ROWS, SegmentReport, evaluate_segments
    from .sufficient import EvaluationStatistics
    from .sufficient import collect as collect_statistics
    from .sufficient import merge as merge_statistics
    from .weakest_slices import (
        SliceCounts,
        WeakSlices,
        count_slices,
        find_weakest_slices,
        merge_slice_counts,
        search_slices,
    )

#: Public name -> (module, name in the module), imported on first use.
_LAZY = {
    "GateDecision": ("gate", "GateDecision"),
    "decide": ("gate", "decide"),
    "LabelError": ("labels", "LabelError"),
    "binary_labels": ("labels", "binary_labels"),
    "class_indices": ("labels", "class_indices"),
    "model_labels": ("labels", "model_labels"),
    "ComparisonReport": ("metric_results", "ComparisonReport"),
    "METRIC_NAMES": ("metric_results", "METRIC_NAMES"),
    "PairedComparison": ("metric_results", "PairedComparison"),
    "PerformanceReport": ("metric_results", "PerformanceReport"),
    "compare": ("metrics", "compare"),
    "evaluate": ("metrics", "evaluate"),
    "MulticlassReport": ("multiclass", "MulticlassReport"),
    "compare_multiclass": ("multiclass_compare", "compare_multiclass"),
    "evaluate_and_compare_multiclass": ("multiclass_compare", "evaluate_and_compare_multiclass"),
    "evaluate_multiclass": ("multiclass", "evaluate_multiclass"),
    "multiclass_memory_bytes": ("multiclass", "multiclass_memory_bytes"),
    "adjusted_p_values": ("multiple_testing", "adjusted_p_values"),
    "performance_from_statistics": ("performance", "performance_from_statistics"),
    "Policy": ("policy", "Policy"),
    "PolicyError": ("policy", "PolicyError"),
    "check_policy_for_task": ("policy", "check_policy_for_task"),
    "default_policy": ("policy", "default_policy"),
    "default_policy_path": ("policy", "default_policy_path"),
    "load_policy": ("policy", "load_policy"),
    "merge_policies": ("policy", "merge_policies"),
    "PolicyChange": ("policy_diff", "PolicyChange"),
    "diff_policies": ("policy_diff", "diff_policies"),
    "RegressionReport": ("regression", "RegressionReport"),
    "compare_regression": ("regression", "compare_regression"),
    "evaluate_regression": ("regression", "evaluate_regression"),
    "segment_checks": ("segment_gate", "segment_checks"),
    "segment_verdicts": ("segment_gate", "segment_verdicts"),
    "SegmentPolicy": ("segment_policy", "SegmentPolicy"),
    "with_segment_columns": ("segment_policy", "with_segment_columns"),
    "evaluate_multiclass_segments": ("segment_rows", "evaluate_multiclass_segments"),
    "evaluate_regression_segments": ("segment_rows", "evaluate_regression_segments"),
    "SegmentStatistics": ("segment_statistics", "SegmentStatistics"),
    "collect_segments": ("segment_statistics", "collect_segments"),
    "merge_segments": ("segment_statistics", "merge_segments"),
    "DEFAULT_MIN_ROWS": ("segments", "DEFAULT_MIN_ROWS"),
    "SegmentReport": ("segments", "SegmentReport"),
    "evaluate_segments": ("segments", "evaluate_segments"),
    "EvaluationStatistics": ("sufficient", "EvaluationStatistics"),
    "collect_statistics": ("sufficient", "collect"),
    "merge_statistics": ("sufficient", "merge"),
    "SliceCounts": ("weakest_slices", "SliceCounts"),
    "WeakSlices": ("weakest_slices", "WeakSlices"),
    "count_slices": ("weakest_slices", "count_slices"),
    "find_weakest_slices": ("weakest_slices", "find_weakest_slices"),
    "merge_slice_counts": ("weakest_slices", "merge_slice_counts"),
    "search_slices": ("weakest_slices", "search_slices"),
}

__all__ = [
    "ComparisonReport",
    "DEFAULT_MIN_ROWS",
    "EvaluationStatistics",
    "GateDecision",
    "LabelError",
    "METRIC_NAMES",
    "MulticlassReport",
    "PairedComparison",
    "PerformanceReport",
    "Policy",
    "PolicyChange",
    "PolicyError",
    "RegressionReport",
    "SegmentPolicy",
    "SegmentReport",
    "SegmentStatistics",
    "SliceCounts",
    "WeakSlices",
    "adjusted_p_values",
    "binary_labels",
    "check_policy_for_task",
    "class_indices",
    "collect_segments",
    "collect_statistics",
    "compare",
    "compare_multiclass",
    "compare_regression",
    "count_slices",
    "decide",
    "default_policy",
    "default_policy_path",
    "diff_policies",
    "evaluate",
    "evaluate_and_compare_multiclass",
    "evaluate_multiclass_segments",
    "evaluate_multiclass",
    "evaluate_regression",
    "evaluate_regression_segments",
    "evaluate_segments",
    "find_weakest_slices",
    "load_policy",
    "merge_policies",
    "merge_segments",
    "merge_slice_counts",
    "merge_statistics",
    "model_labels",
    "multiclass_memory_bytes",
    "performance_from_statistics",
    "policy_text",
    "search_slices",
    "segment_checks",
    "segment_verdicts",
    "with_segment_columns",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__, globals())
