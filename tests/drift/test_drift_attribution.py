"""Attribution drift: hand-worked profiles and distances, and a model whose live inputs lose
their most important feature's signal, explained with the project's SHAP estimator."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from modelgate.drift.attribution import (
    AttributionReference,
    attribution_drift,
    attribution_shares,
    build_attribution_reference,
)
from modelgate.reports.explanation import explain

WEIGHTS = {"income": 3.0, "age": 1.0, "tenure": 0.5}


def _predict(frame: pd.DataFrame) -> np.ndarray:
    z = sum(w * frame[name].to_numpy() for name, w in WEIGHTS.items())
    return 1.0 / (1.0 + np.exp(-z))


def _shap(rows: pd.DataFrame, background: pd.DataFrame) -> np.ndarray:
    parts = [explain(_predict, rows.iloc[i:i + 50], background, features=list(WEIGHTS),
                     output="logit").values for i in range(0, len(rows), 50)]
    return np.concatenate(parts)


def _frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    return pd.DataFrame({name: rng.normal(size=n) for name in WEIGHTS})


def test_hand_worked_profile_and_distance() -> None:
    # mean |SHAP| = (1, 3) -> shares (0.25, 0.75); current (3, 1) -> (0.75, 0.25); TV = 0.5
    ref = build_attribution_reference([[1.0, -3.0], [-1.0, 3.0]], features=["x", "y"])
    assert ref.shares.tolist() == [0.25, 0.75] and ref.baseline == 0.0
    result = attribution_drift(ref, [[3.0, 1.0]], floor=0.1)
    assert result.distance == pytest.approx(0.5) and result.verdict == "drift"
    assert result.current_shares == (0.75, 0.25)
    assert attribution_shares(np.zeros((2, 4))).tolist() == [0.25] * 4


def test_live_inputs_that_lose_the_top_features_signal_are_caught() -> None:
    rng = np.random.default_rng(0)
    background, reference_rows = _frame(rng, 100), _frame(rng, 200)
    ref = build_attribution_reference(_shap(reference_rows, background), features=list(WEIGHTS))
    # logit output of a linear model: SHAP_i = w_i * (x_i - mean_bg(x_i)), so income leads
    assert ref.features[int(np.argmax(ref.shares))] == "income"
    unshifted = attribution_drift(ref, _shap(_frame(rng, 100), background))
    assert unshifted.verdict == "ok"
    live = _frame(rng, 100)
    live["income"] = float(background["income"].mean())  # the feature no longer varies
    lost = attribution_drift(ref, _shap(live, background))
    assert lost.verdict == "drift"
    assert lost.current_shares[0] == pytest.approx(0.0, abs=1e-9)
    assert lost.distance == pytest.approx(ref.shares[0], rel=1e-9)  # all of income's share moved


def test_no_current_rows_is_no_data_and_bad_input_is_named() -> None:
    ref = build_attribution_reference([[1.0, 2.0], [2.0, 1.0]], features=["x", "y"])
    assert attribution_drift(ref, np.empty((0, 2))).verdict == "no_data"
    with pytest.raises(ValueError, match=r"current must have shape \(n_rows, 2\)"):
        attribution_drift(ref, [[1.0, 2.0, 3.0]])
    with pytest.raises(ValueError, match="features must be 2 unique names"):
        build_attribution_reference([[1.0, 2.0], [2.0, 1.0]], features=["x"])
    with pytest.raises(ValueError, match="finite"):
        attribution_shares([[np.nan, 1.0]])


# the split null's standardised 99 % quantile of the hand-built reference below, and the
# threshold it gives at 6 current rows: 0.4 * sqrt(1/9 + 1/6) = 0.4 * sqrt(5/18) = 0.2108
NULL_Q = 0.4
Q6 = NULL_Q * math.sqrt(5 / 18)


def _reference(baseline: float = 0.3, *, null: bool = True) -> AttributionReference:
    # built directly: 9 reference rows split 4 / 5, profile (0.5, 0.5); one null size (k = 3),
    # so the interpolation is flat; null=False: a reference stored before the null was kept
    return AttributionReference(("x", "y"), np.array([0.5, 0.5]), np.array([1.0, 1.0]), 9,
                                baseline, (4, 5), *(((3,), (NULL_Q,)) if null else ()))


def test_baseline_is_rescaled_to_the_sizes_compared() -> None:
    # sqrt((1/9 + 1/6) / (1/4 + 1/5)) = sqrt((5/18) / (9/20)) = sqrt(50/81)
    result = attribution_drift(_reference(), np.ones((6, 2)), relative=2.0, floor=0.0)
    assert result.baseline == pytest.approx(0.3 * math.sqrt(50 / 81), rel=1e-12)
    assert result.threshold == pytest.approx(2.0 * Q6, rel=1e-12)
    assert (result.distance, result.verdict) == (0.0, "ok")
    assert (result.n_reference, result.n_current) == (9, 6)


@pytest.mark.parametrize(
    ("relative", "floor", "verdict"),
    [(0.5, 0.25, "ok"), (0.5, 0.2, "drift"), (1.5, 0.0, "ok"), (1.0, 0.0, "drift")],
    ids=["at-the-floor", "above-the-floor", "below-relative", "above-relative"],
)
def test_threshold_is_the_larger_of_floor_and_relative_null_quantile(relative: float, floor: float,
                                                                     verdict: str) -> None:
    # current profile (0.75, 0.25): distance 0.5 * (0.25 + 0.25) = 0.25 exactly;
    # relative * q(6) = relative * 0.4 * sqrt(5/18) = relative * 0.2108
    result = attribution_drift(_reference(), [[3.0, 1.0]] * 6, relative=relative, floor=floor)
    assert result.distance == 0.25
    assert result.threshold == pytest.approx(max(floor, relative * Q6))
    assert result.verdict == verdict


def test_a_reference_without_a_null_keeps_the_old_rule() -> None:
    # stored before migration 0037: max(floor, 0.1, relative * 1.8 * rescaled baseline)
    old = _reference(null=False)
    result = attribution_drift(old, np.ones((6, 2)))
    assert result.threshold == pytest.approx(1.8 * 0.3 * math.sqrt(50 / 81), rel=1e-12)
    assert attribution_drift(_reference(0.0, null=False), np.ones((6, 2))).threshold == 0.1


@pytest.mark.parametrize("name", ["relative", "floor"])
@pytest.mark.parametrize("bad", [-0.1, math.inf, math.nan, "1"], ids=["negative", "inf", "nan", "str"])
def test_options_validated(name: str, bad: object) -> None:
    with pytest.raises(ValueError, match=f"{name} must be a finite number >= 0"):
        attribution_drift(_reference(), [[1.0, 1.0]], **{name: bad})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("values", "match"),
    [([1.0, 2.0], r"shape \(n_rows >= 1, n_features >= 1\), got \(2,\)"),
     (np.empty((0, 2)), r"got \(0, 2\)"), (np.empty((2, 0)), r"got \(2, 0\)")],
    ids=["1-d", "no-rows", "no-features"],
)
def test_shares_need_rows_and_features(values: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        attribution_shares(values)  # type: ignore[arg-type]


def test_one_feature_and_two_rows_are_enough() -> None:
    assert attribution_shares([[-2.0]]).tolist() == [1.0]
    ref = build_attribution_reference([[1.0], [-3.0]], features=["only"], baseline_repeats=1)
    assert (ref.n, ref.half_sizes, ref.baseline) == (2, (1, 1), 0.0)
    assert ref.mean_abs_shap.tolist() == [2.0] and ref.shares.tolist() == [1.0]


def test_reference_checks_rows_repeats_and_keyword_options() -> None:
    with pytest.raises(ValueError, match="at least 2 rows for the baseline, got 1"):
        build_attribution_reference([[1.0, 2.0, 3.0]], features=["a", "b", "c"])
    for bad in (0, 1.5):
        with pytest.raises(ValueError, match=f"baseline_repeats must be an integer >= 1, got {bad!r}"):
            build_attribution_reference([[1.0], [2.0]], features=["a"], baseline_repeats=bad)
    with pytest.raises(TypeError):
        build_attribution_reference([[1.0], [2.0]], ["a"])  # type: ignore[misc]
    three_rows = [[1.0, 2.0], [2.0, 1.0], [1.0, 1.0]]
    for names in (["x", "x"], ["x", "y", "z"], ["x"]):
        with pytest.raises(ValueError, match=r"features must be 2 unique names, got \["):
            build_attribution_reference(three_rows, features=names)


def test_default_options() -> None:
    # relative 1 times the null's quantile, floor 1e-4 (numerical noise only)
    result = attribution_drift(_reference(), np.ones((6, 2)))
    assert result.threshold == pytest.approx(Q6, rel=1e-12)
    flat = AttributionReference(("x", "y"), np.array([0.5, 0.5]), np.array([1.0, 1.0]), 9, 0.0,
                                (4, 5), (3,), (0.0,))
    assert attribution_drift(flat, np.ones((6, 2))).threshold == 1e-4


@pytest.mark.parametrize(("n", "halves"), [(2, (1, 1)), (5, (2, 3)), (6, (3, 3))], ids=str)
def test_half_sizes(n: int, halves: tuple[int, int]) -> None:
    ref = build_attribution_reference(np.arange(1.0, 2 * n + 1).reshape(n, 2), features=["a", "b"])
    assert ref.half_sizes == halves and ref.n == n


def test_every_half_split_of_one_hot_rows_has_distance_one() -> None:
    # one row against the other two: shares (1, 0, 0) vs (0, 1/2, 1/2), TV = 1 for every split
    ref = build_attribution_reference(np.eye(3), features=["a", "b", "c"], baseline_repeats=7)
    assert ref.baseline == pytest.approx(1.0, rel=1e-12)
    # two rows (one per half): TV between (1/4, 3/4) and (3/4, 1/4) is 1/2
    two = build_attribution_reference([[1.0, 3.0], [3.0, 1.0]], features=["a", "b"])
    assert two.baseline == pytest.approx(0.5, rel=1e-12)


def test_records() -> None:
    drift = attribution_drift(_reference(), [[3.0, 1.0]] * 6, relative=0.5, floor=0.2)
    assert 0.5 * Q6 < 0.2  # the floor sets this threshold
    assert drift.to_record() == {
        "statistic_name": "total_variation", "statistic_value": 0.25,
        "baseline": pytest.approx(0.3 * math.sqrt(50 / 81)),
        "threshold": 0.2, "verdict": "drift",
        "n_reference": 9, "n_current": 6,
        "reference_shares": {"x": 0.5, "y": 0.5}, "current_shares": {"x": 0.75, "y": 0.25},
    }
    empty = attribution_drift(_reference(), np.empty((0, 2)))
    assert empty.to_record() == {
        "statistic_name": "total_variation", "statistic_value": None, "baseline": None,
        "threshold": None, "verdict": "no_data", "n_reference": 9, "n_current": 0,
        "reference_shares": {"x": 0.5, "y": 0.5}, "current_shares": {},
    }
    assert (empty.current_shares, empty.distance) == ((), None)


def test_baseline_is_the_mean_over_seeded_half_splits() -> None:
    # the documented draw, redone in numpy: per split, rng.choice(n, n // 2, replace=False) rows
    # form the first half; the total variation of the two halves' mean-|SHAP| shares, averaged
    values = np.random.default_rng(11).normal(size=(7, 3)) * [1.0, 2.0, 4.0]
    ref = build_attribution_reference(values, features=["a", "b", "c"])  # repeats 20, seed 0
    rng = np.random.default_rng(0)
    tvs = []
    for _ in range(20):
        first = np.zeros(7, dtype=bool)
        first[rng.choice(7, size=3, replace=False)] = True
        a, b = np.abs(values[first]).mean(axis=0), np.abs(values[~first]).mean(axis=0)
        tvs.append(0.5 * np.abs(a / a.sum() - b / b.sum()).sum())
    assert ref.baseline == pytest.approx(np.mean(tvs), rel=1e-12)
    assert ref.baseline != pytest.approx(np.mean(tvs[:19]), rel=1e-9)  # all 20 splits count


def test_results_are_frozen_slotted_and_references_compare_by_identity() -> None:
    import dataclasses

    a = build_attribution_reference([[1.0, 2.0], [2.0, 1.0]], features=["x", "y"])
    b = build_attribution_reference([[1.0, 2.0], [2.0, 1.0]], features=["x", "y"])
    assert a == a and a != b  # eq=False: numpy fields have no single truth value
    result = attribution_drift(a, [[1.0, 1.0]])
    for obj in (a, result):
        assert not hasattr(obj, "__dict__")
        with pytest.raises(dataclasses.FrozenInstanceError):
            obj.features = ()  # type: ignore[misc]


@pytest.mark.parametrize("current", [[1.0, 1.0], [[1.0]], np.ones((2, 2, 1))],
                         ids=["1-d", "fewer-columns", "3-d"])
def test_current_needs_one_column_per_feature(current: object) -> None:
    ref = build_attribution_reference([[1.0, 2.0], [2.0, 1.0]], features=["x", "y"])
    with pytest.raises(ValueError, match=r"current must have shape \(n_rows, 2\)"):
        attribution_drift(ref, current)  # type: ignore[arg-type]


def test_shares_refuse_three_dimensions() -> None:
    with pytest.raises(ValueError, match=r"got \(1, 1, 1\)"):
        attribution_shares(np.ones((1, 1, 1)))


def test_three_hundred_features() -> None:
    # counts past the small integers CPython caches: sizes compared by value, not identity
    names = [f"f{i}" for i in range(300)]
    ref = build_attribution_reference(np.ones((4, 300)), features=names, baseline_repeats=1)
    assert ref.shares.tolist() == [1 / 300] * 300 and ref.baseline == 0.0
    result = attribution_drift(ref, np.ones((2, 300)))
    assert (result.distance, result.verdict) == (0.0, "ok")


def test_options_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        attribution_drift(_reference(), [[1.0, 1.0]], 1.8)  # type: ignore[misc]


@pytest.mark.parametrize("field", ["reference_shares", "current_shares"])
def test_record_refuses_shares_not_aligned_with_the_features(field: str) -> None:
    import dataclasses

    result = attribution_drift(_reference(), [[3.0, 1.0]])
    short = dataclasses.replace(result, **{field: (0.5,)})
    with pytest.raises(ValueError, match="zip"):
        short.to_record()
