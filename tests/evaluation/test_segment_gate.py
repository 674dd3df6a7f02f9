"""Segment thresholds in the policy and the gate: parsing, verdicts by hand, a planted weak slice."""

from __future__ import annotations

import numpy as np
import pytest
from modelgate.evaluation.gate import decide
from modelgate.evaluation.metrics import MetricEstimate
from modelgate.evaluation.policy import (
    PolicyError,
    check_policy_for_task,
    load_policy,
    merge_policies,
)
from modelgate.evaluation.policy_diff import diff_policies
from modelgate.evaluation.policy_text import policy_text
from modelgate.evaluation.segment_gate import segment_checks, segment_verdicts
from modelgate.evaluation.segment_statistics import collect_segments
from modelgate.evaluation.segments import SegmentMetric, SegmentReport, SegmentResult, evaluate_segments
from modelgate.fairness.disaggregate import encode_groups
from scipy.stats import norm
from statsmodels.stats.multitest import multipletests

POLICY = """
segments:
  columns: [region]
  pairs: [[region, device]]
  min_rows: 50
  correction: holm
  level: 0.1
  metrics:
    accuracy: {limit: 0.7, margin: 0.05, on_inconclusive: warn}
    log_loss: {margin: 0.1, severity: warn}
"""


def test_policy_section_parses_and_round_trips() -> None:
    policy = load_policy(POLICY)
    seg = policy.segments
    assert seg is not None
    assert (seg.columns, seg.pairs, seg.min_rows, seg.correction, seg.level) == (
        ("region",), (("region", "device"),), 50, "holm", 0.1)
    assert [(t.metric, t.limit, t.margin, t.severity, t.on_inconclusive) for t in seg.thresholds] == [
        ("accuracy", 0.7, 0.05, "block", "warn"), ("log_loss", None, 0.1, "warn", None)]
    assert load_policy(policy_text(policy)) == policy
    looser = load_policy("segments: {columns: [region], metrics: {accuracy: {margin: 0.2}}}")
    assert merge_policies(policy, looser).segments == looser.segments
    assert merge_policies(policy, load_policy("{}")).segments == seg
    changes = diff_policies(looser, policy).changes
    assert [(c.place, c.key) for c in changes] == [("policy", "segments")]
    with pytest.raises(PolicyError, match=r"segments\.metrics\.accuracy': not reported for the "
                                          r"segments of task regression \(they report rmse, mae, r2\)"):
        check_policy_for_task(policy, "regression")


@pytest.mark.parametrize(("text", "message"), [
    ("segments: {colums: [a]}", "policy key 'segments': unknown key 'colums'"),
    ("segments: {metrics: {auc: {margin: 0.1}}}", "policy key 'segments.metrics.auc': expected one of"),
    ("segments: {metrics: {f1: {margin: -0.1}}}", "'segments.metrics.f1.margin': expected a number >= 0"),
    ("segments: {metrics: {f1: {}}}", "expected at least one of 'limit', 'margin'"),
    ("segments: {correction: bonferroni}", "'segments.correction': expected one of bh, by, holm"),
    ("segments: {level: 1.5}", "'segments.level': expected a number in \\(0, 1\\)"),
    ("segments: {min_rows: 1}", "'segments.min_rows': expected a whole number from 2"),
    ("segments: {pairs: [[a]]}", "'segments.pairs\\[0\\]': expected two different column names"),
    ("segments: {columns: a}", "'segments.columns': expected a list of column names"),
    ("segments: {metrics: {f1: {limit: " + "9" * 400 + "}}}",
     "'segments.metrics.f1.limit': expected a finite number"),  # an int past a float's range
])
def test_policy_section_errors_name_the_key(text: str, message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        load_policy(text)


def _metric(name: str, value: float, lo: float, hi: float, d: float, dlo: float, dhi: float,
            higher: bool = True) -> SegmentMetric:
    nan = float("nan")
    return SegmentMetric(name, higher, value, lo, hi, value - d, nan, nan, d, dlo, dhi, nan, nan)


def _hand_report() -> SegmentReport:
    # accuracy per segment: a clearly worse slice, an undecided one, a fine one, a small one
    rows = [(("a",), 500, _metric("accuracy", 0.70, 0.66, 0.74, -0.15, -0.19, -0.11), True),
            (("b",), 300, _metric("accuracy", 0.81, 0.76, 0.85, -0.04, -0.09, 0.01), True),
            (("c",), 900, _metric("accuracy", 0.88, 0.86, 0.90, 0.03, 0.01, 0.05), True),
            (("d",), 20, _metric("accuracy", 0.5, 0.3, 0.7, float("nan"), float("nan"),
                                   float("nan")), False)]
    segments = tuple(SegmentResult(("region",), v, n, n // 2, judged, None if judged else "small",
                                   (m,)) for v, n, m, judged in rows)
    return SegmentReport(segments, 100, "bh", 0.95, 200, 0, 9)


def test_verdicts_by_hand_against_scipy_and_statsmodels() -> None:
    policy = load_policy("segments: {metrics: {accuracy: {margin: 0.05}}}").segments
    assert policy is not None
    verdicts = segment_verdicts(policy, _hand_report())
    assert [v.values for v in verdicts] == [("a",), ("b",), ("c",)]  # d is not judged
    z = norm.ppf(0.975)
    # H0: d >= -0.05; se from the upper half-width; p = Phi((d + 0.05) z / (hi - d))
    p = [norm.cdf((d + 0.05) * z / (hi - d)) for d, hi in ((-0.15, -0.11), (-0.04, 0.01),
                                                           (0.03, 0.05))]
    np.testing.assert_allclose([v.p_value for v in verdicts], p, rtol=1e-10)
    np.testing.assert_allclose([v.q_value for v in verdicts],
                               multipletests(p, method="fdr_bh")[1], rtol=1e-10)
    assert [v.verdict for v in verdicts] == ["breach", "inconclusive", "pass"]
    assert [(v.lower, v.upper) for v in verdicts] == [(-0.05, None)] * 3
    (check,) = segment_checks(policy, _hand_report())
    assert check.check_id == "segment:accuracy:margin" and check.kind == "segment"
    assert check.verdict == "breach" and check.observed == -0.15 and check.n == 500
    assert check.reason.startswith("segment region=a breaches: accuracy difference from the rest "
                                   "-0.1500, interval [-0.1900, -0.1100] (n=500)")
    assert ("3 segment(s) judged; 1 segment(s) below 100 rows not judged; family of 3 one-sided "
            "tests (segment x threshold), Benjamini-Hochberg (false-discovery rate) at 0.05.") in check.reason


def test_limit_is_judged_on_the_segment_value_and_shares_the_family() -> None:
    policy = load_policy("segments: {correction: by, metrics: {accuracy: {limit: 0.8, margin: 0.05}}}"
                         ).segments
    assert policy is not None
    verdicts = segment_verdicts(policy, _hand_report())
    limits = [v for v in verdicts if v.kind == "limit"]
    z = norm.ppf(0.975)
    p_limit = [norm.cdf((value - 0.8) * z / (hi - value))
               for value, hi in ((0.70, 0.74), (0.81, 0.85), (0.88, 0.90))]
    np.testing.assert_allclose([v.p_value for v in limits], p_limit, rtol=1e-10)
    all_p = [v.p_value for v in verdicts]
    np.testing.assert_allclose([v.q_value for v in verdicts],
                               multipletests(all_p, method="fdr_by")[1], rtol=1e-10)
    assert [v.verdict for v in limits] == ["breach", "inconclusive", "pass"]
    checks = segment_checks(policy, _hand_report())
    assert [c.check_id for c in checks] == ["segment:accuracy:limit", "segment:accuracy:margin"]
    assert "6 one-sided tests" in checks[0].reason and "Benjamini-Yekutieli" in checks[0].reason


def test_no_report_fails_and_no_judged_segment_is_inconclusive() -> None:
    policy = load_policy("segments: {metrics: {f1: {margin: 0.05}}}").segments
    (check,) = segment_checks(policy, None)
    assert check.verdict == "fail" and "no segments were evaluated" in check.reason
    small = SegmentReport((_hand_report().segments[3],), 100, "bh", 0.95, 200, 0, 0)
    (check,) = segment_checks(load_policy("segments: {metrics: {accuracy: {margin: 0.05}}}").segments,
                              small)
    assert check.verdict == "inconclusive" and "no segment could be judged" in check.reason


def test_decide_adds_segment_checks_and_a_planted_weak_slice_blocks() -> None:
    rng = np.random.default_rng(5)
    n = 2000
    y = (rng.random(n) < 0.5).astype(int)
    g = rng.integers(0, 8, n)
    s = np.clip(rng.normal(0.3 + 0.4 * y, 0.15), 0, 1)
    weak = g == 6
    s[weak] = rng.uniform(0, 1, weak.sum())
    report = evaluate_segments(collect_segments(y, s, threshold=0.5,
                                                columns={"region": encode_groups(g)}), n_bootstrap=40)
    policy = load_policy("segments: {metrics: {roc_auc: {margin: 0.05}, log_loss: {margin: 0.05}}}")
    auc = MetricEstimate("roc_auc", 0.9, 0.88, 0.92, n)
    decision = decide({"roc_auc": auc}, None, {}, policy, segments=report)
    assert not decision.passed
    assert [c.check_id for c in decision.blocking_failures] == ["segment:roc_auc:margin",
                                                                "segment:log_loss:margin"]
    for check in decision.blocking_failures:
        assert check.reason.startswith("segment region=6 breaches")
        assert "family of 16 one-sided tests" in check.reason
    others = [v for v in segment_verdicts(policy.segments, report) if v.values != ("6",)]
    assert all(v.verdict != "breach" for v in others)


def test_policy_diff_adding_segment_columns_is_stricter_changing_thresholds_unordered() -> None:
    own = load_policy("segments: {columns: [a], metrics: {f1: {margin: 0.05}}}")
    more = load_policy("segments: {columns: [a, b], metrics: {f1: {margin: 0.05}}}")
    looser = load_policy("segments: {columns: [a], metrics: {f1: {margin: 0.2}}}")
    (change,) = diff_policies(more, own).changes
    assert (change.key, change.effect, change.blocking) == ("segments", "stricter", True)
    assert not diff_policies(more, own).looser
    (change,) = diff_policies(looser, own).changes
    assert (change.effect, change.loosens_blocking) == ("unordered", True)
    (change,) = diff_policies(own, load_policy("{}")).changes
    assert (change.effect, change.blocking) == ("stricter", False)
