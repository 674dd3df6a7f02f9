"""Fairness gap intervals (fairness/score_intervals.py, gap_intervals.py, gap_lower_end.py)
against formulas and tests written out here: Wilson's score interval (Wilson 1927; Newcombe
1998 eq. for method 3), Newcombe's hybrid score interval for a difference of independent
proportions (method 10), the fitted window rates against Brent's search on the likelihood, the
p-value against the exact law of tiny groups (every count table enumerated: binomial at the
fitted rates, or with the observed total for no gap), the lower end against the oracle's own
test inversion and a quartic solved by hand.  Plus the boundary behaviour the gate relies on:
no gap -> lower end 0; the breach count of seeded null draws within a binomial bound."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from modelgate.fairness.disaggregate import GroupStats, table_from_counts
from modelgate.fairness.gap_intervals import gap_interval, gap_interval_of_families
from modelgate.fairness.gap_lower_end import DRAWS, gap_p_value, lower_end, window_rates
from modelgate.fairness.metrics import (
    FAIRNESS_METRIC_NAMES,
    fairness_report,
    fairness_report_from_table,
)
from modelgate.fairness.score_intervals import modified_wilson_bounds, wilson_bounds
from scipy import optimize
from scipy.stats import binom, binomtest, chi2, norm
from support.gap_oracles import (
    exact_mid_p,
    gap_upper_end,
    lower_end_bracket,
    modified_wilson,
    newcombe,
    pair_lower_max,
    wilson,
    window_fit,
)


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


WINDOW_CASES = [([80, 40, 60], [100, 100, 100], 0.1), ([5, 1, 3], [6, 6, 7], 0.2),
                ([30, 41, 25, 44, 38], [60, 60, 60, 60, 60], 0.05), ([9, 2], [10, 40], 0.5),
                ([4, 4, 4], [8, 8, 8], 0.0), ([3, 0], [4, 0], 0.3)]


@pytest.mark.parametrize(("x", "n", "width"), WINDOW_CASES, ids=lambda v: str(v))
@pytest.mark.parametrize("edge_slack", [0.0, 2.0], ids=["fitted", "on edges"])
def test_window_rates_are_the_bounded_likelihood_maximum(x: list[int], n: list[int], width: float,
                                                         edge_slack: float) -> None:
    """Against Brent's bounded search on the log-likelihood and the edge rule written out
    (tests/support/gap_oracles.py); every rate within the window."""
    got = window_rates(x, n, width, edge_slack)
    expected = window_fit(list(zip(x, n, strict=True)), width, edge_slack)
    assert got == pytest.approx(expected, abs=1e-4)
    assert float(np.ptp(got)) <= width + 1e-12


def test_groups_held_on_the_top_edge_set_it_at_their_pooled_rate() -> None:
    """Nine groups of 60 at 57-60 successes (528 of 540, 0.9778) and one of 42 of 54 (0.7778):
    at a width of 0.2 the nine lie within 2 standard errors of the top edge and are held on
    it, so the top maximises their pooled likelihood, 528 / 540, where the tenth group's own
    rate is exactly the bottom edge.  A fit with each group at its own rate put the top at the
    groups of 60 of 60 instead (above 0.99)."""
    tops = [57, 58, 59, 60, 60, 59, 58, 60, 57]
    x, n = tops + [42], [60] * 9 + [54]
    got = window_rates(x, n, 0.2)
    assert got[:9] == pytest.approx([528 / 540] * 9, abs=2e-5)
    assert float(got[9]) == pytest.approx(42 / 54, abs=2e-5)
    assert window_fit(list(zip(x, n, strict=True)), 0.2, 2.0) == pytest.approx(got, abs=2e-5)
    unheld = window_rates(x, n, 0.2, 0.0)  # no group held: the groups of 60 of 60 set the top
    assert float(unheld.max()) > 0.99 and float(unheld[9]) > 0.79


TINY = [[(4, 4), (1, 5), (3, 6)], [(6, 6), (2, 6), (5, 6), (0, 3)], [(3, 4), (0, 0)]]


@pytest.mark.parametrize("groups", TINY, ids=["3 groups", "4 groups", "zero-trial group"])
@pytest.mark.parametrize("width", [0.0, 0.15, 0.4])
def test_p_value_matches_the_exact_law_of_tiny_groups(groups: list[tuple[int, int]],
                                                      width: float) -> None:
    """The 2,048-draw mid-p value against the exact one (every count table enumerated), within
    four of its standard errors."""
    z = float(norm.ppf(0.96))
    exact = exact_mid_p([groups], width, z)
    got = gap_p_value([([x for x, _ in groups], [n for _, n in groups])], width, 0.04)
    assert got == pytest.approx(exact, abs=4 * math.sqrt(exact * (1 - exact) / DRAWS) + 1e-9)


def test_two_families_p_value_matches_the_exact_law() -> None:
    """TPR and FPR families at once (the equalized-odds difference): both in windows of one
    width, the statistic the larger family's."""
    families = [[(3, 3), (1, 4)], [(0, 5), (2, 4), (1, 3)]]
    z = float(norm.ppf(0.96))
    for width in (0.0, 0.2):
        exact = exact_mid_p(families, width, z)
        got = gap_p_value([([x for x, _ in f], [n for _, n in f]) for f in families], width, 0.04)
        assert got == pytest.approx(exact, abs=4 * math.sqrt(exact * (1 - exact) / DRAWS) + 1e-9)


def test_lower_end_is_where_the_exact_test_stops_rejecting() -> None:
    groups = [(6, 6), (1, 6), (3, 6)]
    got = lower_end([([x for x, _ in groups], [n for _, n in groups])], 0.04)
    low, high = lower_end_bracket([groups], 0.04, p_value=exact_mid_p, oracle_draws=10**12)
    assert low <= got <= high
    assert high > 0.05  # a 6/6 group against 1/6: equal rates rejected, the inversion leaves 0


def test_no_gap_is_tested_by_permutation_where_the_pooled_rate_would_reject() -> None:
    """4 of 4, 1 of 5 and 3 of 6: the tables with 8 successes in all give the hypothesis of
    equal rates a mid-p value of 0.054 (enumerated); drawn at the pooled rate 8/15 it would be
    rejected at 4 %.  The lower end stays 0."""
    groups = TINY[0]
    z = float(norm.ppf(0.96))
    assert exact_mid_p([groups], 0.0, z) == pytest.approx(0.054, abs=5e-4)
    observed, above, tie = pair_lower_max(groups, z), 0.0, 0.0
    for xs in itertools.product(range(5), range(6), range(7)):  # every table, at the pooled rate
        weight = math.prod(float(binom.pmf(x, n, 8 / 15)) for x, (_, n) in zip(xs, groups, strict=True))
        stat = pair_lower_max(list(zip(xs, (4, 5, 6), strict=True)), z)
        tie += weight * (abs(stat - observed) <= 1e-12)
        above += weight * (stat > observed + 1e-12)
    assert above + tie / 2 == pytest.approx(0.0355, abs=5e-4)
    family = [([x for x, _ in groups], [n for _, n in groups])]
    assert lower_end(family, 0.04) == 0.0
    assert gap_p_value(family, 0.0, 0.04) > 0.04


def test_the_gap_0_has_its_own_level() -> None:
    """95, 75 and 75 of 150: the hypothesis of no gap has a mid-p value between 4 % and 5 %, so
    the lower end leaves 0 at 5 % and stays there when the gap 0 is tested at 4 % (the
    intervals test it at 0.8 alpha, every other gap at alpha from three groups on); with the
    same level for both it is the one-level inversion."""
    family = [([95, 75, 75], [150, 150, 150])]
    assert 0.04 < gap_p_value(family, 0.0, 0.04) <= 0.05
    assert lower_end(family, 0.05) > 0.0
    assert lower_end(family, 0.05, null_tail=0.04) == 0.0
    assert lower_end(family, 0.05, null_tail=0.05) == lower_end(family, 0.05)
    low, high = lower_end_bracket([[(95, 150), (75, 150), (75, 150)]], 0.05, null_tail=0.04)
    assert low <= 0.0 <= high  # the oracle may call it either way this near its level


def test_one_group_against_an_undefined_rate_solves_a_quartic_by_hand() -> None:
    """Group a has 3 of 4, b no trials (rate 0 under the zero convention).  Under ``gap <= t``
    the window starts at 0, a's rate is t (on the edge), and the statistic is a's Wilson lower
    end, which only 4 of 4 beats and 3 of 4 ties: the mid-p value is
    t**4 + 4 t**3 (1 - t) / 2.  It equals 0.04 at the root of -t**4 + 2 t**3 = 0.04."""
    def end_at(level: float) -> float:
        return float(optimize.brentq(lambda t: -t**4 + 2 * t**3 - level, 0.0, 1.0, xtol=1e-12))

    assert round(end_at(0.04), 4) == 0.2858
    spread = 3 * math.sqrt(0.04 * 0.96 / DRAWS)
    got = lower_end([([3, 0], [4, 0])], 0.04)
    assert end_at(0.04 - spread) - 2.0**-10 <= got <= end_at(0.04 + spread)


def test_two_large_groups_give_about_newcombes_one_sided_end() -> None:
    """With one pair the inversion is a one-sided test of that pair: 2,000 trials a group put
    its end within 0.005 of Newcombe's lower end at the one-sided 96 % point."""
    got = lower_end([([1400, 1200], [2000, 2000])], 0.04)
    assert got == pytest.approx(newcombe(1400, 2000, 1200, 2000, float(norm.ppf(0.96)))[0],
                                abs=0.005)


# counts per group: tn, fp, fn, tp
TABLE = {"a": [40, 10, 12, 38], "b": [30, 20, 25, 25], "c": [45, 5, 20, 30], "d": [20, 2, 3, 5]}
_RATE = {"tpr": lambda tn, fp, fn, tp: (tp, tp + fn), "fpr": lambda tn, fp, fn, tp: (fp, fp + tn),
         "sel": lambda tn, fp, fn, tp: (tp + fp, tn + fp + fn + tp),
         "ppv": lambda tn, fp, fn, tp: (tp, tp + fp)}


def _assert_ends(got: tuple[float, float], families: list[list[tuple[int, int]]], level: float,
                 name: str) -> None:
    """Upper end exactly the pairs' farthest end; lower end within the bracket of the oracle's
    test inversion (tests/support/gap_oracles.py)."""
    assert got[1] == pytest.approx(gap_upper_end(families, level), abs=1e-12), name
    # four groups: the gap 0 tested at 0.8 alpha, every other gap at alpha, the upper end at
    # 0.2 alpha (gap_intervals.NULL_SHARE, MANY_SHARES)
    low, high = lower_end_bracket(families, 1 - level, null_tail=0.8 * (1 - level))
    assert low <= got[0] <= high, (name, got, (low, high))


@pytest.mark.parametrize("level", [0.95, 0.8], ids=["95%", "80%"])
def test_every_gap_interval_against_the_test_inversion_written_out(level: float) -> None:
    table = table_from_counts(tuple(TABLE), list(TABLE.values()), min_group_size=1)
    got = fairness_report_from_table(table, sensitive_feature="s", confidence_level=level).by_name()
    fam = {r: [f(*c) for c in TABLE.values()] for r, f in _RATE.items()}
    expected = {
        "tpr_gap": [fam["tpr"]], "fpr_gap": [fam["fpr"]],
        "demographic_parity_difference": [fam["sel"]], "predictive_parity_difference": [fam["ppv"]],
        "equalized_odds_difference": [fam["tpr"], fam["fpr"]],
    }
    assert set(expected) | {"tpr_fpr_gap_sum"} == set(FAIRNESS_METRIC_NAMES)
    for name, families in expected.items():
        e = got[name]
        _assert_ends((e.ci_lower, e.ci_upper), families, level, name)
        assert e.ci_lower <= e.value <= e.ci_upper, name
    half = [lower_end_bracket([fam[r]], (1 - level) / 2, null_tail=0.8 * (1 - level) / 2)
            for r in ("tpr", "fpr")]
    total = got["tpr_fpr_gap_sum"]
    assert half[0][0] + half[1][0] <= total.ci_lower <= half[0][1] + half[1][1]
    assert total.ci_upper == pytest.approx(
        gap_upper_end([fam["tpr"]], (1 + level) / 2) + gap_upper_end([fam["fpr"]], (1 + level) / 2),
        abs=1e-12)


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
    [0, 0]; the TPR gap's upper end is then a's Wilson upper end at the one-sided 98 % point,
    and its lower end the quartic's root of the test above (3 of 4 against a fixed 0): two
    groups, so the ends' shares are 0.8 and 0.4 of 5 %."""
    report = fairness_report([1, 1, 1, 1, 0, 0, 0, 0], [1, 1, 1, 0, 0, 1, 0, 0],
                             ["a"] * 4 + ["b"] * 4, sensitive_feature="g", undefined_rates="zero")
    tpr = report.by_name()["tpr_gap"]
    assert (tpr.value, tpr.ci_upper) == (0.75, pytest.approx(wilson(3, 4, float(norm.ppf(0.98)))[1]))
    assert tpr.ci_lower == lower_end([([3, 0], [4, 0])], 0.04)
    assert 0.27 < tpr.ci_lower < 0.30


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
