"""About how many more rows would decide an inconclusive check (evaluation/sample_size.py).

Expected numbers are worked by hand from ``n * (half_width / distance)**2 - n``; the
simulation draws the suggested extra rows from the same population and recomputes a normal
(Wald) interval written out here, not the gate's bootstrap.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from modelgate.evaluation.gate import decide
from modelgate.evaluation.metrics import MetricEstimate
from modelgate.evaluation.policy import default_policy, load_policy
from modelgate.evaluation.sample_size import rows_to_decide
from modelgate.fairness.disaggregate import table_from_counts
from modelgate.fairness.metrics import fairness_report_from_table

CASES = [
    # point, lo, hi, n, limits, expected scale, expected more rows
    (0.62, 0.55, 0.69, 228, {"lower": 0.60}, 12.25, 2565),  # 228 * 3.5**2 = 2793
    (0.05, 0.01, 0.09, 100, {"upper": 0.07}, 4.0, 300),  # h 0.04 above, d 0.02
    (0.08, 0.06, 0.10, 100, {"upper": 0.07}, 4.0, 300),  # past the limit: h 0.02 below, d 0.01
    (0.55, 0.35, 0.65, 50, {"lower": 0.4, "upper": 0.6}, 4.0, 150),  # both: max(16/9, 4)
    (0.30, 0.20, 0.50, 10, {"lower": 0.25}, 4.0, 30),  # asymmetric: the side facing the limit
]


@pytest.mark.parametrize(("point", "lo", "hi", "n", "limits", "scale", "rows"), CASES,
                         ids=["lower", "upper-inside", "upper-past", "both-limits", "asymmetric"])
def test_hand_computed_projections(point: float, lo: float, hi: float, n: int,
                                   limits: dict[str, float], scale: float, rows: int) -> None:
    got = rows_to_decide(point, lo, hi, n, **limits)
    assert got.scale == pytest.approx(scale, rel=1e-9)
    assert got.rows == rows
    assert (got.group_positives, got.group_negatives) == (None, None)
    assert got.reason.startswith(f"about {rows:,} more rows")


def test_group_counts_scale_with_the_rows_and_meet_the_policy_minimum() -> None:
    # interval clears the limit, but the smallest group has 20 positives of the 50 required
    got = rows_to_decide(0.05, 0.01, 0.09, 1000, upper=0.2, group_counts=(20, 300),
                         required_counts=(50, None))
    assert (got.scale, got.rows, got.group_positives, got.group_negatives) == (2.5, 1500, 30, 450)
    assert "30 more positives and 450 more negatives in the group with the fewest" in got.reason
    # the interval's factor (4) wins over the minimum's (2.5)
    got = rows_to_decide(0.05, 0.01, 0.09, 1000, upper=0.07, group_counts=(20, 300),
                         required_counts=(50, None))
    assert (got.rows, got.group_positives, got.group_negatives) == (3000, 60, 900)


def test_point_on_the_limit_cannot_be_decided() -> None:
    got = rows_to_decide(0.6, 0.55, 0.65, 228, lower=0.6)
    assert (got.scale, got.rows, got.group_positives, got.group_negatives) == (None,) * 4
    assert "cannot be decided at the observed effect" in got.reason
    none = rows_to_decide(0.05, 0.01, 0.09, 1000, upper=0.2, group_counts=(0, 300),
                          required_counts=(5, None))
    assert none.rows is None and "no cases" in none.reason


@pytest.mark.parametrize(("args", "limits", "message"), [
    ((math.nan, 0.1, 0.2, 10), {"upper": 0.1}, "point must be a finite number"),
    ((0.1, 0.3, 0.2, 10), {"upper": 0.1}, "ci_lower must be <= ci_upper"),
    ((0.1, 0.0, 0.2, 0), {"upper": 0.1}, "n must be a positive integer"),
    ((0.1, 0.0, 0.2, 10), {}, "at least one of lower and upper"),
], ids=["nan", "reversed", "n", "no-limit"])
def test_bad_input_is_named(args: tuple[float, float, float, int], limits: dict[str, float],
                            message: str) -> None:
    with pytest.raises(ValueError, match=message):
        rows_to_decide(*args, **limits)  # type: ignore[arg-type]


def test_the_gate_carries_the_projection_of_inconclusive_checks_only() -> None:
    policy = load_policy("basis: interval\nmetrics: {f1: {value: {lower: 0.6}}, "
                         "roc_auc: {value: {lower: 0.7}}}\n")
    decision = decide({"f1": MetricEstimate("f1", 0.62, 0.55, 0.69, 228),
                       "roc_auc": MetricEstimate("roc_auc", 0.8, 0.75, 0.85, 228)}, None, {}, policy)
    f1, auc = decision.checks
    assert (f1.verdict, f1.rows_to_decide, auc.verdict, auc.rows_to_decide) == (
        "inconclusive", 2565, "pass", None)
    assert f1.reason.endswith("About 2,565 more rows (12.2x the 228) would make the interval "
                              "clear the limit at the observed effect.")
    assert f1.to_record()["rows_to_decide"] == 2565


def _wald(successes: int, n: int) -> tuple[float, float, float]:
    p = successes / n
    half = 1.959963984540054 * math.sqrt(p * (1 - p) / n)
    return p, p - half, p + half


def test_the_suggested_rows_decide_about_half_the_time_or_more() -> None:
    """A proportion with true value 0.63 against ``>= 0.60``: from each inconclusive sample of
    228, draw the suggested extra rows from the same population; the new interval clears the
    limit (pass or breach) in roughly half or more of the draws."""
    rng = np.random.default_rng(38)
    decided, tried = 0, 0
    while tried < 400:
        k = int(rng.binomial(228, 0.63))
        point, lo, hi = _wald(k, 228)
        if not lo < 0.60 <= hi or point == 0.60:
            continue
        more = rows_to_decide(point, lo, hi, 228, lower=0.60)
        assert more.rows is not None
        _, lo2, hi2 = _wald(k + int(rng.binomial(more.rows, 0.63)), 228 + more.rows)
        decided += lo2 >= 0.60 or hi2 < 0.60
        tried += 1
    assert 0.45 <= decided / tried <= 0.8, decided / tried


def test_a_gap_holding_0_also_projects_the_rows_if_the_groups_rates_were_equal() -> None:
    # 0.09 in [0, 0.36] against <= 0.03: a breach at 200 * (0.09 / 0.06)**2 rows, a pass at
    # 200 * (0.36 / 0.03)**2 = 28,800 if the upper end shrinks as noise does
    got = rows_to_decide(0.09, 0.0, 0.36, 200, upper=0.03, fairness_gap=True,
                         group_counts=(20, 40))
    assert (got.rows, got.group_positives, got.group_negatives) == (250, 25, 50)
    assert (got.rows_if_equal, got.group_positives_if_equal, got.group_negatives_if_equal) == (
        28600, 2860, 5720)
    assert got.reason.startswith("at the observed gap 0.09 about 250 more rows")
    assert "would confirm a breach; if the groups' rates were equal, about 28,600 more rows" in (
        got.reason)
    assert got.reason.endswith("would show it below 0.03")
    # a caller's simulated factor replaces the extrapolation; the policy minimum still binds
    got = rows_to_decide(0.09, 0.0, 0.36, 200, upper=0.03, fairness_gap=True, scale_if_equal=50.0,
                         group_counts=(20, 40), required_counts=(1500, None))
    assert (got.scale_if_equal, got.rows_if_equal) == (75.0, 14800)


def test_no_second_projection_off_the_boundary_or_for_other_metrics() -> None:
    # lower end above 0: the data say the rates differ
    assert rows_to_decide(0.09, 0.01, 0.36, 200, upper=0.03, fairness_gap=True).rows_if_equal is None
    # not a fairness gap
    assert rows_to_decide(0.09, 0.0, 0.36, 200, upper=0.03).rows_if_equal is None
    # the point on the limit: no projection at the observed gap, the equal-rates one stands
    got = rows_to_decide(0.03, 0.0, 0.12, 100, upper=0.03, fairness_gap=True)
    assert (got.rows, got.rows_if_equal) == (None, 1500)
    assert got.reason.startswith("it cannot be decided at the observed effect")
    assert got.reason.endswith("if the groups' rates were equal, about 1,500 more rows (16.0x the "
                               "100) would show it below 0.03")


def _fair_counts(rng: np.random.Generator, n: int) -> np.ndarray:
    """``tn, fp, fn, tp`` of three equally likely groups with one base rate (0.24), TPR
    (0.6) and FPR (0.08): the equalized-odds difference is 0."""
    cell = np.array([0.76 * 0.92, 0.76 * 0.08, 0.24 * 0.4, 0.24 * 0.6])
    return rng.multinomial(n, np.tile(cell / 3.0, 3)).reshape(3, 4)


def _eod_check(counts: np.ndarray) -> Any:
    report = fairness_report_from_table(table_from_counts(("a", "b", "c"), counts),
                                        sensitive_feature="g")
    decision = decide({}, None, {"g": report}, default_policy())
    return next(c for c in decision.checks if c.metric == "equalized_odds_difference")


def test_a_fair_model_at_the_rows_if_equal_passes_about_half_the_time() -> None:
    """Fair three-group samples of 200 (the gap's interval holds 0, the point lies above
    the limit 0.03): fresh samples of 200 plus the suggested rows if the rates were equal pass
    in about half the draws (``bench/bench_rows_to_decide.py`` draws 400)."""
    rng = np.random.default_rng(2038)
    passed = tried = 0
    while tried < 12:
        check = _eod_check(_fair_counts(rng, 200))
        if check.verdict != "inconclusive" or check.rows_to_decide_if_equal is None:
            continue
        assert check.ci_lower == 0.0
        again = _eod_check(_fair_counts(rng, 200 + check.rows_to_decide_if_equal))
        passed += again.verdict == "pass"
        tried += 1
    assert 0.3 <= passed / tried <= 0.8, passed / tried
