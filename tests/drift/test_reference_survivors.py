"""Reference sketches: cases the mutation session of drift/reference.py showed untested.

Oracles: exact rational arithmetic (fractions), scipy's ``wasserstein_distance`` and
``jensenshannon`` (base 2, squared), numpy's ``digitize``/``bincount``, hand-worked tiny cases,
and the documented seeded draws (a fair coin per position then uniform flips; a multivariate
hypergeometric for categories) redone here in numpy.
"""

import dataclasses
import re
from fractions import Fraction

import numpy as np
import pytest
from modelgate.drift.reference import (
    MISSING,
    CategoricalReference,
    NumericReference,
    _half_masks,
    _half_split_w1_counts,
    build_categorical_reference,
    build_categorical_reference_from_counts,
    build_numeric_reference,
)
from scipy.spatial.distance import jensenshannon
from scipy.stats import wasserstein_distance


def _js(p: np.ndarray, q: np.ndarray) -> float:
    """Base-2 JS divergence: scipy's distance squared."""
    return float(jensenshannon(p, q, base=2) ** 2)


def _documented_masks(n: int, rng: np.random.Generator) -> np.ndarray:
    """The draw `_half_masks` documents, redone: ceil(n / 8) random bytes as n fair coins,
    then ``|excess|`` positions of the over-drawn side, chosen without replacement, flipped."""
    coins = np.unpackbits(np.frombuffer(rng.bytes((n + 7) // 8), dtype=np.uint8), count=n)
    mask = coins.astype(bool)
    excess = int(mask.sum()) - n // 2
    if excess:
        over = np.flatnonzero(mask) if excess > 0 else np.flatnonzero(~mask)
        mask[over[rng.choice(over.size, size=abs(excess), replace=False)]] = excess < 0
    return mask


# --- the half-split W1 sum ---------------------------------------------------------------------


def test_half_split_w1_keeps_many_small_gaps_after_a_large_one() -> None:
    """Interleaved halves of ``[-1, 0, d, 2d, ...]``: W1 = (2/n) (1 + (n/2 - 1) d) exactly
    (the first half's CDF leads by 1/h after each of its members, ties nowhere). With
    d = 2**-58 each small term is below half an ulp of the first, so a sum that adds short
    blocks to a running total drops them all (relative error 2**-42); the pairwise sum over
    blocks of 2**16 is within 1e-14 of the exact value."""
    n = 1 << 17
    d = 2.0**-58
    s = np.r_[-1.0, np.arange(n - 1) * d]
    mask = np.zeros(n, dtype=bool)
    mask[::2] = True
    w, a, b = _half_split_w1_counts(np.diff(s), np.searchsorted(s, [0.0]), mask)
    exact = Fraction(2, n) * (1 + (n // 2 - 1) * Fraction(d))
    assert abs(Fraction(w) - exact) <= exact * Fraction(1, 10**14)
    assert (a.tolist(), b.tolist()) == ([1, n // 2 - 1], [0, n // 2])


@pytest.mark.parametrize("n", [65_536, 65_537, 131_072], ids=lambda n: f"n{n}")
def test_half_split_w1_at_the_block_boundaries_equals_scipy(n: int) -> None:
    """Sizes where n or n - 1 is a multiple of the 2**16-element block: scipy's W1 of the two
    halves, and np.digitize counts per bin."""
    rng = np.random.default_rng(n)
    s = np.sort(rng.normal(size=n))
    inner = np.quantile(s, [0.25, 0.5, 0.75])
    mask = rng.permutation(n) < n // 2
    w, a, b = _half_split_w1_counts(np.diff(s), np.searchsorted(s, inner), mask)
    assert w == pytest.approx(wasserstein_distance(s[mask], s[~mask]), rel=1e-12)
    for half, got in ((s[mask], a), (s[~mask], b)):
        np.testing.assert_array_equal(got, np.bincount(np.digitize(half, inner), minlength=4))


# --- baselines on tiny references, worked by hand ----------------------------------------------


@pytest.mark.parametrize("values", [[0.0, 1.0], [3.0, -5.0]], ids=["0-1", "3-minus5"])
def test_two_distinct_values_have_baselines_2_and_1(values: list) -> None:
    """Two rows: the halves are the two values, W1 = |x1 - x0| and std = |x1 - x0| / 2, so the
    normalised W1 is 2; they fall in the end bins, disjoint, so JS = 1."""
    ref = build_numeric_reference(values, name="two")
    assert ref.half_sizes == (1, 1)
    assert ref.baseline_wasserstein == pytest.approx(2.0, rel=1e-15)
    assert ref.baseline_js == pytest.approx(_js(np.array([1, 0]), np.array([0, 1])), abs=1e-15)
    assert ref.baseline_js == pytest.approx(1.0, abs=1e-15)


def test_two_categorical_rows_of_two_labels_have_baseline_1() -> None:
    # halves of one row each, different labels: disjoint, JS = 1 on every split
    ref = build_categorical_reference_from_counts({"a": 1, "b": 1}, name="c")
    assert ref.half_sizes == (1, 1)
    assert ref.baseline_js == pytest.approx(1.0, abs=1e-15)
    same = build_categorical_reference_from_counts({"a": 2}, name="c")
    assert same.baseline_js == 0.0
    one = build_categorical_reference_from_counts({"a": 1}, name="c")  # no two halves: 0
    assert (one.half_sizes, one.baseline_js) == ((0, 1), 0.0)


@pytest.mark.parametrize(
    ("counts", "seed"),
    [({"a": 5, "b": 3, "c": 1}, 0), ({"x": 40, "y": 2, "__missing__": 7}, 11)],
    ids=["9-rows", "49-rows-with-missing"],
)
def test_categorical_baseline_is_the_mean_js_over_hypergeometric_halves(counts: dict,
                                                                        seed: int) -> None:
    """The documented draw: ``rng.multivariate_hypergeometric(counts, total // 2)`` per repeat
    (seeded), the other half being the rest; scipy's base-2 JS between the two, averaged."""
    ref = build_categorical_reference_from_counts(counts, name="c", baseline_repeats=4,
                                                  seed=seed)
    arr = np.array([counts.get(c, 0) for c in ref.categories], dtype=np.int64)
    rng = np.random.default_rng(seed)
    reps = []
    for _ in range(4):
        first = rng.multivariate_hypergeometric(arr, int(arr.sum()) // 2)
        reps.append(_js(first, arr - first))
    assert ref.baseline_js == pytest.approx(np.mean(reps), rel=1e-12)
    assert 0 < ref.baseline_js < 1


# --- the seeded half splits --------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 7, 8, 13, 64, 100, 1000, 1001], ids=lambda n: f"n{n}")
def test_half_masks_follow_the_documented_draw(n: int) -> None:
    rng, mine = np.random.default_rng(n), np.random.default_rng(n)
    for _ in range(4):  # consecutive draws share the generator
        np.testing.assert_array_equal(_half_masks(n, rng), _documented_masks(n, mine))


def test_numeric_baseline_uses_the_documented_draw() -> None:
    """Baselines from the documented masks (redone here) with scipy's W1 / std and base-2 JS
    on np.digitize counts of the reference bins."""
    x = np.round(np.random.default_rng(21).normal(size=2_001), 1)
    ref = build_numeric_reference(x, name="x", bins=6, baseline_repeats=3, seed=9)
    s = np.sort(x)
    inner = ref.edges[1:-1]
    rng = np.random.default_rng(9)
    ws, js = [], []
    for _ in range(3):
        mask = _documented_masks(s.size, rng)
        ws.append(wasserstein_distance(s[mask], s[~mask]) / np.std(s))
        p = np.bincount(np.digitize(s[mask], inner), minlength=inner.size + 1)
        q = np.bincount(np.digitize(s[~mask], inner), minlength=inner.size + 1)
        js.append(_js(p, q))
    assert ref.baseline_wasserstein == pytest.approx(np.mean(ws), rel=1e-10)
    assert ref.baseline_js == pytest.approx(np.mean(js), rel=1e-10)


# --- sketches as values ------------------------------------------------------------------------


def test_sketches_are_frozen() -> None:
    num = build_numeric_reference(np.arange(5.0), name="x")
    cat = build_categorical_reference_from_counts({"a": 2}, name="c")
    with pytest.raises(dataclasses.FrozenInstanceError):
        num.scale = 2.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        cat.baseline_js = 0.5  # type: ignore[misc]
    assert num.scale == pytest.approx(np.std(np.arange(5.0)))
    assert cat.baseline_js == 0.0


def test_round_trips_keep_unequal_half_sizes() -> None:
    # an odd number of rows: halves (n // 2, n - n // 2) differ, and must come back in order
    num = build_numeric_reference(np.r_[np.arange(1001.0), np.nan], name="x", max_values=50)
    back = NumericReference.from_bytes(num.to_bytes())
    assert num.half_sizes == (500, 501) and back.half_sizes == (500, 501)
    assert (back.n, back.n_missing) == (1001, 1)
    cat = build_categorical_reference_from_counts({"a": 4, "b": 3}, name="c")
    cat_back = CategoricalReference.from_bytes(cat.to_bytes())
    assert cat.half_sizes == (3, 4) and cat_back.half_sizes == (3, 4)


def test_sketches_are_slotted() -> None:
    num = build_numeric_reference(np.arange(5.0), name="x")
    cat = build_categorical_reference_from_counts({"a": 2}, name="c")
    for cls, obj in ((NumericReference, num), (CategoricalReference, cat)):
        assert "__slots__" in vars(cls), cls.__name__
        assert not hasattr(obj, "__dict__"), cls.__name__


# --- thinning only when it keeps fewer values --------------------------------------------------


@pytest.mark.parametrize("max_values", [None, 200, 201], ids=["none", "equal-size", "larger"])
def test_a_sample_not_thinned_is_kept_as_is_with_error_bound_0(max_values: int | None) -> None:
    """``max_values >= n`` keeps the exact sample: the caller's sorted float64 array itself
    with ``copy=False``, and ``w1_error_bound`` 0.0 (documented: "0.0 when not thinned")."""
    values = np.sort(np.random.default_rng(2).normal(size=200))
    ref = build_numeric_reference(values, name="x", max_values=max_values, assume_sorted=True,
                                  copy=False)
    assert np.shares_memory(ref.values, values)
    assert ref.w1_error_bound == 0.0
    copied = build_numeric_reference(values[::-1], name="x", max_values=max_values)
    np.testing.assert_array_equal(copied.values, values)
    assert copied.w1_error_bound == 0.0


# --- a real label spelled like MISSING ---------------------------------------------------------


def test_a_label_equal_to_missing_but_built_at_run_time_merges_with_missing() -> None:
    """Documented: a real label equal to MISSING is merged with the missing values. A string
    built at run time is equal to MISSING without being the same object."""
    spelled = "".join(["__miss", "ing__"])
    assert spelled == MISSING and spelled is not MISSING
    ref = build_categorical_reference_from_counts({"b": 1, spelled: 2, "a": 3}, name="c")
    assert ref.categories == ("a", "b", MISSING)
    assert ref.counts.tolist() == [3, 1, 2]
    raw = build_categorical_reference(["a", spelled, None, "b", spelled], name="c")
    assert dict(zip(raw.categories, raw.counts.tolist(), strict=True)) == {
        "a": 1, "b": 1, MISSING: 3}


def test_sketches_compare_by_identity_and_hash() -> None:
    """``eq=False``: a sketch equals only itself (its arrays have no single truth value) and
    can key a dict; a copy read back from bytes is another sketch."""
    num = build_numeric_reference(np.arange(5.0), name="x")
    cat = build_categorical_reference_from_counts({"a": 2, "b": 1}, name="c")
    for obj, back in ((num, NumericReference.from_bytes(num.to_bytes())),
                      (cat, CategoricalReference.from_bytes(cat.to_bytes()))):
        assert obj == obj and obj != back
        assert {obj: 1, back: 2}[obj] == 1


# --- options and edges -------------------------------------------------------------------------


def test_numeric_reference_takes_values_first_and_the_rest_by_keyword() -> None:
    ref = build_numeric_reference(values=[1.0, 2.0, 4.0], name="x")
    assert ref.values.tolist() == [1.0, 2.0, 4.0]
    with pytest.raises(TypeError):
        build_numeric_reference([1.0, 2.0], "x")  # type: ignore[misc]


def test_repeated_quantiles_inside_the_range_collapse_to_one_edge() -> None:
    """A tie in the middle of the column: numpy's quantiles at 0.1..0.9 repeat 5.0 five times;
    the edges are their np.unique, and the shares are np.digitize counts."""
    x = np.r_[np.arange(5.0), np.full(10, 5.0), np.arange(6.0, 11.0)]
    ref = build_numeric_reference(x, name="x", bins=10)
    inner = np.unique(np.quantile(x, np.linspace(0, 1, 11)[1:-1]))
    assert inner.tolist() == pytest.approx([1.9, 3.8, 5.0, 6.2, 8.1], rel=1e-14)
    np.testing.assert_array_equal(ref.edges, np.r_[-np.inf, inner, np.inf])
    counts = np.bincount(np.digitize(x, inner), minlength=inner.size + 1)
    np.testing.assert_allclose(ref.probabilities, counts / x.size, rtol=0, atol=1e-15)



def test_categorical_references_take_their_data_first_and_the_rest_by_keyword() -> None:
    ref = build_categorical_reference_from_counts(counts={"a": 1, "b": 2}, name="c")
    assert ref.counts.tolist() == [1, 2, 0]
    with pytest.raises(TypeError):
        build_categorical_reference_from_counts({"a": 1}, "c")  # type: ignore[misc]
    raw = build_categorical_reference(values=["b", "a", "b"], name="c")
    assert raw.counts.tolist() == [1, 2, 0]
    with pytest.raises(TypeError):
        build_categorical_reference(["a"], "c")  # type: ignore[misc]


@pytest.mark.parametrize("repeats", [1, 2], ids=["one", "two"])
def test_a_single_baseline_repeat_is_allowed(repeats: int) -> None:
    # the options check refuses repeats < 1 only; one split is the mean of one value
    num = build_numeric_reference([0.0, 1.0], name="x", baseline_repeats=repeats)
    assert num.baseline_wasserstein == pytest.approx(2.0, rel=1e-15)
    cat = build_categorical_reference_from_counts({"a": 1, "b": 1}, name="c",
                                                  baseline_repeats=repeats)
    assert cat.baseline_js == pytest.approx(1.0, abs=1e-15)


def test_many_rows_none_finite_are_refused() -> None:
    # 300 rows (past the small ints Python caches), all NaN or infinite
    values = np.r_[np.full(299, np.nan), np.inf]
    with pytest.raises(ValueError, match=r"^values of 'x' must contain a finite value, got 300 "):
        build_numeric_reference(values, name="x")


def test_thinning_keeps_the_documented_order_statistics() -> None:
    """Module docstring: block j of k keeps the order statistic of 0-based index
    floor((j + 1/2) n / k). n = 10, k = 5: indices 1, 3, 5, 7, 9; k = 3: 1, 5, 8.
    The error bound is scipy's W1 between the full sample and the kept values."""
    x = np.arange(10.0)[::-1]
    for k, kept in ((5, [1.0, 3.0, 5.0, 7.0, 9.0]), (3, [1.0, 5.0, 8.0])):
        ref = build_numeric_reference(x, name="x", max_values=k)
        assert ref.values.tolist() == kept
        assert ref.w1_error_bound == pytest.approx(wasserstein_distance(x, kept), rel=1e-12)
    assert build_numeric_reference(x, name="x", max_values=5).w1_error_bound == pytest.approx(0.5)


# --- payload headers ---------------------------------------------------------------------------


def _payload(fmt: str, kind: str, **arrays: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.savez(buf, format=np.array(fmt), kind=np.array(kind), name=np.array("x"), **arrays)
    return buf.getvalue()


@pytest.mark.parametrize("fmt", ["modelgate.drift.reference/0", "modelgate.drift.reference/2"],
                         ids=["older-format", "newer-format"])
def test_another_format_version_is_refused_even_with_every_array(fmt: str) -> None:
    num = build_numeric_reference(np.arange(9.0), name="x")
    cat = build_categorical_reference_from_counts({"a": 2, "b": 1}, name="c")
    num_arrays = {"values": num.values, "edges": num.edges, "probabilities": num.probabilities,
                  "meta": np.array([9, 0, 4, 5]), "stats": np.array([1.0, 0.1, 0.1, 0.0])}
    cat_arrays = {"categories": np.array(cat.categories), "counts": cat.counts,
                  "meta": np.array([1, 2]), "stats": np.array([0.1])}
    with pytest.raises(ValueError, match=rf"^payload must be a 'numeric' sketch in format "
                                         rf"'modelgate.drift.reference/1', got \('{fmt}', "):
        NumericReference.from_bytes(_payload(fmt, "numeric", **num_arrays))
    with pytest.raises(ValueError, match=r"^payload must be a 'categorical' sketch in format"):
        CategoricalReference.from_bytes(_payload(fmt, "categorical", **cat_arrays))


def test_a_sketch_of_the_other_kind_is_refused_by_its_header() -> None:
    num = build_numeric_reference(np.arange(9.0), name="x").to_bytes()
    cat = build_categorical_reference_from_counts({"a": 2}, name="c").to_bytes()
    with pytest.raises(ValueError, match=r"^payload must be a 'numeric' sketch in format "
                                         r"'modelgate.drift.reference/1', got \("):
        NumericReference.from_bytes(cat)
    with pytest.raises(ValueError, match=r"^payload must be a 'categorical' sketch in format "
                                         r"'modelgate.drift.reference/1', got \("):
        CategoricalReference.from_bytes(num)


def test_default_baseline_averages_five_documented_splits() -> None:
    """Documented default ``baseline_repeats=5``: five seeded splits (seed 0), redone here."""
    x = np.random.default_rng(31).gamma(2.0, size=501)
    ref = build_numeric_reference(x, name="x", bins=4)
    s = np.sort(x)
    rng = np.random.default_rng(0)
    ws = [wasserstein_distance(s[m], s[~m]) / np.std(s)
          for m in (_documented_masks(s.size, rng) for _ in range(5))]
    assert ref.baseline_wasserstein == pytest.approx(np.mean(ws), rel=1e-10)
    counts = {"a": 6, "b": 4, "c": 3}
    cat = build_categorical_reference_from_counts(counts, name="c")
    arr = np.array([6, 4, 3, 0])
    draw = np.random.default_rng(0)
    reps = []
    for _ in range(5):
        first = draw.multivariate_hypergeometric(arr, 6)
        reps.append(_js(first, arr - first))
    assert cat.baseline_js == pytest.approx(np.mean(reps), rel=1e-12)
    raw = build_categorical_reference(list("aaaaaabbbbccc"), name="c")
    assert raw.baseline_js == pytest.approx(np.mean(reps), rel=1e-12)


@pytest.mark.parametrize("counts", [{"a": 3, "b": -1}, {"a": 1, MISSING: -2}, {"a": 0}],
                         ids=["minus-one", "minus-two-missing", "all-zero"])
def test_negative_or_all_zero_counts_are_refused(counts: dict) -> None:
    with pytest.raises(ValueError, match=r"^counts of 'c' must be non-negative with a positive"):
        build_categorical_reference_from_counts(counts, name="c")


def _resaved(payload: bytes, **replaced: np.ndarray) -> bytes:
    """The sketch's arrays saved again with some of them replaced (a hand-made payload)."""
    import io

    with np.load(io.BytesIO(payload), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    buf = io.BytesIO()
    np.savez(buf, **{**arrays, **replaced})
    return buf.getvalue()


@pytest.mark.parametrize(
    ("kind", "key", "bad"),
    [("numeric", "meta", np.arange(3)), ("numeric", "stats", np.ones(5)),
     ("categorical", "meta", np.arange(3)), ("categorical", "stats", np.array([0.5, 0.7])),
     ("categorical", "stats", np.float64(0.5))],
    ids=["numeric-meta-short", "numeric-stats-long", "categorical-meta-long",
         "categorical-stats-long", "categorical-stats-scalar"])
def test_a_fixed_size_array_of_another_shape_is_refused(kind: str, key: str,
                                                         bad: np.ndarray) -> None:
    """A payload whose header and keys are right but whose ``meta`` or ``stats`` has another
    shape is refused by name (a short one raised IndexError, a longer one was read from its
    first element)."""
    if kind == "numeric":
        sketch = build_numeric_reference(np.arange(20.0), name="x")
        load = NumericReference.from_bytes
    else:
        sketch = build_categorical_reference(["a", "b", "a", "c"], name="c")
        load = CategoricalReference.from_bytes
    with pytest.raises(ValueError, match=rf"^payload is not a '{kind}' sketch: its {key} has "
                                         rf"shape {re.escape(str(bad.shape))}, expected "):
        load(_resaved(sketch.to_bytes(), **{key: bad}))
