"""Fairness in every task's default policy (issue #38 point 5).

A 3-class model's gaps are judged per class by the multiclass default's ``<gap>[*]`` checks;
a regression default has no limit in the label's units, so the gate warns that no fairness
check covers the sensitive feature. Expected gaps come from fairlearn or are worked by hand.
"""

from __future__ import annotations

import numpy as np
import pytest
from fairlearn.metrics import demographic_parity_difference, equalized_odds_difference
from modelgate.evaluation.gate import GateCheck, decide
from modelgate.evaluation.multiclass import evaluate_multiclass
from modelgate.evaluation.policy import (
    PolicyError,
    check_policy_for_task,
    default_policy,
    load_policy,
    merge_policies,
)
from modelgate.evaluation.regression import evaluate_regression
from modelgate.fairness import fairness_report
from modelgate.fairness.multiclass import multiclass_fairness_report
from modelgate.fairness.regression import regression_fairness_report

CLASSES = ["lo", "mid", "hi"]
MULTICLASS = "multiclass_classification"


def _by_id(checks: tuple[GateCheck, ...]) -> dict[str, GateCheck]:
    return {c.check_id: c for c in checks}


def _three_classes(seed: int = 0, n: int = 600) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Labels, predictions and gender: right 90% of the time, except that half of the men's
    class ``hi`` rows are predicted ``mid``."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    gender = rng.choice(["f", "m"], n)
    pred = np.where(rng.random(n) < 0.9, y, rng.integers(0, 3, n))
    pred = np.where((gender == "m") & (y == 2) & (rng.random(n) < 0.5), 1, pred)
    return y, pred, gender


def test_multiclass_default_judges_every_class_gap_with_fairlearns_value() -> None:
    y, pred, gender = _three_classes()
    proba = np.full((len(y), 3), 0.1) + 0.7 * np.eye(3)[pred]
    policy = default_policy(MULTICLASS)
    check_policy_for_task(policy, MULTICLASS)
    decision = decide(evaluate_multiclass(y, proba, classes=CLASSES, n_bootstrap=200).by_name(),
                      None, {"gender": multiclass_fairness_report(
                          y, pred, gender, classes=CLASSES, sensitive_feature="gender",
                          n_bootstrap=200)}, policy)
    checks = _by_id(decision.checks)
    for k, label in enumerate(CLASSES):
        oracle = {"equalized_odds_difference": equalized_odds_difference,
                  "demographic_parity_difference": demographic_parity_difference}
        for gap, fairlearn_gap in oracle.items():
            check = checks[f"fairness:gender:{gap}[{label}]"]
            expected = fairlearn_gap((y == k).astype(int), (pred == k).astype(int),
                                     sensitive_features=gender)
            assert check.observed == pytest.approx(expected, abs=1e-12)
            assert check.basis == "interval" and check.ci_lower is not None
            assert check.severity == "warn"
    hi = checks["fairness:gender:equalized_odds_difference[hi]"]
    assert hi.verdict == "breach" and hi.effect == "warn"  # the men's lost hi rows: TPR gap ~0.45
    assert decision.passed  # the per-class defaults warn, they do not block
    assert "WARN    fairness:gender:equalized_odds_difference[hi]: warning: breached" in \
        decision.summary
    assert "no_fairness_check" not in decision.summary


def test_a_class_named_in_the_override_replaces_the_star_for_that_class_only() -> None:
    y, pred, gender = _three_classes(seed=1, n=300)
    report = multiclass_fairness_report(y, pred, gender, classes=CLASSES,
                                        sensitive_feature="gender", n_bootstrap=50)
    policy = merge_policies(default_policy(MULTICLASS), load_policy(
        "fairness: {default: {'equalized_odds_difference[hi]': {upper: 0.6, severity: block}}}"))
    eod = {c.metric: (c.upper, c.severity) for c in decide({}, None, {"gender": report},
                                                          policy).checks
           if c.metric.startswith("equalized_odds_difference")}
    assert eod == {"equalized_odds_difference[lo]": (0.03, "warn"),
                   "equalized_odds_difference[mid]": (0.03, "warn"),
                   "equalized_odds_difference[hi]": (0.6, "block")}


def test_multiclass_model_without_sensitive_features_is_warned_not_blocked() -> None:
    checks = decide({}, None, {}, default_policy(MULTICLASS)).checks
    fairness = [c for c in checks if c.kind == "fairness"]
    assert [(c.check_id, c.verdict, c.effect) for c in fairness] == [
        ("fairness:*:equalized_odds_difference[*]", "fail", "warn"),
        ("fairness:*:demographic_parity_difference[*]", "fail", "warn")]


def _regression_by_hand() -> tuple[list[float], list[float], list[str]]:
    # group a: no error; group b: errors 1, 2, 3 -> MAE 2; mae_gap = 2 - 0 = 2
    return ([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [1.0, 2.0, 3.0, 5.0, 7.0, 9.0],
            ["a", "a", "a", "b", "b", "b"])


def test_regression_default_warns_that_no_fairness_check_covers_the_feature() -> None:
    y, pred, gender = _regression_by_hand()
    report = regression_fairness_report(y, pred, gender, sensitive_feature="gender",
                                        n_bootstrap=100)
    decision = decide(evaluate_regression(y, pred, n_bootstrap=100).by_name(), None,
                      {"gender": report}, default_policy("regression"))
    (uncovered,) = [c for c in decision.checks if c.kind == "fairness"]
    assert uncovered.check_id == "fairness:gender:no_fairness_check"
    assert (uncovered.verdict, uncovered.effect, uncovered.status) == ("fail", "warn", "not checked")
    assert uncovered in decision.warnings
    line = ("WARN    fairness:gender:no_fairness_check: warning: not checked — no fairness check "
            "covers sensitive feature 'gender' (task regression)")
    assert line in decision.summary
    record = uncovered.to_record()  # the stored row (and the JSON's check)
    assert (record["metric_name"], record["sensitive_feature"], record["effect"],
            record["threshold_text"]) == ("no_fairness_check", "gender", "warn", "")


def test_regression_gap_set_in_the_override_is_judged_and_the_warning_goes() -> None:
    y, pred, gender = _regression_by_hand()
    report = regression_fairness_report(y, pred, gender, sensitive_feature="gender",
                                        n_bootstrap=100)
    policy = merge_policies(default_policy("regression"), load_policy(
        "fairness: {default: {mae_gap: {upper: 1.0, basis: point_estimate}}}"))
    check_policy_for_task(policy, "regression")
    (gap,) = [c for c in decide({}, None, {"gender": report}, policy).checks
              if c.kind == "fairness"]
    assert (gap.check_id, gap.observed, gap.verdict) == ("fairness:gender:mae_gap", 2.0, "breach")
    assert gap.ci_lower is not None and gap.ci_upper is not None  # intervals exist, too


def test_a_binary_feature_the_policy_does_not_cover_is_warned() -> None:
    y, pred = [0, 1, 0, 1, 0, 1, 1, 0], [0, 1, 1, 1, 0, 0, 1, 0]
    reports = {f: fairness_report(y, pred, g, sensitive_feature=f, n_bootstrap=0)
               for f, g in (("age", ["x"] * 4 + ["y"] * 4), ("gender", ["f", "m"] * 4))}
    policy = load_policy("fairness: {features: {age: {tpr_gap: {upper: 1.0}}}}")
    fairness = [(c.check_id, c.effect) for c in decide({}, None, reports, policy).checks]
    assert fairness == [("fairness:age:tpr_gap", "none"),
                        ("fairness:gender:no_fairness_check", "warn")]


def test_every_class_is_for_fairness_gaps_only() -> None:
    with pytest.raises(PolicyError, match=r"'recall\[\*\]': '\[\*\]' \(every class\) is for "
                                          r"fairness gaps only"):
        check_policy_for_task(load_policy("metrics: {'recall[*]': {value: {lower: 0.5}}}"),
                              MULTICLASS)
