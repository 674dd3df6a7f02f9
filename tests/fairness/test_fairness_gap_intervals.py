"""Fairness gap intervals (fairness/gap_intervals.py) against textbook formulas written out
here: Wilson's score interval (Wilson 1927; Newcombe 1998 eq. for method 3), Newcombe's hybrid
score interval for a difference of independent proportions (method 10), Tukey's critical value
from scipy's studentized range, the selected pairs' critical value against closed forms (one
pair: the normal point; all tied: Tukey's; many-to-one: Dunnett's integral; two independent
families: Sidak's) and against the test's own Monte Carlo, and the gap's two-step ends.  Plus
the boundary behaviour the gate relies on: no gap -> lower end 0; the breach count of seeded
null draws within a binomial bound."""

from __future__ import annotations

import math

import numpy as np
import pytest
from modelgate.fairness.disaggregate import GroupStats, table_from_counts
from modelgate.fairness.gap_intervals import (
    SELECTION_SLACK,
    gap_interval,
    gap_interval_of_families,
    modified_wilson_bounds,
    pairwise_critical_value,
    selected_critical_value,
    wilson_bounds,
)
from modelgate.fairness.metrics import (
    FAIRNESS_METRIC_NAMES,
    fairness_report,
    fairness_report_from_table,
)
from scipy import integrate, optimize
from scipy.special import ndtr
from scipy.stats import binom, binomtest, chi2, norm, studentized_range
from support.gap_oracles import (
    agresti_coull_se,
    modified_wilson,
    newcombe,
    selected_z_by_monte_carlo,
    tukey,
    two_step_gap,
    wilson,
)

QMC = 0.03  # the module's 4,096 quasi-random draws (error up to about 0.02) against an exact point


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


def test_one_selected_pair_gets_the_normal_point_and_tied_groups_tukeys() -> None:
    """Group 0 far above the rest, the rest far apart: one pair is near the gap, its point is
    the one-sided normal one.  Equal groups: every pair is, and the point is Tukey's."""
    for tail in (0.05, 0.02):
        assert selected_critical_value([[90, 10, 50]], [[100, 100, 100]], tail) == pytest.approx(
            float(norm.ppf(1 - tail)), abs=1e-12)
    for k in (3, 5):
        got = selected_critical_value([[50] * k], [[100] * k], 0.04)
        assert got == pytest.approx(float(studentized_range.ppf(0.96, k, np.inf)) / math.sqrt(2),
                                    abs=QMC), k


@pytest.mark.parametrize("k", [3, 10], ids=lambda k: f"K={k}")
def test_one_group_below_tied_others_gets_dunnetts_many_to_one_point(k: int) -> None:
    """Groups 1..K-1 at 80/100, group 0 at 20/60: the K - 1 pairs (j, 0) are the gap, pairs
    among the others lie 0.47 (about 8 standard errors) below it.  Their largest standardised
    difference is below c with probability int phi(z) Phi((s0 z + c S) / s)^(K-1) dz
    (Dunnett 1955, unequal variances), s and s0 the Agresti-Coull errors, S = hypot(s, s0)."""
    s, s0 = agresti_coull_se(80, 100), agresti_coull_se(20, 60)
    big = math.hypot(s, s0)

    def below(c: float) -> float:
        def integrand(z: float) -> float:  # scalar ndtr: norm.cdf's overhead per call is large
            density = math.exp(-z * z / 2) / math.sqrt(2 * math.pi)
            return density * float(ndtr((s0 * z + c * big) / s)) ** (k - 1)

        return integrate.quad(integrand, -9, 9, epsabs=1e-9)[0]

    expected = optimize.brentq(lambda c: below(c) - 0.96, 1.0, 4.0, xtol=1e-6)
    got = selected_critical_value([[20] + [80] * (k - 1)], [[60] + [100] * (k - 1)], 0.04)
    assert got == pytest.approx(expected, abs=QMC)
    assert got < tukey(k, 0.96)  # fewer pairs than all of them: a smaller point


def test_two_independent_families_with_equal_gaps_get_sidaks_point() -> None:
    """TPR and FPR families, each one pair 80 points apart: two independent standard normals,
    the larger below c with probability Phi(c)^2."""
    got = selected_critical_value([[90, 10], [90, 10]], [[100, 100], [100, 100]], 0.04)
    assert got == pytest.approx(float(norm.ppf(math.sqrt(0.96))), abs=QMC)


def test_selected_point_against_a_monte_carlo_written_here() -> None:
    families = [[(38, 50), (25, 50), (30, 50), (5, 8)], [(10, 50), (20, 50), (5, 50), (2, 22)]]
    for fams in (families[:1], families):
        got = selected_critical_value([[x for x, _ in f] for f in fams],
                                      [[n for _, n in f] for f in fams], 0.04)
        assert got == pytest.approx(selected_z_by_monte_carlo(fams, 0.04, SELECTION_SLACK),
                                    abs=QMC)


# counts per group: tn, fp, fn, tp
TABLE = {"a": [40, 10, 12, 38], "b": [30, 20, 25, 25], "c": [45, 5, 20, 30], "d": [20, 2, 3, 5]}
_RATE = {"tpr": lambda tn, fp, fn, tp: (tp, tp + fn), "fpr": lambda tn, fp, fn, tp: (fp, fp + tn),
         "sel": lambda tn, fp, fn, tp: (tp + fp, tn + fp + fn + tp),
         "ppv": lambda tn, fp, fn, tp: (tp, tp + fp)}


def _two_step(families: list[list[tuple[int, int]]], level: float) -> tuple[float, float]:
    z = selected_z_by_monte_carlo(families, 0.8 * (1 - level), SELECTION_SLACK)
    return two_step_gap(families, level, z)


def _close(got: tuple[float, float], expected: tuple[float, float], name: str) -> None:
    """Upper ends and lower ends of 0 exactly; a step-two lower end within the Monte Carlo
    error of its critical value (a few hundredths of a standard error)."""
    assert got[1] == pytest.approx(expected[1], abs=1e-12), name
    assert got[0] == pytest.approx(expected[0], abs=1e-12 if expected[0] == 0 else 5e-3), name


@pytest.mark.parametrize("level", [0.95, 0.8], ids=["95%", "80%"])
def test_every_gap_interval_against_two_step_newcombe_pairs_written_out(level: float) -> None:
    table = table_from_counts(tuple(TABLE), list(TABLE.values()), min_group_size=1)
    got = fairness_report_from_table(table, sensitive_feature="s", confidence_level=level).by_name()
    fam = {r: [f(*c) for c in TABLE.values()] for r, f in _RATE.items()}
    single = {r: _two_step([fam[r]], level) for r in fam}
    half = {r: _two_step([fam[r]], (1 + level) / 2) for r in ("tpr", "fpr")}
    expected = {
        "tpr_gap": single["tpr"], "fpr_gap": single["fpr"],
        "demographic_parity_difference": single["sel"], "predictive_parity_difference": single["ppv"],
        "equalized_odds_difference": _two_step([fam["tpr"], fam["fpr"]], level),
        "tpr_fpr_gap_sum": (half["tpr"][0] + half["fpr"][0], half["tpr"][1] + half["fpr"][1]),
    }
    assert set(expected) == set(FAIRNESS_METRIC_NAMES)
    for name, ends in expected.items():
        e = got[name]
        _close((e.ci_lower, e.ci_upper), ends, name)
        assert e.ci_lower <= e.value <= e.ci_upper, name
    assert got["tpr_gap"].ci_lower > 0  # a: 38/50 against b: 25/50, far apart


def test_a_tiny_two_group_case_by_hand() -> None:
    """TPR 8/10 against 2/10.  Step one: Newcombe's interval at z = 2.054 (the two-sided 96 %
    point, K = 2) is [0.1413, 0.8070], away from 0.  Step two: only the pair (a, b) lies near
    the gap (b - a is 1.2 below it, 7 standard errors), so z = 1.7507 (one-sided 96 %):
    Wilson at 1.7507 is [0.5235, 0.9357] and [0.0643, 0.4765], lower end
    0.6 - sqrt(0.2765^2 + 0.2765^2) = 0.2090 (Newcombe's method 10, written out)."""
    report = fairness_report([1] * 20, [1] * 8 + [0] * 2 + [1] * 2 + [0] * 8,
                             ["a"] * 10 + ["b"] * 10, sensitive_feature="g")
    tpr = report.by_name()["tpr_gap"]
    assert tpr.value == pytest.approx(0.6)
    step_one = newcombe(8, 10, 2, 10, float(norm.ppf(0.98)))
    assert (round(step_one[0], 4), round(step_one[1], 4)) == (0.1413, 0.8070)
    lower = newcombe(8, 10, 2, 10, float(norm.ppf(0.96)))[0]
    assert (tpr.ci_lower, tpr.ci_upper) == (pytest.approx(lower, abs=1e-12),
                                            pytest.approx(step_one[1], abs=1e-12))
    assert round(tpr.ci_lower, 4) == 0.2090


def test_ten_groups_of_six_positives_cannot_leave_0_by_more_than_a_tenth() -> None:
    """Why ten groups of about six positives over-cover (module docstring): at Tukey's value
    for ten groups (two-sided 96 %), no split of two groups of six gives a pair interval farther
    than 0.10 from 0; the largest, 6 of 6 against 0 of 6, is 1 - sqrt(2) (1 - 6 / (6 + z^2)) by
    Wilson's formula at x = n and x = 0.  Brute force over all 49 splits, against the oracle."""
    z = tukey(10, 0.96)
    lowers = {(a, b): float(gap_interval([a, b], [6, 6], z, z)[0])
              for a in range(7) for b in range(7)}
    by_hand = {(a, b): max(0.0, newcombe(a, 6, b, 6, z)[0], -newcombe(a, 6, b, 6, z)[1])
               for a, b in lowers}
    assert lowers == pytest.approx(by_hand, abs=1e-12)
    assert max(lowers, key=lowers.get) in ((6, 0), (0, 6))
    assert max(lowers.values()) == pytest.approx(1 - math.sqrt(2) * (1 - 6 / (6 + z * z)), abs=1e-12)
    assert 0.10 < max(lowers.values()) < 0.11


def test_same_counts_same_interval_and_a_few_milliseconds() -> None:
    """Deterministic (fixed quasi-random draws): two calls on one table agree exactly."""
    x = [[30, 41, 25, 44, 38, 20, 47, 33, 29, 40], [9, 12, 4, 15, 8, 11, 6, 13, 7, 10]]
    n = [[60] * 10, [140] * 10]
    assert gap_interval_of_families(x, n, 0.95) == gap_interval_of_families(x, n, 0.95)
    assert gap_interval_of_families(x, n, 0.95)[0] > 0


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


@pytest.mark.parametrize("n", [2, 6, 60, 100, 101], ids=lambda n: f"n={n}")
def test_modified_wilson_against_its_formula(n: int) -> None:
    z = float(norm.ppf(0.975))
    got = modified_wilson_bounds(np.arange(n + 1), np.full(n + 1, n), z)
    expected = np.array([modified_wilson(x, n, z) for x in range(n + 1)])
    assert np.column_stack(got) == pytest.approx(expected, abs=1e-12)
    assert all(math.isnan(float(v)) for v in modified_wilson_bounds(0, 0, z))


@pytest.mark.parametrize(("n", "rate"), [(6, 0.977), (10, 0.95), (6, 0.023)],
                         ids=["5 of 6 likely", "n=10", "near 0"])
def test_modified_wilson_covers_a_rate_near_1_where_wilson_does_not(n: int, rate: float) -> None:
    """Exact coverage by enumerating the binomial law (scipy): a few trials at a rate near 0
    or 1, where Wilson's 95 % interval misses the rate at one count from the boundary."""
    z = float(norm.ppf(0.975))
    pmf = binom.pmf(np.arange(n + 1), n, rate)

    def coverage(ends: tuple[np.ndarray, np.ndarray]) -> float:
        return float(pmf[(ends[0] <= rate) & (rate <= ends[1])].sum())

    counts, trials = np.arange(n + 1), np.full(n + 1, n)
    assert coverage(wilson_bounds(counts, trials, z)) < 0.92
    assert coverage(modified_wilson_bounds(counts, trials, z)) >= 0.95


def test_zero_convention_counts_an_undefined_rate_as_exactly_0() -> None:
    """undefined_rates="zero": group b has no positives, so its TPR is 0 with the interval
    [0, 0]; the TPR gap's ends are then those of a's Wilson interval: the upper at the upper
    end's point (one-sided 98 %); step one (two-sided 96 %, K = 2) puts a's interval away from 0,
    and step two keeps the one pair (a, b), so the lower end is a's Wilson lower end at the
    one-sided 96 % point."""
    report = fairness_report([1, 1, 1, 1, 0, 0, 0, 0], [1, 1, 1, 0, 0, 1, 0, 0],
                             ["a"] * 4 + ["b"] * 4, sensitive_feature="g", undefined_rates="zero")
    tpr = report.by_name()["tpr_gap"]
    assert wilson(3, 4, float(norm.ppf(0.98)))[0] > 0
    lo, hi = wilson(3, 4, float(norm.ppf(0.96)))[0], wilson(3, 4, float(norm.ppf(0.98)))[1]
    assert (tpr.value, tpr.ci_lower, tpr.ci_upper) == (0.75, pytest.approx(lo), pytest.approx(hi))


def test_group_records_carry_modified_wilson_intervals_at_the_reports_level() -> None:
    """24 of 24 and 25 of 30: Wilson's ends; 1 of 6 (one success) and 24 of 25 (one failure):
    the modified interval's Poisson end on that side (tests/support/gap_oracles.py)."""
    g = GroupStats("F", 30, 24, 1, 5, 0, 0.8, 25 / 30, 1.0, 1 / 6, 0.96, 0.0, False)
    z90 = float(norm.ppf(0.95))
    record = g.to_record(0.9)
    assert (record["tpr_ci_lower"], record["tpr_ci_upper"]) == (pytest.approx(24 / (24 + z90**2)), 1.0)
    assert (record["fpr_ci_lower"], record["fpr_ci_upper"]) == pytest.approx(
        (float(chi2.ppf(0.1, 2)) / 12, wilson(1, 6, z90)[1]))
    assert (record["selection_rate_ci_lower"], record["selection_rate_ci_upper"]) == pytest.approx(
        wilson(25, 30, z90))
    assert (record["ppv_ci_lower"], record["ppv_ci_upper"]) == pytest.approx(
        (wilson(24, 25, z90)[0], 1 - float(chi2.ppf(0.1, 2)) / 50))
    empty = GroupStats("M", 3, 0, 0, 3, 0, 0.0, 0.0, float("nan"), 0.0, float("nan"),
                       float("nan"), True).to_record()
    assert (empty["tpr_ci_lower"], empty["ppv_ci_upper"]) == (None, None)
    with pytest.raises(ValueError, match="rate must be one of"):
        g.rate_interval("fnr")
