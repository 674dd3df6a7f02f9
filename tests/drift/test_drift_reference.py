"""Reference sketches: binning, scale, thinning bound, baseline, serialisation."""

import itertools

import numpy as np
import pytest
from modelgate.drift.reference import (
    MISSING,
    CategoricalReference,
    NumericReference,
    build_categorical_reference,
    build_numeric_reference,
)
from scipy.stats import wasserstein_distance


def test_bins_match_digitize_on_reference_quantiles() -> None:
    rng = np.random.default_rng(0)
    x = np.r_[rng.gamma(2.0, size=9_999), np.nan, np.inf]
    ref = build_numeric_reference(x, name="x", bins=7)
    finite = x[np.isfinite(x)]
    inner = np.unique(np.quantile(finite, np.linspace(0, 1, 8)[1:-1]))
    counts = np.bincount(np.digitize(finite, inner, right=False), minlength=inner.size + 1)
    np.testing.assert_array_equal(ref.edges[1:-1], inner)
    assert ref.edges[0] == -np.inf and ref.edges[-1] == np.inf
    np.testing.assert_allclose(ref.probabilities, counts / finite.size, rtol=0, atol=1e-15)
    assert (ref.n, ref.n_missing) == (9_999, 2)
    assert ref.scale == pytest.approx(np.std(finite))
    assert np.all(np.diff(ref.values) >= 0)


def test_duplicate_edges_collapse_and_constant_column() -> None:
    zero_inflated = np.r_[np.zeros(900), np.arange(1.0, 101.0)]
    ref = build_numeric_reference(zero_inflated, name="z", bins=10)
    assert np.unique(ref.edges).size == ref.edges.size  # no duplicates left
    assert ref.probabilities[0] == 0.0 and ref.probabilities.sum() == pytest.approx(1.0)
    const = build_numeric_reference(np.full(50, 3.0), name="c")
    assert const.edges.tolist() == [-np.inf, 3.0, np.inf]
    assert const.probabilities.tolist() == [0.0, 1.0]
    assert const.scale == 1.0
    assert const.baseline_wasserstein == 0.0


@pytest.mark.parametrize("n", [1, 2, 3], ids=["n1", "n2", "n3"])
def test_tiny_reference(n: int) -> None:
    ref = build_numeric_reference(np.arange(float(n)), name="t")
    assert ref.n == n and ref.values.tolist() == list(range(n))
    assert ref.half_sizes == (n // 2, n - n // 2)


def test_a_single_value_has_zero_baselines() -> None:
    # no two halves to compare: both baselines are 0, not a distance
    ref = build_numeric_reference([4.0, np.nan], name="one")
    assert (ref.baseline_wasserstein, ref.baseline_js) == (0.0, 0.0)
    assert (ref.n, ref.n_missing, ref.half_sizes) == (1, 1, (0, 1))


def test_assume_sorted_checks_the_order() -> None:
    with pytest.raises(ValueError, match="'x' must be ascending when assume_sorted=True"):
        build_numeric_reference([2.0, 1.0], name="x", assume_sorted=True)
    with pytest.raises(ValueError, match="must be ascending"):
        build_numeric_reference([0.0, 1.0, 3.0, 2.0], name="x", assume_sorted=True)
    ok = build_numeric_reference([1.0, 1.0, 2.0], name="x", assume_sorted=True)
    assert ok.values.tolist() == [1.0, 1.0, 2.0]


@pytest.mark.parametrize("k", [1, 10, 1000], ids=["k1", "k10", "k1000"])
def test_thinning_error_bound(k: int) -> None:
    rng = np.random.default_rng(3)
    x = rng.lognormal(size=20_001)
    ref = build_numeric_reference(x, name="x", max_values=k)
    assert ref.values.size == k and ref.n == x.size
    exact = wasserstein_distance(x, ref.values)
    assert ref.w1_error_bound == pytest.approx(exact, rel=1e-9)
    assert exact <= (x.max() - x.min()) / k
    current = rng.lognormal(0.2, size=5_000)
    err = abs(wasserstein_distance(current, ref.values) - wasserstein_distance(current, x))
    assert err <= ref.w1_error_bound + 1e-12


def test_baseline_is_deterministic_and_about_sampling_noise() -> None:
    rng = np.random.default_rng(4)
    x = rng.normal(size=20_000)
    a = build_numeric_reference(x, name="x", seed=1)
    b = build_numeric_reference(x, name="x", seed=1)
    assert a.baseline_wasserstein == b.baseline_wasserstein
    # Two independent halves of N(0, 1) with 10k each: E[W1] is about 0.011.
    assert 0.003 < a.baseline_wasserstein < 0.03
    assert 0 < a.baseline_js < 0.005


def test_numeric_round_trip() -> None:
    rng = np.random.default_rng(5)
    ref = build_numeric_reference(np.r_[rng.normal(size=1000), np.nan], name="age", max_values=100)
    back = NumericReference.from_bytes(ref.to_bytes())
    for slot in NumericReference.__slots__:
        np.testing.assert_array_equal(getattr(back, slot), getattr(ref, slot), err_msg=slot)
    assert not back.values.flags.writeable


def test_categorical_counts_and_round_trip() -> None:
    ref = build_categorical_reference(["b", "a", None, "b", np.nan, 3], name="colour")
    assert ref.categories == ("3", "a", "b", MISSING)
    assert ref.counts.tolist() == [1, 1, 2, 2]
    back = CategoricalReference.from_bytes(ref.to_bytes())
    assert back.categories == ref.categories
    assert back.counts.tolist() == ref.counts.tolist()
    assert (back.baseline_js, back.half_sizes, back.name) == (
        ref.baseline_js,
        ref.half_sizes,
        ref.name,
    )


@pytest.mark.parametrize(("counts", "halves"),
                         [({"a": 2, "b": 3}, (2, 3)), ({"a": 7}, (3, 4)), ({"a": 1}, (0, 1)),
                          ({"a": 4, MISSING: 6}, (5, 5))],
                         ids=["5-rows", "7-rows", "1-row", "10-rows-with-missing"])
def test_categorical_half_sizes(counts: dict, halves: tuple) -> None:
    from modelgate.drift.reference import build_categorical_reference_from_counts

    ref = build_categorical_reference_from_counts(counts, name="c")
    assert ref.half_sizes == halves
    assert ref.n == sum(counts.values())


def test_from_bytes_rejects_other_payloads() -> None:
    cat = build_categorical_reference(["a", "b"], name="c").to_bytes()
    with pytest.raises(ValueError, match="numeric"):
        NumericReference.from_bytes(cat)
    with pytest.raises(ValueError, match="not a reference sketch"):
        CategoricalReference.from_bytes(b"garbage")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"bins": 0}, "bins"),
        ({"max_values": 0}, "max_values"),
        ({"baseline_repeats": 0}, "baseline"),
    ],
    ids=["bins", "max_values", "repeats"],
)
def test_numeric_options_validated(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        build_numeric_reference([1.0, 2.0], name="x", **kwargs)


@pytest.mark.parametrize(
    "values",
    [[-1e200, 1e200], np.r_[1e308, 1e308, np.zeros(6), -1e308, -1e308, np.zeros(6)]],
    ids=["std-inf", "std-nan"],
)
def test_a_spread_whose_std_overflows_is_refused(values: list) -> None:
    # the std of these finite values overflows float64 (inf, or NaN when the sum does)
    with pytest.raises(ValueError, match="'x' spread too widely for float64"):
        build_numeric_reference(values, name="x")


def test_no_finite_values_rejected() -> None:
    with pytest.raises(ValueError, match="'x'"):
        build_numeric_reference([np.nan, np.inf], name="x")
    with pytest.raises(ValueError, match="'c'"):
        build_categorical_reference([], name="c")


# --- the baseline's building blocks, against numpy and scipy -----------------------------------

from modelgate.drift.reference import (  # noqa: E402
    _half_masks,
    _half_split_w1_counts,
    _sorted_quantiles,
)
from scipy.stats import chisquare  # noqa: E402


@pytest.mark.parametrize("n", [1, 2, 3, 4, 10, 11, 1000, 100_001], ids=lambda n: f"n{n}")
@pytest.mark.parametrize("kind", ["normal", "ties", "wide"])
def test_sorted_quantiles_equal_numpy_quantile(n: int, kind: str) -> None:
    rng = np.random.default_rng(n)
    x = {"normal": rng.normal(size=n), "ties": np.round(rng.normal(size=n) * 2),
         "wide": rng.lognormal(0, 3, size=n) * 1e6}[kind]
    s = np.sort(x)
    for bins in (2, 3, 7, 10, 13, 100):
        q = np.linspace(0.0, 1.0, bins + 1)[1:-1]
        np.testing.assert_array_equal(_sorted_quantiles(s, q), np.quantile(s, q))


@pytest.mark.parametrize("n", [2, 3, 10, 1001, 200_003], ids=lambda n: f"n{n}")
def test_half_split_w1_and_counts_equal_scipy_on_the_two_halves(n: int) -> None:
    rng = np.random.default_rng(n)
    s = np.sort(np.r_[rng.normal(size=n - n // 3), np.round(rng.normal(size=n // 3))])
    edges = np.r_[-np.inf, np.unique(np.quantile(s, [0.1, 0.5, 0.55, 0.9])), np.inf]
    cuts = np.searchsorted(s, edges[1:-1], side="left")
    shared = np.full(n - 1, -7, dtype=np.int32)  # a buffer the repeats share, dirty at first
    for counts in (None, shared, shared):
        mask = _half_masks(n, rng)
        w, a, b = _half_split_w1_counts(np.diff(s), cuts, mask, counts)
        assert w == pytest.approx(wasserstein_distance(s[mask], s[~mask]), rel=1e-12, abs=1e-15)
        inner = edges[1:-1]
        for half, got in ((s[mask], a), (s[~mask], b)):
            expected = np.bincount(np.digitize(half, inner), minlength=inner.size + 1)
            np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("n", [1, 2, 7, 64, 1_000_001], ids=lambda n: f"n{n}")
def test_half_masks_pick_exactly_half(n: int) -> None:
    rng = np.random.default_rng(n)
    for _ in range(3):
        mask = _half_masks(n, rng)
        assert mask.dtype == np.bool_ and mask.shape == (n,)
        assert int(mask.sum()) == n // 2


@pytest.mark.parametrize("n", [4, 5, 6], ids=lambda n: f"n{n}")
def test_half_masks_are_uniform_over_subsets(n: int) -> None:
    """Every subset of size n // 2 about equally often (a shuffle-and-split's distribution)."""
    rng = np.random.default_rng(100 + n)
    draws = 20_000
    codes = [int(np.packbits(_half_masks(n, rng), bitorder="little")[0]) for _ in range(draws)]
    _, counts = np.unique(codes, return_counts=True)
    assert counts.size == len(list(itertools.combinations(range(n), n // 2)))
    assert chisquare(counts).pvalue > 1e-3


def test_baseline_is_the_mean_over_half_splits_of_scipy_numbers() -> None:
    """The stored baseline: mean of W1 / std (scipy) and base-2 JS on the reference bins
    (scipy's jensenshannon on np.digitize counts) over the seeded half splits."""
    from scipy.spatial.distance import jensenshannon

    rng = np.random.default_rng(8)
    x = np.round(rng.gamma(2.0, size=30_001), 2)
    ref = build_numeric_reference(x, name="x", bins=10, baseline_repeats=4, seed=5)
    s = np.sort(x)
    draw = np.random.default_rng(5)  # the masks the build draws with seed 5
    ws, js = [], []
    for _ in range(4):
        mask = _half_masks(s.size, draw)
        ws.append(wasserstein_distance(s[mask], s[~mask]) / np.std(s))
        inner = ref.edges[1:-1]
        p = np.bincount(np.digitize(s[mask], inner), minlength=inner.size + 1)
        q = np.bincount(np.digitize(s[~mask], inner), minlength=inner.size + 1)
        js.append(jensenshannon(p, q, base=2) ** 2)
    assert ref.baseline_wasserstein == pytest.approx(np.mean(ws), rel=1e-10)
    assert ref.baseline_js == pytest.approx(np.mean(js), rel=1e-10)


def test_copy_false_keeps_the_callers_sorted_array_and_copy_true_does_not() -> None:
    values = np.sort(np.random.default_rng(3).normal(size=1000))
    kept = build_numeric_reference(values, name="x", assume_sorted=True, copy=False)
    copied = build_numeric_reference(values, name="x", assume_sorted=True)
    assert np.shares_memory(kept.values, values) and not kept.values.flags.writeable
    assert not np.shares_memory(copied.values, values)
    assert values.flags.writeable  # the caller's own array object is left writable
    np.testing.assert_array_equal(kept.values, copied.values)
    assert (kept.baseline_wasserstein, kept.baseline_js) == (copied.baseline_wasserstein,
                                                             copied.baseline_js)


@pytest.mark.parametrize("kind", ["numeric", "categorical"])
def test_empty_truncated_or_incomplete_sketches_are_value_errors(kind: str) -> None:
    # a bug, fixed: empty bytes raised EOFError, a truncated payload zipfile.BadZipFile and a
    # sketch of the right format and kind without its arrays KeyError, not the documented
    # ValueError (a broken object in the store must name itself, not crash the run).
    import io

    if kind == "numeric":
        cls: type = NumericReference
        payload = build_numeric_reference(np.arange(50.0), name="x").to_bytes()
        absent = "values, edges, probabilities, meta, stats"
    else:
        cls = CategoricalReference
        payload = build_categorical_reference(["a", "b", "a"], name="c").to_bytes()
        absent = "categories, counts, meta, stats"
    lone = io.BytesIO()
    np.save(lone, np.arange(3))  # one .npy array, no archive
    for broken in (b"", payload[:100], payload[: len(payload) // 2], b"PK\x03\x04" + bytes(40),
                   lone.getvalue()):
        with pytest.raises(ValueError, match=r"^payload is not a reference sketch: "):
            cls.from_bytes(broken)
    buf = io.BytesIO()
    np.savez(buf, format=np.array("modelgate.drift.reference/1"), kind=np.array(kind),
             name=np.array("x"))
    with pytest.raises(ValueError) as caught:
        cls.from_bytes(buf.getvalue())
    assert str(caught.value) == f"payload is not a {kind!r} sketch: it has no {absent}"
