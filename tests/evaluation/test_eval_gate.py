"""The promotion gate on hand-made inputs: every semantic of the policy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from modelgate.evaluation.gate import GateCheck, decide
from modelgate.evaluation.metrics import MetricDelta, MetricEstimate, compare, evaluate
from modelgate.evaluation.policy import default_policy, load_policy, merge_policies
from modelgate.fairness import FairnessEstimate, FairnessReport, disaggregate, fairness_report

NAN = math.nan


def est(name: str, value: float, lo: float = NAN, hi: float = NAN, n: int = 1000,
        reason: str | None = None) -> MetricEstimate:
    return MetricEstimate(name, value, lo, hi, n, reason)


def fair(feature: str, **values: tuple[float, float, float]) -> FairnessReport:
    table = disaggregate([0, 1, 0, 1], [0, 1, 1, 1], ["a", "a", "b", "b"])
    estimates = tuple(FairnessEstimate(name, v, lo, hi, 4, "b", "a", ())
                      for name, (v, lo, hi) in values.items())
    return FairnessReport(feature, table, estimates, 100, 0.95, 0, "exclude", True)


def only(decision_checks: tuple[GateCheck, ...], check_id: str) -> GateCheck:
    (check,) = [c for c in decision_checks if c.check_id == check_id]
    return check


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


# --- verdicts that know their sample size ------------------------------------------------

def test_the_issues_n228_numbers_read_inconclusive_not_breach() -> None:
    """The numbers of issue #20 (n = 228, no real gap), worked by hand against the limits."""
    policy = load_policy("""
basis: interval
fairness:
  min_positives_per_group: 0
  min_negatives_per_group: 0
  default:
    equalized_odds_difference: {upper: 0.03, severity: block}
    demographic_parity_difference: {upper: 0.10, severity: warn}
""")
    report = fair("parity", equalized_odds_difference=(0.053, 0.009, 0.154),
                  demographic_parity_difference=(0.061, 0.003, 0.193))
    decision = decide({}, None, {"parity": report}, policy)
    eod, dpd = decision.checks
    assert (eod.verdict, eod.effect) == ("inconclusive", "block")  # 0.009 <= 0.03 < 0.154
    assert (dpd.verdict, dpd.effect) == ("inconclusive", "warn")  # 0.003 <= 0.10 < 0.193
    assert not decision.passed
    point = decide({}, None, {"parity": report}, merge_policies(
        policy, load_policy("basis: point_estimate")))
    assert [c.verdict for c in point.checks] == ["breach", "pass"]  # the seed's reading
    assert "BLOCK   fairness:parity:equalized_odds_difference: blocked: breached" in point.summary


def test_seeded_n228_without_a_real_gap_is_inconclusive() -> None:
    """Predictions blind to a group assigned by row parity: no real gap, by construction."""
    rng = np.random.default_rng(6)
    n = 228
    y = rng.integers(0, 2, n)
    pred = np.where(rng.random(n) < 0.8, y, 1 - y)
    parity = np.where(np.arange(n) % 2 == 0, "even", "odd")
    report = fairness_report(y, pred, parity, sensitive_feature="parity", n_bootstrap=1000)
    decision = decide({}, None, {"parity": report}, default_policy())
    eod = only(decision.checks, "fairness:parity:equalized_odds_difference")
    assert eod.observed is not None and eod.observed > 0.03  # the point alone would breach
    assert eod.verdict == "inconclusive" and eod.n == n
    table = disaggregate(y, pred, parity)  # counts from the table, independent of the gate
    assert eod.min_group_positives == min(g.tp + g.fn for g in table.groups)
    assert eod.min_group_negatives == min(g.fp + g.tn for g in table.groups)
    assert f"blocked: inconclusive at n = {n} — [parity] equalized_odds_difference" in (
        decision.summary)
    seed_rule = decide({}, None, {"parity": report}, load_policy(
        "fairness: {default: {equalized_odds_difference: {upper: 0.03}}}"))
    assert only(seed_rule.checks, "fairness:parity:equalized_odds_difference").verdict == "breach"


def test_the_issues_log_loss_change_is_inconclusive() -> None:
    """+2.7% log loss with a paired interval of [-17%, +26%] against a limit of +2%."""
    policy = load_policy("basis: interval\nmetrics: {log_loss: {change: {relative: -0.02}}}")
    loss = {"log_loss": est("log_loss", 0.4108, 0.38, 0.44, 228)}
    champ = {"log_loss": est("log_loss", 0.40, 0.37, 0.43, 228)}
    delta = {"log_loss": MetricDelta("log_loss", 0.4108, 0.40, 0.0108, -0.068, 0.104, 228)}
    (check,) = decide(loss, champ, {}, policy, deltas=delta).checks
    assert check.verdict == "inconclusive"
    assert (check.observed, check.ci_lower, check.ci_upper) == pytest.approx((0.027, -0.17, 0.26))
    assert "interval [-0.1700, +0.2600] straddles the limit <= +0.0200" in check.reason


@pytest.mark.parametrize(("minimums", "verdict"),
                         [("", "inconclusive"),
                          ("{min_positives_per_group: 1, min_negatives_per_group: 1}", "pass")],
                         ids=["default-minimum-10", "minimum-1"])
def test_a_group_below_the_minimum_counts_is_inconclusive(minimums: str, verdict: str) -> None:
    """``fair()``'s table has one positive and one negative per group (worked by hand)."""
    policy = load_policy("basis: interval\nfairness: {default: {equalized_odds_difference: "
                         "{upper: 0.03}, demographic_parity_difference: {upper: 0.03}}}")
    if minimums:
        policy = merge_policies(policy, load_policy(f"fairness: {minimums}"))
    report = fair("sex", equalized_odds_difference=(0.01, 0.0, 0.02),
                  demographic_parity_difference=(0.01, 0.0, 0.02))
    eod, dpd = decide({}, None, {"sex": report}, policy).checks
    assert (eod.min_group_positives, eod.min_group_negatives) == (1, 1)
    assert eod.verdict == verdict
    assert dpd.verdict == "pass"  # its rates divide by rows, not label counts
    if verdict == "inconclusive":
        assert (eod.required_positives, eod.required_negatives) == (10, 10)
        assert "a group has 1 positives, fewer than the minimum 10" in eod.reason


def test_on_inconclusive_warn_lets_the_candidate_through_with_a_warning() -> None:
    policy = load_policy("""
basis: interval
metrics:
  recall: {value: {lower: 0.8, on_inconclusive: warn}}
  f1: {value: {lower: 0.5}}
""")
    metrics = {"recall": est("recall", 0.82, 0.76, 0.88, 228),
               "f1": est("f1", 0.7, 0.65, 0.75, 228)}
    decision = decide(metrics, None, {}, policy)
    recall = only(decision.checks, "value:recall")
    assert decision.passed and decision.warnings == (recall,)
    assert (recall.verdict, recall.severity, recall.effect) == ("inconclusive", "block", "warn")
    assert "WARN    value:recall: warning: inconclusive at n = 228 — recall = 0.8200, interval " \
           "[0.7600, 0.8800] straddles the lower bound 0.8000 (n=228)." in decision.summary


def test_check_records_carry_the_evidence() -> None:
    policy = load_policy("basis: interval\nfairness: {default: {tpr_gap: {upper: 0.1}}}")
    (check,) = decide({}, None, {"sex": fair("sex", tpr_gap=(0.3, 0.2, 0.4))}, policy).checks
    record = check.to_record()
    assert {k: record[k] for k in ("verdict", "basis", "on_inconclusive", "effect",
                                   "min_group_positives", "min_group_negatives",
                                   "required_positives", "required_negatives")} == {
        "verdict": "inconclusive", "basis": "interval", "on_inconclusive": "block",
        "effect": "block", "min_group_positives": 1, "min_group_negatives": 1,
        "required_positives": 10, "required_negatives": None}


# --- cases for the mutation session of evaluation/gate.py (tests/MUTATION.md) ---


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
