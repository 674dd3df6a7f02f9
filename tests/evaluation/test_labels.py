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
    (np.array([1.0, math.inf, -math.inf]),
     "label column 'price' has 2 infinite value(s); regression labels must be finite"),
])
def test_model_labels_regression_refusals(values: object, text: str) -> None:
    assert message(model_labels, values, {"task": "regression", "label": {"column": "price"}}) == text
