"""Sliced Wasserstein multivariate drift: agreement with POT, power where marginals are blind,
false alarms on unshifted data, serialisation and bad input."""

from __future__ import annotations

import math

import numpy as np
import ot
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from modelgate.drift.data_drift import DriftThresholds, numeric_drift
from modelgate.drift.multivariate import (
    MultivariateReference,
    build_multivariate_reference,
    multivariate_drift,
)
from modelgate.drift.reference import build_numeric_reference

NAMES = ["a", "b", "c", "d"]


def _correlated(rng: np.random.Generator, n: int, rho: float) -> np.ndarray:
    cov = np.eye(len(NAMES))
    cov[0, 1] = cov[1, 0] = rho
    return rng.multivariate_normal(np.zeros(len(NAMES)), cov, size=n)


def test_statistic_equals_pots_sliced_wasserstein_on_standardised_rows() -> None:
    rng = np.random.default_rng(3)
    ref_rows = rng.normal([10.0, -2.0, 0.0, 5.0], [3.0, 0.5, 1.0, 20.0], size=(1500, 4))
    cur_rows = rng.normal([11.0, -2.0, 0.5, 5.0], [3.0, 0.7, 1.0, 20.0], size=(700, 4))
    ref = build_multivariate_reference(ref_rows, features=NAMES, seed=7)
    mean, std = ref_rows.mean(axis=0), ref_rows.std(axis=0)
    expected = ot.sliced_wasserstein_distance((ref_rows - mean) / std, (cur_rows - mean) / std,
                                              projections=ref.projections, p=2)
    got = multivariate_drift(ref, cur_rows)
    assert got.statistic == pytest.approx(float(expected), rel=1e-9)
    assert (got.n_reference, got.n_current, got.n_compared) == (1500, 700, 700)


def test_equal_sizes_agree_with_pots_general_computation() -> None:
    rng = np.random.default_rng(4)
    rows = rng.normal(size=(1200, 4))
    ref = build_multivariate_reference(rows[:600], features=NAMES)
    current = rows[600:] * [1.0, 1.5, 1.0, 0.5]
    mean, std = rows[:600].mean(axis=0), rows[:600].std(axis=0)
    expected = ot.sliced_wasserstein_distance((rows[:600] - mean) / std, (current - mean) / std,
                                              projections=ref.projections, p=2)
    assert multivariate_drift(ref, current).statistic == pytest.approx(float(expected), rel=1e-9)


def test_correlation_flip_with_identical_marginals_is_caught_only_by_the_multivariate_statistic() -> None:
    rng = np.random.default_rng(11)
    reference = _correlated(rng, 20_000, 0.8)
    flipped = _correlated(rng, 5_000, -0.8)  # every marginal is still N(0, 1)
    mv = multivariate_drift(build_multivariate_reference(reference, features=NAMES), flipped)
    assert mv.verdict == "drift" and mv.statistic > 3 * mv.threshold
    for statistic in ("wasserstein_normalised", "js_divergence"):
        thresholds = DriftThresholds(numeric_statistic=statistic)
        verdicts = [numeric_drift(build_numeric_reference(reference[:, j], name=name), flipped[:, j],
                                  thresholds=thresholds).verdict for j, name in enumerate(NAMES)]
        assert verdicts == ["ok"] * len(NAMES), (statistic, verdicts)


def test_unshifted_random_splits_of_the_demo_data_alarm_at_most_5_percent() -> None:
    from modelgate.demo.data import NUMERIC, TRAIN_YEARS, load_gss

    df = load_gss()
    rows = df.loc[df["year"].between(*TRAIN_YEARS), list(NUMERIC)].to_numpy(dtype=np.float64)
    alarms = []
    for seed in range(30):
        order = np.random.default_rng(seed).permutation(len(rows))
        reference, current = rows[order[: len(rows) // 2]], rows[order[len(rows) // 2:]][:5000]
        ref = build_multivariate_reference(reference, features=NUMERIC, seed=seed)
        alarms.append(multivariate_drift(ref, current, seed=seed).verdict == "drift")
    assert sum(alarms) <= 1, f"{sum(alarms)} of 30 unshifted splits alarmed"


def test_missing_rows_are_counted_and_left_out() -> None:
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(400, 4))
    ref = build_multivariate_reference(rows, features=NAMES)
    current = rows.copy()
    current[:10, 2] = np.nan
    current[10, 0] = np.inf
    result = multivariate_drift(ref, current)
    assert (result.n_current, result.n_incomplete_current) == (389, 11)
    assert result.statistic == pytest.approx(
        multivariate_drift(ref, rows[11:]).statistic, rel=1e-12)


def test_no_complete_current_row_is_no_data() -> None:
    ref = build_multivariate_reference(np.random.default_rng(0).normal(size=(100, 4)), features=NAMES)
    result = multivariate_drift(ref, np.full((3, 4), np.nan))
    assert (result.verdict, result.statistic, result.n_incomplete_current) == ("no_data", None, 3)


def test_row_sample_above_max_rows_is_seeded_and_keeps_the_verdict_rule() -> None:
    rng = np.random.default_rng(5)
    ref = build_multivariate_reference(rng.normal(size=(5000, 4)), features=NAMES, max_rows=1000)
    current = rng.normal(size=(3000, 4))
    first, again = multivariate_drift(ref, current, seed=1), multivariate_drift(ref, current, seed=1)
    assert ref.n_kept == 1000 and first.n_compared == 1000 and first.n_current == 3000
    assert first == again and first.verdict == "ok"


def test_round_trip_through_bytes() -> None:
    ref = build_multivariate_reference(np.random.default_rng(1).normal(size=(300, 4)), features=NAMES)
    back = MultivariateReference.from_bytes(ref.to_bytes())
    current = np.random.default_rng(2).normal(size=(100, 4))
    assert back.features == ref.features and back.half_sizes == ref.half_sizes
    assert multivariate_drift(back, current) == multivariate_drift(ref, current)
    with pytest.raises(ValueError, match="multivariate reference"):
        MultivariateReference.from_bytes(b"not a payload")


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_identical_sample_gives_zero_and_row_order_does_not_matter(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows = rng.normal(size=(60, 4))
    ref = build_multivariate_reference(rows, features=NAMES, n_projections=8)
    assert multivariate_drift(ref, rows).statistic == pytest.approx(0.0, abs=1e-12)
    current = rng.normal(size=(40, 4)) + 0.3
    a = multivariate_drift(ref, current).statistic
    b = multivariate_drift(ref, current[rng.permutation(40)]).statistic
    assert a is not None and a >= 0 and a == pytest.approx(b, rel=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"features": ["a", "a", "c", "d"]}, "unique"),
     ({"features": NAMES, "n_projections": 0}, "n_projections"),
     ({"features": NAMES, "max_rows": 2}, "max_rows"),
     ({"features": ["a", "b"]}, r"shape \(n_rows, 2\)")],
    ids=["duplicate-names", "no-projections", "tiny-max-rows", "wrong-width"],
)
def test_bad_reference_input_is_named(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        build_multivariate_reference(np.zeros((10, 4)), **kwargs)  # type: ignore[arg-type]


def test_bad_current_input_is_named() -> None:
    ref = build_multivariate_reference(np.random.default_rng(0).normal(size=(50, 4)), features=NAMES)
    with pytest.raises(ValueError, match=r"current must have shape \(n_rows, 4\)"):
        multivariate_drift(ref, np.zeros((5, 3)))
    with pytest.raises(ValueError, match="relative"):
        multivariate_drift(ref, np.zeros((5, 4)), relative=-1.0)


def test_unequal_sizes_merge_quantile_levels_exactly() -> None:
    from modelgate.drift.multivariate import _sliced

    # By hand: {0, 1} against {0, 0.5, 1} differ by 0.5 on the levels (1/3, 2/3]: W1 = 1/6.
    a, b = np.array([[0.0], [1.0]]), np.array([[0.0], [0.5], [1.0]])
    assert _sliced(a, b, 1) == pytest.approx(1 / 6, rel=1e-12)
    assert _sliced(a, b, 2) == pytest.approx(math.sqrt(0.25 / 3), rel=1e-12)
    rng = np.random.default_rng(3)
    for n, m in ((7, 5), (101, 37), (3, 3000)):
        x = np.sort(rng.normal(size=(n, 8)), axis=0)
        y = np.sort(rng.normal(size=(m, 8)) + 0.2, axis=0)
        expected = float(np.mean(ot.wasserstein_1d(x, y, p=2)) ** 0.5)
        assert _sliced(x, y, 2) == pytest.approx(expected, rel=1e-9)
