"""Fairness gap intervals (fairness/gap_intervals.py) against textbook formulas written out
here: Wilson's score interval (Wilson 1927; Newcombe 1998 eq. for method 3), Newcombe's hybrid
score interval for a difference of independent proportions (method 10), Tukey's critical value
from scipy's studentized range, and the gap's ends as the distance of the farthest pair
interval from 0 and the farthest pair end.  Plus the boundary behaviour the gate relies on: no
gap -> lower end 0; the breach count of seeded null draws within a binomial bound."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gap_oracles import gap_by_hand, tukey, wilson
from modelgate.fairness.disaggregate import GroupStats, table_from_counts
from modelgate.fairness.gap_intervals import gap_interval, pairwise_critical_value, wilson_bounds
from modelgate.fairness.metrics import (
    FAIRNESS_METRIC_NAMES,
    fairness_report,
    fairness_report_from_table,
)
from scipy.stats import binom, binomtest, norm, studentized_range


def test_wilson_of_24_of_24_and_of_other_counts_against_the_formula_and_scipy() -> None:
    z = float(norm.ppf(0.975))
    lo, hi = wilson_bounds(24, 24, z)
    assert (float(lo), float(hi)) == (pytest.approx(24 / (24 + z * z), abs=1e-12), 1.0)
    assert round(float(lo), 4) == 0.8620  # Clopper-Pearson would give 0.025**(1/24) = 0.8575
    for x, n in ((0, 10), (1, 7), (13, 40), (195, 200)):
        ci = binomtest(x, n).proportion_ci(0.95, method="wilson")
        got = wilson_bounds(x, n, z)
        assert (float(got[0]), float(got[1])) == (pytest.approx(ci.low, abs=1e-12),
                                                  pytest.approx(ci.high, abs=1e-12)), (x, n)
        assert (float(got[0]), float(got[1])) == pytest.approx(wilson(x, n, z), abs=1e-12)
    assert all(math.isnan(float(v)) for v in wilson_bounds(0, 0, z))


def test_tukey_critical_values_are_scipys_studentized_range() -> None:
    assert pairwise_critical_value(2, 0.95) == pytest.approx(1.959963984540054, abs=1e-12)
    assert pairwise_critical_value(2, 0.95) == pytest.approx(
        studentized_range.ppf(0.95, 2, np.inf) / math.sqrt(2), abs=1e-6)
    for k in (3, 5, 10):
        assert pairwise_critical_value(k, 0.9) == pytest.approx(
            studentized_range.ppf(0.9, k, np.inf) / math.sqrt(2), abs=1e-12)
    assert math.isnan(pairwise_critical_value(1, 0.95))


# counts per group: tn, fp, fn, tp
TABLE = {"a": [40, 10, 12, 38], "b": [30, 20, 25, 25], "c": [45, 5, 20, 30], "d": [20, 2, 3, 5]}
_RATE = {"tpr": lambda tn, fp, fn, tp: (tp, tp + fn), "fpr": lambda tn, fp, fn, tp: (fp, fp + tn),
         "sel": lambda tn, fp, fn, tp: (tp + fp, tn + fp + fn + tp),
         "ppv": lambda tn, fp, fn, tp: (tp, tp + fp)}


@pytest.mark.parametrize("level", [0.95, 0.8], ids=["95%", "80%"])
def test_every_gap_interval_against_newcombe_pairs_written_out(level: float) -> None:
    table = table_from_counts(tuple(TABLE), list(TABLE.values()), min_group_size=1)
    got = fairness_report_from_table(table, sensitive_feature="s", confidence_level=level).by_name()
    k, z_up = len(TABLE), float(norm.ppf(0.5 + level / 2))
    fam = {r: [f(*c) for c in TABLE.values()] for r, f in _RATE.items()}
    single = {r: gap_by_hand(fam[r], tukey(k, level), z_up) for r in fam}
    joint = {r: gap_by_hand(fam[r], tukey(k, math.sqrt(level)), z_up) for r in ("tpr", "fpr")}
    expected = {
        "tpr_gap": single["tpr"], "fpr_gap": single["fpr"],
        "demographic_parity_difference": single["sel"], "predictive_parity_difference": single["ppv"],
        "equalized_odds_difference": (max(joint["tpr"][0], joint["fpr"][0]),
                                      max(joint["tpr"][1], joint["fpr"][1])),
        "tpr_fpr_gap_sum": (joint["tpr"][0] + joint["fpr"][0], joint["tpr"][1] + joint["fpr"][1]),
    }
    assert set(expected) == set(FAIRNESS_METRIC_NAMES)
    for name, (lo, hi) in expected.items():
        e = got[name]
        assert (e.ci_lower, e.ci_upper) == (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12)), name
        assert e.ci_lower <= e.value <= e.ci_upper, name
    assert got["tpr_gap"].ci_lower > 0  # a: 38/50 against b: 25/50, far apart


def test_a_tiny_two_group_case_by_hand() -> None:
    """TPR 8/10 against 2/10: Wilson at 1.96 is [0.49016, 0.94331] and [0.05669, 0.50984],
    so the difference 0.6 has Newcombe's interval
    [0.6 - sqrt(2) 0.30984, 0.6 + sqrt(2) 0.14331] = [0.16182, 0.80267]."""
    report = fairness_report([1] * 20, [1] * 8 + [0] * 2 + [1] * 2 + [0] * 8,
                             ["a"] * 10 + ["b"] * 10, sensitive_feature="g")
    tpr = report.by_name()["tpr_gap"]
    assert tpr.value == pytest.approx(0.6)
    assert (round(tpr.ci_lower, 4), round(tpr.ci_upper, 4)) == (0.1618, 0.8027)


@pytest.mark.parametrize("k", [2, 3, 5, 10], ids=lambda k: f"K={k}")
def test_balanced_data_with_no_gap_has_lower_end_0(k: int) -> None:
    table = table_from_counts(tuple(f"g{i}" for i in range(k)), [[70, 10, 6, 14]] * k)
    for e in fairness_report_from_table(table, sensitive_feature="s").estimates:
        assert (e.value, e.ci_lower) == (0.0, 0.0), e.name
        assert e.ci_upper > 0.0, e.name


def test_mapped_counts_give_the_one_process_intervals() -> None:
    rng = np.random.default_rng(7)
    y, p = rng.integers(0, 2, 3000), rng.integers(0, 2, 3000)
    g = rng.choice(np.array(["x", "y", "z"]), 3000)
    whole = fairness_report(y, p, g, sensitive_feature="s")
    parts = [table_from_counts(("x", "y", "z"), fairness_report(
        y[i::4], p[i::4], g[i::4], sensitive_feature="s").table.counts()).counts() for i in range(4)]
    merged = fairness_report_from_table(table_from_counts(("x", "y", "z"), sum(parts)),
                                        sensitive_feature="s")
    assert merged.estimates == whole.estimates


def test_null_draws_breach_the_default_limit_no_more_than_a_binomial_bound() -> None:
    """200 seeded samples of n = 228, a random 3-group attribute (no gap): a breach (lower end
    above 0.03) in at most the 99.9 % point of Binomial(200, 0.05) of them (issue #38 saw 53)."""
    rng = np.random.default_rng(38)
    tpr, fpr, base = 0.6, 0.07, 0.24
    cells = np.array([(1 - base) * (1 - fpr), (1 - base) * fpr, base * (1 - tpr), base * tpr]) / 3
    draws = rng.multinomial(228, np.tile(cells, 3), size=200).reshape(200, 3, 4)
    lowers = [fairness_report_from_table(table_from_counts(("a", "b", "c"), d, min_group_size=1),
                                         sensitive_feature="s").estimates[0].ci_lower for d in draws]
    breaches = sum(lower > 0.03 for lower in lowers)
    assert breaches <= binom.ppf(0.999, 200, 0.05)


def test_gap_interval_refuses_one_group_and_mismatched_shapes() -> None:
    with pytest.raises(ValueError, match="K >= 2"):
        gap_interval([1], [2], 2.0, 2.0)
    with pytest.raises(ValueError, match="one shape"):
        gap_interval([1, 2], [2, 2, 2], 2.0, 2.0)


def test_zero_convention_counts_an_undefined_rate_as_exactly_0() -> None:
    """undefined_rates="zero": group b has no positives, so its TPR is 0 with the interval
    [0, 0]; the TPR gap's ends are then those of a's Wilson interval at the critical value."""
    report = fairness_report([1, 1, 1, 1, 0, 0, 0, 0], [1, 1, 1, 0, 0, 1, 0, 0],
                             ["a"] * 4 + ["b"] * 4, sensitive_feature="g", undefined_rates="zero")
    tpr = report.by_name()["tpr_gap"]
    lo, hi = wilson(3, 4, float(norm.ppf(0.975)))
    assert (tpr.value, tpr.ci_lower, tpr.ci_upper) == (0.75, pytest.approx(lo), pytest.approx(hi))


def test_group_records_carry_wilson_intervals_at_the_reports_level() -> None:
    g = GroupStats("F", 30, 24, 1, 5, 0, 0.8, 25 / 30, 1.0, 1 / 6, 0.96, 0.0, False)
    z90 = float(norm.ppf(0.95))
    record = g.to_record(0.9)
    assert (record["tpr_ci_lower"], record["tpr_ci_upper"]) == (pytest.approx(24 / (24 + z90**2)), 1.0)
    assert (record["fpr_ci_lower"], record["fpr_ci_upper"]) == pytest.approx(wilson(1, 6, z90))
    assert (record["selection_rate_ci_lower"], record["selection_rate_ci_upper"]) == pytest.approx(
        wilson(25, 30, z90))
    assert (record["ppv_ci_lower"], record["ppv_ci_upper"]) == pytest.approx(wilson(24, 25, z90))
    empty = GroupStats("M", 3, 0, 0, 3, 0, 0.0, 0.0, float("nan"), 0.0, float("nan"),
                       float("nan"), True).to_record()
    assert (empty["tpr_ci_lower"], empty["ppv_ci_upper"]) == (None, None)
    with pytest.raises(ValueError, match="rate must be one of"):
        g.rate_interval("fnr")
