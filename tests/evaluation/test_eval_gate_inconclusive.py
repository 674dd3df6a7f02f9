"""The promotion gate's verdicts that know their sample size: an interval straddling a limit or
a group below the minimum label counts reads inconclusive, and ``on_inconclusive`` decides
whether that blocks."""

from __future__ import annotations

import numpy as np
import pytest
from modelgate.evaluation.gate import decide
from modelgate.evaluation.metrics import MetricDelta
from modelgate.evaluation.policy import default_policy, load_policy, merge_policies
from modelgate.fairness import disaggregate, fairness_report
from support.gate_inputs import est, fair, only


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
