"""The bootstrap resamplers and the percentile interval of ``modelgate.intervals``, tested directly.

Expectations come from scipy (chi-square goodness of fit, the binomial law, ``mquantiles``)
and from closed forms (the moments of a multinomial count), never from the code under test.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from modelgate import intervals
from modelgate.intervals import (
    bootstrap_counts,
    bootstrap_indices,
    check_confidence_level,
    check_int,
    interval_holding,
    percentile_interval,
    percentile_lowered_by_bias,
)


def _indices(n: int, n_bootstrap: int, seed: int, chunk_size: int | None = None) -> np.ndarray:
    chunks = list(bootstrap_indices(n, n_bootstrap=n_bootstrap, seed=seed, chunk_size=chunk_size))
    return np.concatenate(chunks) if chunks else np.empty((0, n), dtype=np.int64)


def _counts(n: int, n_bootstrap: int, seed: int) -> np.ndarray:
    chunks = list(bootstrap_counts(n, n_bootstrap=n_bootstrap, seed=seed))
    return np.concatenate(chunks) if chunks else np.empty((0, n))


def test_every_row_is_drawn_equally_often() -> None:
    """Chi-square goodness of fit of the pooled index frequencies against uniform."""
    n, b = 40, 2500
    idx = _indices(n, b, seed=3)
    assert idx.shape == (b, n)
    observed = np.bincount(idx.ravel(), minlength=n)
    assert observed.size == n  # nothing at or past n
    assert stats.chisquare(observed).pvalue > 1e-3


@pytest.mark.parametrize("position", [0, -1], ids=["first-draw", "last-draw"])
def test_each_draw_of_a_resample_is_uniform(position: int) -> None:
    n, b = 8, 4000
    observed = np.bincount(_indices(n, b, seed=5)[:, position], minlength=n)
    assert stats.chisquare(observed).pvalue > 1e-3


def test_draws_within_a_resample_are_independent() -> None:
    """Contingency chi-square of (first draw, last draw) over many resamples."""
    n, b = 6, 12000
    idx = _indices(n, b, seed=9)
    table = np.zeros((n, n))
    np.add.at(table, (idx[:, 0], idx[:, -1]), 1)
    assert stats.chi2_contingency(table).pvalue > 1e-3


@pytest.mark.parametrize("n", [1, 2, 5, 1000], ids=["n1", "n2", "n5", "n1000"])
def test_the_first_and_the_last_row_are_reachable(n: int) -> None:
    idx = _indices(n, 60, seed=1)
    assert idx.min() == 0 and idx.max() == n - 1
    counts = _counts(n, 60, seed=1)
    assert counts[:, 0].sum() > 0 and counts[:, -1].sum() > 0


def test_resamples_differ_within_a_seed_and_between_seeds() -> None:
    n, b = 30, 300
    a = _indices(n, b, seed=11)
    assert len(np.unique(a, axis=0)) == b  # 30^30 possible resamples: a repeat means a bug
    np.testing.assert_array_equal(a, _indices(n, b, seed=11))
    other = _indices(n, b, seed=12)
    assert not np.array_equal(a, other)
    assert (a != other).mean() > 0.9  # about 1 - 1/30 of the draws differ
    counts = _counts(n, b, seed=11)
    assert len(np.unique(counts, axis=0)) == b


@pytest.mark.parametrize("chunk_size", [1, 3, 7, 10, 64],
                         ids=["chunk1", "chunk3", "chunk7", "chunk10", "chunk64"])
def test_the_stream_does_not_depend_on_the_chunk_size(chunk_size: int) -> None:
    whole = _indices(17, 10, seed=4, chunk_size=10)
    np.testing.assert_array_equal(_indices(17, 10, seed=4, chunk_size=chunk_size), whole)
    shapes = [c.shape[0] for c in bootstrap_indices(17, n_bootstrap=10, seed=4,
                                                    chunk_size=chunk_size)]
    assert sum(shapes) == 10 and max(shapes) <= chunk_size


def test_counts_do_not_depend_on_their_chunking(monkeypatch: pytest.MonkeyPatch) -> None:
    default = _counts(10, 25, seed=6)
    monkeypatch.setattr(intervals, "_CHUNK_ELEMENTS", 30)  # 3 resamples a chunk
    chunks = list(bootstrap_counts(10, n_bootstrap=25, seed=6))
    assert len(chunks) == 9
    np.testing.assert_array_equal(np.concatenate(chunks), default)


def test_counts_are_how_often_each_row_of_the_index_resample_is_drawn() -> None:
    n, b = 9, 50
    idx, counts = _indices(n, b, seed=2), _counts(n, b, seed=2)
    assert counts.dtype == np.float64 and counts.shape == (b, n)
    for resample, row in zip(idx, counts, strict=True):
        assert row.tolist() == [float(sum(1 for i in resample if i == r)) for r in range(n)]


def test_counts_have_the_moments_and_the_law_of_a_multinomial() -> None:
    """Each resample's counts ~ Multinomial(n, 1/n each): sum n, mean 1, variance 1 - 1/n,
    covariance -1/n, and each count ~ Binomial(n, 1/n)."""
    n, b = 20, 20000
    counts = _counts(n, b, seed=8)
    np.testing.assert_array_equal(counts.sum(axis=1), n)
    assert np.array_equal(counts, np.round(counts)) and counts.min() >= 0
    # standard errors over b resamples: mean 0.007, variance 0.012, covariance 0.007
    np.testing.assert_allclose(counts.mean(axis=0), 1.0, atol=0.035)
    cov = np.cov(counts, rowvar=False)
    np.testing.assert_allclose(np.diag(cov), 1.0 - 1.0 / n, atol=0.06)
    np.testing.assert_allclose(cov[~np.eye(n, dtype=bool)].mean(), -1.0 / n, atol=0.005)
    off = cov[~np.eye(n, dtype=bool)]
    assert np.abs(off + 1.0 / n).max() < 0.04
    law = stats.binom(n, 1.0 / n)
    observed = np.bincount(np.minimum(counts[:, 0], 4).astype(int), minlength=5)
    expected = b * np.r_[law.pmf([0, 1, 2, 3]), law.sf(3)]
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_no_resamples_and_a_single_row() -> None:
    assert list(bootstrap_indices(5, n_bootstrap=0, seed=0)) == []
    assert list(bootstrap_counts(5, n_bootstrap=0, seed=0)) == []
    assert _indices(1, 4, seed=0).tolist() == [[0]] * 4
    assert _counts(1, 4, seed=0).tolist() == [[1.0]] * 4


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(n=0, n_bootstrap=1, seed=0), "n must be an integer >= 1"),
    (dict(n=3, n_bootstrap=-1, seed=0), "n_bootstrap must be an integer >= 0"),
    (dict(n=3, n_bootstrap=1, seed=-2), "seed must be an integer >= 0"),
    (dict(n=3, n_bootstrap=1, seed=0, chunk_size=0), "chunk_size must be an integer >= 1"),
    (dict(n=True, n_bootstrap=1, seed=0), "n must be an integer"),
    (dict(n=3.0, n_bootstrap=1, seed=0), "n must be an integer"),
], ids=["n0", "negative-resamples", "negative-seed", "chunk0", "bool-n", "float-n"])
def test_bad_arguments_name_themselves(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        list(bootstrap_indices(**kwargs))


@pytest.mark.parametrize("level", [0.5, 0.8, 0.95])
def test_percentile_interval_is_scipys_linear_quantile_of_the_finite_values(level: float) -> None:
    values = np.random.default_rng(0).normal(size=37)
    with_nan = np.r_[values, np.nan, np.nan]
    alpha = 1.0 - level
    expected = stats.mstats.mquantiles(values, [alpha / 2, 1 - alpha / 2], alphap=1, betap=1)
    assert percentile_interval(with_nan, level) == pytest.approx(tuple(expected), abs=1e-12)


def test_percentile_interval_by_hand_and_when_nothing_is_finite() -> None:
    # 5 values, 80 %: positions 0.1 * 4 = 0.4 and 0.9 * 4 = 3.6 between the sorted values
    assert percentile_interval(np.array([4.0, 0.0, 1.0, 3.0, 2.0]), 0.8) == pytest.approx(
        (0.4, 3.6))
    lower, upper = percentile_interval(np.array([np.nan, np.inf]), 0.95)
    assert np.isnan(lower) and np.isnan(upper)


def test_an_interval_is_widened_only_as_far_as_its_point_estimate() -> None:
    assert interval_holding(0.1, 0.375, 0.525) == (0.1, 0.525)
    assert interval_holding(0.9, 0.375, 0.525) == (0.375, 0.9)
    assert interval_holding(0.45, 0.375, 0.525) == (0.375, 0.525)
    lower, upper = interval_holding(0.45, float("nan"), float("nan"))
    assert np.isnan(lower) and np.isnan(upper)


def test_the_lower_end_drops_by_the_resamples_mean_excess_over_the_point() -> None:
    # 5 values, 80 %: percentile (0.4, 3.6); mean 2.0
    values = np.array([4.0, 0.0, 1.0, 3.0, 2.0, np.nan])
    assert percentile_lowered_by_bias(values, 1.5, 0.8) == pytest.approx((0.4 - 0.5, 3.6))
    assert percentile_lowered_by_bias(values, 1.5, 0.8, lower_limit=0.0) == pytest.approx((0.0, 3.6))
    # resamples below the point on average: the percentile interval, unmoved
    assert percentile_lowered_by_bias(values, 2.5, 0.8) == pytest.approx((0.4, 3.6))
    lower, upper = percentile_lowered_by_bias(np.array([np.nan]), 0.5, 0.95)
    assert np.isnan(lower) and np.isnan(upper)


@pytest.mark.parametrize("point", [float("nan"), float("inf"), -float("inf")])
def test_the_lower_end_is_not_moved_for_a_point_that_is_not_finite(point: float) -> None:
    values = np.array([4.0, 0.0, 1.0, 3.0, 2.0])
    assert percentile_lowered_by_bias(values, point, 0.8, lower_limit=0.0) == pytest.approx((0.4, 3.6))


def test_a_single_finite_resample_is_its_own_mean_in_the_bias_correction() -> None:
    # one finite value 3 against the point 1: percentile (3, 3), bias 2, lower end 3 - 2
    assert percentile_lowered_by_bias(np.array([3.0, np.nan]), 1.0, 0.9) == (1.0, 3.0)


def test_the_lower_limit_of_the_bias_correction_is_keyword_only() -> None:
    values = np.array([4.0, 0.0, 1.0, 3.0, 2.0])
    got = percentile_lowered_by_bias(resampled=values, point=1.5, confidence_level=0.8)
    assert got == pytest.approx((-0.1, 3.6))
    with pytest.raises(TypeError):
        percentile_lowered_by_bias(values, 1.5, 0.8, 0.0)  # type: ignore[misc]


def test_an_interval_with_one_nan_end_is_kept_as_it_is() -> None:
    assert interval_holding(0.9, float("nan"), 0.5)[1] == 0.5
    assert interval_holding(0.1, 0.5, float("nan"))[0] == 0.5


def test_the_default_chunk_holds_32_mib_of_float64_indices() -> None:
    # 2**22 indices (32 MiB as float64) per chunk: 2 resamples of 2**21 rows, 1 of 2**22
    assert next(bootstrap_indices(2**21, n_bootstrap=3, seed=0)).shape == (2, 2**21)
    assert next(bootstrap_indices(2**21 + 1, n_bootstrap=3, seed=0)).shape == (1, 2**21 + 1)


@pytest.mark.parametrize(("chunk_elements", "n", "expected"), [(30, 10, [3, 3, 1]), (5, 10, [1] * 7)],
                         ids=["three-a-chunk", "fewer-elements-than-a-row"])
def test_the_default_chunk_is_the_elements_per_chunk_over_the_rows_at_least_one(
        monkeypatch: pytest.MonkeyPatch, chunk_elements: int, n: int, expected: list[int]) -> None:
    monkeypatch.setattr(intervals, "_CHUNK_ELEMENTS", chunk_elements)
    assert [c.shape[0] for c in bootstrap_indices(n, n_bootstrap=7, seed=0)] == expected
    assert [c.shape[0] for c in bootstrap_counts(n, n_bootstrap=7, seed=0)] == expected


def test_indices_are_int32_below_2_to_the_31_rows_and_int64_from_there() -> None:
    assert _indices(100, 2, seed=0).dtype == np.int32
    for n in (1, 100, 2**30, 2**31 - 1):
        assert intervals._index_dtype(n) is np.int32
    for n in (2**31, 2**31 + 1, 2**32, 2**40):
        assert intervals._index_dtype(n) is np.int64


def test_the_resampler_options_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        bootstrap_indices(5, 3, 0)  # type: ignore[misc]
    with pytest.raises(TypeError):
        bootstrap_counts(5, 3, 0)  # type: ignore[misc]
    with pytest.raises(TypeError):
        check_int(3, "n", 1)  # type: ignore[misc]
    assert [c.shape for c in bootstrap_indices(n=5, n_bootstrap=3, seed=0)] == [(3, 5)]
    assert [c.shape for c in bootstrap_counts(n=5, n_bootstrap=3, seed=0)] == [(3, 5)]


@pytest.mark.parametrize("value", [3, np.int64(3), np.int32(5)])
def test_check_int_accepts_integers_from_the_minimum(value: object) -> None:
    check_int(value, "n", minimum=3)
    check_int(value=value, name="n", minimum=3)


@pytest.mark.parametrize("value", [2, np.int64(2), 3.0, True, np.True_, "3", None])
def test_check_int_refuses_what_is_not_an_integer_at_least_the_minimum(value: object) -> None:
    with pytest.raises(ValueError, match=r"^n must be an integer >= 3; got "):
        check_int(value, "n", minimum=3)


@pytest.mark.parametrize("value", [0.5, 1e-12, 1.0 - 1e-12, np.float32(0.9), np.float64(0.95)])
def test_a_confidence_level_inside_zero_one_is_accepted(value: object) -> None:
    check_confidence_level(value)


@pytest.mark.parametrize("value", [0.0, 1.0, -0.5, 1.5, 2.0, float("nan"), float("inf"), True,
                                   np.True_, "0.9", None])
def test_a_confidence_level_outside_zero_one_or_not_a_number_is_refused(value: object) -> None:
    with pytest.raises(ValueError, match=r"^confidence_level must be a number in \(0, 1\); got "):
        check_confidence_level(value)


@pytest.mark.parametrize("near", ["below-and-above", "both-above"])
def test_bca_counts_replicates_within_the_tie_tolerance_as_ties(near: str) -> None:
    """Four replicates, two of them an ulp from the point 1.0 (one each side, or both above)
    and 0.9 and 1.1: as ties, each counts one half and nothing else, so half the replicates
    are below (z0 = 0) and with a constant jackknife (a = 0) BCa is the percentile interval
    (by hand: numpy's quantiles of the four values). Compared exactly, the two above leave
    one of four below (z0 = ndtri(1/4)) and both ends move down."""
    from modelgate.intervals import bca_interval

    point = 1.0
    below, above = np.nextafter(point, 0.0), np.nextafter(point, 2.0)
    r = np.array([0.9, below if near == "below-and-above" else above, above, 1.1])
    flat, ones = np.array([0.5, 0.5]), np.array([1.0, 1.0])
    tied = bca_interval(r, point, flat, ones, 0.9, tie_tolerance=1e-12)
    assert tied == tuple(np.quantile(r, [0.05, 0.95]))
    if near == "both-above":
        exact = bca_interval(r, point, flat, ones, 0.9)
        assert exact[0] < tied[0] and exact[1] < tied[1]
