"""The group score tables of ``modelgate.fairness.group_scores``: validation, defaults, merging
and AUC on tiny cases worked by hand (the tests against fairlearn and scikit-learn are in
test_fairness_counts.py)."""

from __future__ import annotations

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
