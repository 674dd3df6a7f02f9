"""Policies per task: default files, names checked against the task, the gate on multiclass and
regression results."""

from __future__ import annotations

import numpy as np
import pytest
from modelgate.evaluation.gate import decide
from modelgate.evaluation.multiclass import evaluate_multiclass
from modelgate.evaluation.policy import (
    PolicyError,
    check_policy_for_task,
    default_policy,
    load_policy,
)
from modelgate.evaluation.regression import evaluate_regression
from modelgate.fairness.multiclass import multiclass_fairness_report
from modelgate.fairness.regression import regression_fairness_report


@pytest.mark.parametrize("task", ["binary_classification", "multiclass_classification", "regression"])
def test_each_task_has_a_default_policy_that_fits_it(task: str) -> None:
    check_policy_for_task(default_policy(task), task)


@pytest.mark.parametrize(("task", "text", "message"), [
    ("regression", "metrics: {roc_auc: {value: {lower: 0.7}}}", "'roc_auc' is not reported"),
    ("binary_classification", "metrics: {'recall[a]': {value: {lower: 0.7}}}",
     "'recall\\[a\\]' is not reported"),
    ("multiclass_classification", "fairness: {default: {tpr_gap: {upper: 0.1}}}",
     "per class, as <gap>\\[<class>\\]"),
    ("regression", "fairness: {default: {equalized_odds_difference: {upper: 0.1}}}",
     "mae_gap, rmse_gap, mean_prediction_gap"),
], ids=["auc-for-regression", "per-class-for-binary", "multiclass-gap-without-class",
        "binary-gap-for-regression"])
def test_policy_naming_what_the_task_does_not_report_is_refused(task: str, text: str,
                                                                message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        check_policy_for_task(load_policy(text), task)


def test_bias_change_needs_a_direction() -> None:
    with pytest.raises(PolicyError, match="mean_error.*no better direction"):
        load_policy("metrics: {mean_error: {change: {absolute: -0.1}}}")
    load_policy("metrics: {mean_error: {value: {lower: -0.5, upper: 0.5}}}")


def test_gate_judges_multiclass_metrics_and_per_class_gaps() -> None:
    rng = np.random.default_rng(0)
    n = 600
    y = rng.integers(0, 3, n)
    logits = rng.normal(size=(n, 3)) + 2.0 * np.eye(3)[y]
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    group = rng.choice(["a", "b"], n)
    classes = ["lo", "mid", "hi"]
    metrics = evaluate_multiclass(y, proba, classes=classes, n_bootstrap=50)
    fairness = multiclass_fairness_report(y, proba.argmax(axis=1), group, classes=classes,
                                          sensitive_feature="group", n_bootstrap=50)
    policy = load_policy("""
metrics:
  roc_auc_ovr_macro: {value: {lower: 0.6}}
  'recall[hi]': {value: {lower: 0.99}}
fairness:
  default: {'tpr_gap[mid]': {upper: 1.0}}
""")
    check_policy_for_task(policy, "multiclass_classification")
    decision = decide(metrics.by_name(), None, {"group": fairness}, policy)
    verdicts = {c.metric: c.verdict for c in decision.checks}
    assert verdicts == {"roc_auc_ovr_macro": "pass", "recall[hi]": "breach", "tpr_gap[mid]": "pass"}
    assert not decision.passed
    # one-vs-rest counts of class "mid" (index 1) per group, counted here with numpy
    (gap,) = decide({}, None, {"group": fairness}, load_policy(
        "basis: interval\nfairness: {min_positives_per_group: 1000, default: "
        "{'tpr_gap[mid]': {upper: 1.0}}}")).checks
    positives = min(int(((y == 1) & (group == g)).sum()) for g in ("a", "b"))
    negatives = min(int(((y != 1) & (group == g)).sum()) for g in ("a", "b"))
    assert (gap.min_group_positives, gap.min_group_negatives) == (positives, negatives)
    assert gap.verdict == "inconclusive" and gap.required_positives == 1000


def test_gate_judges_regression_metrics_and_gaps() -> None:
    rng = np.random.default_rng(1)
    y = rng.normal(size=400)
    group = rng.choice(["a", "b"], 400)
    pred = y + rng.normal(scale=np.where(group == "a", 0.2, 1.0))
    decision = decide(evaluate_regression(y, pred, n_bootstrap=50).by_name(), None,
                      {"group": regression_fairness_report(y, pred, group, sensitive_feature="group",
                                                           n_bootstrap=50)},
                      load_policy("""
metrics: {r2: {value: {lower: 0.0}}}
fairness: {default: {mae_gap: {upper: 0.1}}}
"""))
    verdicts = {c.metric: c.verdict for c in decision.checks}
    assert verdicts == {"r2": "pass", "mae_gap": "breach"}  # group b's errors are 5x larger
