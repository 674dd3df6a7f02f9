"""The group score tables of ``modelgate.fairness.group_scores``: validation, defaults, merging
and AUC on tiny cases worked by hand (the tests against fairlearn and scikit-learn are in
test_fairness_counts.py)."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest
from modelgate.fairness import group_scores
from modelgate.fairness.group_scores import (
    group_roc_auc,
    group_score_table,
    group_score_table_from_codes,
    merge_group_scores,
)


@pytest.mark.parametrize(("y_true", "found"), [
    ([0, -1], "array([-1,  0])"),
    ([0, 2], "array([0, 2])"),
    ([0, 1, 2, 3, 4, 5, 6], "array([0, 1, 2, 3, 4])"),  # the first five distinct values
], ids=["minus-one", "two", "first-five"])
def test_labels_other_than_0_and_1_are_refused(y_true: list[int], found: str) -> None:
    with pytest.raises(ValueError) as caught:
        group_score_table("g", y_true, [0.5] * len(y_true), ["a"] * len(y_true))
    assert str(caught.value) == f"y_true must contain only 0 and 1; found {found}"


def test_zero_dimensional_data_is_refused() -> None:
    with pytest.raises(ValueError, match=r"must be 1-D of one length; got shapes \(\), \(\) and "
                                         r"\(\)"):
        group_score_table_from_codes("g", 0, 0.5, ("a",), 0)


def test_labels_that_sort_before_the_missing_label_are_merged() -> None:
    # "A" and "1" sort before "__missing__" ("_" is after the digits and capitals)
    a = group_score_table("g", [0, 1], [0.2, 0.9], ["A", "1"])
    b = group_score_table("g", [1, 0], [0.7, 0.4], np.array(["A", None], dtype=object))
    m = merge_group_scores([a, b])
    assert m.labels == ("1", "A", "__missing__")
    assert (m.group.tolist(), m.keys.tolist(), m.neg.tolist(), m.pos.tolist()) == (
        [0, 1, 1, 2], [0.9, 0.2, 0.7, 0.4], [0, 1, 0, 1], [1, 0, 1, 0])
    aucs = group_roc_auc(m)
    assert [(x.group, x.positives, x.negatives) for x in aucs] == [
        ("1", 1, 0), ("A", 1, 1), ("__missing__", 0, 1)]
    assert np.isnan(aucs[0].roc_auc) and aucs[1].roc_auc == 1.0 and np.isnan(aucs[2].roc_auc)


def test_the_default_size_is_2_to_the_22_rows() -> None:
    assert group_scores.MAX_DISTINCT == 4_194_304
    for function in (group_score_table, group_score_table_from_codes, merge_group_scores):
        assert inspect.signature(function).parameters["max_distinct"].default == 4_194_304


@pytest.mark.parametrize("bad", [0, -1, True, False, 2.5, "3", None])
def test_max_distinct_must_be_a_positive_integer(bad: object) -> None:
    message = f"max_distinct must be an integer >= 1; got {bad!r}"
    with pytest.raises(ValueError) as caught:
        group_score_table("g", [0, 1], [0.2, 0.3], ["a", "a"], max_distinct=bad)  # type: ignore[arg-type]
    assert str(caught.value) == message
    t = group_score_table("g", [0, 1], [0.2, 0.3], ["a", "a"])
    with pytest.raises(ValueError) as caught:
        merge_group_scores([t], max_distinct=bad)  # type: ignore[arg-type]
    assert str(caught.value) == message


def test_options_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        group_score_table("g", [0, 1], [0.2, 0.3], ["a", "a"], 5)  # type: ignore[misc]
    with pytest.raises(TypeError):
        group_score_table_from_codes("g", [0, 1], [0.2, 0.3], ("a",), [0, 0], 5)  # type: ignore[misc]


def test_merging_nothing_or_other_features_is_refused() -> None:
    with pytest.raises(ValueError) as caught:
        merge_group_scores([])
    assert str(caught.value) == "merge_group_scores needs at least one GroupScoreTable; got none"
    g = group_score_table("g", [0, 1], [0.2, 0.3], ["a", "a"])
    h = group_score_table("h", [0, 1], [0.2, 0.3], ["a", "a"])
    for parts in ([g, h], [h, g], [g, g, h]):
        with pytest.raises(ValueError) as caught:
            merge_group_scores(parts)
        assert str(caught.value) == "cannot merge tables of different features ['g', 'h']"
    assert merge_group_scores([h, h]).feature == "h"


def test_scores_of_exactly_0_and_1_are_kept_and_nan_is_refused() -> None:
    t = group_score_table("g", [0, 1, 1], [0.0, 1.0, 0.0], ["a", "a", "a"])
    assert (t.keys.tolist(), t.neg.tolist(), t.pos.tolist()) == ([0.0, 1.0], [1, 0], [1, 1])
    with pytest.raises(ValueError) as caught:
        group_score_table("g", [0, 1], [0.5, float("nan")], ["a", "a"])
    assert str(caught.value) == ("score must be in [0, 1]; found 1 value(s) outside, e.g. "
                                 "array([nan])")


def test_the_auc_of_each_group_by_hand() -> None:
    # a: positives 0.5, 0.8, negatives 0.5, 0.2: pairs 1/2 (tie), 1, 1, 1 -> 3.5 / 4
    # b: positive 0.3, negatives 0.6, 0.1, 0.3: pairs 0, 1, 1/2 -> 1.5 / 3 (counted within b
    # although a's negatives come first in the table)
    t = group_score_table("g", [1, 1, 0, 0, 1, 0, 0, 0], [0.5, 0.8, 0.5, 0.2, 0.3, 0.6, 0.1, 0.3],
                          ["a"] * 4 + ["b"] * 4)
    a, b = group_roc_auc(t)
    assert (a.group, a.positives, a.negatives, a.roc_auc, a.error_bound) == ("a", 2, 2, 0.875, 0.0)
    assert (b.group, b.positives, b.negatives, b.roc_auc, b.error_bound) == ("b", 1, 3, 0.5, 0.0)


def test_the_grid_stops_at_one_cell_when_the_groups_alone_pass_max_distinct() -> None:
    # two groups need two rows: halving stops at one cell, where every pair ties
    t = group_score_table("g", [0, 1, 0, 1], [0.1, 0.9, 0.2, 0.8], ["a", "a", "b", "b"],
                          max_distinct=1)
    assert (t.grid, t.group.tolist(), t.keys.tolist(), t.neg.tolist(), t.pos.tolist()) == (
        1, [0, 1], [0.0, 0.0], [1, 1], [1, 1])
    assert [(x.roc_auc, x.error_bound) for x in group_roc_auc(t)] == [(0.5, 0.5), (0.5, 0.5)]


def test_a_pooled_table_bounds_the_error_by_its_ties() -> None:
    # 4 cells: 0.1 and 0.2 share cell 0, 0.6 is in cell 2, 0.9 in cell 3; pairs (pos, neg):
    # (0.2, 0.1) tie, (0.6, 0.1) 1, (0.9, 0.1) 1 of 3 (one negative): AUC 2.5 / 3, bound 1/6
    t = group_score_table("g", [0, 1, 1, 1], [0.1, 0.2, 0.6, 0.9], ["a"] * 4, max_distinct=3)
    assert (t.grid, t.keys.tolist(), t.neg.tolist(), t.pos.tolist()) == (
        4, [0.0, 2.0, 3.0], [1, 0, 0], [1, 1, 1])
    (auc,) = group_roc_auc(t)
    assert auc.roc_auc == 2.5 / 3 and auc.error_bound == 1 / 6


def test_a_score_table_with_a_group_the_counts_lack_is_refused() -> None:
    from modelgate.fairness.disaggregate import disaggregate
    from modelgate.fairness.group_scores import with_group_auc

    table = disaggregate([0, 1], [0, 1], ["a", "a"])
    scores = group_score_table("g", [0, 1, 0, 1], [0.1, 0.9, 0.2, 0.8], ["a", "a", "c", "c"])
    with pytest.raises(ValueError) as caught:
        with_group_auc(table, group_score_table("g", [0, 1], [0.1, 0.9], ["a", "b"]))
    assert str(caught.value) == (
        "group 'a' of 'g' has 1 positives and 1 negatives in the disaggregated table but 0 and 1 "
        "in the score table; build both from the same rows")
    with pytest.raises(ValueError) as caught:
        with_group_auc(table, scores)
    assert str(caught.value) == ("the score table of 'g' has groups the disaggregated table "
                                 "lacks: ['c']")
    filled = with_group_auc(disaggregate([0, 1, 0, 1], [0, 1, 1, 1], ["a", "a", "c", "c"]),
                            scores)
    assert [(g.group, g.roc_auc, g.roc_auc_error_bound) for g in filled.groups] == [
        ("a", 1.0, 0.0), ("c", 1.0, 0.0)]
    assert (filled.n, filled.min_group_size) == (4, 30)


def test_the_records_are_frozen_and_slotted() -> None:
    t = group_score_table("g", [0, 1], [0.2, 0.3], ["a", "a"])
    (auc,) = group_roc_auc(t)
    for record, field in ((t, "grid"), (auc, "roc_auc")):
        assert not hasattr(record, "__dict__")
        assert field in type(record).__slots__
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(record, field, 1)


@pytest.mark.parametrize(("args", "shapes"), [
    (([0, 1], [0.2], ["a", "b"]), "(2,), (1,) and (2,)"),
    (([0, 1], [0.2, 0.3], ["a"]), "(2,), (2,) and (1,)"),
    (([[0, 1]], [[0.2, 0.3]], [["a", "b"]]), None),
], ids=["score-shorter", "sensitive-shorter", "2-d"])
def test_data_of_other_shapes_is_refused(args: tuple[object, ...], shapes: str | None) -> None:
    y, score, sensitive = args
    if shapes is None:  # a 2-D sensitive column is refused first, by the encoding
        with pytest.raises(ValueError) as caught:
            group_score_table_from_codes("g", y, score, ("a", "b"), [[0, 1]])
        shapes = "(1, 2), (1, 2) and (1, 2)"
    else:
        with pytest.raises(ValueError) as caught:
            group_score_table("g", y, score, sensitive)
    assert str(caught.value) == f"y_true, score and codes of 'g' must be 1-D of one length; got " \
                                f"shapes {shapes}"


def test_a_table_built_directly_has_exact_keys_by_default() -> None:
    from modelgate.fairness.group_scores import GroupScoreTable

    one = np.array([0])
    t = GroupScoreTable("g", ("a",), one, np.array([0.5]), one, np.array([1]))
    assert t.grid == 0
    (auc,) = group_roc_auc(t)
    assert (auc.positives, auc.negatives) == (1, 0) and np.isnan(auc.error_bound)


def test_names_built_at_run_time_are_compared_by_value() -> None:
    # tables read back from storage carry strings equal to the module's constants but other
    # objects: "".join builds such strings
    feature = "".join(["g", "x"])
    missing = "".join(["__miss", "ing__"])
    assert missing == "__missing__" and missing is not group_scores.MISSING_LABEL
    a = group_score_table_from_codes("gx", [0, 1], [0.2, 0.9], ("a", missing), [0, 1])
    b = group_score_table_from_codes(feature, [1], [0.7], ("b",), [0])
    m = merge_group_scores([a, b])
    # the missing-value group goes last: "a" 0, "b" 1, missing 2; rows (group, score, y):
    # (0, 0.2, 0), (2, 0.9, 1) from a and (1, 0.7, 1) from b, sorted by group
    assert (m.feature, m.labels) == ("gx", ("a", "b", "__missing__"))
    assert (m.group.tolist(), m.keys.tolist(), m.neg.tolist(), m.pos.tolist()) == (
        [0, 1, 2], [0.2, 0.7, 0.9], [1, 0, 0], [0, 1, 1])


@pytest.mark.parametrize("bad_code", [2, 3, -1])
def test_codes_outside_the_labels_are_refused(bad_code: int) -> None:
    with pytest.raises(ValueError) as caught:
        group_score_table_from_codes("g", [0, 1], [0.2, 0.9], ("a", "b"), [0, bad_code])
    lo, hi = min(0, bad_code), max(0, bad_code)
    assert str(caught.value) == f"codes must be in 0..1; got {lo}..{hi}"
