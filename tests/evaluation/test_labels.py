"""Label columns checked against a model's manifest (evaluation/labels.py): hand-made columns
with the exact message and 0/1 or index arrays each must give."""

from __future__ import annotations

import math

import numpy as np
import pytest
from modelgate.evaluation.labels import (
    MAX_SHOWN_VALUES,
    LabelError,
    binary_labels,
    class_indices,
    model_labels,
)


def message(fn, *args, **kwargs) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(LabelError) as caught:
        fn(*args, **kwargs)
    return str(caught.value)


def test_binary_labels_typed_equality() -> None:
    got = binary_labels(np.array([1.0, 0.0, 1.0]), column="y", positive=1)
    assert got.dtype == np.int8 and got.tolist() == [1, 0, 1]
    assert binary_labels([True, False], column="y", positive=True).tolist() == [1, 0]
    assert binary_labels(["no", "no"], column="y", positive="yes").tolist() == [0, 0]
    assert binary_labels([0, 0], column="y", positive=1).tolist() == [0, 0]  # all negatives, same type
    assert binary_labels([1, 1], column="y", positive=1).tolist() == [1, 1]
    assert binary_labels([], column="y", positive=1).tolist() == []
    # True is not the number 1: a bool column with positive 1 has no positives and is mistyped
    assert message(binary_labels, [True, False], column="y", positive=1) == (
        "label column 'y' must hold the positive value 1 and one other value; "
        "found 2 other values: True (1 row), False (1 row)")


def test_binary_labels_name_the_offending_values_with_counts() -> None:
    assert message(binary_labels, [1, 0, 2, 2, 3, 3, 3], column="target", positive=1) == (
        "label column 'target' must hold the positive value 1 and one other value; "
        "found 3 other values: 3 (3 rows), 2 (2 rows), 0 (1 row)")
    many = [1] + [f"v{i}" for i in range(MAX_SHOWN_VALUES + 2)]
    text = message(binary_labels, many, column="y", positive=1)
    assert text.endswith(" and 2 more")
    assert f"found {MAX_SHOWN_VALUES + 2} other values" in text
    assert text.count("(1 row)") == MAX_SHOWN_VALUES
    # one mistyped value next to a true positive is still a (single) negative class
    assert binary_labels([1, "0"], column="y", positive=1).tolist() == [1, 0]


def test_binary_labels_with_a_declared_negative() -> None:
    assert binary_labels(["n", "p", "n"], column="y", positive="p", negative="n").tolist() == [0, 1, 0]
    assert binary_labels(["n", "n"], column="y", positive="p", negative="n").tolist() == [0, 0]
    assert message(binary_labels, ["p", "x", "x", "n", "z"], column="c", positive="p", negative="n") == (
        "label column 'c' must hold the positive value 'p' and the declared negative value 'n'; "
        "found other values: 'x' (2 rows), 'z' (1 row)")


def test_class_indices() -> None:
    got = class_indices(np.array([2, 0, 1, 2]), [0, 1, 2], column="y")
    assert got.dtype == np.int64 and got.tolist() == [2, 0, 1, 2]
    assert class_indices([1.0, 2], [2, 1], column="y").tolist() == [1, 0]
    assert message(class_indices, ["a", math.nan, None, "q", "q"], ["a", "b"], column="k") == (
        "label column 'k' must hold the model's classes ['a', 'b']; found other values: "
        "None (2 rows), 'q' (2 rows)")  # one key for every missing value
    many = [f"v{i}" for i in range(MAX_SHOWN_VALUES + 1)]
    assert message(class_indices, many, ["a"], column="y").endswith(" and 1 more")


BINARY = {"label": {"column": "y", "positive": 1}}


def test_model_labels_by_task() -> None:
    assert model_labels(np.array([0, 1]), BINARY).dtype == np.int8
    declared = {"label": {"column": "y", "positive": "p", "negative": "n"}}
    assert message(model_labels, ["p", "q"], declared).endswith("found other values: 'q' (1 row)")
    multi = {"task": "multiclass_classification", "label": {"column": "y"},
             "output": {"classes": ["a", "b", "c"]}}
    assert model_labels(["c", "a"], multi).tolist() == [2, 0]
    assert message(model_labels, ["a"], {**multi, "output": {}}).startswith(
        "label column 'y' must hold the model's classes []")
    reg = {"task": "regression", "label": {"column": "price"}}
    got = model_labels([1, 2.5, np.int64(3)], reg)
    assert got.dtype == np.float64 and got.tolist() == [1.0, 2.5, 3.0]
    assert model_labels(np.array([4, 5], dtype=np.int32), reg).tolist() == [4.0, 5.0]


@pytest.mark.parametrize(("values", "text"), [
    (np.array([1.0, math.nan, math.nan]), "label column 'y' has 2 missing value(s)"),
    ([1, None, math.nan], "label column 'y' has 2 missing value(s)"),
])
def test_model_labels_refuse_missing_values(values: object, text: str) -> None:
    assert message(model_labels, values, BINARY) == text


@pytest.mark.parametrize(("values", "text"), [
    ([1.0, True], "label column 'price' of a regression model must be numeric; got dtype object"),
    (np.array(["1", "2"]), "label column 'price' of a regression model must be numeric; got dtype <U1"),
    (np.array(["2024-01-01"], dtype="datetime64[ns]"),
     "label column 'price' of a regression model must be numeric; got dtype datetime64[ns]"),
    (np.array([5], dtype="timedelta64[ns]"),  # whose tolist() gives plain ints
     "label column 'price' of a regression model must be numeric; got dtype timedelta64[ns]"),
    (np.array([1.0, math.inf, -math.inf]),
     "label column 'price' has 2 infinite value(s); regression labels must be finite"),
])
def test_model_labels_regression_refusals(values: object, text: str) -> None:
    assert message(model_labels, values, {"task": "regression", "label": {"column": "price"}}) == text


def test_at_most_five_values_are_named_then_how_many_more() -> None:
    # the docstrings promise "up to 5 offending values": 5 named in full, the rest counted
    five = [1] + [f"v{i}" for i in range(5)]
    assert message(binary_labels, five, column="y", positive=1) == (
        "label column 'y' must hold the positive value 1 and one other value; found 5 other "
        "values: 'v0' (1 row), 'v1' (1 row), 'v2' (1 row), 'v3' (1 row), 'v4' (1 row)")
    six = message(binary_labels, [*five, "v5"], column="y", positive=1)
    assert six.endswith("'v4' (1 row) and 1 more") and "'v5'" not in six
    assert message(class_indices, [f"v{i}" for i in range(5)], ["a"], column="y") == (
        "label column 'y' must hold the model's classes ['a']; found other values: "
        "'v0' (1 row), 'v1' (1 row), 'v2' (1 row), 'v3' (1 row), 'v4' (1 row)")
    seven = message(class_indices, [f"v{i}" for i in range(7)], ["a"], column="y")
    assert seven.endswith("'v4' (1 row) and 2 more")


@pytest.mark.parametrize("dtype", ["datetime64[D]", "datetime64[ns]", "timedelta64[s]"])
def test_model_labels_count_nat_as_missing(dtype: str) -> None:
    # tolist() turns NaT into None, which would otherwise be one more (negative) value
    values = np.array([1, "NaT", 1, "NaT", "NaT"] if dtype.startswith("t") else
                      ["2024-01-01", "NaT", "2024-01-01", "NaT", "NaT"], dtype=dtype)
    positive = values[0].tolist()
    assert message(model_labels, values, {"label": {"column": "d", "positive": positive}}) == (
        "label column 'd' has 3 missing value(s)")
    assert model_labels(values[[0, 2]], {"label": {"column": "d", "positive": positive}}
                        ).tolist() == [1, 1]


def test_model_labels_refuse_an_unknown_task() -> None:
    with pytest.raises(ValueError) as caught:
        model_labels([1.0], {"task": "ranking", "label": {"column": "y"}})
    assert str(caught.value) == ("manifest task must be one of ['binary_classification', "
                                 "'multiclass_classification', 'regression']; got 'ranking'")
    assert not isinstance(caught.value, LabelError)


def test_many_other_values_count_the_rest() -> None:
    text = message(binary_labels, [1] + [f"v{i:02d}" for i in range(12)], column="y", positive=1)
    assert text.endswith("'v04' (1 row) and 7 more") and "found 12 other values" in text
    many = message(class_indices, [f"v{i:02d}" for i in range(12)], ["a"], column="y")
    assert many.endswith("'v04' (1 row) and 7 more")


def test_a_declared_negative_refuses_every_other_value() -> None:
    # values that sort before and after the declared negative alike
    assert message(binary_labels, ["p", "a", "n", "z", 0], column="c", positive="p",
                   negative="n") == (
        "label column 'c' must hold the positive value 'p' and the declared negative value "
        "'n'; found other values: 'a' (1 row), 'z' (1 row), 0 (1 row)")


def test_options_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        binary_labels([1, 0], "y", 1)
    with pytest.raises(TypeError):
        class_indices([0], [0], "y")


def test_one_mistyped_value_of_any_type_is_refused() -> None:
    # a single other value of another type than the positive, with no positive row: whichever
    # way the type names sort
    for values, positive, shown in (([True, True], 1, "True (2 rows)"),
                                    (["1", "1"], 1, "'1' (2 rows)"),
                                    ([1, 1], "1", "1 (2 rows)")):
        assert message(binary_labels, values, column="y", positive=positive).endswith(
            f"found 1 other value: {shown}")


def test_the_task_is_compared_by_value() -> None:
    # manifests are parsed from YAML or JSON: their strings are equal to, not the same
    # object as, the literals in the module
    multi = "".join(["multiclass", "_classification"])
    manifest = {"task": multi, "label": {"column": "y"}, "output": {"classes": ["a", "b", "c"]}}
    assert model_labels(["c", "a"], manifest).tolist() == [2, 0]
    reg = {"task": "".join(["regr", "ession"]), "label": {"column": "y"}}
    assert model_labels([2.5, 1], reg).tolist() == [2.5, 1.0]


@pytest.mark.parametrize("values, positive, negative", [
    (np.array([3, 1, 2, 2, 3, 1, 2]), 1, None),  # two other values: refused, listed by count then first seen
    (np.array([5, 0, 7, 9, 0, 7, 11, 13, 15]), 5, None),  # more than five others
    (np.array([0, 1, 1, 0, 1]), 1, None),
    (np.array([0.0, 1.0, -0.0]), 1, None),  # 1.0 is the label 1
    (np.array([True, False, True]), 1, None),  # bool is not the number 1: a mistyped column
    (np.array([True, False, True]), True, None),
    (np.array(["yes", "no", "maybe", "no"]), "yes", None),
    (np.array(["1", "0"]), 1, None),
    (np.array([1, 2, 0, 2]), 1, 0),  # a declared negative
    (np.array([], dtype=np.int64), 1, None),
])
def test_a_typed_array_gives_what_its_values_one_by_one_give(values: np.ndarray, positive: object,
                                                             negative: object) -> None:
    """Numeric, boolean and string arrays are compared once per distinct value; the labels and
    every message must be those of the same values passed as a Python list (row by row)."""
    def outcome(column: object) -> object:
        try:
            return binary_labels(column, column="y", positive=positive, negative=negative).tolist()  # type: ignore[arg-type]
        except LabelError as exc:
            return str(exc)

    assert outcome(values) == outcome(values.tolist())
    manifest = {"label": {"column": "y", "positive": positive, "negative": negative}}
    try:
        got: object = model_labels(values, manifest).tolist()
    except LabelError as exc:
        got = str(exc)
    assert got == outcome(values.tolist())
