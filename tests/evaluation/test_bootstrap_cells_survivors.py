"""Cases for the mutation survivors of ``evaluation/bootstrap_cells.py``.

Oracles, written here and never through the module: scores whose float64 mantissas differ
first at a known bit, so the finest level at which they share a cell is known by hand
(a level keeps that many mantissa bits after the leading one), and the cells, counts and
concordances of three- to five-row tables counted by hand; the sample variance of equal
losses (0); the call signatures the house style asks for (data positional, options
keyword-only); no RuntimeWarning where the function silences its own 0/0.
"""

from __future__ import annotations

import numpy as np
import pytest
from modelgate.evaluation.bootstrap_cells import (
    EXACT_LEVEL,
    jackknife_metrics,
    marginal_cells,
    merge_tables,
    replicate_metrics,
    score_codes,
    table_from_rows,
    within_concordance,
)


def _fit_pair(s: np.ndarray, max_cells: int):
    y = np.zeros(len(s), dtype=np.int8)
    codes = score_codes(s, 0.5, EXACT_LEVEL)
    return table_from_rows(y, codes, np.zeros(len(s), np.uint64), np.ones((len(s), 4)),
                           max_cells=max_cells)


# 3/4 - 2**-54 is not a float64: the high side stops at bit 51
PAIRS = [("low", b) for b in range(1, EXACT_LEVEL + 1)] + [("high", b) for b in range(1, EXACT_LEVEL)]


@pytest.mark.parametrize(("side", "bit"), PAIRS, ids=[f"{s}-bit{b}" for s, b in PAIRS])
def test_two_scores_apart_at_mantissa_bit_k_share_a_cell_up_to_level_k_minus_1(
        bit: int, side: str) -> None:
    # 1/4 = 1.0 x 2**-2 and 1/4 + 2**-(2 + k) = (1 + 2**-k) x 2**-2: equal in the first
    # k - 1 mantissa bits, different in bit k, so with one cell allowed the finest level
    # that fits is k - 1 (both under 1/2, one label, one predicted label).  From 1/2 on a
    # score is cut by 1 - s: 3/4 and 3/4 - 2**-(2 + k) give the same pair (exact in float64
    # for k <= 51; 3/4 - 2**-54 rounds to 3/4).  Pins the binary search's bounds: the top
    # level below the table's own (k = 52 -> 51) and the level under the packed ones
    # (k = 19 -> 18) are both reachable.
    d = 2.0 ** -(2 + bit)
    s = np.array([0.25, 0.25 + d]) if side == "low" else np.array([0.75, 0.75 - d])
    assert s[0] != s[1]
    exact = _fit_pair(s, 2)
    assert exact.level == EXACT_LEVEL and exact.counts.tolist() == [1, 1]
    fitted = _fit_pair(s, 1)
    assert fitted.level == bit - 1
    assert fitted.counts.tolist() == [2]


@pytest.mark.parametrize("loss", [0.1, 0.2, 0.7])
def test_the_log_loss_variance_of_equal_losses_is_never_negative(loss: float) -> None:
    # Every row has log loss `loss`, so every resample's rows are equal and their sample
    # variance is 0 (np.var of equal values).  Computed as E[l**2] - E[l]**2 it rounds to
    # -1.7e-18 and the like for 0.1, 0.2, 0.7 at some counts; the replicate must stay in
    # the variance's range, [0, rounding].  Pins the clamp at 0.
    y = np.array([1, 1, 1, 0], dtype=np.int8)
    s = np.array([0.7, 0.7, 0.7, 0.1])
    losses = np.zeros((4, 4))
    losses[:, 0] = loss
    table = table_from_rows(y, score_codes(s, 0.5, EXACT_LEVEL), np.zeros(4, np.uint64), losses,
                            max_cells=16)
    assert table.counts.tolist() == [1, 3]  # (0, 0.1) and (1, 0.7)
    keys, inverse, predicted = marginal_cells(table.candidate)
    ks = np.arange(2.0, 12.0)
    draws = np.vstack([np.column_stack([0 * ks, ks]), np.column_stack([ks, 0 * ks]),
                       np.column_stack([ks, ks])])
    got = replicate_metrics(draws, table, 0, np.ones(len(keys)), inverse, predicted)["log_loss_var"]
    assert np.var(np.full(5, loss), ddof=1) == 0.0
    assert (got >= 0.0).all() and (got <= 1e-16).all(), got


# 15/16 and 15/16 - 2**-24 (1 - s: 1/16 and (1 + 2**-20) / 16, apart at mantissa bit 20): one
# cell up to level 19, two from level 20 on.  Rows: label 0 at both scores, label 1 at 15/16.
BOTH_LABELS = [
    # max_cells, level, labels, counts (cells in (label, score code) order; a code from 1/2
    # on sorts by 1 - s reversed, so 15/16 - 2**-24 comes before 15/16)
    (3, EXACT_LEVEL, [0, 0, 1], [1, 1, 1]),  # every distinct (label, score): 3 cells fit
    (2, 19, [0, 1], [2, 1]),  # level 20 has 3 cells, 19 has 2: the last packed level
    (1, 0, [0, 1], [2, 1]),  # two labels are two cells at every level: the level-0 fallback
]


@pytest.mark.parametrize(("max_cells", "level", "labels", "counts"), BOTH_LABELS,
                         ids=["exact", "level19", "fallback"])
def test_rows_of_both_labels_at_one_score_are_two_cells_at_every_level(
        max_cells: int, level: int, labels: list[int], counts: list[int]) -> None:
    # The label is part of every cell's key, on the sorted path (levels over 19) and in the
    # packed key (levels up to 19; over 7/8, 1 - s < 1/8, a level-19 code takes all its 31
    # bits): a cell never holds rows of both labels.  Expected cells counted by hand above.
    y = np.array([0, 1, 0], dtype=np.int8)
    s = np.array([0.9375, 0.9375, 0.9375 - 2.0 ** -24])
    table = table_from_rows(y, score_codes(s, 0.5, EXACT_LEVEL), np.zeros(3, np.uint64),
                            np.ones((3, 4)), max_cells=max_cells)
    assert table.level == level
    assert table.label.tolist() == labels
    assert table.counts.tolist() == counts
    assert table.loss_sums[:, 0].tolist() == [float(c) for c in counts]


def test_jackknife_metrics_warns_about_nothing() -> None:
    # Both labels present, and a cell whose removal leaves precision undefined (the only
    # predicted positive): the metrics come back (NaN where undefined) without a
    # RuntimeWarning -- the function's own 0/0 is silenced, nothing else divides by zero.
    import warnings

    y = np.array([0, 0, 1, 1, 1], dtype=np.int8)
    s = np.array([0.1, 0.2, 0.3, 0.4, 0.9])
    table = table_from_rows(y, score_codes(s, 0.5, EXACT_LEVEL), np.zeros(5, np.uint64),
                            np.ones((5, 4)), max_cells=16)
    keys, inverse, predicted = marginal_cells(table.candidate)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = jackknife_metrics(table, 0, np.ones(len(keys)), inverse, predicted)
    # recall without each row: positives 3 - label, true positives 1 unless it is the 0.9 row
    assert got["recall"].tolist() == [1 / 3, 1 / 3, 1 / 2, 1 / 2, 0.0]
    assert np.isnan(got["precision"][4])


def test_options_are_keyword_only_and_the_data_passable_by_keyword() -> None:
    # House style: data positional (or by name), options keyword-only.
    y = np.array([0, 1], dtype=np.int8)
    codes = score_codes(np.array([0.2, 0.9]), 0.5, EXACT_LEVEL)
    champ, losses = np.zeros(2, np.uint64), np.ones((2, 4))
    with pytest.raises(TypeError):
        table_from_rows(y, codes, champ, losses, 16)  # type: ignore[misc]
    table = table_from_rows(y=y, candidate=codes, champion=champ, losses=losses, max_cells=16)
    assert table.counts.tolist() == [1, 1]
    with pytest.raises(TypeError):
        merge_tables([table], 16)  # type: ignore[misc]
    merged = merge_tables(parts=[table, table], max_cells=16)
    assert merged.counts.tolist() == [2, 2]


@pytest.mark.parametrize(("pos", "neg", "expected"), [
    ([1, 0, 1], [0, 1, 0], [1.0, 2.0]),  # the positive (0.31) above the negative (0.3)
    ([1, 1, 0], [0, 0, 1], [1.0, 0.0]),  # the negative (0.31) above the positive (0.3)
    ([1, 1, 1], [0, 1, 1], [1.0, 1.0]),  # of 4 pairs one right, one wrong, two ties: 2 x 2/4
], ids=["right", "wrong", "mixed"])
def test_within_concordance_of_the_last_of_several_score_cells(
        pos: list[int], neg: list[int], expected: list[float]) -> None:
    # At level 2, 0.1 ([1/16, 1/8) cut to 2 bits) and 0.3, 0.31 ([1/4, 5/16)) are two score
    # cells; the marginal cells are those two, the second the last score cell.  Twice the
    # share of its positive-negative pairs ordered right (ties half), counted by hand;
    # 0.1's cell has no pair (a lone positive): 1.
    keys = np.array([0.1, 0.3, 0.31])
    marginal = score_codes(np.array([0.1, 0.3]), 0.5, 2)
    assert marginal[0] != marginal[1]
    got = within_concordance(keys, np.array(neg), np.array(pos), 0.5, 2, marginal)
    assert got.tolist() == expected
