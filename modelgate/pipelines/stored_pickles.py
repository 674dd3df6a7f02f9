"""Reading the pipelines' pickles back, including those written before their classes moved.

The steps store their results as pickles in our own bucket (the trust boundary for
unpickling, see :mod:`modelgate.pipelines.evaluation.run_refs`), and a pickle names each
class by its module. Some outlive a run: a model version's performance-estimation reference
(``EstimationReference``) is built once, at promotion or ``modelgate monitor set``, and read
by every later drift run. When the pipelines were given a folder each
(``modelgate.pipelines.drift``, ``modelgate.pipelines.evaluation``), their modules were
renamed; :func:`loads` reads a class stored under its former module from where it lives now,
so a reference built before the move still loads.
"""

from __future__ import annotations

import io
import pickle
from typing import Any

_DRIFT = "modelgate.pipelines.drift"
_EVALUATION = "modelgate.pipelines.evaluation"

#: Former module -> module now, for modules that moved whole.
MOVED_MODULES = {
    "modelgate.pipelines.drift": f"{_DRIFT}.feature_steps",
    **{f"modelgate.pipelines.drift_{name}": f"{_DRIFT}.{name}" for name in (
        "attempts", "columns", "concept", "estimation", "interval", "joint", "names", "partitions",
        "realised", "report", "runner", "sample", "scratch", "usable", "verdict")},
    "modelgate.pipelines.monitor": f"{_DRIFT}.monitor",
    "modelgate.pipelines.monitor_checks": f"{_DRIFT}.monitor_checks",
    "modelgate.pipelines.evaluate_tasks": f"{_EVALUATION}.model_tasks",
    "modelgate.pipelines.evaluation_runner": f"{_EVALUATION}.runner",
    **{f"modelgate.pipelines.{name}": f"{_EVALUATION}.{name}" for name in (
        "attempts", "fairness_records", "partitions", "policy_provenance", "run_keys", "shap_report")},
    # renamed so that no reports module shares a public function's name (Explanation, ShapSummary)
    "modelgate.reports.explain": "modelgate.reports.explanation",
    "modelgate.reports.explain_trees": "modelgate.reports.exact_explanation",
    "modelgate.reports.shap_summary": "modelgate.reports.shap_summaries",
}

#: The classes of the former ``evaluate`` module (split by idea) -> the module each lives in now.
_EVALUATE_CLASSES = {
    "EvaluationBlocked": "run_refs", "RunRef": "run_refs", "PartitionResult": "score_step",
    "MergedStatistics": "score_step", "MetricsResult": "metrics_step", "ExplainResult": "explain_step",
    "CheckedPolicy": "policy_loading", "DecisionResult": "gate_step",
}


def current_location(module: str, name: str) -> tuple[str, str]:
    """Where a class stored as ``module.name`` lives now (itself when it did not move).

    >>> current_location("modelgate.pipelines.drift_estimation", "EstimationReference")
    ('modelgate.pipelines.drift.estimation', 'EstimationReference')
    >>> current_location("modelgate.pipelines.evaluate", "MetricsResult")
    ('modelgate.pipelines.evaluation.metrics_step', 'MetricsResult')
    >>> current_location("modelgate.drift.adwin", "Adwin")
    ('modelgate.drift.adwin', 'Adwin')
    """
    if module in ("modelgate.pipelines.evaluate", f"{_EVALUATION}.evaluate") and name in _EVALUATE_CLASSES:
        return f"{_EVALUATION}.{_EVALUATE_CLASSES[name]}", name
    return MOVED_MODULES.get(module, module), name


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        return super().find_class(*current_location(module, name))


def loads(data: bytes) -> Any:
    """``pickle.loads`` for the pipelines' own pickles, finding moved classes where they are now."""
    return _Unpickler(io.BytesIO(data)).load()  # noqa: S301 - our own bucket, see the module doc
