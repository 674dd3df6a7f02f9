"""Fairness gaps on tables small enough to work by hand: the groups and rate behind each gap,
the excluded groups and their reasons, undefined gaps, the report's settings and records (the
intervals' ends against textbook formulas: tests/fairness/test_fairness_gap_intervals.py)."""

from __future__ import annotations

import math

import pytest
from modelgate.fairness.disaggregate import table_from_counts
from modelgate.fairness.metrics import (
    FAIRNESS_METRIC_NAMES,
    FairnessEstimate,
    FairnessReport,
    demographic_parity_difference,
    equalized_odds_difference,
    fairness_report,
    fairness_report_from_table,
)

# counts per group: tn, fp, fn, tp
HAND = {
    "a": [4, 1, 1, 3],   # n 9:  TPR 3/4, FPR 1/5, sel 4/9, PPV 3/4
    "b": [2, 3, 2, 2],   # n 9:  TPR 1/2, FPR 3/5, sel 5/9, PPV 2/5
    "c": [5, 0, 3, 1],   # n 9:  TPR 1/4, FPR 0,   sel 1/9, PPV 1
}


def _report(counts: dict[str, list[int]], **kw) -> FairnessReport:
    table = table_from_counts(tuple(counts), list(counts.values()), min_group_size=kw.pop("min", 1))
    kw.setdefault("n_bootstrap", 0)
    return fairness_report_from_table(table, sensitive_feature="s", **kw)


def test_every_gap_with_its_groups_and_rate_by_hand() -> None:
    got = _report(HAND).by_name()
    expected = {  # value, highest, lowest, driving rate
        "tpr_gap": (3 / 4 - 1 / 4, "a", "c", "tpr"),
        "fpr_gap": (3 / 5 - 0.0, "b", "c", "fpr"),
        "equalized_odds_difference": (3 / 5, "b", "c", "fpr"),  # the fpr gap is the larger
        "tpr_fpr_gap_sum": (1 / 2 + 3 / 5, None, None, None),
        "demographic_parity_difference": (5 / 9 - 1 / 9, "b", "c", "selection_rate"),
        "predictive_parity_difference": (1.0 - 2 / 5, "c", "b", "ppv"),
    }
    assert tuple(got) == FAIRNESS_METRIC_NAMES
    for name, (value, high, low, rate) in expected.items():
        e = got[name]
        assert e.value == pytest.approx(value, abs=1e-15), name
        assert (e.highest_group, e.lowest_group, e.driving_rate) == (high, low, rate), name
        assert e.n == 27 and e.excluded_groups == () and e.undefined_reason is None, name
        assert math.isnan(e.ci_lower) and math.isnan(e.ci_upper), name  # no resample


def test_equalized_odds_takes_the_tpr_side_on_a_tie_and_when_it_is_larger() -> None:
    # TPR 1 and 1/2 (gap 1/2); FPR 1/2 and 0 (gap 1/2): a tie, reported on the tpr side
    tie = _report({"p": [1, 1, 0, 2], "q": [2, 0, 1, 1]}).by_name()["equalized_odds_difference"]
    assert (tie.value, tie.highest_group, tie.lowest_group, tie.driving_rate) == (0.5, "p", "q", "tpr")
    # TPR 1 and 1/4 (gap 3/4) against FPR 1/2 and 1 (gap 1/2): tpr, low group q
    eod = _report({"p": [1, 1, 0, 2], "q": [0, 2, 3, 1]}).by_name()["equalized_odds_difference"]
    assert (eod.value, eod.highest_group, eod.lowest_group, eod.driving_rate) == (0.75, "p", "q", "tpr")


def test_a_gap_of_zero_names_two_groups_not_one_twice() -> None:
    # TPR 1/2 in all three groups: the first is the highest, the last the lowest (the text
    # once read "TPR 0.500 in a vs 0.500 in a"); with a true lowest, it is named
    flat = _report({"a": [1, 1, 1, 1], "b": [2, 0, 2, 2], "c": [0, 2, 3, 3]}).by_name()["tpr_gap"]
    assert (flat.value, flat.highest_group, flat.lowest_group) == (0.0, "a", "c")
    two_low = _report({"a": [1, 1, 0, 2], "b": [2, 0, 2, 2], "c": [0, 2, 3, 3]}).by_name()
    assert (two_low["tpr_gap"].highest_group, two_low["tpr_gap"].lowest_group) == ("a", "c")


def test_a_group_without_positives_is_excluded_from_the_tpr_gap_with_its_reason() -> None:
    counts = {**HAND, "d": [3, 2, 0, 0]}  # no positive label: TPR undefined; FPR 2/5
    got = _report(counts).by_name()
    reason = ("d", "no positive labels (undefined tpr)")
    assert got["tpr_gap"].excluded_groups == (reason,)
    assert got["tpr_gap"].value == pytest.approx(0.5, abs=1e-15)
    assert got["equalized_odds_difference"].excluded_groups == (reason,)
    assert got["tpr_fpr_gap_sum"].excluded_groups == (reason,)
    assert got["fpr_gap"].excluded_groups == ()
    # no predicted positive: PPV undefined
    none_selected = _report({**HAND, "e": [3, 0, 2, 0]}).by_name()
    assert none_selected["predictive_parity_difference"].excluded_groups == (
        ("e", "no predicted positives (undefined ppv)"),)
    assert none_selected["demographic_parity_difference"].excluded_groups == ()
    assert none_selected["demographic_parity_difference"].value == pytest.approx(5 / 9, abs=1e-15)


def test_an_undefined_fpr_in_the_second_part_is_listed_once_after_the_tpr_ones() -> None:
    counts = {"a": [4, 1, 1, 3], "d": [3, 2, 0, 0], "f": [0, 0, 2, 3]}  # d: no TPR; f: no FPR
    eod = _report(counts).by_name()["equalized_odds_difference"]
    assert eod.excluded_groups == (("d", "no positive labels (undefined tpr)"),
                                   ("f", "no negative labels (undefined fpr)"))
    # both gaps have two defined groups: TPR a 3/4, f 3/5; FPR a 1/5, d 2/5
    assert eod.value == pytest.approx(max(3 / 4 - 3 / 5, 2 / 5 - 1 / 5), abs=1e-15)
    # a group undefined in both parts keeps its first reason
    both = _report({"a": [4, 1, 1, 3], "b": [2, 3, 2, 2], "z": [0, 0, 0, 0]}).by_name()
    assert both["equalized_odds_difference"].excluded_groups == (
        ("z", "no positive labels (undefined tpr)"),)


def test_a_small_group_left_out_is_named_with_its_size_and_keeps_that_reason() -> None:
    counts = {**HAND, "t": [1, 0, 0, 0]}  # 1 row: small, and without positives
    got = _report(counts, min=5, include_small_groups=False).by_name()
    small = ("t", "small group (n=1 < 5)")
    for name in FAIRNESS_METRIC_NAMES:
        assert got[name].excluded_groups == (small,), name
    assert got["tpr_gap"].value == pytest.approx(0.5, abs=1e-15)
    assert got["fpr_gap"].value == pytest.approx(0.6, abs=1e-15)  # t's FPR 0 is left out too
    # included, it takes part: t's FPR 0 equals c's, its missing TPR is excluded as such
    kept = _report(counts, min=5).by_name()
    assert kept["fpr_gap"].excluded_groups == ()
    assert kept["tpr_gap"].excluded_groups == (("t", "no positive labels (undefined tpr)"),)


def test_undefined_gaps_say_which_rates_lack_two_groups() -> None:
    # one group with positives, one with negatives: neither rate has two groups
    got = _report({"a": [0, 0, 1, 2], "b": [3, 1, 0, 0]}).by_name()
    tpr, eod, dpd = got["tpr_gap"], got["equalized_odds_difference"], got["demographic_parity_difference"]
    assert math.isnan(tpr.value) and tpr.highest_group is None and tpr.driving_rate is None
    assert tpr.undefined_reason == "fewer than two groups have a defined true positive rate"
    assert eod.undefined_reason == ("fewer than two groups have a defined true positive rate; "
                                    "fewer than two groups have a defined false positive rate")
    assert got["tpr_fpr_gap_sum"].undefined_reason == eod.undefined_reason
    assert math.isnan(eod.ci_lower) and math.isnan(eod.ci_upper)
    assert dpd.value == pytest.approx(2 / 3 - 1 / 4, abs=1e-15) and dpd.undefined_reason is None


def test_with_a_single_group_every_gap_is_undefined_unless_rates_count_as_zero() -> None:
    one = {"a": [4, 1, 1, 3]}
    excluded = _report(one).by_name()
    for name in FAIRNESS_METRIC_NAMES:
        assert math.isnan(excluded[name].value), name
    for name in FAIRNESS_METRIC_NAMES:  # the column holds one value: no rate is short of groups
        assert excluded[name].undefined_reason == "one group only, 'a': no gap between groups"
    missing = fairness_report([0, 1, 1], [0, 1, 0], [None, None, None], sensitive_feature="s",
                              n_bootstrap=0).by_name()["equalized_odds_difference"]
    assert missing.undefined_reason == ("every value of the sensitive column is missing: no gap "
                                        "between groups")
    zero = _report(one, undefined_rates="zero").by_name()
    for name in FAIRNESS_METRIC_NAMES:  # fairlearn: the spread of one group is 0
        assert zero[name].value == 0.0, name
        assert zero[name].excluded_groups == ()


def test_zero_mode_counts_an_undefined_rate_of_a_present_group_as_zero_not_an_absent_one() -> None:
    counts = {"a": [4, 1, 1, 3], "d": [3, 2, 0, 0], "gone": [0, 0, 0, 0]}
    got = _report(counts, undefined_rates="zero").by_name()
    tpr = got["tpr_gap"]
    assert tpr.value == pytest.approx(3 / 4, abs=1e-15)  # a 3/4 against d's 0
    assert (tpr.highest_group, tpr.lowest_group) == ("a", "d")  # not the absent group
    assert tpr.excluded_groups == ()
    assert got["demographic_parity_difference"].value == pytest.approx(4 / 9 - 2 / 5, abs=1e-15)
    assert got["demographic_parity_difference"].lowest_group == "d"


def test_the_row_functions_give_the_gaps_and_check_their_option() -> None:
    y = [1, 1, 0, 0, 1, 0, 0, 0]
    p = [1, 0, 1, 0, 1, 1, 1, 0]
    s = ["a"] * 4 + ["b"] * 4
    # a: TPR 1/2 FPR 1/2 sel 1/2; b: TPR 1 FPR 2/3 sel 3/4
    assert equalized_odds_difference(y, p, s) == pytest.approx(0.5, abs=1e-15)
    assert demographic_parity_difference(y, p, s) == pytest.approx(0.25, abs=1e-15)
    y2 = [1, 0, 0, 0]  # b has no positive: excluded, the TPR gap (so the EOD) undefined; zero: TPR 0
    assert math.isnan(equalized_odds_difference(y2, [1, 0, 1, 0], ["a", "a", "b", "b"]))
    assert equalized_odds_difference(y2, [1, 0, 0, 0], ["a", "a", "b", "b"],
                                     undefined_rates="zero") == pytest.approx(1.0)
    assert math.isnan(equalized_odds_difference([1, 1], [1, 0], ["a", "b"]))
    assert equalized_odds_difference([1, 1], [1, 0], ["a", "b"], undefined_rates="zero") == 1.0
    for f in (equalized_odds_difference, demographic_parity_difference):
        with pytest.raises(ValueError, match=r"undefined_rates must be 'exclude' or 'zero'; got 'nan'"):
            f(y, p, s, undefined_rates="nan")  # type: ignore[arg-type]
        assert isinstance(f(y, p, s), float)


def test_the_report_keeps_its_settings_and_its_table() -> None:
    table = table_from_counts(tuple(HAND), list(HAND.values()), min_group_size=1)
    r = fairness_report_from_table(table, sensitive_feature="sex", include_small_groups=False,
                                   undefined_rates="zero", n_bootstrap=7, confidence_level=0.8,
                                   seed=3)
    assert (r.sensitive_feature, r.n_bootstrap, r.confidence_level, r.seed, r.undefined_rates,
            r.include_small_groups) == ("sex", 7, 0.8, 3, "zero", False)
    assert r.table is table
    with pytest.raises(TypeError):
        r.by_name()["tpr_gap"] = r.estimates[0]  # type: ignore[index]
    defaults = fairness_report_from_table(table, sensitive_feature="sex")
    assert (defaults.n_bootstrap, defaults.confidence_level, defaults.seed, defaults.undefined_rates,
            defaults.include_small_groups) == (1000, 0.95, 0, "exclude", True)
    rows = fairness_report([1, 0, 1, 0], [1, 0, 0, 0], ["a", "a", "b", "b"], sensitive_feature="s")
    assert (rows.n_bootstrap, rows.confidence_level, rows.seed, rows.undefined_rates,
            rows.include_small_groups, rows.table.min_group_size) == (1000, 0.95, 0, "exclude", True, 30)


def test_the_row_report_passes_its_options_on() -> None:
    y = [1, 1, 0, 0, 1, 1, 0, 0, 1, 0]
    p = [1, 0, 0, 1, 1, 1, 1, 0, 1, 1]
    s = ["a"] * 4 + ["b"] * 4 + ["c"] * 2
    r = fairness_report(y, p, s, sensitive_feature="g", min_group_size=3, include_small_groups=False,
                        n_bootstrap=5, confidence_level=0.5, seed=2)
    assert r.table.group("c").small_group and not r.table.group("a").small_group
    assert r.by_name()["tpr_gap"].excluded_groups == (("c", "small group (n=2 < 3)"),)
    assert (r.n_bootstrap, r.confidence_level, r.seed) == (5, 0.5, 2)
    z = fairness_report([1, 0, 0, 0], [1, 0, 0, 0], ["a", "a", "b", "b"], sensitive_feature="g",
                        undefined_rates="zero", n_bootstrap=0)
    assert z.undefined_rates == "zero" and z.by_name()["tpr_gap"].value == 1.0


def test_records_carry_every_field_and_none_for_undefined_numbers() -> None:
    e = FairnessEstimate("fpr_gap", 0.25, 0.125, 0.5, 12, "a", "b", (("c", "small group"),),
                         None, "fpr")
    assert e.to_record() == {
        "metric_name": "fpr_gap", "value": 0.25, "ci_lower": 0.125, "ci_upper": 0.5, "n": 12,
        "undefined_reason": None, "highest_group": "a", "lowest_group": "b",
        "excluded_groups": [["c", "small group"]], "driving_rate": "fpr"}
    nan = float("nan")
    u = FairnessEstimate("tpr_gap", nan, nan, nan, 3, None, None, (), "why")
    record = u.to_record()
    assert (record["value"], record["ci_lower"], record["ci_upper"]) == (None, None, None)
    assert record["undefined_reason"] == "why" and record["driving_rate"] is None
    assert record["excluded_groups"] == []


BAD = [
    (dict(sensitive_feature=3), "sensitive_feature must be a non-empty string; got 3"),
    (dict(include_small_groups=1), "include_small_groups must be True or False; got 1"),
    (dict(undefined_rates="Zero"), "undefined_rates must be 'exclude' or 'zero'; got 'Zero'"),
    (dict(n_bootstrap=1.0), "n_bootstrap must be an integer >= 0; got 1.0"),
    (dict(seed=-1), "seed must be an integer >= 0; got -1"),
    (dict(confidence_level=1.0), r"confidence_level must be a number in \(0, 1\); got 1.0"),
]


@pytest.mark.parametrize(("kwargs", "message"), BAD, ids=[m.split(" ")[0] for _, m in BAD])
def test_both_entry_points_check_every_option(kwargs: dict, message: str) -> None:
    table = table_from_counts(("a", "b"), [[1, 1, 1, 1], [1, 1, 1, 1]])
    kw = {"sensitive_feature": "s", **kwargs}
    with pytest.raises(ValueError, match=message):
        fairness_report_from_table(table, **kw)
    with pytest.raises(ValueError, match=message):
        fairness_report([0, 1], [0, 1], ["a", "b"], **kw)


def test_zero_resamples_are_allowed() -> None:
    r = _report(HAND, n_bootstrap=0, seed=0)
    assert r.n_bootstrap == 0
    assert all(math.isnan(e.ci_lower) for e in r.estimates)


def test_estimates_and_reports_are_frozen_and_slotted() -> None:
    import dataclasses

    report = _report(HAND)
    for obj, field in ((report.estimates[0], "value"), (report, "seed")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, field, 1)
        assert not hasattr(obj, "__dict__")


def test_undefined_rates_are_read_by_value_not_identity() -> None:
    literal, mode = "zero", "".join(["ze", "ro"])  # equal, but built at run time: another object
    assert mode == literal and mode is not literal
    one = {"a": [4, 1, 1, 3]}
    zero = _report(one, undefined_rates=mode)
    assert zero.undefined_rates == "zero"
    for name in FAIRNESS_METRIC_NAMES:  # the spread of one group counts as 0, not NaN
        assert zero.by_name()[name].value == 0.0, name
    # rows: a has TPR 1, b has no positive (TPR 0 in zero mode): gap 1
    assert equalized_odds_difference([1, 0, 0, 0], [1, 0, 0, 0], ["a", "a", "b", "b"],
                                     undefined_rates=mode) == 1.0  # type: ignore[arg-type]


def test_the_data_pass_by_keyword_and_the_options_only_by_keyword() -> None:
    y, p, s = [1, 0, 1, 0], [1, 0, 0, 0], ["a", "a", "b", "b"]
    # a: TPR 1/1, FPR 0/1, selection 1/2; b: TPR 0/1, FPR 0/1, selection 0: EOD 1, DPD 1/2
    assert equalized_odds_difference(y_true=y, y_pred=p, sensitive=s) == 1.0
    assert demographic_parity_difference(y_true=y, y_pred=p, sensitive=s) == 0.5
    r = fairness_report(y_true=y, y_pred=p, sensitive=s, sensitive_feature="g", n_bootstrap=0)
    assert r.by_name()["equalized_odds_difference"].value == 1.0
    t = fairness_report_from_table(table=r.table, sensitive_feature="g", n_bootstrap=0)
    assert t.by_name()["demographic_parity_difference"].value == 0.5
    with pytest.raises(TypeError):
        equalized_odds_difference(y, p, s, "zero")  # type: ignore[misc]
    with pytest.raises(TypeError):
        demographic_parity_difference(y, p, s, "zero")  # type: ignore[misc]
    with pytest.raises(TypeError):
        fairness_report(y, p, s, "g")  # type: ignore[misc]
    with pytest.raises(TypeError):
        fairness_report_from_table(r.table, "g")  # type: ignore[misc]
