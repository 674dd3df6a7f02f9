"""Per-segment drift: p-values against brute force and hand-worked chi-square, q-values against
statsmodels, the minimum size and the errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from modelgate.drift.by_segment import segment_drift
from scipy import stats
from statsmodels.stats.multitest import multipletests


def _ks_permutation_p(a: np.ndarray, b: np.ndarray) -> float:
    """Exact two-sided KS p-value by enumerating every split of the pooled values (no ties)."""
    pooled = np.concatenate([a, b])
    grid = np.sort(pooled)

    def distance(x: np.ndarray, y: np.ndarray) -> float:
        fx = np.searchsorted(np.sort(x), grid, side="right") / x.size
        fy = np.searchsorted(np.sort(y), grid, side="right") / y.size
        return float(np.max(np.abs(fx - fy)))

    observed = distance(a, b)
    hits = total = 0
    for chosen in itertools.combinations(range(pooled.size), a.size):
        mask = np.zeros(pooled.size, dtype=bool)
        mask[list(chosen)] = True
        hits += distance(pooled[mask], pooled[~mask]) >= observed - 1e-12
        total += 1
    return hits / total


def test_numeric_p_value_is_the_exact_permutation_p() -> None:
    a = np.array([0.1, 0.4, 0.5, 0.9, 1.3, 1.7])
    b = np.array([0.8, 1.1, 1.6, 2.0, 2.4])
    family = segment_drift({"s": ["x"] * 6, "f": a}, {"s": ["x"] * 5, "f": b}, ["s"], ["f"], min_rows=5)
    (row,) = family.rows
    assert row.test == "ks" and row.n_reference == 6 and row.n_current == 5
    assert row.p_value == pytest.approx(_ks_permutation_p(a, b), abs=1e-9)
    assert row.q_value == row.p_value  # a family of one


def test_categorical_p_value_is_the_hand_worked_chi_square() -> None:
    # reference 10 red / 20 blue, current 20 red / 10 blue: every expected count is 15, so
    # chi-square = 4 * 5**2 / 15 = 20/3 on 1 degree of freedom (no continuity correction)
    ref = {"s": ["x"] * 30, "c": ["red"] * 10 + ["blue"] * 20}
    cur = {"s": ["x"] * 30, "c": ["red"] * 20 + ["blue"] * 10}
    (row,) = segment_drift(ref, cur, ["s"], ["c"], categorical=["c"]).rows
    assert row.test == "chi2"
    assert row.statistic == pytest.approx(20 / 3)
    assert row.p_value == pytest.approx(float(stats.chi2.sf(20 / 3, 1)))
    assert row.p_value == pytest.approx(0.009823, abs=1e-6)


def test_q_values_are_benjamini_hochberg_over_features_and_segments() -> None:
    rng = np.random.default_rng(3)
    n = 600
    ref = {"a": rng.integers(0, 4, n), "b": rng.choice(["u", "v"], n),
           "x": rng.normal(size=n), "c": rng.choice(["p", "q", "r"], n)}
    cur = {"a": rng.integers(0, 4, n), "b": rng.choice(["u", "v"], n),
           "x": rng.normal(size=n) + 0.3 * (rng.integers(0, 4, n) == 0), "c": rng.choice(["p", "q", "r"], n)}
    family = segment_drift(ref, cur, ["a", "b"], ["x", "c"], categorical=["c"], min_rows=20)
    assert family.family_size == len(family.rows) == (4 + 2) * 2
    p = np.array([r.p_value for r in family.rows])
    for correction, method in (("bh", "fdr_bh"), ("holm", "holm")):
        again = segment_drift(ref, cur, ["a", "b"], ["x", "c"], categorical=["c"], min_rows=20,
                              correction=correction)
        np.testing.assert_allclose([r.q_value for r in again.rows], multipletests(p, method=method)[1])


def test_a_planted_shift_is_flagged_and_named_and_small_segments_are_not_judged() -> None:
    rng = np.random.default_rng(7)
    seg_ref, seg_cur = rng.choice(list("ABCDEFGHIJ"), 2000), rng.choice(list("ABCDEFGHIJ"), 2000)
    seg_cur[:8] = "Z"  # a segment seen only in 8 current rows
    x_cur = rng.normal(size=2000)
    x_cur[seg_cur == "D"] += 1.0
    family = segment_drift({"seg": seg_ref, "x": rng.normal(size=2000)}, {"seg": seg_cur, "x": x_cur},
                           ["seg"], ["x"])
    assert [(r.segment_value, r.feature) for r in family.flagged] == [("D", "x")]
    (small,) = [r for r in family.rows if r.segment_value == "Z"]
    assert small.status == "insufficient_data" and small.p_value is None and small.q_value is None
    assert (small.n_reference, small.n_current) == (0, 8)
    assert family.family_size == 10


def test_missing_values_are_left_out() -> None:
    ref = {"s": ["x"] * 40 + [None] * 5, "f": [1.0, np.nan] * 20 + [9.0] * 5}
    cur = {"s": ["x"] * 40, "f": [1.0] * 40}
    (row,) = segment_drift(ref, cur, ["s"], ["f"], min_rows=20).rows
    assert (row.n_reference, row.n_current, row.p_value) == (20, 40, 1.0)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"segments": ["s"], "features": ["nope"]}, r"the reference data has no column\(s\) \['nope'\]"),
    ({"segments": ["s"], "features": ["s"]}, r"column\(s\) \['s'\] are both a segment and a feature"),
    ({"segments": ["s"], "features": ["f"], "min_rows": 1}, "min_rows must be an integer >= 2"),
    ({"segments": ["s"], "features": ["f"], "level": 1.0}, r"level must lie in \(0, 1\)"),
    ({"segments": ["s"], "features": ["f"], "correction": "bonf"}, "correction must be one of"),
    ({"segments": ["s"], "features": ["g"]}, "numeric feature 'g' has a value that is not a number"),
])
def test_errors_name_what_is_wrong(kwargs: dict, match: str) -> None:
    table = {"s": ["x"] * 40, "f": np.arange(40.0), "g": ["a"] * 40}
    with pytest.raises(ValueError, match=match):
        segment_drift(table, table, **kwargs)


def test_columns_of_unequal_length_are_refused() -> None:
    with pytest.raises(ValueError, match="the current columns differ in length"):
        segment_drift({"s": ["x"], "f": [1.0]}, {"s": ["x", "y"], "f": [1.0]}, ["s"], ["f"])
