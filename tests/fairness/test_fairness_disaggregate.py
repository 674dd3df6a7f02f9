"""Disaggregation: per-group rates against fairlearn's MetricFrame, group encoding, validation."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest
from fairlearn.metrics import (
    MetricFrame,
    false_positive_rate,
    selection_rate,
    true_positive_rate,
)
from modelgate.fairness import MISSING_LABEL, disaggregate, encode_groups
from modelgate.fairness.disaggregate import GroupStats, encode_groups_from_codes, table_from_counts


def _data(kind: str, seed: int, n: int = 3000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    pred = (rng.random(n) < 0.3 + 0.3 * y).astype(int)
    if kind == "ints":
        sensitive: np.ndarray = rng.integers(0, 4, n)
    elif kind == "strings":
        sensitive = rng.choice(np.array(["female", "male", "other"]), n, p=[0.5, 0.45, 0.05])
    elif kind == "object-with-missing":
        sensitive = rng.choice(np.array(["a", "b", "c"], dtype=object), n)
        sensitive[rng.random(n) < 0.1] = None
    elif kind == "float-with-nan":
        sensitive = rng.choice(np.array([18.0, 30.0, 65.0]), n)
        sensitive[rng.random(n) < 0.05] = np.nan
    else:
        raise AssertionError(kind)
    return y, pred, sensitive


KINDS = [("ints", 0), ("strings", 1), ("object-with-missing", 2), ("float-with-nan", 3)]


def _fairlearn_groups(sensitive: np.ndarray) -> np.ndarray:
    """The sensitive column with missing values mapped to an explicit label, as strings."""
    missing = pd.isna(sensitive)
    labels = np.array([str(v) for v in sensitive], dtype=object)
    labels[missing] = MISSING_LABEL
    return labels


@pytest.mark.parametrize(("kind", "seed"), KINDS, ids=[k for k, _ in KINDS])
def test_group_rates_match_fairlearn_metricframe(kind: str, seed: int) -> None:
    y, pred, sensitive = _data(kind, seed)
    table = disaggregate(y, pred, sensitive)
    frame = MetricFrame(
        metrics={"tpr": true_positive_rate, "fpr": false_positive_rate, "sel": selection_rate},
        y_true=y, y_pred=pred, sensitive_features=_fairlearn_groups(sensitive),
    )
    expected = frame.by_group
    assert sorted(g.group for g in table.groups) == sorted(expected.index)
    for g in table.groups:
        assert g.tpr == pytest.approx(expected.loc[g.group, "tpr"], abs=1e-12)
        assert g.fpr == pytest.approx(expected.loc[g.group, "fpr"], abs=1e-12)
        assert g.selection_rate == pytest.approx(expected.loc[g.group, "sel"], abs=1e-12)
    assert sum(g.n for g in table.groups) == table.n == len(y)


def test_hand_worked_table() -> None:
    # group a: y=1,1,0,0 pred=1,0,1,1 -> tp=1 fn=1 fp=2 tn=0; group b: y=1,0 pred=1,0
    table = disaggregate([1, 1, 0, 0, 1, 0], [1, 0, 1, 1, 1, 0], ["a"] * 4 + ["b"] * 2,
                         min_group_size=3)
    a, b = table.groups
    assert (a.group, a.n, a.tp, a.fn, a.fp, a.tn) == ("a", 4, 1, 1, 2, 0)
    assert (a.base_rate, a.selection_rate, a.tpr, a.fpr, a.ppv, a.fnr) == (
        0.5, 0.75, 0.5, 1.0, 1 / 3, 0.5)
    assert (b.tpr, b.fpr, b.ppv, b.fnr) == (1.0, 0.0, 1.0, 0.0)
    assert not a.small_group and b.small_group
    assert table.group("b") == b
    with pytest.raises(KeyError, match="no group 'c'"):
        table.group("c")


def test_undefined_rates_are_nan_not_zero() -> None:
    table = disaggregate([0, 0, 1, 1], [0, 0, 0, 0], ["x", "x", "y", "y"])
    x, y = table.groups
    assert np.isnan(x.tpr) and np.isnan(x.fnr) and np.isnan(x.ppv)
    assert x.fpr == 0.0
    assert np.isnan(y.fpr) and y.tpr == 0.0


def test_small_groups_are_flagged_not_dropped() -> None:
    y, pred, sensitive = _data("strings", 1, n=400)
    table = disaggregate(y, pred, sensitive, min_group_size=30)
    other = table.group("other")
    assert other.small_group == (other.n < 30)
    assert {g.group for g in table.groups} == {"female", "male", "other"}


ENCODINGS = [
    ([3, 1, 3, 2], ("1", "2", "3"), [2, 0, 2, 1]),
    ([True, False, True], ("False", "True"), [1, 0, 1]),
    (np.array([10**12, 5, 10**12]), ("5", "1000000000000"), [1, 0, 1]),
    (["b", "a", "b"], ("a", "b"), [1, 0, 1]),
    (np.array([1.5, np.nan, 0.5]), ("0.5", "1.5", MISSING_LABEL), [1, 2, 0]),
    (np.array(["x", None, pd.NA, np.nan, "y"], dtype=object), ("x", "y", MISSING_LABEL),
     [0, 2, 2, 2, 1]),
    (pd.Series(["u", None, "v"], dtype="category"), ("u", "v", MISSING_LABEL), [0, 2, 1]),
    (np.array([1, "1x", 2.5], dtype=object), ("1", "1x", "2.5"), [0, 1, 2]),
]


@pytest.mark.parametrize(("values", "labels", "codes"), ENCODINGS,
                         ids=["ints", "bools", "sparse-ints", "strings", "floats-nan",
                              "object-missing", "categorical", "mixed-object"])
def test_encode_groups(values: object, labels: tuple[str, ...], codes: list[int]) -> None:
    got_labels, got_codes = encode_groups(values)  # type: ignore[arg-type]
    assert got_labels == labels
    assert got_codes.tolist() == codes


BAD = [
    (([0, 1], [0, 1], ["a"]), "sensitive must have the length of y_true"),
    (([0, 1], [0], ["a", "b"]), "y_pred must have the length of y_true"),
    (([0, 3], [0, 1], ["a", "b"]), "y_true must contain only 0 and 1"),
    (([0, 1], ["x", "y"], ["a", "b"]), "y_pred must contain only 0 and 1"),
    (([], [], []), "y_true must be a non-empty"),
    (([0, 1], [0, 1], [MISSING_LABEL, "b"]), "reserved label"),
    (([0, 1], [0, 1], np.array([1, "1"], dtype=object)), "both have the label '1'"),
    (([0, 1], [0, 1], [["a"], ["b"]]), "sensitive must be one-dimensional"),
]


@pytest.mark.parametrize(("args", "message"), BAD, ids=[m for _, m in BAD])
def test_invalid_inputs_are_rejected(args: tuple, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        disaggregate(*args)


@pytest.mark.parametrize(("y_true", "found"), [
    ([0, 3, 3, 1], "array([3])"),
    ([0, 0.5, 2.0, 1, 0.5], "array([0.5, 2. ])"),
    ([5, 4, 1, 3, 2, 0], "array([2, 3, 4])"),  # the first three only
    (["a", "b", "a", "b"], "dtype('<U1')"),
], ids=["int", "floats", "first-three", "strings"])
def test_bad_labels_are_named_in_the_message(y_true: list[object], found: str) -> None:
    # the message shows the values that are not 0 or 1 (distinct, sorted), not the good ones
    with pytest.raises(ValueError) as caught:
        disaggregate(y_true, [0] * len(y_true), ["a"] * len(y_true))
    assert str(caught.value) == f"y_true must contain only 0 and 1; found {found}"


@pytest.mark.parametrize("dtype", [np.int64, np.bool_, np.str_, np.float64, object])
def test_an_empty_column_has_no_groups_and_no_codes(dtype: type) -> None:
    labels, codes = encode_groups(np.array([], dtype=dtype))
    assert labels == () and codes.shape == (0,)


def test_min_group_size_is_validated() -> None:
    with pytest.raises(ValueError, match="min_group_size must be an integer >= 1; got 0"):
        disaggregate([0, 1], [0, 1], ["a", "b"], min_group_size=0)


@pytest.mark.parametrize(("values", "labels", "codes"), [
    (np.array([2**63, 2**63 + 1, 2**63], dtype=np.uint64),
     ("9223372036854775808", "9223372036854775809"), [0, 1, 0]),
    (np.array([2**64 - 1, 0, 0], dtype=np.uint64), ("0", "18446744073709551615"), [1, 0, 0]),
    (np.array([-128, 127, -128], dtype=np.int8), ("-128", "127"), [0, 1, 0]),
    (np.array([7, 3, 7], dtype=np.uint8), ("3", "7"), [1, 0, 1]),
], ids=["uint64-past-int64", "uint64-wrapping-to-minus-one", "int8-full-range", "uint8"])
def test_unsigned_and_narrow_integers_keep_their_values(
    values: np.ndarray, labels: tuple[str, ...], codes: list[int]
) -> None:
    # unsigned values from 2**63 on were cast to int64 and wrapped: 2**64 - 1 read as "-1",
    # ordered before 0
    got_labels, got_codes = encode_groups(values)
    assert got_labels == labels
    assert got_codes.tolist() == codes


def test_values_absent_from_a_dense_integer_range_get_no_group() -> None:
    labels, codes = encode_groups(np.array([5, 1, 5, 3]))  # 2 and 4 are not there
    assert labels == ("1", "3", "5")
    assert codes.tolist() == [2, 0, 2, 1]


@pytest.mark.parametrize(("labels", "counts", "message"), [
    (("a",), [[-1, 0, 0, 1]], r"counts must be non-negative with shape \(1, 4\); got shape "
                              r"\(1, 4\)"),
    (("a",), [[1, 0, 0, 1], [0, 1, 1, 0]], r"with shape \(1, 4\); got shape \(2, 4\)"),
    (("a", "b"), [[1, 0, 0, 1, 0], [0, 1, 1, 0, 0]], r"with shape \(2, 4\); got shape \(2, 5\)"),
    (("a", "b"), [[1, 0, 0, 1]], r"with shape \(2, 4\); got shape \(1, 4\)"),
], ids=["minus-one", "more-rows", "more-columns", "fewer-rows"])
def test_table_from_counts_refuses_bad_counts(labels: tuple[str, ...], counts: list[list[int]],
                                              message: str) -> None:
    with pytest.raises(ValueError, match=message):
        table_from_counts(labels, counts)


def test_table_from_counts_takes_min_group_size_by_keyword_only() -> None:
    with pytest.raises(TypeError):
        table_from_counts(("a",), [[1, 0, 0, 1]], 3)  # type: ignore[misc]
    assert table_from_counts(("a",), [[1, 0, 0, 1]], min_group_size=3).groups[0].small_group


def test_a_longer_sensitive_column_is_refused() -> None:
    with pytest.raises(ValueError, match=r"sensitive must have the length of y_true \(2\); got 3"):
        disaggregate([0, 1], [0, 1], ["a", "b", "a"])


def test_the_records_are_frozen_and_slotted() -> None:
    table = disaggregate([0, 1], [0, 1], ["a", "b"])
    stats = table.groups[0]
    for record, field in ((table, "n"), (stats, "tp")):
        assert not hasattr(record, "__dict__")
        assert field in type(record).__slots__
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(record, field, 5)


@pytest.mark.parametrize(("values", "labels", "codes"), [
    (np.array([0, 10**15] * 15), ("0", "1000000000000000"), [0, 1] * 15),
    (np.array([-(10**15), 10**15 - 1] * 15), ("-1000000000000000", "999999999999999"),
     [0, 1] * 15),
    (np.array([True, True]), ("True",), [0, 0]),
    (np.array([False, False]), ("False",), [0, 0]),
], ids=["zero-and-huge", "huge-either-side-of-zero", "all-true", "all-false"])
def test_integers_spread_far_apart_are_sorted_not_counted(
    values: np.ndarray, labels: tuple[str, ...], codes: list[int]
) -> None:
    # a count per integer of the range would need petabytes: the values are sorted instead
    got_labels, got_codes = encode_groups(values)
    assert got_labels == labels
    assert got_codes.tolist() == codes


@pytest.mark.parametrize(("y_true", "found"), [
    ([0, -1, 1], "array([-1])"),
    ([0, 0.5, 1], "array([0.5])"),
    ([1, -0.5, 0], "array([-0.5])"),
], ids=["minus-one", "half", "minus-half"])
def test_labels_below_one_other_than_zero_are_refused(y_true: list[float], found: str) -> None:
    with pytest.raises(ValueError) as caught:
        disaggregate(y_true, [0] * len(y_true), ["a"] * len(y_true))
    assert str(caught.value) == f"y_true must contain only 0 and 1; found {found}"


@pytest.mark.parametrize(("args", "message"), [
    (([0, 1], [0, 1, 0], ["a", "b"]), r"y_pred must have the length of y_true \(2\); got 3"),
    (([[0, 1]], [[0, 1]], ["a", "b"]),
     r"y_true must be a non-empty one-dimensional array; got shape \(1, 2\)"),
    (([0, 1], [[0, 1]], ["a", "b"]),
     r"y_pred must be a non-empty one-dimensional array; got shape \(1, 2\)"),
    ((0, 0, "a"), r"y_true must be a non-empty one-dimensional array; got shape \(\)"),
], ids=["longer-y_pred", "2-d-y_true", "2-d-y_pred", "0-d"])
def test_bad_label_shapes_are_refused(args: tuple, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        disaggregate(*args)


@pytest.mark.parametrize("value", ["a", np.array(3), np.array(2.5), np.array(None)])
def test_a_zero_dimensional_sensitive_value_is_refused(value: object) -> None:
    with pytest.raises(ValueError, match=r"sensitive must be one-dimensional; got shape \(\)"):
        encode_groups(value)  # type: ignore[arg-type]


def test_disaggregate_takes_min_group_size_by_keyword_only_with_default_30() -> None:
    with pytest.raises(TypeError):
        disaggregate([0, 1], [0, 1], ["a", "b"], 3)  # type: ignore[misc]
    y = [0, 1] * 15 + [0, 1] * 14 + [1]
    table = disaggregate(y, y, ["a"] * 30 + ["b"] * 29)
    assert table.min_group_size == 30
    assert [(g.n, g.small_group) for g in table.groups] == [(30, False), (29, True)]


@pytest.mark.parametrize("size", [True, False, 2.5, 30.0, "30", None])
def test_min_group_size_must_be_an_integer_not_a_bool(size: object) -> None:
    with pytest.raises(ValueError, match="min_group_size must be an integer >= 1; got "):
        table_from_counts(("a",), [[1, 0, 0, 1]], min_group_size=size)  # type: ignore[arg-type]


def test_disaggregate_emits_no_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = disaggregate([0, 1, 0, 1], [0, 0, 1, 1], ["a", "a", "b", "b"])
    assert table.counts().tolist() == [[1, 0, 1, 0], [0, 1, 0, 1]]


def test_a_record_has_the_auc_bound_when_the_auc_is_known() -> None:
    nan = float("nan")
    known = GroupStats("a", 4, 1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, small_group=True,
                       roc_auc=0.75, roc_auc_error_bound=0.125)
    record = known.to_record()
    assert (record["roc_auc"], record["roc_auc_error_bound"]) == (0.75, 0.125)
    unknown = dataclasses.replace(known, roc_auc=nan, roc_auc_error_bound=0.125)
    record = unknown.to_record()
    assert (record["roc_auc"], record["roc_auc_error_bound"]) == (None, None)


def test_table_from_counts_flags_groups_below_30_rows_by_default() -> None:
    table = table_from_counts(("a", "b"), [[10, 5, 5, 10], [10, 5, 5, 9]])
    assert table.min_group_size == 30
    assert [(g.n, g.small_group) for g in table.groups] == [(30, False), (29, True)]


def test_many_rows_of_two_integers_far_apart_are_sorted_not_counted() -> None:
    # 2**18 rows of 0 and 2**36 - 1: a count per integer of the range would take 512 GiB
    values = np.tile(np.array([0, 2**36 - 1]), 2**17)
    labels, codes = encode_groups(values)
    assert labels == ("0", "68719476735")
    assert codes.tolist() == [0, 1] * 2**17


def test_a_group_is_found_by_its_exact_label() -> None:
    table = disaggregate([0, 1, 1], [0, 1, 0], [2, 10, 10])  # labels in numeric order
    assert [g.group for g in table.groups] == ["2", "10"]
    assert (table.group("10").n, table.group("2").n) == (2, 1)
    with pytest.raises(KeyError, match=r"no group '1'; groups are \['2', '10'\]"):
        table.group("1")


@pytest.mark.parametrize("values", [
    ["b", "a", None, "b", "c", None],
    ["only"],
    [None, None],
    ["10", "9", "x"],  # strings sort as strings
    [],
])
def test_groups_from_dictionary_codes_equal_groups_from_values(values: list[object]) -> None:
    """A column's dictionary (its distinct values in first-seen order) and its codes (-1:
    missing) give the labels and codes that encoding its values row by row gives."""
    distinct = list(dict.fromkeys(v for v in values if v is not None))
    codes = np.array([-1 if v is None else distinct.index(v) for v in values], dtype=np.int64)
    got = encode_groups_from_codes(np.array(distinct, dtype=object), codes)
    want = encode_groups(np.array(values, dtype=object))
    assert got[0] == want[0]
    np.testing.assert_array_equal(got[1], want[1])


def test_groups_from_codes_refuse_a_missing_category() -> None:
    with pytest.raises(ValueError, match="code -1"):
        encode_groups_from_codes(np.array(["a", None], dtype=object), np.array([0, 1]))
