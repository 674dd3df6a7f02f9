"""Distances against scipy (independent implementation) and hand-worked cases."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from modelgate.drift.distances import (
    categorical_js,
    js_divergence,
    wasserstein_1d,
    wasserstein_sorted,
)
from scipy.spatial.distance import jensenshannon
from scipy.stats import wasserstein_distance


def _samples(case: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(42)
    if case == "normal-shift":
        return rng.normal(size=5000), rng.normal(0.4, 1.3, size=3001)
    if case == "heavy-ties":
        return rng.integers(0, 5, 4000).astype(float), rng.integers(1, 7, 999).astype(float)
    if case == "constant-vs-spread":
        return np.full(100, 2.5), rng.normal(size=50)
    if case == "both-constant":
        return np.full(10, 1.0), np.full(7, 3.0)
    if case == "n1-n1":
        return np.array([0.3]), np.array([-1.2])
    if case == "n1-n2":
        return np.array([0.3]), np.array([-1.2, 4.0])
    if case == "n2-big":
        return np.array([0.0, 1.0]), rng.exponential(size=10_000)
    if case == "large-offset":  # cancellation check: tiny W1 far from zero
        return 1e6 + rng.normal(size=20_000), 1e6 + rng.normal(0.001, 1.0, size=15_000)
    if case == "block-crossing":  # more than one block of the blocked sum
        return rng.normal(size=700_001), rng.standard_t(3, size=500_000)
    raise AssertionError(case)


CASES = [
    "normal-shift",
    "heavy-ties",
    "constant-vs-spread",
    "both-constant",
    "n1-n1",
    "n1-n2",
    "n2-big",
    "large-offset",
    "block-crossing",
]


@pytest.mark.parametrize("case", CASES, ids=CASES)
def test_wasserstein_matches_scipy(case: str) -> None:
    u, v = _samples(case)
    expected = wasserstein_distance(u, v)
    assert wasserstein_1d(u, v) == pytest.approx(expected, rel=1e-9, abs=1e-15)
    assert wasserstein_sorted(np.sort(u), np.sort(v)) == pytest.approx(
        expected, rel=1e-9, abs=1e-15
    )


def test_wasserstein_hand_worked() -> None:
    # CDFs differ by 1/2 on [0, 1) and by 1/2 on [2, 4): W1 = 0.5 + 1.0.
    assert wasserstein_1d([0.0, 2.0], [1.0, 4.0]) == pytest.approx(1.5)


def test_wasserstein_sorted_does_not_sort_and_rejects_unsorted() -> None:
    u = np.array([0.0, 1.0, 2.0])
    u.setflags(write=False)  # any in-place sort would raise
    assert wasserstein_sorted(u, np.array([1.0])) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="sorted ascending"):
        wasserstein_sorted(np.array([2.0, 1.0]), np.array([1.0]))


def test_wasserstein_sorted_finds_an_unsorted_pair_after_the_first_value() -> None:
    # 0 is the smallest value, so only comparing each value with its predecessor finds 2 > 1
    with pytest.raises(ValueError, match="u_sorted must be sorted ascending"):
        wasserstein_sorted(np.array([0.0, 2.0, 1.0]), np.array([1.0]))
    with pytest.raises(ValueError, match="v_sorted must be sorted ascending"):
        wasserstein_sorted(np.array([1.0]), np.array([0.0, 2.0, 1.0]))


@pytest.mark.parametrize(
    ("n", "m", "refused"),
    [(2**31, 2**31, True), (2**31, 2**31 + 1, True), (2**62 - 1, 1, False), (1, 2**62 - 1, False),
     (2**62, 1, True)],
    ids=["product-2**62", "product-above-2**62", "product-just-below", "swapped-just-below",
         "one-side-2**62"],
)
def test_the_grid_size_limit_is_a_product_below_2_to_62(n: int, m: int, refused: bool) -> None:
    # samples this large cannot be allocated in a test, so the size check is called directly
    from modelgate.drift.distances import _check_grid_fits

    if refused:
        with pytest.raises(ValueError, match=rf"must be < 2\*\*62, got {n} \* {m}"):
            _check_grid_fits(n, m)
    else:
        _check_grid_fits(n, m)


@pytest.mark.parametrize(
    ("bad", "match"),
    [([], "u must be non-empty"), ([np.nan], "u must contain only finite"),
     ([[1.0, 2.0]], r"u must be 1-D, got shape \(1, 2\)"), (1.0, r"u must be 1-D, got shape \(\)")],
    ids=["empty", "nan", "2d", "scalar"],
)
def test_wasserstein_rejects_bad_input(bad: list, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        wasserstein_1d(bad, [1.0])
    with pytest.raises(ValueError, match=match.replace("u must", "u_sorted must")):
        wasserstein_sorted(bad, [1.0])


JS_CASES = {
    "disjoint": ([1, 0], [0, 1]),
    "identical": ([3, 1, 2], [6, 2, 4]),
    "counts": ([10, 20, 30, 0], [5, 0, 30, 12]),
    "probabilities": ([0.1, 0.2, 0.7], [0.3, 0.3, 0.4]),
    "one-bin": ([7], [3]),
}


@pytest.mark.parametrize("pq", JS_CASES.values(), ids=JS_CASES.keys())
def test_js_matches_scipy(pq: tuple) -> None:
    p, q = pq
    expected = jensenshannon(p, q, base=2) ** 2
    assert js_divergence(p, q) == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_js_hand_worked() -> None:
    # P=(1,0), Q=(.5,.5), M=(.75,.25): KL(P|M)=log2(4/3), KL(Q|M)=.5*log2(2/3)+.5*log2(2).
    expected = 0.5 * (np.log2(4 / 3) + 0.5 * np.log2(2 / 3) + 0.5)
    assert js_divergence([1, 0], [1, 1]) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    "p, q, match",
    [([1, 2], [1], "same length"), ([1], [1, 2], "same length"), ([-1, 2], [1, 1], "non-negative"),
     ([0, 0], [1, 1], "positive"),
     ([[1, 2]], [[1, 2]], "1-D"), (1.0, 1.0, "1-D"), ([], [], "non-empty")],
    ids=["p-longer", "q-longer", "negative", "all-zero", "two-dimensional", "scalar", "empty"],
)
def test_js_rejects_bad_input(p: list, q: list, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        js_divergence(p, q)


def test_categorical_js_union_matches_scipy_on_aligned_counts() -> None:
    rng = np.random.default_rng(5)
    ref = pd.Series(rng.choice(["a", "b", "c", "d"], size=1000, p=[0.4, 0.3, 0.2, 0.1]))
    cur = pd.Series(rng.choice(["a", "b", "e", "f"], size=700))
    ref_counts = ref.value_counts()
    cur_counts = cur.value_counts()
    union = sorted(set(ref_counts.index) | set(cur_counts.index))
    expected = (
        jensenshannon(
            ref_counts.reindex(union, fill_value=0).to_numpy(),
            cur_counts.reindex(union, fill_value=0).to_numpy(),
            base=2,
        )
        ** 2
    )
    res = categorical_js(list(ref_counts.index), ref_counts.to_numpy(), cur_counts.to_dict())
    assert res.js_divergence == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert res.unseen_categories == ("e", "f")
    assert set(res.categories) == set(union)



@pytest.mark.parametrize(
    "current",
    [{"a": -1, "b": 5}, {"a": 5, "z": -1}],
    ids=["seen-category", "unseen-category"],
)
def test_categorical_js_rejects_negative_current_counts(current: dict) -> None:
    with pytest.raises(ValueError, match="non-negative"):
        categorical_js(["a", "b"], [5, 5], current)


@pytest.mark.parametrize(
    ("cats", "counts"),
    [(["a", "a"], [5, 5]), (["a", "b"], [5, 5, 5]), (["a", "b"], [5])],
    ids=["duplicate-category", "more-counts", "fewer-counts"],
)
def test_categorical_js_rejects_a_bad_reference(cats: list, counts: list) -> None:
    with pytest.raises(ValueError, match="unique and aligned"):
        categorical_js(cats, counts, {"a": 1})


def test_categorical_js_counts_ones_and_ignores_zeros() -> None:
    # reference (1, 1) against current (1, 0): the docstring example of js_divergence, 0.3112781
    res = categorical_js(["a", "b"], [1, 1], {"a": 1, "b": 0, "z": 0})
    expected = jensenshannon([1, 1], [1, 0], base=2) ** 2
    assert res.js_divergence == pytest.approx(expected, rel=1e-12)
    assert res.unseen_categories == ()
    assert res.categories == ("a", "b")
    assert categorical_js(["a", "b"], [1, 1], {"a": 1, "b": 1}).js_divergence == 0.0


def test_categorical_js_with_many_categories_matches_scipy() -> None:
    # 300 categories: past the small integers CPython caches, so counts are compared by value
    cats = [f"c{i}" for i in range(300)]
    ref = np.arange(1, 301)
    cur = {c: 301 - i for i, c in enumerate(cats)}
    res = categorical_js(cats, ref, cur)
    expected = jensenshannon(ref, np.array([cur[c] for c in cats]), base=2) ** 2
    assert res.js_divergence == pytest.approx(expected, rel=1e-12)


def test_categorical_js_result_is_frozen_and_slotted() -> None:
    import dataclasses

    res = categorical_js(["a", "b"], [5, 5], {"a": 5})
    assert not hasattr(res, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.js_divergence = 0.0  # type: ignore[misc]

def test_js_of_nearly_equal_vectors_is_never_negative() -> None:
    # found by search: the two KL sums round to -7e-17 here; the result is clamped at 0
    p = [0.002738500170148095, 0.8574042765875693, 0.033585575305464355, 0.7296554464299441]
    q = [0.0027385001681427806, 0.8574042761209194, 0.03358557529484123, 0.7296554467302925]
    assert js_divergence(p, q) == 0.0

finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
samples = arrays(np.float64, st.integers(1, 40), elements=finite)
count_vectors = (
    st.integers(1, 8)
    .flatmap(
        lambda k: st.tuples(
            arrays(np.int64, k, elements=st.integers(0, 50)),
            arrays(np.int64, k, elements=st.integers(0, 50)),
        )
    )
    .filter(lambda pq: pq[0].sum() > 0 and pq[1].sum() > 0)
)


@given(samples, samples)
def test_wasserstein_properties(u: np.ndarray, v: np.ndarray) -> None:
    d = wasserstein_1d(u, v)
    assert d >= 0
    assert d == pytest.approx(wasserstein_distance(u, v), rel=1e-9, abs=1e-6)
    assert wasserstein_1d(u, u) == 0.0
    rng = np.random.default_rng(0)
    assert wasserstein_1d(rng.permutation(u), rng.permutation(v)) == pytest.approx(d, rel=1e-12)


@given(count_vectors)
def test_js_properties(pq: tuple[np.ndarray, np.ndarray]) -> None:
    p, q = pq
    d = js_divergence(p, q)
    assert 0.0 <= d <= 1.0 + 1e-12
    assert d == pytest.approx(js_divergence(q, p), abs=1e-15)
    assert js_divergence(p, p) == pytest.approx(0.0, abs=1e-15)
    perm = np.random.default_rng(1).permutation(p.size)
    assert js_divergence(p[perm], q[perm]) == pytest.approx(d, rel=1e-12, abs=1e-15)
