"""The promotion gate on hand-made inputs: value, change and fairness thresholds, their
verdicts, severities, limits and reasons, and one end-to-end run of the default policy."""

from __future__ import annotations

import numpy as np
import pytest
from modelgate.evaluation.gate import decide
from modelgate.evaluation.metrics import MetricDelta, MetricEstimate, compare, evaluate
from modelgate.evaluation.policy import default_policy, load_policy
from modelgate.fairness import FairnessEstimate, FairnessReport, disaggregate, fairness_report
from support.gate_inputs import NAN, est, fair, only

VALUE_CASES = [
    ("lower: 0.7", est("roc_auc", 0.75, 0.68, 0.80), "pass"),
    ("lower: 0.7", est("roc_auc", 0.65, 0.60, 0.70), "breach"),
    ("lower: 0.7", est("roc_auc", 0.70, 0.65, 0.75), "pass"),  # inclusive
    # the interval basis, worked by hand: [0.68, 0.80] straddles 0.7; [0.71, 0.80] is above it
    ("lower: 0.7, basis: interval", est("roc_auc", 0.75, 0.68, 0.80), "inconclusive"),
    ("lower: 0.7, basis: interval", est("roc_auc", 0.75, 0.71, 0.80), "pass"),
    ("lower: 0.7, basis: interval", est("roc_auc", 0.66, 0.62, 0.69), "breach"),
    ("lower: 0.7, basis: interval", est("roc_auc", 0.72, 0.70, 0.75), "pass"),  # inclusive
    ("upper: 0.9", est("roc_auc", 0.95, 0.9, 0.97), "breach"),
    ("upper: 0.9, basis: interval", est("roc_auc", 0.88, 0.85, 0.91), "inconclusive"),
    ("upper: 0.9, basis: interval", est("roc_auc", 0.93, 0.91, 0.95), "breach"),
    ("lower: 0.5, upper: 0.9", est("roc_auc", 0.8, 0.7, 0.85), "pass"),
    ("lower: 0.5, upper: 0.9, basis: interval", est("roc_auc", 0.8, 0.45, 0.95), "inconclusive"),
    ("lower: 0.7", est("roc_auc", NAN, NAN, NAN, reason="label has one class only"), "fail"),
    ("lower: 0.7, basis: interval", est("roc_auc", 0.8), "fail"),  # no interval
    # the former spelling: true reads as the interval basis, and still blocks what it blocked
    ("lower: 0.7, use_confidence_bound: true", est("roc_auc", 0.75, 0.68, 0.80), "inconclusive"),
    ("lower: 0.7, use_confidence_bound: false", est("roc_auc", 0.75, 0.68, 0.80), "pass"),
]


@pytest.mark.parametrize(("spec", "estimate", "verdict"), VALUE_CASES,
                         ids=["lower-pass", "lower-breach", "lower-inclusive",
                              "interval-straddles", "interval-pass", "interval-breach",
                              "interval-inclusive", "upper-breach", "upper-interval-straddles",
                              "upper-interval-breach", "range-pass", "range-straddles-both",
                              "undefined-fails", "interval-without-interval-fails",
                              "legacy-cb-true", "legacy-cb-false"])
def test_value_thresholds(spec: str, estimate: MetricEstimate, verdict: str) -> None:
    policy = load_policy(f"metrics: {{roc_auc: {{value: {{{spec}}}}}}}")
    decision = decide({"roc_auc": estimate}, None, {}, policy)
    check = only(decision.checks, "value:roc_auc")
    assert check.verdict == verdict
    assert decision.passed == (verdict == "pass")  # inconclusive blocks by default
    assert check.kind == "value" and check.severity == "block"
    assert check.basis == ("interval" if "interval" in spec or "true" in spec
                           else "point_estimate")


def test_undefined_metric_reason_is_reported() -> None:
    policy = load_policy("metrics: {roc_auc: {value: {lower: 0.7}}}")
    undefined = est("roc_auc", NAN, reason="label has one class only")
    check = decide({"roc_auc": undefined}, None, {}, policy).checks[0]
    assert "undefined (label has one class only)" in check.reason


def test_missing_metric_fails_with_its_severity() -> None:
    policy = load_policy("""
metrics:
  roc_auc: {value: {lower: 0.7}}
  f1: {value: {lower: 0.5, severity: warn}}
""")
    decision = decide({}, None, {}, policy)
    assert not decision.passed
    auc, f1 = decision.checks
    assert auc.verdict == "fail" and "metric roc_auc missing" in auc.reason
    assert auc.observed is None and auc.n is None
    assert f1.verdict == "fail" and f1.severity == "warn"
    assert decision.blocking_failures == (auc,)
    assert decision.warnings == (f1,)


def test_warn_failure_does_not_block() -> None:
    policy = load_policy("metrics: {brier: {value: {upper: 0.2, severity: warn}}}")
    decision = decide({"brier": est("brier", 0.3, 0.28, 0.32)}, None, {}, policy)
    assert decision.passed
    assert len(decision.warnings) == 1
    assert "WARN    value:brier: warning: breached — brier = 0.3000 is above the upper bound 0.2000" in (
        decision.summary)
    assert decision.summary.startswith("Promotion gate PASSED: 0 blocking failure(s), 1 warning")


def test_change_thresholds_are_skipped_without_a_champion() -> None:
    policy = load_policy("metrics: {roc_auc: {change: {absolute: -0.01, relative: 0.0}}}")
    decision = decide({"roc_auc": est("roc_auc", 0.8)}, None, {}, policy)
    assert decision.passed
    assert [c.verdict for c in decision.checks] == ["skipped", "skipped"]
    assert [c.check_id for c in decision.checks] == ["change:roc_auc:absolute",
                                                     "change:roc_auc:relative"]
    assert "no champion model" in decision.checks[0].reason
    assert "SKIPPED change:roc_auc:absolute" in decision.summary


CHANGE_CASES = [
    # metric, spec, candidate, champion, verdict
    ("roc_auc", "absolute: -0.01", 0.795, 0.80, "pass"),  # 0.005 worse, allowed 0.01
    ("roc_auc", "absolute: -0.01", 0.785, 0.80, "breach"),
    ("roc_auc", "absolute: 0.0", 0.80, 0.80, "pass"),  # inclusive
    ("roc_auc", "absolute: 0.02", 0.81, 0.80, "breach"),  # must improve by 0.02
    ("log_loss", "absolute: -0.01", 0.405, 0.40, "pass"),  # lower is better: 0.005 worse
    ("log_loss", "absolute: -0.01", 0.42, 0.40, "breach"),
    ("log_loss", "absolute: 0.05", 0.34, 0.40, "pass"),  # improved by 0.06
    ("log_loss", "relative: -0.02", 0.407, 0.40, "pass"),  # 1.75% worse
    ("log_loss", "relative: -0.02", 0.41, 0.40, "breach"),  # 2.5% worse
    ("roc_auc", "relative: -0.02", 0.79, 0.80, "pass"),  # 1.25% worse
    ("roc_auc", "absolute: -0.01, direction: lower_is_better", 0.795, 0.80, "pass"),
    ("roc_auc", "absolute: -0.01, direction: lower_is_better", 0.82, 0.80, "breach"),
]


@pytest.mark.parametrize(("metric", "spec", "new", "old", "verdict"), CHANGE_CASES,
                         ids=[f"{m}-{s}-{a}-vs-{b}" for m, s, a, b, _ in CHANGE_CASES])
def test_change_thresholds(metric: str, spec: str, new: float, old: float, verdict: str) -> None:
    policy = load_policy(f"metrics: {{{metric}: {{change: {{{spec}}}}}}}")
    (check,) = decide({metric: est(metric, new)}, {metric: est(metric, old)}, {}, policy).checks
    assert check.verdict == verdict, check.reason
    mode = "relative" if "relative" in spec else "absolute"
    expected = (new - old) / (abs(old) if mode == "relative" else 1.0)
    assert check.observed == pytest.approx(expected)
    assert check.kind == "change" and check.check_id == f"change:{metric}:{mode}"


def test_lower_is_better_change_reads_in_the_sign_of_observed() -> None:
    """A worse log loss is a positive change everywhere: observed, threshold and reason."""
    policy = load_policy("metrics: {log_loss: {change: {relative: -0.02}}}")
    (check,) = decide({"log_loss": est("log_loss", 0.41)}, {"log_loss": est("log_loss", 0.40)},
                      {}, policy).checks
    assert check.observed == pytest.approx(0.025)  # (0.41 - 0.40) / 0.40, worked by hand
    assert check.threshold == "relative change <= +0.02 (lower is better)"
    assert "relative change +0.0250 exceeds the limit <= +0.0200" in check.reason
    assert "-0.0250" not in check.reason and check.verdict == "breach"
    cb = load_policy("basis: interval\nmetrics: {log_loss: {change: {absolute: -0.01}}}")
    loss = {"log_loss": est("log_loss", 0.4, 0.38, 0.42)}
    delta = {"log_loss": MetricDelta("log_loss", 0.40, 0.40, 0.0, -0.005, 0.008, 1000)}
    (check,) = decide(loss, dict(loss), {}, cb, deltas=delta).checks
    assert ("absolute change +0.0000, interval [-0.0050, +0.0080] lies within <= +0.0100"
            in check.reason)


def test_change_needs_the_metric_from_both_models() -> None:
    policy = load_policy("metrics: {roc_auc: {change: {absolute: -0.01}}}")
    (check,) = decide({"roc_auc": est("roc_auc", 0.8)}, {}, {}, policy).checks
    assert check.verdict == "fail" and check.status == "not computable"
    assert "metric roc_auc missing from the champion's results" in check.reason


def test_relative_change_against_a_zero_champion_fails() -> None:
    policy = load_policy("metrics: {brier: {change: {relative: -0.1}}}")
    (check,) = decide({"brier": est("brier", 0.1)}, {"brier": est("brier", 0.0)}, {},
                      policy).checks
    assert check.verdict == "fail" and "champion's value is 0" in check.reason


def test_interval_change_uses_the_paired_delta() -> None:
    policy = load_policy("""
basis: interval
metrics: {roc_auc: {change: {absolute: -0.01}}, log_loss: {change: {absolute: -0.01}}}
""")
    cand = {"roc_auc": est("roc_auc", 0.80, 0.78, 0.82),
            "log_loss": est("log_loss", 0.4, 0.38, 0.42)}
    champ = dict(cand)
    deltas = {
        "roc_auc": MetricDelta("roc_auc", 0.80, 0.80, 0.0, -0.015, 0.015, 1000),
        "log_loss": MetricDelta("log_loss", 0.40, 0.40, 0.0, -0.005, 0.008, 1000),
    }
    decision = decide(cand, champ, {}, policy, deltas=deltas)
    auc = only(decision.checks, "change:roc_auc:absolute")
    loss = only(decision.checks, "change:log_loss:absolute")
    assert auc.verdict == "inconclusive"  # [-0.015, +0.015] straddles -0.01
    assert loss.verdict == "pass"  # [-0.005, +0.008] is all below +0.01
    assert (auc.ci_lower, auc.ci_upper) == (-0.015, 0.015)
    assert "interval [-0.0150, +0.0150] straddles the limit >= -0.0100" in auc.reason
    assert "blocked: inconclusive at n = 1000 — roc_auc absolute change" in decision.summary
    without = decide(cand, champ, {}, policy)
    assert all(c.verdict == "fail" and "needs the paired interval" in c.reason
               for c in without.checks)


def test_fairness_default_applies_to_every_feature_and_features_override() -> None:
    policy = load_policy("""
fairness:
  default: {equalized_odds_difference: {upper: 0.03}}
  features: {age: {equalized_odds_difference: {upper: 0.06}}}
""")
    reports = {"sex": fair("sex", equalized_odds_difference=(0.05, 0.02, 0.08)),
               "age": fair("age", equalized_odds_difference=(0.05, 0.02, 0.08))}
    decision = decide({}, None, reports, policy)
    sex = only(decision.checks, "fairness:sex:equalized_odds_difference")
    age = only(decision.checks, "fairness:age:equalized_odds_difference")
    assert (sex.verdict, age.verdict) == ("breach", "pass")
    assert sex.sensitive_feature == "sex" and sex.threshold == "<= 0.03"
    assert "[sex] equalized_odds_difference = 0.0500 is above the upper bound 0.0300" in sex.reason
    assert "highest group 'b', lowest 'a'" in sex.reason
    assert not decision.passed


def test_fairness_interval_and_warn() -> None:
    policy = load_policy("""
fairness:
  min_positives_per_group: 0
  min_negatives_per_group: 0
  default:
    equalized_odds_difference: {upper: 0.03, basis: interval}
    demographic_parity_difference: {upper: 0.1, severity: warn}
""")
    report = fair("sex", equalized_odds_difference=(0.02, 0.01, 0.04),
                  demographic_parity_difference=(0.15, 0.1, 0.2))
    decision = decide({}, None, {"sex": report}, policy)
    eod, dpd = decision.checks
    assert eod.verdict == "inconclusive" and "interval [0.0100, 0.0400] straddles" in eod.reason
    assert dpd.verdict == "breach" and dpd.severity == "warn"
    assert decision.blocking_failures == (eod,) and decision.warnings == (dpd,)


def test_missing_fairness_reports_fail() -> None:
    policy = load_policy("""
fairness:
  default: {equalized_odds_difference: {upper: 0.03}}
  features: {race: {tpr_gap: {upper: 0.05}}}
""")
    nothing = decide({}, None, {}, policy)
    ids = [c.check_id for c in nothing.checks]
    assert ids == ["fairness:*:equalized_odds_difference",
                   "fairness:race:equalized_odds_difference", "fairness:race:tpr_gap"]
    assert all(c.verdict == "fail" and c.effect == "block" for c in nothing.checks)
    assert "no fairness report was supplied" in nothing.checks[0].reason
    # a new user's model without sensitive features is told why and what to do
    assert "sensitive_features is empty" in nothing.checks[0].reason
    assert "severity: warn" in nothing.checks[0].reason
    assert "fairness report for sensitive feature 'race' missing" in nothing.checks[1].reason
    sex_only = decide({}, None, {"sex": fair("sex", equalized_odds_difference=(0.0, 0.0, 0.0))},
                      policy)
    assert [c.verdict for c in sex_only.checks] == ["pass", "fail", "fail"]


def test_undefined_fairness_gap_fails_with_its_reason() -> None:
    policy = load_policy("fairness: {default: {tpr_gap: {upper: 0.1}}}")
    table = disaggregate([0, 1], [0, 1], ["a", "b"])
    gap = FairnessEstimate("tpr_gap", NAN, NAN, NAN, 2, None, None, (("a", "no positive labels"),),
                           "fewer than two groups have a defined true positive rate")
    report = FairnessReport("sex", table, (gap,), 0, 0.95, 0, "exclude", True)
    (check,) = decide({}, None, {"sex": report}, policy).checks
    assert check.verdict == "fail"
    assert "fewer than two groups have a defined true positive rate" in check.reason


def test_end_to_end_with_default_policy() -> None:
    rng = np.random.default_rng(3)
    n = 4000
    y = rng.integers(0, 2, n)
    sex = rng.choice(np.array(["f", "m"]), n)
    champion_scores = np.clip(rng.normal(0.3 + 0.4 * y, 0.2), 0, 1)
    candidate_scores = np.clip(champion_scores + rng.normal(0, 0.02, n), 0, 1)
    candidate = evaluate(y, candidate_scores, n_bootstrap=100).by_name()
    champion = evaluate(y, champion_scores, n_bootstrap=100).by_name()
    deltas = compare(candidate_scores, champion_scores, y, n_bootstrap=100).by_name()
    report = fairness_report(y, (candidate_scores >= 0.5).astype(int), sex,
                             sensitive_feature="sex", n_bootstrap=100)
    decision = decide(candidate, champion, {"sex": report}, default_policy(), deltas=deltas)
    by_id = {c.check_id: c for c in decision.checks}
    assert set(by_id) == {"value:roc_auc", "change:roc_auc:absolute", "change:log_loss:relative",
                          "value:brier", "fairness:sex:equalized_odds_difference",
                          "fairness:sex:demographic_parity_difference"}
    assert by_id["value:roc_auc"].verdict == "pass"
    eod = report.by_name()["equalized_odds_difference"].value
    eod_check = by_id["fairness:sex:equalized_odds_difference"]
    assert eod_check.basis == "interval"  # the shipped default
    assert eod_check.verdict == "pass" if eod_check.ci_upper <= 0.03 else eod_check.verdict in (
        "breach", "inconclusive")
    assert eod_check.observed == eod
    assert decision.passed == (not decision.blocking_failures)


LIMIT_CASES = [
    ("metrics: {roc_auc: {value: {lower: 0.5, upper: 0.9}}}", "value:roc_auc", 0.5, 0.9,
     ">= 0.5 and <= 0.9"),
    ("metrics: {roc_auc: {change: {absolute: -0.01}}}", "change:roc_auc:absolute", -0.01, None,
     "absolute change >= -0.01 (higher is better)"),
    ("metrics: {log_loss: {change: {relative: -0.02}}}", "change:log_loss:relative", None, 0.02,
     "relative change <= +0.02 (lower is better)"),
    ("metrics: {log_loss: {change: {absolute: 0.0}}}", "change:log_loss:absolute", None, -0.0,
     "absolute change <= -0 (lower is better)"),
    ("fairness: {default: {equalized_odds_difference: {upper: 0.03}}}",
     "fairness:sex:equalized_odds_difference", None, 0.03, "<= 0.03"),
]


@pytest.mark.parametrize(("policy_text", "check_id", "lower", "upper", "text"), LIMIT_CASES,
                         ids=["value-range", "change-higher-better", "change-lower-better",
                              "change-zero-margin", "fairness"])
def test_checks_carry_numeric_limits_and_the_same_text(policy_text: str, check_id: str,
                                                       lower: float | None, upper: float | None,
                                                       text: str) -> None:
    """The limits are numbers on ``observed``'s scale; the text (stored in gate_check and
    reported) is derived from them and reads as the policy wrote it."""
    metrics = {m: est(m, 0.8) for m in ("roc_auc", "log_loss")}
    reports = {"sex": fair("sex", equalized_odds_difference=(0.05, 0.02, 0.08))}
    checks = decide(metrics, dict(metrics), reports, load_policy(policy_text)).checks
    check = only(checks, check_id)
    assert (check.lower, check.upper) == (lower, upper)
    assert check.threshold == text
    if check.observed is not None and check.verdict != "skipped":  # the limits are what was judged
        inside = ((lower is None or check.observed >= lower) and (upper is None or check.observed <= upper))
        assert inside == (check.verdict == "pass")  # the point-estimate basis
