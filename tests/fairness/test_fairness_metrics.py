"""Fairness gaps against fairlearn, undefined-rate handling, intervals, and properties."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from fairlearn.metrics import (
    MetricFrame,
    demographic_parity_difference,
    equalized_odds_difference,
    false_positive_rate,
    true_positive_rate,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from modelgate.fairness import (
    FAIRNESS_METRIC_NAMES,
    MISSING_LABEL,
    fairness_report,
)
from modelgate.fairness import equalized_odds_difference as our_eod
from sklearn.metrics import precision_score
from support.gap_oracles import gap_upper_end, lower_end_bracket


def _data(seed: int, n: int, n_groups: int, missing: bool) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, n_groups, n)
    y = (rng.random(n) < 0.2 + 0.15 * groups / n_groups).astype(int)
    pred = (rng.random(n) < 0.25 + 0.4 * y + 0.05 * groups).astype(int)
    sensitive = np.array([f"g{g}" for g in groups], dtype=object)
    if missing:
        sensitive[rng.random(n) < 0.08] = None
    return y, pred, sensitive


def _explicit_missing(sensitive: np.ndarray) -> np.ndarray:
    out = sensitive.copy()
    out[pd.isna(out)] = MISSING_LABEL
    return out


DATASETS = [(0, 2000, 2, False), (1, 5000, 4, False), (2, 3000, 3, True), (3, 800, 6, True)]
IDS = [f"seed{s}-n{n}-groups{g}{'-missing' if m else ''}" for s, n, g, m in DATASETS]


@pytest.mark.parametrize(("seed", "n", "n_groups", "missing"), DATASETS, ids=IDS)
def test_gaps_match_fairlearn(seed: int, n: int, n_groups: int, missing: bool) -> None:
    y, pred, sensitive = _data(seed, n, n_groups, missing)
    report = fairness_report(y, pred, sensitive, sensitive_feature="s", n_bootstrap=0)
    got = report.by_name()
    labels = _explicit_missing(sensitive)
    assert got["equalized_odds_difference"].value == pytest.approx(
        equalized_odds_difference(y, pred, sensitive_features=labels), abs=1e-12)
    assert got["demographic_parity_difference"].value == pytest.approx(
        demographic_parity_difference(y, pred, sensitive_features=labels), abs=1e-12)
    frame = MetricFrame(metrics={"tpr": true_positive_rate, "fpr": false_positive_rate,
                                 "ppv": precision_score},
                        y_true=y, y_pred=pred, sensitive_features=labels)
    diff = frame.difference()
    assert got["tpr_gap"].value == pytest.approx(diff["tpr"], abs=1e-12)
    assert got["fpr_gap"].value == pytest.approx(diff["fpr"], abs=1e-12)
    assert got["tpr_fpr_gap_sum"].value == pytest.approx(diff["tpr"] + diff["fpr"], abs=1e-12)
    assert got["predictive_parity_difference"].value == pytest.approx(diff["ppv"], abs=1e-12)
    assert all(e.excluded_groups == () for e in report.estimates)


def test_zero_mode_reproduces_fairlearn_for_groups_without_positives() -> None:
    rng = np.random.default_rng(7)
    y, pred, sensitive = _data(7, 1500, 3, False)
    y[sensitive == "g2"] = 0  # g2 has no positives: TPR undefined, fairlearn says 0
    pred[rng.random(len(y)) < 0.5] = 1
    fl = equalized_odds_difference(y, pred, sensitive_features=sensitive)
    assert our_eod(y, pred, sensitive, undefined_rates="zero") == pytest.approx(fl, abs=1e-12)
    zero = fairness_report(y, pred, sensitive, sensitive_feature="s", n_bootstrap=0,
                           undefined_rates="zero").by_name()
    assert zero["equalized_odds_difference"].value == pytest.approx(fl, abs=1e-12)
    assert zero["tpr_gap"].excluded_groups == ()


def test_exclude_mode_leaves_out_undefined_groups_and_says_so() -> None:
    y, pred, sensitive = _data(7, 1500, 3, False)
    y[sensitive == "g2"] = 0
    report = fairness_report(y, pred, sensitive, sensitive_feature="s", n_bootstrap=50)
    tpr_gap = report.by_name()["tpr_gap"]
    kept = np.isin(sensitive, ["g0", "g1"])
    frame = MetricFrame(metrics=true_positive_rate, y_true=y[kept], y_pred=pred[kept],
                        sensitive_features=sensitive[kept])
    assert tpr_gap.value == pytest.approx(frame.difference(), abs=1e-12)
    assert tpr_gap.excluded_groups == (("g2", "no positive labels (undefined tpr)"),)
    eod = report.by_name()["equalized_odds_difference"]
    assert ("g2", "no positive labels (undefined tpr)") in eod.excluded_groups
    assert report.by_name()["fpr_gap"].excluded_groups == ()


def test_gap_over_fewer_than_two_defined_groups_is_undefined_not_zero() -> None:
    y = np.array([1, 0, 1, 0, 0, 0])
    pred = np.array([1, 0, 0, 1, 1, 0])
    sensitive = np.array(["a", "a", "a", "b", "b", "b"])
    got = fairness_report(y, pred, sensitive, sensitive_feature="s", n_bootstrap=20).by_name()
    assert np.isnan(got["tpr_gap"].value) and np.isnan(got["tpr_gap"].ci_upper)
    assert got["tpr_gap"].undefined_reason == ("fewer than two groups have a defined true "
                                               "positive rate")
    assert np.isnan(got["equalized_odds_difference"].value)
    # FPR: a has one negative, not selected (0); b selects 2 of 3 negatives (2/3)
    assert got["fpr_gap"].value == pytest.approx(2 / 3, abs=1e-15)


def test_hand_worked_gaps() -> None:
    # a: y=1,1,0,0 pred=1,0,0,1 -> TPR 1/2, FPR 1/2, sel 1/2, PPV 1/2
    # b: y=1,1,0,0 pred=1,1,1,0 -> TPR 1,   FPR 1/2, sel 3/4, PPV 2/3
    y = [1, 1, 0, 0, 1, 1, 0, 0]
    pred = [1, 0, 0, 1, 1, 1, 1, 0]
    s = ["a"] * 4 + ["b"] * 4
    got = fairness_report(y, pred, s, sensitive_feature="s", n_bootstrap=0).by_name()
    assert got["tpr_gap"].value == 0.5
    assert got["fpr_gap"].value == 0.0
    assert got["equalized_odds_difference"].value == 0.5
    assert got["tpr_fpr_gap_sum"].value == 0.5
    assert got["demographic_parity_difference"].value == 0.25
    assert got["predictive_parity_difference"].value == pytest.approx(1 / 6, abs=1e-15)
    assert (got["tpr_gap"].highest_group, got["tpr_gap"].lowest_group) == ("b", "a")


def test_small_groups_included_by_default_and_excludable() -> None:
    y, pred, sensitive = _data(4, 600, 3, False)
    tiny = np.array(["tiny"] * 6, dtype=object)
    y2, pred2 = np.r_[y, [1, 1, 1, 0, 0, 0]], np.r_[pred, [0, 0, 0, 1, 1, 1]]
    s2 = np.r_[sensitive, tiny]
    with_tiny = fairness_report(y2, pred2, s2, sensitive_feature="s", n_bootstrap=0)
    assert with_tiny.table.group("tiny").small_group
    fl = equalized_odds_difference(y2, pred2, sensitive_features=s2)
    assert with_tiny.by_name()["equalized_odds_difference"].value == pytest.approx(fl, abs=1e-12)
    without = fairness_report(y2, pred2, s2, sensitive_feature="s", n_bootstrap=0,
                              include_small_groups=False)
    kept = s2 != "tiny"
    fl_kept = equalized_odds_difference(y2[kept], pred2[kept], sensitive_features=s2[kept])
    eod = without.by_name()["equalized_odds_difference"]
    assert eod.value == pytest.approx(fl_kept, abs=1e-12)
    assert eod.excluded_groups == (("tiny", "small group (n=6 < 30)"),)
    assert without.table.group("tiny").n == 6  # still reported


def _groups_of(table_labels: tuple[str, ...], counts: np.ndarray) -> tuple[np.ndarray, ...]:
    """Rows (y, pred, group) with the given (groups, 4) counts tn, fp, fn, tp."""
    cells = [(0, 0), (0, 1), (1, 0), (1, 1)]
    y, pred, s = [], [], []
    for label, row in zip(table_labels, counts, strict=True):
        for (yy, pp), k in zip(cells, row, strict=True):
            y += [yy] * int(k)
            pred += [pp] * int(k)
            s += [label] * int(k)
    return np.array(y), np.array(pred), np.array(s, dtype=object)


def test_gaps_equal_fairlearn_and_intervals_are_the_test_inversion_written_out() -> None:
    """Point gaps against fairlearn (undefined rates as 0, as fairlearn has them); the upper end
    against the pairwise Newcombe intervals and the lower end against the test inversion of
    tests/support/gap_oracles.py on the test's own counts."""
    y, pred, sensitive = _data(5, 400, 3, True)
    report = fairness_report(y, pred, sensitive, sensitive_feature="s", confidence_level=0.9,
                             undefined_rates="zero")
    labels = tuple(g.group for g in report.table.groups)
    groups = _explicit_missing(sensitive)
    got = report.by_name()
    assert got["equalized_odds_difference"].value == pytest.approx(
        equalized_odds_difference(y, pred, sensitive_features=groups), abs=1e-12)
    assert got["demographic_parity_difference"].value == pytest.approx(
        demographic_parity_difference(y, pred, sensitive_features=groups), abs=1e-12)
    members = [groups == g for g in labels]
    tpr = [(int((m & (y == 1) & (pred == 1)).sum()), int((m & (y == 1)).sum())) for m in members]
    fpr = [(int((m & (y == 0) & (pred == 1)).sum()), int((m & (y == 0)).sum())) for m in members]
    sel = [(int((m & (pred == 1)).sum()), int(m.sum())) for m in members]
    assert min(n for _, n in tpr + fpr) > 0  # every rate defined: the zero convention is idle
    families = {"equalized_odds_difference": [tpr, fpr], "demographic_parity_difference": [sel]}
    for name, fams in families.items():
        assert got[name].ci_upper == pytest.approx(gap_upper_end(fams, 0.9), abs=1e-12), name
        low, high = lower_end_bracket(fams, 0.1, null_tail=0.08)  # three groups or more
        assert low <= got[name].ci_lower <= high, name


BAD_OPTIONS = [
    (dict(sensitive_feature=""), "sensitive_feature must be a non-empty string"),
    (dict(sensitive_feature="s", undefined_rates="nan"), "undefined_rates must be"),
    (dict(sensitive_feature="s", include_small_groups="yes"), "include_small_groups must be"),
    (dict(sensitive_feature="s", n_bootstrap=-5), "n_bootstrap must be an integer"),
    (dict(sensitive_feature="s", confidence_level=0.0), "confidence_level must be"),
]


@pytest.mark.parametrize(("kwargs", "message"), BAD_OPTIONS, ids=[m for _, m in BAD_OPTIONS])
def test_invalid_options_are_rejected(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        fairness_report([0, 1], [0, 1], ["a", "b"], **kwargs)


small_data = st.integers(0, 2**31 - 1).flatmap(
    lambda seed: st.tuples(st.just(seed), st.integers(4, 80), st.integers(1, 4)))


@settings(max_examples=50, deadline=None)
@given(small_data, st.sampled_from(["exclude", "zero"]))
def test_gaps_are_non_negative_and_invariant_to_relabelling_and_row_order(
    data: tuple[int, int, int], mode: str
) -> None:
    seed, n, n_groups = data
    rng = np.random.default_rng(seed)
    y, pred = rng.integers(0, 2, n), rng.integers(0, 2, n)
    groups = rng.integers(0, n_groups, n)
    names = np.array(["p", "q", "r", "s"])
    renamed = np.array(["zz", "aa", "mm", "bb"])
    perm = rng.permutation(n)
    kw = dict(sensitive_feature="s", n_bootstrap=0, undefined_rates=mode)
    base = fairness_report(y, pred, names[groups], **kw).by_name()  # type: ignore[arg-type]
    relabelled = fairness_report(y, pred, renamed[groups], **kw).by_name()  # type: ignore[arg-type]
    permuted = fairness_report(y[perm], pred[perm], names[groups][perm],
                               **kw).by_name()  # type: ignore[arg-type]
    for name in FAIRNESS_METRIC_NAMES:
        value = base[name].value
        assert np.isnan(value) or value >= 0.0
        assert relabelled[name].value == pytest.approx(value, abs=1e-12, nan_ok=True)
        assert permuted[name].value == pytest.approx(value, abs=1e-12, nan_ok=True)
        assert permuted[name].excluded_groups == base[name].excluded_groups


def test_equalized_odds_interval_stays_in_range_and_holds_its_value_near_a_tie() -> None:
    """Two groups with equal rates: every resample's gap exceeds the true 0, the interval's
    lower end is lowered by that excess and clipped at 0, the upper end is the percentile."""
    rng = np.random.default_rng(4)
    y = (rng.random(300) < 0.4).astype(int)
    pred = (rng.random(300) < np.where(y == 1, 0.7, 0.2)).astype(int)
    group = np.where(rng.random(300) < 0.5, "a", "b")
    report = fairness_report(y, pred, group, sensitive_feature="g", n_bootstrap=500, seed=3)
    eod, tpr = report.by_name()["equalized_odds_difference"], report.by_name()["tpr_gap"]
    assert 0.0 <= eod.ci_lower <= eod.value <= eod.ci_upper <= 1.0
    # the tpr gap keeps its percentile interval, whose lower end lies above the eod's
    assert eod.ci_lower < tpr.ci_lower or eod.ci_lower == 0.0
