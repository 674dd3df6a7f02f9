"""Which fairness thresholds of a policy apply to one sensitive feature's report.

A multiclass model's gaps are per class (``tpr_gap[cat]``) and its classes differ per model,
so a policy shipped for every multiclass model names ``<gap>[*]``: "each class of the model".
:func:`thresholds_for` turns that into one threshold per class of the report, and
:func:`task_of_report` names the task a report belongs to (for the gate's warning that a
reported feature has no threshold at all). Pure: reports and policies in, thresholds out.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from modelgate.fairness.metrics import FairnessReport
from modelgate.fairness.multiclass import MulticlassFairnessReport
from modelgate.fairness.regression import RegressionFairnessReport

from .policy import FairnessThreshold, Policy

__all__ = ["task_of_report", "thresholds_for"]


def thresholds_for(policy: Policy, feature: str, report: Any) -> tuple[FairnessThreshold, ...]:
    """The thresholds judging ``feature``'s ``report``, ``<gap>[*]`` expanded per class.

    A class the policy names itself (``tpr_gap[cat]``) keeps its own threshold; a report
    other than a multiclass one (or none) gets the thresholds as they are.

    Examples
    --------
    >>> from modelgate.evaluation.policy import load_policy
    >>> from modelgate.fairness.multiclass import multiclass_fairness_report
    >>> report = multiclass_fairness_report([0, 1, 2, 0], [0, 1, 2, 1], ["a", "a", "b", "b"],
    ...     classes=["x", "y", "z"], sensitive_feature="g", n_bootstrap=0)
    >>> policy = load_policy("fairness: {default: {'tpr_gap[*]': {upper: 0.1}, "
    ...                      "'tpr_gap[y]': {upper: 0.5}}}")
    >>> [(t.metric, t.upper) for t in thresholds_for(policy, "g", report)]
    [('tpr_gap[x]', 0.1), ('tpr_gap[z]', 0.1), ('tpr_gap[y]', 0.5)]
    """
    thresholds = policy.fairness_for(feature)
    if not isinstance(report, MulticlassFairnessReport):
        return thresholds
    named = {t.metric for t in thresholds}
    out: list[FairnessThreshold] = []
    for t in thresholds:
        base, _, rest = t.metric.partition("[")
        if rest != "*]":
            out.append(t)
            continue
        out.extend(replace(t, metric=f"{base}[{c.label}]") for c in report.classes
                   if f"{base}[{c.label}]" not in named)
    return tuple(out)


def task_of_report(report: Any) -> str:
    """``binary_classification``, ``multiclass_classification`` or ``regression`` by the
    report's type (its type's name for anything else)."""
    if isinstance(report, MulticlassFairnessReport):
        return "multiclass_classification"
    if isinstance(report, RegressionFairnessReport):
        return "regression"
    if isinstance(report, FairnessReport):
        return "binary_classification"
    return type(report).__name__
