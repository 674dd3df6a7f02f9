"""The error streams ADWIN watches (drift/error_stream.py), against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from modelgate.drift.error_stream import bounded_absolute_errors, classification_errors


def test_classification_errors_mark_each_miss() -> None:
    got = classification_errors(np.array(["a", "b", "c", "a"]), np.array(["a", "c", "c", "b"]))
    assert got.dtype == np.float64
    assert got.tolist() == [0.0, 1.0, 0.0, 1.0]
    assert classification_errors([], []).tolist() == []


@pytest.mark.parametrize(("y", "p"), [([0, 1], [0, 1, 1]), ([0, 1], [0]), ([0], [0, 1]),
                                      ([[0, 1]], [[0, 1]]), (0, 0)],
                         ids=["p-longer", "y-longer", "y-length-1", "2-d", "scalars"])
def test_classification_errors_need_two_1d_arrays_of_one_length(y: object, p: object) -> None:
    with pytest.raises(ValueError, match="1-D of one length"):
        classification_errors(y, p)  # type: ignore[arg-type]


def test_bounded_errors_by_hand() -> None:
    y = [0.0, 0.0, 0.0, 0.0, 10.0, -1.0]
    p = [0.5, -0.5, 2.0, 4.0, 9.0, -1.0]
    # |p - y| / 2: 0.25, 0.25, 1.0 (exactly the scale), 2.0 -> capped at 1, 0.5, 0
    got = bounded_absolute_errors(y, p, scale=2.0)
    assert got.dtype == np.float64
    assert got.tolist() == [0.25, 0.25, 1.0, 1.0, 0.5, 0.0]
    assert bounded_absolute_errors([1], [2], scale=4).tolist() == [0.25]  # an int scale
    assert bounded_absolute_errors([0.0], [1e-9], scale=1e-9).tolist() == [1.0]


@pytest.mark.parametrize("scale", [0.0, -1.0, math.inf, math.nan, True, "1", None])
def test_bounded_errors_refuse_a_bad_scale(scale: object) -> None:
    with pytest.raises(ValueError, match="scale must be a positive finite number"):
        bounded_absolute_errors([1.0], [1.0], scale=scale)  # type: ignore[arg-type]


@pytest.mark.parametrize(("y", "p"), [([0.0, 1.0], [0.0]), ([0.0], [0.0, 1.0]), ([[0.0]], [[0.0]]),
                                      (1.0, 1.0)],
                         ids=["y-longer", "p-longer", "2-d", "scalars"])
def test_bounded_errors_need_two_1d_arrays_of_one_length(y: object, p: object) -> None:
    with pytest.raises(ValueError, match="1-D of one length"):
        bounded_absolute_errors(y, p, scale=1.0)  # type: ignore[arg-type]


@pytest.mark.parametrize(("y", "p"),
                         [([math.nan], [0.0]), ([0.0], [math.inf]), ([0.0, 1.0], [-math.inf, 1.0])])
def test_bounded_errors_refuse_non_finite_values(y: list[float], p: list[float]) -> None:
    with pytest.raises(ValueError, match="must be finite"):
        bounded_absolute_errors(y, p, scale=1.0)


def test_bounded_errors_take_data_by_keyword_and_scale_only_by_keyword() -> None:
    got = bounded_absolute_errors(y_true=[0.0], prediction=[1.0], scale=4.0)
    assert got.tolist() == [0.25]
    with pytest.raises(TypeError):
        bounded_absolute_errors([0.0], [1.0], 4.0)  # type: ignore[misc]
