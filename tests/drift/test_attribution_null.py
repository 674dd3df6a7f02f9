"""Attribution drift's split null (issue #40 point 5): a hand-enumerated tiny null, its
interpolation between sizes, stable data left alone and a feature the model stops using
flagged with a clear margin. Exact SHAP of a linear logistic model in log-odds is the
textbook ``w_j (x_j - mean_background(x_j))`` (the oracle; no estimator involved)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from modelgate.drift.attribution import (
    AttributionReference,
    attribution_drift,
    build_attribution_reference,
    split_null,
)

# |SHAP| rows: (1, 0), (0, 1), (1, 1), (2, 0)
TINY = [[1.0, 0.0], [0.0, -1.0], [1.0, 1.0], [-2.0, 0.0]]


def test_tiny_null_enumerated_by_hand() -> None:
    # n = 4: sizes round(4 * (.05, .1, .2, .35, .5)) clipped to [1, 2] -> k = 1 and 2.
    # k = 1, one row against the other three (column sums of |SHAP|, then shares):
    #   (1,0) vs (3,2)->(.6,.4): TV .4;  (0,1) vs (4,1)->(.8,.2): TV .8;
    #   (.5,.5) vs (3,1)->(.75,.25): TV .25;  (1,0) vs (2,2)->(.5,.5): TV .5
    # k = 2, pairs: {1,2} (.5,.5) vs {3,4} (.75,.25): .25; {1,3} (2/3,1/3) vs {2,4} (2/3,1/3): 0;
    #   {1,4} (1,0) vs {2,3} (1/3,2/3): 2/3
    # Each outcome has probability >= 1/6, so with 400 splits the 99 % quantile is the largest:
    # 0.8 at k = 1, 2/3 at k = 2; standardised by sqrt(1/3 + 1) and sqrt(1/2 + 1/2).
    sizes, quantiles = split_null(TINY, repeats=400, seed=3)
    assert sizes == (1, 2)
    assert quantiles == pytest.approx((0.8 / math.sqrt(4 / 3), 2 / 3), rel=1e-12)
    # the median at k = 2: of {0.25, 0, 2/3} (a third each), 0.25
    assert split_null(TINY, level=0.5, repeats=3001, seed=1)[1][1] == pytest.approx(0.25 / 1.0)


def test_threshold_at_the_live_size() -> None:
    ref = build_attribution_reference(TINY, features=["a", "b"], seed=3)
    assert (ref.null_sizes, ref.null_level) == ((1, 2), 0.99)
    # m = 2 is a stored size: (2/3) * sqrt(1/4 + 1/2); m = 1: 0.8 / sqrt(4/3) * sqrt(1/4 + 1);
    # m = 50 is past the largest size: clamped to k = 2's standardised quantile
    assert ref.null_threshold(2) == pytest.approx(2 / 3 * math.sqrt(3 / 4), rel=1e-12)
    assert ref.null_threshold(1) == pytest.approx(0.8 / math.sqrt(4 / 3) * math.sqrt(5 / 4), rel=1e-12)
    assert ref.null_threshold(50) == pytest.approx(2 / 3 * math.sqrt(1 / 4 + 1 / 50), rel=1e-12)
    result = attribution_drift(ref, [[1.0, 1.0], [1.0, 1.0]])
    assert result.threshold == pytest.approx(2 / 3 * math.sqrt(3 / 4), rel=1e-12)


def test_interpolation_is_linear_in_one_over_root_m() -> None:
    ref = AttributionReference(("a",), np.array([1.0]), np.array([1.0]), 400, 0.0, (200, 200),
                               (25, 100), (0.2, 0.4))
    # x = 1/sqrt(m): 0.2 at k = 25, 0.1 at k = 100; m = 50 lies at t = (1/sqrt(50) - 0.1) / 0.1
    t = (1 / math.sqrt(50) - 0.1) / 0.1
    assert ref.null_threshold(50) == pytest.approx((0.4 + t * (0.2 - 0.4)) * math.sqrt(1 / 400 + 1 / 50),
                                                   rel=1e-12)
    assert ref.null_threshold(4) == pytest.approx(0.2 * math.sqrt(1 / 400 + 1 / 4), rel=1e-12)


@pytest.mark.parametrize(("option", "bad", "match"), [
    ("level", 1.0, "level must be a float in \\(0, 1\\), got 1.0"),
    ("level", 0, "level must be a float in \\(0, 1\\), got 0"),
    ("repeats", 0, "repeats must be an integer >= 1, got 0"),
])
def test_null_options_are_checked(option: str, bad: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        split_null(TINY, **{option: bad})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least 2 rows for the split null, got 1"):
        split_null([[1.0, 2.0]])


WEIGHTS = np.array([3.0, 1.0, 0.6, 0.4, 0.25])


def _exact(x: np.ndarray, background_mean: np.ndarray) -> np.ndarray:
    return WEIGHTS * (x - background_mean)


def test_stable_intervals_are_not_flagged() -> None:
    # the drift DAG's sizes: 100 reference rows, live intervals of 50, all from one population
    rng = np.random.default_rng(7)
    mean_bg = rng.normal(size=(100, 5)).mean(axis=0)
    ref = build_attribution_reference(_exact(rng.normal(size=(100, 5)), mean_bg),
                                      features=[f"x{j}" for j in range(5)])
    results = [attribution_drift(ref, _exact(rng.normal(size=(50, 5)), mean_bg)) for _ in range(20)]
    ratios = [r.distance / r.threshold for r in results]  # type: ignore[operator]
    assert all(r.verdict == "ok" for r in results), ratios
    assert max(ratios) < 1.0 and float(np.median(ratios)) < 0.6  # measured: median 0.25, largest 0.45


def test_a_feature_the_model_stops_using_is_flagged_with_a_margin() -> None:
    # live x1 (weight 1 of 3, 1, .6, .4, .25; about 19 % of the attribution) held at the
    # background mean: its exact SHAP is 0, so all of its share moves to the others
    rng = np.random.default_rng(8)
    mean_bg = rng.normal(size=(100, 5)).mean(axis=0)
    ref = build_attribution_reference(_exact(rng.normal(size=(100, 5)), mean_bg),
                                      features=[f"x{j}" for j in range(5)])
    ratios = []
    for _ in range(10):
        live = rng.normal(size=(50, 5))
        live[:, 1] = mean_bg[1]
        result = attribution_drift(ref, _exact(live, mean_bg))
        assert result.verdict == "drift" and result.current_shares[1] == 0.0
        assert result.distance == pytest.approx(ref.shares[1], abs=0.08)  # about x1's share moved
        ratios.append(result.distance / result.threshold)  # type: ignore[operator]
    assert min(ratios) > 1.5, ratios  # measured: 1.93 to 1.95 (TV = x1's share 0.187; threshold 0.097)


def test_where_the_old_floor_read_only_just_the_null_gives_a_margin() -> None:
    # ten equally weighted uniform(-1, 1) features: each holds a tenth of the attribution and
    # |SHAP| varies little, so the old threshold max(0.1, 1.8 * baseline) was its 0.1 floor and
    # a dropped feature read "only just" (the 0.112 against 0.100)
    rng = np.random.default_rng(9)
    mean_bg = rng.uniform(-1, 1, size=(100, 10)).mean(axis=0)
    ref = build_attribution_reference(rng.uniform(-1, 1, size=(100, 10)) - mean_bg,
                                      features=[f"x{j}" for j in range(10)])
    old = max(0.1, 1.8 * ref.baseline * math.sqrt((1 / 100 + 1 / 50) / (1 / 50 + 1 / 50)))
    assert old == 0.1
    new, old_ratio = [], []
    for _ in range(10):
        live = rng.uniform(-1, 1, size=(50, 10))
        live[:, 0] = mean_bg[0]
        result = attribution_drift(ref, live - mean_bg)
        assert result.verdict == "drift"
        new.append(result.distance / result.threshold)  # type: ignore[operator]
        old_ratio.append(result.distance / old)  # type: ignore[operator]
    assert min(new) > 1.5, new  # measured: 1.61 to 1.90 (threshold 0.063)
    assert max(old_ratio) < 1.25, old_ratio  # measured: 1.01 to 1.19
