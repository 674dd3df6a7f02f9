"""Cases for the mutation survivors of ``reports/explain_masking.py`` (the SHAP masker).

Oracles: hand-built tiny cases (two or three features, one to three background rows) with a
model written here that records every frame it is called with; the expected masked means
are computed here with ``np.where`` over the background rows (the definition of
``shap.maskers.Independent``), the expected keys and first occurrences with ``np.unique``
and plain Python loops.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import scipy.special
from modelgate.reports.explain_masking import MaskedEvaluator, unique_rows

NAMES = ("a", "b", "c")


class Recorder:
    """A model that records the frames it is called with: ``a + 10 b + 100 c`` (value)."""

    def __init__(self, fn=None) -> None:
        self.frames: list[pd.DataFrame] = []
        self.fn = fn if fn is not None else _abc

    def __call__(self, frame: pd.DataFrame) -> np.ndarray:
        self.frames.append(frame.copy())
        return self.fn(frame)

    @property
    def sizes(self) -> list[int]:
        return [len(f) for f in self.frames]

    def rows(self) -> list[tuple]:
        return [tuple(r) for f in self.frames for r in f.itertuples(index=False)]


def _abc(frame: pd.DataFrame) -> np.ndarray:
    return (frame["a"] + 10 * frame["b"] + 100 * frame["c"]).to_numpy(dtype=np.float64)


def _cols(frame: np.ndarray) -> list[np.ndarray]:
    return [np.ascontiguousarray(frame[:, j]) for j in range(frame.shape[1])]


def _masked_mean(fn, x: np.ndarray, bg: np.ndarray, mask, names=NAMES) -> float:
    """Definition: mean over background rows b of fn(x where present, else b)."""
    inputs = np.where(np.asarray(mask)[None, :], x[None, :], bg)
    return float(np.mean(fn(pd.DataFrame(inputs, columns=list(names)))))


def _expected_means(fn, x: np.ndarray, bg: np.ndarray, row_idx, masks,
                    names=NAMES) -> list[float]:
    """:func:`_masked_mean` of each (row, mask) pair the evaluator is asked for."""
    return [_masked_mean(fn, x[r], bg, m, names) for r, m in zip(row_idx, masks, strict=True)]


def _spelled(name: str) -> str:
    """The option spelled at run time: equal to, not the same object as, the module's literal."""
    return "".join(list(name))


def _all_masks(m: int) -> np.ndarray:
    return np.array(list(itertools.product([False, True], repeat=m)), dtype=bool)


X = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
BG_DISTINCT = np.array([[0.5, 0.25, 0.125], [7.0, 8.0, 9.0]])  # every masked input distinct
BG_SAME = np.array([[0.5, 0.25, 0.125], [0.5, 0.25, 0.125]])  # each input twice


def _pairs() -> tuple[np.ndarray, np.ndarray]:
    masks = _all_masks(3)
    row_idx = np.repeat(np.arange(2), len(masks)).astype(np.intp)
    return row_idx, np.tile(masks, (2, 1))


# ------------------------------------------------------------------ coalitions, by hand


@pytest.mark.parametrize("max_batch_rows", [1, 3, 5, 1000], ids=lambda b: f"batch{b}")
@pytest.mark.parametrize("bg", [BG_DISTINCT, BG_SAME], ids=["distinct", "repeated"])
def test_coalition_means_equal_the_definition(bg, max_batch_rows) -> None:
    rec = Recorder()
    ev = MaskedEvaluator(rec, NAMES, _cols(X), _cols(bg), "value", max_batch_rows)
    row_idx, masks = _pairs()
    got = ev.coalitions(row_idx, masks)
    expected = _expected_means(_abc, X, bg, row_idx, masks)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    assert all(list(f.columns) == list(NAMES) for f in rec.frames)


def test_endpoints_are_the_background_mean_and_the_rows_outputs() -> None:
    rec = Recorder()
    ev = MaskedEvaluator(rec, NAMES, _cols(X), _cols(BG_DISTINCT), "value", 1000)
    base, full = ev.endpoints()
    assert base == (0.5 + 2.5 + 12.5 + 7.0 + 80.0 + 900.0) / 2 and isinstance(base, float)
    np.testing.assert_array_equal(full, [321.0, 654.0])
    assert rec.sizes == [2, 2]


def _triples(x: np.ndarray, bg: np.ndarray, row_idx, masks) -> list[tuple]:
    """Every masked input, pair-major then background row (the order of the definition)."""
    return [
        tuple(np.where(m, x[r], b)) for r, m in zip(row_idx, masks, strict=True) for b in bg
    ]


@pytest.mark.parametrize(
    ("max_batch_rows", "sizes"),
    [(1, [2] * 16), (3, [2] * 16), (4, [4] * 8), (5, [4] * 8), (6, [6] * 5 + [2]), (1000, [32])],
    ids=["batch1", "batch3", "batch4", "batch5", "batch6", "batch1000"],
)
def test_every_input_is_scored_in_whole_pairs_when_inputs_are_distinct(
    max_batch_rows, sizes
) -> None:
    # 28 distinct inputs of 32: too few repeats to deduplicate. A pair's background rows are
    # never split; a call holds as many whole pairs as max_batch_rows allows (at least one).
    rec = Recorder()
    ev = MaskedEvaluator(rec, NAMES, _cols(X), _cols(BG_DISTINCT), "value", max_batch_rows)
    row_idx, masks = _pairs()
    ev.coalitions(row_idx, masks)
    assert rec.sizes == sizes
    assert rec.rows() == _triples(X, BG_DISTINCT, row_idx, masks)


@pytest.mark.parametrize(
    ("max_batch_rows", "sizes"),
    [(1, [1] * 15), (2, [2] * 7 + [1]), (5, [5] * 3), (7, [7, 7, 1]), (1000, [15])],
    ids=["batch1", "batch2", "batch5", "batch7", "batch1000"],
)
def test_each_distinct_input_is_scored_once_in_first_seen_order(max_batch_rows, sizes) -> None:
    # two equal background rows: 15 distinct inputs of 32 (the empty coalition is the same
    # for both rows); each goes to predict once, in the order it first occurs
    rec = Recorder()
    ev = MaskedEvaluator(rec, NAMES, _cols(X), _cols(BG_SAME), "value", max_batch_rows)
    row_idx, masks = _pairs()
    ev.coalitions(row_idx, masks)
    assert rec.sizes == sizes
    assert rec.rows() == list(dict.fromkeys(_triples(X, BG_SAME, row_idx, masks)))


# ------------------------------------------------------------------ outputs and their checks


def _sigmoid_abc(frame: pd.DataFrame) -> np.ndarray:
    z = (frame["a"] - frame["b"] + 0.5 * frame["c"]).to_numpy(dtype=np.float64) / 4.0
    return 1.0 / (1.0 + np.exp(-z))


def _logit_of(fn):
    def logit(frame: pd.DataFrame) -> np.ndarray:
        return scipy.special.logit(fn(frame))

    return logit


@pytest.mark.parametrize("bg", [BG_DISTINCT, BG_SAME], ids=["distinct", "repeated"])
@pytest.mark.parametrize("output", ["probability", "logit"])
def test_logit_output_averages_log_odds_and_probability_averages_probabilities(bg, output) -> None:
    # oracle: scipy.special.logit of each masked output, then the mean (shap's link="logit"
    # on a model output, averaged by the masker)
    ev = MaskedEvaluator(_sigmoid_abc, NAMES, _cols(X), _cols(bg), _spelled(output), 7)
    row_idx, masks = _pairs()
    fn = _sigmoid_abc if output == "probability" else _logit_of(_sigmoid_abc)
    expected = _expected_means(fn, X, bg, row_idx, masks)
    np.testing.assert_allclose(ev.coalitions(row_idx, masks), expected, rtol=0, atol=1e-13)
    base, full = ev.endpoints()
    assert base == pytest.approx(np.mean(fn(pd.DataFrame(bg, columns=NAMES))), rel=0, abs=1e-13)
    np.testing.assert_allclose(full, fn(pd.DataFrame(X, columns=NAMES)), rtol=0, atol=1e-13)


def _const(*values: float):
    """A model that returns ``values`` (repeated to the frame's length)."""
    return lambda frame: np.resize(np.array(values, dtype=np.float64), len(frame))


def _evaluator(predict, output: str) -> MaskedEvaluator:
    """Two background rows: ``endpoints`` first scores them (one call of two rows)."""
    x, bg = np.array([[1.0, 2.0, 3.0]]), np.array([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    return MaskedEvaluator(predict, NAMES, _cols(x), _cols(bg), _spelled(output), 100)


@pytest.mark.parametrize(
    ("output", "values", "expected"),
    [
        ("probability", (0.0, 1.0), [0.0, 1.0]),  # the ends of [0, 1] are probabilities
        ("value", (-3.5, 1e300), [-3.5, 1e300]),  # any finite number
        ("logit", (0.25, 0.5), [np.log(1 / 3), 0.0]),
    ],
    ids=["probability-ends", "value-any", "logit"],
)
def test_accepted_outputs(output, values, expected) -> None:
    base, _ = _evaluator(_const(*values), output).endpoints()
    assert base == pytest.approx(np.mean(expected), rel=1e-15)


@pytest.mark.parametrize(
    ("output", "values", "message"),
    [
        ("probability", (0.5, 1.5), r"probabilities in \[0, 1\]; got 1.5$"),
        ("probability", (-0.25, 0.5), r"probabilities in \[0, 1\]; got -0.25$"),
        ("probability", (0.5, np.nan), r"probabilities in \[0, 1\]; got nan$"),
        ("probability", (0.0, 1.5), r"probabilities in \[0, 1\]; got 1.5$"),  # 0.0 is fine
        ("probability", (1.0, -0.5), r"probabilities in \[0, 1\]; got -0.5$"),  # 1.0 is fine
        ("probability", (1.5, -0.5), r"probabilities in \[0, 1\]; got 1.5$"),  # the first
        ("logit", (2.0, 0.5), r"probabilities in \[0, 1\]; got 2.0$"),
        ("logit", (0.5, -1e-9), r"probabilities in \[0, 1\]; got -1e-09$"),
        ("logit", (0.0, 0.5), r"strictly inside \(0, 1\).*saturated model.*'probability'"),
        ("logit", (0.5, 1.0), r"strictly inside \(0, 1\)"),
        ("value", (0.5, np.inf), "predict must return finite values; got NaN or infinity"),
        ("value", (-np.inf, 0.5), "finite values"),
        ("value", (np.nan, 0.5), "finite values"),
    ],
    ids=["above-1", "below-0", "nan", "zero-then-above-1", "one-then-below-0", "two-bad",
         "logit-above-1", "logit-below-0", "logit-0", "logit-1", "value-inf", "value-neg-inf",
         "value-nan"],
)
@pytest.mark.filterwarnings("error")  # the ValueError alone: no numpy warning on the way
def test_rejected_outputs(output, values, message) -> None:
    ev = _evaluator(_const(*values), output)
    with pytest.raises(ValueError, match=message):
        ev.endpoints()


@pytest.mark.parametrize(
    ("result", "shape"),
    [(lambda n: np.zeros((n, 1)), r"\(2, 1\)"), (lambda n: np.zeros(n + 1), r"\(3,\)"),
     (lambda n: np.float64(0.5), r"\(\)")],
    ids=["column", "one-more", "scalar"],
)
@pytest.mark.parametrize("output", ["probability", "value"])
def test_wrong_shape_is_rejected(result, shape, output) -> None:
    ev = _evaluator(lambda frame: result(len(frame)), output)
    with pytest.raises(ValueError, match=r"predict must return shape \(2,\); got " + shape):
        ev.endpoints()


# ------------------------------------------------------------------ keys of wide inputs


def test_inputs_whose_code_product_passes_int64_are_kept_apart() -> None:
    # 17 columns with 16 distinct values each (explained rows and background together):
    # 16**17 = 2**68 combinations, more than one int64 key holds. Inputs that differ only in
    # the last column must still be scored apart (else they share one value and a mean is
    # wrong).
    names = tuple(f"f{j}" for j in range(17))
    weights = np.arange(1.0, 18.0)
    weights[16] = 1000.0

    def linear(frame: pd.DataFrame) -> np.ndarray:
        return frame[list(names)].to_numpy(dtype=np.float64) @ weights

    bg = np.zeros((16, 17))
    bg[:, :16] = np.arange(16.0)[:, None]
    bg[:, 16] = np.arange(16) % 2
    x = np.zeros((16, 17))
    x[:, 16] = np.arange(16.0)  # the rows differ only in the last column
    masks = np.ones((5, 17), dtype=bool)
    masks[0, 16] = False  # the first 16 from x: 2 distinct inputs of 16
    masks[2, [0, 16]] = False
    masks[3, :] = [True, False] * 8 + [False]
    row_idx = np.array([0, 0, 1, 2, 3], dtype=np.intp)
    rec = Recorder(linear)
    ev = MaskedEvaluator(rec, names, _cols(x), _cols(bg), "value", 1000)
    got = ev.coalitions(row_idx, masks)
    expected = _expected_means(linear, x, bg, row_idx, masks, names)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    assert got[0] == 500.0 and got[1] == 0.0
    assert sum(rec.sizes) < len(masks) * 16  # deduplicated


# ------------------------------------------------------------------ unique_rows


def _unique_cases() -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    return [
        rng.integers(0, 2, size=(40, 3)),
        rng.integers(0, 7, size=(60, 4)) * np.array([1, 0, 3, 1]),  # a constant-zero column
        np.array([[2, 0], [0, 5], [2, 0], [1, 1], [0, 5], [0, 4]]),
        np.array([[0, 9, 0], [1, 0, 0], [0, 0, 9]]),
        rng.integers(0, 2, size=(30, 61)),  # 2**61 combinations: one int64 key
        rng.integers(0, 2, size=(30, 62)),  # 2**62: two keys paired
        rng.integers(0, 2, size=(30, 64)),  # 2**64: no int64 holds a row
        rng.integers(0, 2, size=(50, 130)).astype(bool),  # masks are boolean: three groups
        np.repeat(rng.integers(0, 2, size=(6, 70)).astype(bool), 3, axis=0)[::-1],
        rng.integers(0, 3, size=(30, 45)),
        np.vstack([np.eye(63, dtype=np.int64)[:5]] * 2),
        np.zeros((4, 2), dtype=np.int64),
        rng.integers(0, 3, size=(1, 5)),
    ]


@pytest.mark.parametrize("a", _unique_cases(), ids=lambda a: "x".join(map(str, a.shape)))
def test_unique_rows_are_the_distinct_rows_in_first_seen_order(a) -> None:
    # brute force: a dict of row tuples keeps the order in which each first occurs
    first_seen: dict[tuple[int, ...], int] = {}
    for row in map(tuple, a.tolist()):
        first_seen.setdefault(row, len(first_seen))
    unique, inverse = unique_rows(a)
    assert unique.dtype == a.dtype and unique.shape == (len(first_seen), a.shape[1])
    np.testing.assert_array_equal(unique, np.array(list(first_seen), dtype=a.dtype))
    np.testing.assert_array_equal(inverse, [first_seen[r] for r in map(tuple, a.tolist())])


# ------------------------------------------------------------------ which inputs are equal


def _typed(frame: pd.DataFrame) -> np.ndarray:
    """Tells apart values that compare equal: 1, 1.0, True, np.float64(1.0), 1+0j, -0.0."""
    kinds = {int: 1.0, float: 10.0, bool: 100.0, np.float64: 1000.0, complex: 10000.0}
    o = frame["o"].to_numpy(dtype=object)
    code = np.array([kinds[type(v)] * (2.0 if np.signbit(np.real(v)) else 1.0) for v in o])
    return code + frame["z"].to_numpy(dtype=np.float64)


@pytest.mark.parametrize(
    "values",
    [[1, 1.0, True], [1.0, np.float64(1.0), 1], [0.0, -0.0, 0], [1 + 0j, 1.0, True]],
    ids=["int-float-bool", "float-npfloat-int", "zero-signs", "complex"],
)
def test_equal_values_of_other_types_are_separate_inputs(values) -> None:
    # the background repeats every row 3 times, so inputs are deduplicated; values that
    # compare equal but differ in type (or sign) are different model inputs all the same
    o_bg = np.empty(9, dtype=object)
    o_bg[:] = [values[k % 3] for k in range(9)]
    o_x = np.empty(2, dtype=object)
    o_x[:] = [values[0], values[2]]
    z_bg, z_x = np.repeat([0.5, 0.25, 0.125], 3), np.array([3.0, 5.0])
    rec = Recorder(_typed)
    ev = MaskedEvaluator(rec, ("o", "z"), [o_x, z_x], [o_bg, z_bg], "value", 1000)
    masks = np.tile(_all_masks(2), (2, 1))
    row_idx = np.repeat(np.arange(2), 4).astype(np.intp)
    got = ev.coalitions(row_idx, masks)
    x = np.column_stack([o_x, z_x.astype(object)])
    bg = np.column_stack([o_bg, z_bg.astype(object)])
    expected = _expected_means(_typed, x, bg, row_idx, masks, ("o", "z"))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    assert sum(rec.sizes) < len(masks) * 9  # deduplicated
    base, full = ev.endpoints()
    assert base == pytest.approx(np.mean(_typed(pd.DataFrame(bg, columns=["o", "z"]))), abs=1e-12)
    np.testing.assert_allclose(full, _typed(pd.DataFrame(x, columns=["o", "z"])), atol=1e-12)


@pytest.mark.parametrize("n_values", [127, 128, 255, 256, 32767, 32768, 40000])
def test_categorical_codes_keep_every_category(n_values) -> None:
    # past 127 (int8) and 32767 (int16) distinct strings the codes need a wider type; the
    # model must still see each original string (a wrapped code would show another, or NaN)
    strings = np.array([f"s{k}" for k in range(n_values)], dtype=object)
    seen: list[pd.Series] = []

    def predict(frame: pd.DataFrame) -> np.ndarray:
        seen.append(frame["s"])
        return frame["s"].astype(str).str.slice(1).astype(np.int64).to_numpy(dtype=np.float64)

    ev = MaskedEvaluator(predict, ("s",), [strings[-1:]], [strings], "value", 10**6)
    base, full = ev.endpoints()
    assert isinstance(seen[0].dtype, pd.CategoricalDtype)
    assert seen[0].tolist() == strings.tolist()
    assert base == (n_values - 1) / 2 and full.tolist() == [n_values - 1]


# ------------------------------------------------------------------ when inputs are deduplicated


def _scored_rows(row_idx: list[int], n_x: int) -> int:
    """Rows sent to predict for one feature, one background row, every feature present
    (so pair k's input is explained row ``row_idx[k]``)."""
    rec = Recorder(lambda frame: frame["a"].to_numpy(dtype=np.float64))
    x, bg = np.arange(n_x, dtype=np.float64) + 0.5, np.array([-1.0])
    ev = MaskedEvaluator(rec, ("a",), [x], [bg], "value", 10**6)
    idx = np.array(row_idx, dtype=np.intp)
    got = ev.coalitions(idx, np.ones((len(idx), 1), dtype=bool))
    np.testing.assert_array_equal(got, x[idx])
    return sum(rec.sizes)


@pytest.mark.parametrize(
    ("n_distinct", "deduplicated"), [(7, True), (8, False)], ids=["70%", "80%"]
)
def test_deduplicated_when_at_most_70_percent_of_inputs_are_distinct(
    n_distinct, deduplicated
) -> None:
    # _DEDUP_MIN_SAVING = 0.3: 10 inputs, 7 distinct is a saving of 30%, enough
    row_idx = list(range(n_distinct)) + [0] * (10 - n_distinct)
    assert _scored_rows(row_idx, 10) == (n_distinct if deduplicated else 10)


def test_the_first_64_pairs_decide_for_a_short_block() -> None:
    # 100 pairs: the decision is made on the first max(100 // 8, 64) = 64 of them. They hold
    # 45 distinct inputs (more than 70% of 64 = 44.8): not deduplicated, although the first
    # 63 (44 distinct), the first 65 (45) or all 100 (45) would be.
    row_idx = list(range(44)) + [0] * 19 + [44] + [0] * 36
    assert len(row_idx) == 100 and len(set(row_idx[:64])) == 45
    assert _scored_rows(row_idx, 45) == 100


def test_the_first_eighth_of_the_pairs_decides_for_a_long_block() -> None:
    # 1024 pairs: the decision is made on the first 1024 // 8 = 128, which hold 89 distinct
    # inputs (at most 70% of 128 = 89.6): deduplicated. The first 64 (all distinct), 113 (89)
    # or 146 (107 distinct) would not be.
    row_idx = list(range(89)) + [0] * 39 + list(range(89, 107)) + [0] * (1024 - 146)
    assert len(set(row_idx[:128])) == 89
    assert _scored_rows(row_idx, 107) == 107


@pytest.mark.parametrize(
    ("n_bg", "sizes"),
    [(2_000_001, [1, 1, 1, 1]), (1_000_000, [2, 2]), (666_667, [2, 2])],
    ids=["1-pair-blocks", "2-pair-blocks", "2-pair-blocks-666667"],
)
def test_inputs_are_deduplicated_in_blocks_of_at_most_2_million_triples(n_bg, sizes) -> None:
    # a block holds max(1, 2_000_000 // n_bg) (row, coalition) pairs; inputs are scored once
    # per block, so the same two inputs (x, then the background) are scored again in each
    rec = Recorder(lambda frame: frame["a"].to_numpy(dtype=np.float64))
    ev = MaskedEvaluator(rec, ("a",), [np.array([1.0])], [np.zeros(n_bg)], "value", 10**6)
    masks = np.array([[True], [False], [True], [False]])
    got = ev.coalitions(np.zeros(4, dtype=np.intp), masks)
    np.testing.assert_array_equal(got, [1.0, 0.0, 1.0, 0.0])
    assert rec.sizes == sizes


# ------------------------------------------------------------------ inconsistent columns


@pytest.mark.parametrize(
    ("names", "n_x", "n_bg"), [(("a", "b"), 3, 2), (("a", "b"), 2, 3)], ids=["x-wider", "bg-wider"]
)
def test_explained_and_background_columns_must_match(names, n_x, n_bg) -> None:
    with pytest.raises(ValueError, match="zip"):
        MaskedEvaluator(_abc, names, [np.zeros(1)] * n_x, [np.zeros(2)] * n_bg, "value", 10)


def test_names_must_match_the_columns() -> None:
    total = lambda frame: frame.sum(axis=1).to_numpy(dtype=np.float64)  # noqa: E731
    ev = MaskedEvaluator(total, ("a", "b"), [np.zeros(1)] * 3, [np.zeros(2)] * 3, "value", 10)
    with pytest.raises(ValueError, match="zip"):
        ev.endpoints()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_few_valued_columns_every_coalition_equals_the_definition(seed) -> None:
    # columns of 2, 3, 3 and 5 values: many masked inputs repeat (deduplicated) and distinct
    # inputs have keys built from several codes, which must not collide
    rng = np.random.default_rng(seed)
    names = ("a", "b", "c", "d")
    levels = [np.array([0.0, 1.0]), np.array([-1.0, 0.0, 2.0]), np.array([3.0, 5.0, 7.0]),
              np.arange(5.0) * 10.0]
    x = np.column_stack([rng.choice(v, size=5) for v in levels])
    bg = np.column_stack([rng.choice(v, size=6) for v in levels])

    def model(frame: pd.DataFrame) -> np.ndarray:  # distinct output for distinct inputs
        v = frame[list(names)].to_numpy(dtype=np.float64)
        return v @ np.array([1.0, 0.1, 0.01, 0.0001]) + np.sin(v[:, 0] * v[:, 1] + v[:, 3])

    masks = np.tile(_all_masks(4), (5, 1))
    row_idx = np.repeat(np.arange(5), 16).astype(np.intp)
    rec = Recorder(model)
    ev = MaskedEvaluator(rec, names, _cols(x), _cols(bg), "value", 1000)
    got = ev.coalitions(row_idx, masks)
    expected = _expected_means(model, x, bg, row_idx, masks, names)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    assert len(set(rec.rows())) == sum(rec.sizes) < len(masks) * len(bg)  # each input once


@pytest.mark.parametrize("n_blocks", [1, 2], ids=["17-columns", "33-columns"])
def test_a_key_group_stops_before_its_code_product_reaches_2_to_the_62(n_blocks) -> None:
    # Blocks of 16 columns: codes 0..15 in 15 of them and 0..2 in the last (code = value: the
    # explained row of zeros comes first), then one more column of 16 codes. A block gives
    # 3 * 2**60 combinations; with the next column too, 3 * 2**64, which no int64 holds: one
    # key over both would give the input "last column of the block = 1" (key 2**60) and the
    # input "next column = 11" (33 * 2**60, 2**60 modulo 2**64) the same key, so one of them
    # would be scored for both. The second block checks the next key group as well.
    m = 16 * n_blocks + 1
    names = tuple(f"f{j}" for j in range(m))
    weights = np.arange(1.0, m + 1.0)

    def linear(frame: pd.DataFrame) -> np.ndarray:
        return frame[list(names)].to_numpy(dtype=np.float64) @ weights

    bg = np.repeat(np.arange(16.0)[:, None], m, axis=1)
    bg[:, 15::16] = (np.arange(16) % 3)[:, None]
    x = np.zeros((1, m))
    probe = 16 * n_blocks - 1
    masks = np.ones((4, m), dtype=bool)
    masks[0, probe] = False  # inputs: zeros but the probe column = 0, 1 or 2
    masks[1, probe + 1] = False  # inputs: zeros but the next column = 0 .. 15
    masks[2, : probe + 1] = False  # many distinct keys before the last column, which is 0
    rec = Recorder(linear)
    ev = MaskedEvaluator(rec, names, _cols(x), _cols(bg), "value", 1000)
    got = ev.coalitions(np.zeros(4, dtype=np.intp), masks)
    expected = [_masked_mean(linear, x[0], bg, mask, names) for mask in masks]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    assert got[0] == weights[probe] * 15 / 16 and got[1] == weights[probe + 1] * 7.5
    assert sorted(rec.rows()) == sorted(set(_triples(x, bg, [0] * 4, masks)))  # each once


def test_float_negative_zero_is_another_input() -> None:
    # float columns are compared by bit pattern: -0.0 is not 0.0 to a model using copysign
    def signed(frame: pd.DataFrame) -> np.ndarray:
        return np.copysign(1.0, frame["s"].to_numpy()) + frame["t"].to_numpy()

    rec = Recorder(signed)
    x = [np.array([-0.0, 0.0]), np.array([5.0, 5.0])]
    bg = [np.array([0.0, -0.0] * 4), np.zeros(8)]
    ev = MaskedEvaluator(rec, ("s", "t"), x, bg, "value", 1000)
    masks = np.tile(_all_masks(2), (2, 1))
    got = ev.coalitions(np.repeat(np.arange(2), 4).astype(np.intp), masks)
    # row 0 (s = -0.0): s absent -> mean copysign over the background = 0; s present -> -1
    np.testing.assert_array_equal(got, [0.0, 5.0, -1.0, 4.0, 0.0, 5.0, 1.0, 6.0])
    assert sum(rec.sizes) < 8 * 8  # deduplicated


@pytest.mark.parametrize(
    "values",
    [
        np.array([3, -2, 7, 3, -2, 7], dtype=np.int64),
        np.array([True, False, True, True, False, False]),
        np.array([250, 3, 250, 0, 3, 3], dtype=np.uint8),
        np.array(["2024-01-01", "2024-03-01", "2024-01-01", "2023-12-31", "2024-03-01",
                  "2024-01-01"], dtype="datetime64[ns]"),
        np.array([1, 5, 1, 9, 5, 5], dtype="timedelta64[s]"),
        np.array([1 + 2j, -1j, 1 + 2j, 0j, -1j, 1 + 2j]),
    ],
    ids=lambda v: v.dtype.name,
)
def test_non_float_columns_reach_predict_with_their_dtype_and_values(values) -> None:
    seen: list[pd.Series] = []

    def predict(frame: pd.DataFrame) -> np.ndarray:
        seen.append(frame["v"])
        position = {v: k for k, v in enumerate(pd.unique(values))}
        return np.array([10.0 ** position[v] for v in frame["v"].to_numpy()]) + frame["z"]

    x = [values[:2], np.array([0.5, 0.25])]
    bg = [values[2:], np.array([1.0, 2.0, 1.0, 2.0])]
    ev = MaskedEvaluator(predict, ("v", "z"), x, bg, "value", 1000)
    masks = np.tile(_all_masks(2), (2, 1))
    row_idx = np.repeat(np.arange(2), 4).astype(np.intp)
    got = ev.coalitions(row_idx, masks)
    assert {s.dtype for s in seen} == {values.dtype}
    x_rows = np.array(list(zip(*x, strict=True)), dtype=object)
    bg_rows = np.array(list(zip(*bg, strict=True)), dtype=object)
    oracle = [
        np.mean([predict(pd.DataFrame({"v": np.array([v], dtype=values.dtype), "z": [z]}))[0]
                 for v, z in np.where(m, x_rows[r], bg_rows)])
        for r, m in zip(row_idx, masks, strict=True)
    ]
    np.testing.assert_allclose(got, oracle, rtol=0, atol=1e-12)


def test_missing_times_are_inputs_of_their_own() -> None:
    # NaT is a value like any other: the input (NaT, 1.0) is not the input (d1, 0.0)
    d0, d1 = np.datetime64("2024-01-01", "ns"), np.datetime64("2024-06-01", "ns")
    nat = np.datetime64("NaT", "ns")

    def predict(frame: pd.DataFrame) -> np.ndarray:
        t = frame["t"]
        return np.where(t.isna(), 100.0, (t - d0).dt.days.fillna(0)) + frame["z"].to_numpy()

    rec = Recorder(predict)
    x = [np.array([d0]), np.array([0.0])]
    bg = [np.array([d1, nat]), np.array([1.0, 1.0])]
    ev = MaskedEvaluator(rec, ("t", "z"), x, bg, "value", 1000)
    masks = np.array([[False, True], [False, False], [True, True], [True, True], [True, False]])
    got = ev.coalitions(np.zeros(5, dtype=np.intp), masks)
    days = float((d1 - d0) // np.timedelta64(1, "D"))
    expected = [(days + 100.0) / 2, (days + 1.0 + 101.0) / 2, 0.0, 0.0, 1.0]
    np.testing.assert_array_equal(got, expected)
    assert sum(rec.sizes) == 6  # 6 distinct inputs of 10: deduplicated


def test_unhashable_values_reach_predict_as_they_are() -> None:
    # lists are not hashable: they are told apart by identity (two equal lists are two
    # values) and passed to predict as the same objects
    items = [[4.0], [2.0, 3.0], [4.0]]
    col = np.empty(3, dtype=object)
    col[:] = items

    def predict(frame: pd.DataFrame) -> np.ndarray:
        assert frame["l"].dtype == object
        assert all(any(v is item for item in items) for v in frame["l"])
        return np.array([sum(v) for v in frame["l"]]) + frame["z"].to_numpy()

    ev = MaskedEvaluator(predict, ("l", "z"), [col[:1], np.array([0.5])],
                         [col[1:], np.array([1.0, 2.0])], "value", 1000)
    got = ev.coalitions(np.zeros(4, dtype=np.intp), _all_masks(2))
    np.testing.assert_array_equal(got, [(5.0 + 1.0 + 4.0 + 2.0) / 2, (5.0 + 4.0) / 2 + 0.5,
                                        4.0 + 1.5, 4.0 + 0.5])
