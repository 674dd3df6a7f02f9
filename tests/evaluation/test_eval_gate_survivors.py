"""The promotion gate (``evaluation/gate.py``): cases written for the survivors of its mutation
session (tests/MUTATION.md): the label counts each gap needs, each verdict's status, the bound
and direction a reason names, and strings built at run time read by value."""

from __future__ import annotations

import math

import numpy as np
import pytest
from modelgate.evaluation.gate import GateCheck, decide
from modelgate.evaluation.metrics import MetricDelta
from modelgate.evaluation.policy import load_policy
from modelgate.fairness import (
    FairnessEstimate,
    FairnessReport,
    disaggregate,
    fairness_report,
)
from support.gate_inputs import NAN, est, fair


def test_decide_takes_the_data_by_position_or_keyword_and_deltas_by_keyword_only() -> None:
    policy = load_policy("metrics: {roc_auc: {value: {lower: 0.7}}}")
    metrics = {"roc_auc": est("roc_auc", 0.8)}
    by_keyword = decide(candidate=metrics, champion=None, fairness={}, policy=policy)
    assert by_keyword == decide(metrics, None, {}, policy)
    with pytest.raises(TypeError):
        decide(metrics, None, {}, policy, {})  # type: ignore[misc]


def test_an_on_inconclusive_built_at_run_time_is_read_by_value() -> None:
    warn = "".join(["wa", "rn"])
    check = GateCheck("value:f1", "value", "f1", None, 0.8, None, 0.81, 0.78, 0.84, 228,
                      "interval", "inconclusive", "block", "", on_inconclusive=warn)
    assert check.effect == "warn"


@pytest.mark.parametrize(("metric", "direction", "better"), [
    ("roc_auc", "higher_is_better", "higher"), ("log_loss", "lower_is_better", "lower"),
    ("roc_auc", "lower_is_better", "lower"), ("log_loss", "higher_is_better", "higher"),
])
def test_a_change_reason_names_the_better_direction(metric: str, direction: str,
                                                    better: str) -> None:
    policy = load_policy(f"metrics: {{{metric}: {{change: {{absolute: -0.5, direction: {direction}}}}}}}")
    (check,) = decide({metric: est(metric, 0.5)}, {metric: est(metric, 0.4)}, {}, policy).checks
    assert f"({better} is better; candidate 0.5000, champion 0.4000, n=1000)." in check.reason


def test_the_fewest_positives_and_negatives_are_reported_apart() -> None:
    # group a: labels 1, 1, 0 (2 positives, 1 negative); b: 1, 1, 0, 0 (2 and 2), by hand
    table = disaggregate([1, 1, 0, 1, 1, 0, 0], [1, 0, 0, 1, 1, 0, 1], list("aaabbbb"))
    gap = FairnessEstimate("tpr_gap", 0.05, 0.0, 0.1, 7, "b", "a", ())
    report = FairnessReport("sex", table, (gap,), 100, 0.95, 0, "exclude", True)
    (check,) = decide({}, None, {"sex": report}, load_policy(
        "fairness: {default: {tpr_gap: {upper: 0.1}}}")).checks
    assert (check.min_group_positives, check.min_group_negatives) == (2, 1)
    assert "fewest per group: 2 positives, 1 negatives" in check.reason


def test_groups_are_counted_only_for_a_classifier_s_gap_estimate() -> None:
    """A report whose gap is not a :class:`FairnessEstimate` (any object with its fields) gets
    no group counts and no minimum applied, even when the report holds a group table."""
    from types import SimpleNamespace

    gap = SimpleNamespace(name="tpr_gap", value=0.01, ci_lower=0.0, ci_upper=0.02, n=4,
                          highest_group="b", lowest_group="a", excluded_groups=(),
                          undefined_reason=None)
    report = FairnessReport("sex", fair("sex").table, (gap,), 100, 0.95, 0, "exclude", True)  # type: ignore[arg-type]
    (check,) = decide({}, None, {"sex": report}, load_policy(
        "basis: interval\nfairness: {default: {tpr_gap: {upper: 0.1}}}")).checks
    assert (check.min_group_positives, check.min_group_negatives) == (None, None)
    assert (check.required_positives, check.verdict) == (None, "pass")


@pytest.mark.parametrize(("min_pos", "min_neg", "tpr", "fpr"), [
    (2, 2, "pass", "inconclusive"), (3, 1, "inconclusive", "pass"), (1, 1, "pass", "pass"),
], ids=["few-negatives", "few-positives", "more-than-enough"])
def test_a_tpr_gap_needs_positives_and_an_fpr_gap_negatives(min_pos: int, min_neg: int, tpr: str,
                                                            fpr: str) -> None:
    # fewest per group, counted by hand: 2 positives (both groups), 1 negative (group a)
    table = disaggregate([1, 1, 0, 1, 1, 0, 0], [1, 0, 0, 1, 1, 0, 1], list("aaabbbb"))
    gaps = tuple(FairnessEstimate(name, 0.05, 0.0, 0.1, 7, "b", "a", ())
                 for name in ("tpr_gap", "fpr_gap"))
    report = FairnessReport("sex", table, gaps, 100, 0.95, 0, "exclude", True)
    checks = decide({}, None, {"sex": report}, load_policy(
        f"basis: interval\nfairness: {{min_positives_per_group: {min_pos}, "
        f"min_negatives_per_group: {min_neg}, "
        "default: {tpr_gap: {upper: 0.1}, fpr_gap: {upper: 0.1}}}")).checks
    assert [c.verdict for c in checks] == [tpr, fpr]
    assert [(c.required_positives, c.required_negatives) for c in checks] == [
        (min_pos, None), (None, min_neg)]


def test_a_breach_or_failure_blocks_whatever_on_inconclusive_says() -> None:
    policy = load_policy("basis: interval\non_inconclusive: warn\n"
                         "metrics: {roc_auc: {value: {lower: 0.7}}, f1: {value: {lower: 0.5}}}")
    decision = decide({"roc_auc": est("roc_auc", 0.6, 0.55, 0.65)}, None, {}, policy)
    assert [(c.verdict, c.effect) for c in decision.checks] == [("breach", "block"),
                                                               ("fail", "block")]
    assert not decision.passed and decision.warnings == ()


def test_a_check_s_verdict_and_kind_built_at_run_time_are_read_by_value() -> None:
    check = GateCheck("change:roc_auc:absolute", "".join(["cha", "nge"]), "roc_auc", None, -0.01,
                      None, 0.0, NAN, NAN, 10, "interval", "".join(["inconc", "lusive"]),
                      "block", "", on_inconclusive="warn")
    assert check.effect == "warn" and check.status == "inconclusive at n = 10"
    assert check.threshold == "absolute change >= -0.01 (higher is better)"


def test_the_judging_record_is_frozen_and_slotted() -> None:
    import dataclasses

    from modelgate.evaluation.gate import _Judging

    how = _Judging("interval", "block", 10, 10)
    with pytest.raises(dataclasses.FrozenInstanceError):
        how.basis = "point_estimate"  # type: ignore[misc]
    assert not hasattr(how, "__dict__") and how.interval


def test_an_undefined_change_names_why() -> None:
    policy = load_policy("metrics: {mean_error: {change: {absolute: -0.1, direction: "
                         "lower_is_better}}}")
    # finite values whose difference overflows: the change is NaN-like, with no delta given
    huge = {"mean_error": est("mean_error", 1.5e308)}
    (check,) = decide(huge, {"mean_error": est("mean_error", -1.5e308)}, {}, policy).checks
    assert check.verdict == "fail"
    assert check.reason == "mean_error absolute change cannot be computed: the change is undefined (NaN)."
    delta = {"mean_error": MetricDelta("mean_error", 0.1, 0.2, NAN, NAN, NAN, 10,
                                       "champion: no rows")}
    small = {"mean_error": est("mean_error", 0.1)}
    (check,) = decide(small, {"mean_error": est("mean_error", 0.2)}, {}, policy,
                      deltas=delta).checks
    assert check.reason.endswith("the change is undefined (champion: no rows).")


@pytest.mark.parametrize(("lo", "hi"), [(-0.01, NAN), (NAN, 0.01)], ids=["no-upper", "no-lower"])
def test_an_interval_with_one_end_missing_cannot_be_judged(lo: float, hi: float) -> None:
    policy = load_policy("basis: interval\nmetrics: {roc_auc: {value: {lower: 0.7}, "
                         "change: {absolute: -0.05}}}")
    auc = {"roc_auc": est("roc_auc", 0.8, 0.75 if math.isfinite(lo) else NAN,
                          0.85 if math.isfinite(hi) else NAN)}
    delta = {"roc_auc": MetricDelta("roc_auc", 0.8, 0.8, 0.0, lo, hi, 1000)}
    value, change = decide(auc, dict(auc), {}, policy, deltas=delta).checks
    assert value.verdict == "fail" and "has no confidence interval to judge" in value.reason
    assert change.verdict == "fail"
    assert change.reason == "roc_auc: the change has no confidence interval to judge."


def test_excluded_groups_are_named_only_when_there_are_some() -> None:
    policy = load_policy("fairness: {default: {tpr_gap: {upper: 0.1}, fpr_gap: {upper: 0.1}}}")
    table = fair("sex").table
    report = FairnessReport("sex", table, (
        FairnessEstimate("tpr_gap", 0.05, 0.0, 0.1, 4, "b", "a", ()),
        FairnessEstimate("fpr_gap", 0.05, 0.0, 0.1, 4, "b", "a", (("c", "too small"),))),
        100, 0.95, 0, "exclude", True)
    tpr, fpr = decide({}, None, {"sex": report}, policy).checks
    assert "excluded" not in tpr.reason
    assert fpr.reason.endswith("; excluded: 'c' (too small)).")


def test_a_gap_left_with_one_group_names_the_groups_set_aside() -> None:
    # 40 rows of 'big' and 3 of 'tiny' (under 30): the pipeline's fairness report leaves
    # 'tiny' out, so no gap is left to judge; "fewer than two groups" alone reads as false
    # to someone who sees two groups in the data
    policy = load_policy("fairness: {default: {equalized_odds_difference: {upper: 0.1}}}")
    y = np.array([0, 1] * 20 + [0, 1, 1])
    sensitive = np.array(["big"] * 40 + ["tiny"] * 3)
    report = fairness_report(y, y, sensitive, sensitive_feature="sex",
                             include_small_groups=False, n_bootstrap=0)
    (check,) = decide({}, None, {"sex": report}, policy).checks
    assert check.verdict == "fail"
    assert check.reason.endswith(
        "fewer than two groups have a defined false positive rate). "
        "Left out: 'tiny' (small group (n=3 < 30)).")


def test_many_groups_set_aside_are_named_ten_and_counted() -> None:
    policy = load_policy("fairness: {default: {tpr_gap: {upper: 0.1}}}")
    labels = [f"g{i:02d}" for i in range(25)]
    y = np.tile([0, 1], 25 * 2)
    sensitive = np.repeat(labels, 4)
    report = fairness_report(y, y, sensitive, sensitive_feature="age",
                             include_small_groups=False, n_bootstrap=0)
    (check,) = decide({}, None, {"age": report}, policy).checks
    named = ", ".join(f"'{g}' (small group (n=4 < 30))" for g in labels[:10])
    assert check.reason.endswith(f"Left out: {named} and 15 more.")


def test_a_basis_built_at_run_time_is_read_by_value() -> None:
    from modelgate.evaluation.policy import Policy, ValueThreshold

    basis = "".join(["inter", "val"])
    policy = Policy(values=(ValueThreshold("roc_auc", 0.7, None, "block", basis),))  # type: ignore[arg-type]
    (check,) = decide({"roc_auc": est("roc_auc", 0.75, 0.68, 0.80)}, None, {}, policy).checks
    assert (check.basis, check.verdict) == ("interval", "inconclusive")


def test_a_gate_check_is_frozen_and_slotted() -> None:
    import dataclasses

    check = GateCheck("value:f1", "value", "f1", None, 0.8, None, 0.81, 0.78, 0.84, 228,
                      "interval", "pass", "block", "")
    with pytest.raises(dataclasses.FrozenInstanceError):
        check.verdict = "fail"  # type: ignore[misc]
    assert not hasattr(check, "__dict__") and "__slots__" in GateCheck.__dict__


@pytest.mark.parametrize("metric", ["tpr_gap", "fpr_gap", "equalized_odds_difference",
                                    "tpr_fpr_gap_sum", "demographic_parity_difference",
                                    "predictive_parity_difference"])
def test_which_label_counts_each_gap_needs(metric: str) -> None:
    """Fewest per group 2 positives and 1 negative (by hand): a minimum of 3 positives makes
    the gaps dividing by positives inconclusive, one of 2 negatives those dividing by
    negatives; the gaps dividing by rows or predictions are never held to them."""
    table = disaggregate([1, 1, 0, 1, 1, 0, 0], [1, 0, 0, 1, 1, 0, 1], list("aaabbbb"))
    report = FairnessReport("sex", table, (FairnessEstimate(metric, 0.05, 0.0, 0.1, 7, "b", "a",
                                                            ()),), 100, 0.95, 0, "exclude", True)
    needs = {"tpr_gap": (True, False), "fpr_gap": (False, True),
             "equalized_odds_difference": (True, True), "tpr_fpr_gap_sum": (True, True)}.get(
        metric, (False, False))
    for min_pos, min_neg, short in ((3, 1, needs[0]), (2, 2, needs[1])):
        (check,) = decide({}, None, {"sex": report}, load_policy(
            f"basis: interval\nfairness: {{min_positives_per_group: {min_pos}, "
            f"min_negatives_per_group: {min_neg}, default: {{{metric}: {{upper: 0.1}}}}}}")).checks
        assert check.verdict == ("inconclusive" if short else "pass"), (min_pos, min_neg)
        assert (check.required_positives, check.required_negatives) == (
            min_pos if needs[0] else None, min_neg if needs[1] else None)


@pytest.mark.parametrize(("verdict", "status"), [
    ("pass", "passed"), ("skipped", "skipped"), ("breach", "breached"), ("fail", "not computable"),
    ("inconclusive", "inconclusive at n = 12"),
])
def test_each_verdict_s_status(verdict: str, status: str) -> None:
    check = GateCheck("value:f1", "value", "f1", None, 0.8, None, 0.81, 0.78, 0.84, 12,
                      "interval", verdict, "block", "")  # type: ignore[arg-type]
    assert check.status == status


def test_a_severity_built_at_run_time_is_read_by_value() -> None:
    from modelgate.evaluation.policy import Policy, ValueThreshold

    block, warn = "".join(["bl", "ock"]), "".join(["wa", "rn"])
    policy = Policy(values=(ValueThreshold("roc_auc", 0.7, None, block),  # type: ignore[arg-type]
                            ValueThreshold("f1", 0.7, None, warn)))  # type: ignore[arg-type]
    decision = decide({"roc_auc": est("roc_auc", 0.6), "f1": est("f1", 0.6)}, None, {}, policy)
    assert not decision.passed
    assert [c.metric for c in decision.blocking_failures] == ["roc_auc"]
    assert [c.metric for c in decision.warnings] == ["f1"]


def test_a_gate_decision_is_frozen_and_slotted() -> None:
    import dataclasses

    from modelgate.evaluation.gate import GateDecision

    decision = GateDecision(True, (), (), (), "passed: 0 checks")
    with pytest.raises(dataclasses.FrozenInstanceError):
        decision.passed = False  # type: ignore[misc]
    assert not hasattr(decision, "__dict__")


def test_a_multiclass_gap_counts_the_groups_of_its_own_class() -> None:
    from modelgate.fairness.multiclass import multiclass_fairness_report

    # classes in index order "b", "a": the gap of class "a" (index 1) must use its own
    # one-vs-rest table, not that of "b", which sorts after it. Counted by hand:
    # class a (y == 1): group g has 3 positives, 1 negative; h has 2 and 1
    # class b (y == 0): g has 1 positive, 3 negatives; h has 1 and 2
    y = np.array([1, 1, 1, 0, 1, 1, 0])
    report = multiclass_fairness_report(y, y, np.array(list("gggghhh")), classes=["b", "a"],
                                        sensitive_feature="grp", n_bootstrap=0)
    checks = decide({}, None, {"grp": report}, load_policy(
        "fairness: {default: {'tpr_gap[a]': {upper: 1.0}, 'tpr_gap[b]': {upper: 1.0}}}")).checks
    assert [(c.metric, c.min_group_positives, c.min_group_negatives) for c in checks] == [
        ("tpr_gap[a]", 2, 1), ("tpr_gap[b]", 1, 2)]


def test_a_fairness_reason_shows_the_interval_beside_the_point_on_the_point_basis() -> None:
    report = {"sex": fair("sex", equalized_odds_difference=(0.05, 0.02, 0.08))}
    for basis, text in (("point_estimate", "0.0300 (CI [0.0200, 0.0800], n=4;"),
                        ("interval", "0.0300 (n=4;")):
        (check,) = decide({}, None, report, load_policy(
            f"basis: {basis}\nfairness: {{min_positives_per_group: 0, min_negatives_per_group: 0, "
            "default: {equalized_odds_difference: {upper: 0.03}}}")).checks
        assert text in check.reason, basis


@pytest.mark.parametrize(("lo", "hi", "verdict", "text"), [
    (0.7, 0.95, "inconclusive", "straddles the upper bound 0.9000"),  # on the lower bound
    (0.8, 0.95, "inconclusive", "straddles the upper bound 0.9000"),
    (0.6, 0.8, "inconclusive", "straddles the lower bound 0.7000"),
    (0.92, 0.95, "breach", "lies entirely above the upper bound 0.9000"),
    (0.6, 0.65, "breach", "lies entirely below the lower bound 0.7000"),
])
def test_a_range_names_the_bound_the_interval_is_past(lo: float, hi: float, verdict: str,
                                                      text: str) -> None:
    policy = load_policy("basis: interval\nmetrics: {roc_auc: {value: {lower: 0.7, upper: 0.9}}}")
    (check,) = decide({"roc_auc": est("roc_auc", (lo + hi) / 2, lo, hi)}, None, {}, policy).checks
    assert check.verdict == verdict and text in check.reason


def test_a_direction_built_at_run_time_is_read_by_value() -> None:
    from modelgate.evaluation.policy import ChangeThreshold, Policy

    higher = "".join(["higher_", "is_better"])
    policy = Policy(changes=(ChangeThreshold("roc_auc", -0.01, None, higher),))  # type: ignore[arg-type]
    (check,) = decide({"roc_auc": est("roc_auc", 0.80)}, {"roc_auc": est("roc_auc", 0.85)}, {},
                      policy).checks
    assert (check.lower, check.upper, check.verdict) == (-0.01, None, "breach")
    assert "(higher is better; candidate" in check.reason


def test_a_feature_whose_name_sorts_before_the_star_is_named() -> None:
    policy = load_policy("fairness: {default: {tpr_gap: {upper: 0.1}}}")
    for feature in ("(group)", "!", "*x"):
        (check,) = decide({}, None, {feature: fair(feature, tpr_gap=(0.0, 0.0, 0.0))},
                          policy).checks
        assert check.sensitive_feature == feature and check.check_id == f"fairness:{feature}:tpr_gap"
