"""A segment's rest read off the column total's prefix sums: the same AUC (bit for bit), DeLong
variance and intervals as the rest's own table (rest_of), and scikit-learn on the complement."""

from __future__ import annotations

import math

import numpy as np
import pytest
from modelgate.evaluation.bootstrap_cells import delong_variance
from modelgate.evaluation.rest_sums import (
    delong_from_sums,
    rest_roc_sums,
    table_roc_sums,
    total_table,
)
from modelgate.evaluation.segment_intervals import (
    closed_form_estimates,
    column_total,
    loss_power_sums,
    rest_estimates,
    rest_of,
)
from modelgate.evaluation.sufficient import collect
from sklearn.metrics import roc_auc_score


def _rows(seed: int, n: int, decimals: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.35).astype(np.int8)
    s = np.clip(rng.normal(0.35 + 0.3 * y, 0.2), 0, 1)
    return y, (s if decimals is None else np.round(s, decimals)), rng.integers(0, 6, n)


@pytest.mark.parametrize(("seed", "decimals"), [(0, 1), (1, 2), (2, None)])
def test_rest_sums_equal_the_rest_tables_own(seed: int, decimals: int | None) -> None:
    rng = np.random.default_rng(seed)
    keys = np.arange(300, dtype=np.float64)
    neg, pos = rng.integers(0, 4, 300), rng.integers(0, 3, 300)
    total = total_table(keys, neg, pos)
    for size in (0, 1, 7, 150, 300):
        at = np.sort(rng.choice(300, size, replace=False))
        part_neg, part_pos = rng.integers(0, neg[at] + 1), rng.integers(0, pos[at] + 1)
        rest_neg, rest_pos = neg.copy(), pos.copy()
        rest_neg[at] -= part_neg
        rest_pos[at] -= part_pos
        got, want = rest_roc_sums(total, at, part_neg, part_pos), table_roc_sums(rest_neg, rest_pos)
        assert (got.n_neg, got.n_pos, got.twice_u) == (want.n_neg, want.n_pos, want.twice_u)
        assert got.q10 == pytest.approx(want.q10, rel=1e-12)
        assert got.q01 == pytest.approx(want.q01, rel=1e-12)
        assert delong_from_sums(got) == pytest.approx(delong_variance(rest_neg, rest_pos), rel=1e-11)


@pytest.mark.parametrize(("decimals", "max_distinct"), [(2, 1 << 22), (None, 1 << 22), (None, 500)])
def test_rest_estimates_equal_the_rest_table_and_sklearn(decimals: int | None, max_distinct: int) -> None:
    y, s, g = _rows(3, 3000, decimals)
    parts = [collect(y[g == k], s[g == k], threshold=0.5, max_distinct=max_distinct)
             for k in range(6)]
    total = column_total(parts)
    for k, part in enumerate(parts):
        own = loss_power_sums(part)
        got = rest_estimates(total, part.candidate, own, 0.95)
        want = closed_form_estimates(rest_of(total.stats, part.candidate), total.power_sums - own, 0.95)
        for name, w in want.items():
            e = got[name]
            assert e.value == w.value or (math.isnan(e.value) and math.isnan(w.value)), name
            assert e.ci_lower == pytest.approx(w.ci_lower, abs=1e-12, nan_ok=True), name
            assert e.ci_upper == pytest.approx(w.ci_upper, abs=1e-12, nan_ok=True), name
        if max_distinct > 3000:  # exact tables: the complement's AUC is scikit-learn's
            assert got["roc_auc"].value == pytest.approx(roc_auc_score(y[g != k], s[g != k]),
                                                         abs=1e-15)


def test_a_second_column_over_the_same_rows_shares_the_first_ones_table() -> None:
    y, s, g = _rows(4, 2000, 2)
    other = np.random.default_rng(5).integers(0, 3, 2000)
    first = column_total([collect(y[g == k], s[g == k], threshold=0.5) for k in range(6)])
    parts = [collect(y[other == k], s[other == k], threshold=0.5) for k in range(3)]
    shared, fresh = column_total(parts, first), column_total(parts)
    assert shared.table is first.table
    assert np.array_equal(shared.table.keys, fresh.table.keys)
    assert shared.table.sums == fresh.table.sums
    assert shared.stats.log_loss_sum == fresh.stats.log_loss_sum
    assert np.array_equal(shared.power_sums, fresh.power_sums)
    with pytest.raises(ValueError, match="different rows"):
        column_total(parts[:2], first)
