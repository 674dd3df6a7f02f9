"""The bootstrap's cell table against oracles written here: cells from ``math.frexp`` (the
leading mantissa bits of ``s`` or ``1 - s``), the fitted level by trying every level, the
replicates against an explicit row bootstrap (rows drawn, metrics recomputed by
scikit-learn or by their textbook formulas), DeLong's variance from per-row placement values."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from modelgate.evaluation.bootstrap_cells import (
    EXACT_LEVEL,
    MAX_CELLS,
    correct_pairs,
    delong_variance,
    jackknife_metrics,
    marginal_cells,
    merge_tables,
    replicate_metrics,
    score_codes,
    table_from_rows,
    within_concordance,
)
from sklearn import metrics as skm

Key = tuple[int, ...]


def _cell(s: float, level: int) -> Key:
    """A sortable key of the score's cell: the binade and leading ``level`` mantissa bits of
    ``s`` below 1/2, of ``1 - s`` from 1/2 on (order reversed there)."""
    low = s < 0.5
    u = s if low else 1.0 - s
    if u == 0.0:
        return (-1,) if low else (2,)
    m, e = math.frexp(u)  # u = m 2**e, 1/2 <= m < 1
    bits = math.floor(m * 2.0 ** (level + 1))  # the leading bit and `level` more
    return (0, e, bits) if low else (1, -e, -bits)


def _code_key(s: float, threshold: float, level: int) -> tuple[Key, bool]:
    return _cell(s, level), s >= threshold


def _row_keys(y: np.ndarray, s: np.ndarray, h: np.ndarray | None, level: int,
              t_s: float = 0.5, t_h: float = 0.5) -> list[tuple]:
    return [(int(y[i]), _code_key(float(s[i]), t_s, level),
             _code_key(float(h[i]), t_h, level) if h is not None else None)
            for i in range(len(y))]


def _losses(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Log loss (clipped at the float64 epsilon) and squared error per row."""
    eps = np.finfo(np.float64).eps
    q = np.clip(np.where(y == 1, p, 1.0 - p), eps, 1.0 - eps)
    return np.column_stack([-np.log(q), (y - p) ** 2])


def _table(y: np.ndarray, s: np.ndarray, h: np.ndarray | None, max_cells: int,
           t_s: float = 0.5, t_h: float = 0.5):
    champ = (np.zeros(len(y), np.uint64) if h is None else score_codes(h, t_h, EXACT_LEVEL))
    losses = np.hstack([_losses(y, s), _losses(y, h) if h is not None else np.zeros((len(y), 2))])
    return table_from_rows(y.astype(np.int8), score_codes(s, t_s, EXACT_LEVEL), champ, losses,
                           max_cells=max_cells), losses


def _expected_level(keys_at: dict[int, list[tuple]], max_cells: int) -> int:
    fits = [lv for lv in range(EXACT_LEVEL + 1) if len(set(keys_at[lv])) <= max_cells]
    return max(fits, default=0)


def _rows(seed: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scores in (0, 1) on both sides of 1/2, some tied, some 2**-40 apart (cells that only
    split past level 20)."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.45).astype(np.int64)
    s = np.clip(rng.beta(2 + 3 * y, 5 - 3 * y), 1e-6, 1 - 1e-6)
    s[: n // 4] = np.round(s[: n // 4], 1).clip(0.05, 0.95)  # ties
    s[n // 4: n // 2] = s[n // 2: 3 * n // 4] + 2.0 ** -40 * np.where(s[n // 2: 3 * n // 4] < 0.5, 1, -1)
    h = np.clip(s + rng.normal(0, 0.15, n), 1e-6, 1 - 1e-6)
    return y, s, h


# ----------------------------------------------------------------------------- score codes

EDGE_SCORES = [0.0, 5e-300, 1e-17, 0.1, 0.25, np.nextafter(0.25, 0.0), 0.3, 0.3 + 2.0 ** -50,
               np.nextafter(0.5, 0.0), 0.5, np.nextafter(0.5, 1.0), 0.6, 0.75, np.nextafter(0.75, 1.0),
               0.999, 1.0 - 2.0 ** -53, 1.0]


@pytest.mark.parametrize("level", [0, 1, 2, 7, 19, 20, 31, 51, 52])
def test_codes_order_and_group_the_scores_as_their_leading_mantissa_bits(level: int) -> None:
    rng = np.random.default_rng(level)
    s = np.r_[EDGE_SCORES, rng.random(60), 0.5 + rng.random(20) * 2.0 ** -20,
              rng.random(20) * 2.0 ** -30].astype(np.float64)
    threshold = 0.3  # inside a cell at the coarse levels: the predicted bit splits it
    codes = score_codes(s, threshold, level)
    assert codes.dtype == np.uint64
    keys = [_code_key(float(v), threshold, level) for v in s]
    for i in range(len(s)):
        for j in range(len(s)):
            assert (codes[i] < codes[j]) == (keys[i] < keys[j]), (s[i], s[j])
            assert (codes[i] == codes[j]) == (keys[i] == keys[j]), (s[i], s[j])
    assert ((codes & np.uint64(1)) == (s >= threshold)).all()


def test_minus_zero_is_coded_as_zero() -> None:
    assert score_codes(np.array([-0.0]), 0.5, 52)[0] == score_codes(np.array([0.0]), 0.5, 52)[0]
    assert score_codes(np.array([-0.0, 0.0]), 0.5, 3).tolist() == [0, 0]


# ----------------------------------------------------------------------------- the table

def _check_table(table, y, s, h, losses, level: int) -> None:
    keys = _row_keys(y, s, h, level)
    cells = sorted(set(keys), key=lambda k: (k[0], k[1], k[2] or ((0,), False)))
    assert table.level == level
    assert len(table.counts) == len(cells)
    where = {k: i for i, k in enumerate(cells)}
    row_cell = np.array([where[k] for k in keys])
    np.testing.assert_array_equal(table.counts, np.bincount(row_cell, minlength=len(cells)))
    assert table.counts.dtype == np.int64
    np.testing.assert_array_equal(table.label, [c[0] for c in cells])
    for j in range(4):
        np.testing.assert_allclose(table.loss_sums[:, j],
                                   np.bincount(row_cell, weights=losses[:, j], minlength=len(cells)),
                                   rtol=1e-12, atol=0)
    # each cell's codes are its scores' codes at the level
    first = np.array([np.flatnonzero(row_cell == i)[0] for i in range(len(cells))])
    np.testing.assert_array_equal(table.candidate, score_codes(s[first], 0.5, level))
    if h is not None:
        np.testing.assert_array_equal(table.champion, score_codes(h[first], 0.5, level))
    else:
        assert (table.champion == 0).all()
    np.testing.assert_array_equal(table.cells[:, 0], table.label)
    np.testing.assert_array_equal(table.cells[:, 1], table.candidate)


@pytest.mark.parametrize("max_cells", [1, 2, 5, 9, 16, 30, 45, 60, 75, 90, 119, 10_000])
def test_the_table_is_at_the_finest_level_that_fits_with_the_rows_counted_per_cell(
        max_cells: int) -> None:
    y, s, h = _rows(0, 120)
    keys_at = {lv: _row_keys(y, s, h, lv) for lv in range(EXACT_LEVEL + 1)}
    level = _expected_level(keys_at, max_cells)
    table, losses = _table(y, s, h, max_cells)
    _check_table(table, y, s, h, losses, level)


def test_the_level_is_found_past_the_packed_levels() -> None:
    """Pairs of scores 2**-40 apart: every pair is one cell up to about level 35."""
    y, s, h = _rows(1, 80)
    keys_at = {lv: _row_keys(y, s, None, lv) for lv in range(EXACT_LEVEL + 1)}
    exact = len(set(keys_at[EXACT_LEVEL]))
    for max_cells in (exact - 1, exact - 3, len(set(keys_at[25])), len(set(keys_at[20]))):
        level = _expected_level(keys_at, max_cells)
        assert level >= 20
        table, losses = _table(y, s, None, max_cells)
        _check_table(table, y, s, None, losses, level)


def test_a_table_that_fits_at_the_exact_level_keeps_every_score() -> None:
    y = np.array([0, 1, 1, 0, 1])
    s = np.array([0.2, 0.9, 0.9, 0.2 + 2.0 ** -52, 0.4])
    for max_cells in (4, 5):
        table, losses = _table(y, s, None, max_cells)
        _check_table(table, y, s, None, losses, 52)
    table, losses = _table(y, s, None, 3)
    assert table.level < 52
    _check_table(table, y, s, None, losses, table.level)


@pytest.mark.parametrize("max_cells", [4, 12, 40, 1 << 15])
def test_merged_tables_are_the_table_of_all_their_rows(max_cells: int) -> None:
    y, s, h = _rows(2, 88)
    whole, losses = _table(y, s, h, max_cells)
    parts = [_table(y[a:b], s[a:b], h[a:b], max_cells)[0] for a, b in ((0, 7), (7, 50), (50, 88))]
    if max_cells in (12, 40):  # parts at different levels, cut to the coarsest
        assert len({p.level for p in parts}) > 1
    for order in (parts, parts[::-1]):
        merged = merge_tables(order, max_cells=max_cells)
        _check_table(merged, y, s, h, losses, whole.level)
    one = merge_tables(parts[:1], max_cells=max_cells)
    assert one.level == parts[0].level
    np.testing.assert_array_equal(one.counts, parts[0].counts)


def test_merging_cuts_finer_tables_to_the_coarsest_level() -> None:
    """A coarse table (level 1) and a fine one (level 52) of scores within [1/4, 1/2)."""
    s_coarse = np.array([0.26, 0.3, 0.4, 0.45, 0.26, 0.3, 0.4, 0.45])
    y_coarse = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    coarse, _ = _table(y_coarse, s_coarse, None, 4)
    assert coarse.level == 1  # [1/4, 3/8) and [3/8, 1/2) per label
    s_fine, y_fine = np.array([0.27, 0.49]), np.array([1, 0])
    fine, _ = _table(y_fine, s_fine, None, 16)
    assert fine.level == 52
    merged = merge_tables([fine, coarse], max_cells=16)
    assert merged.level == 1
    np.testing.assert_array_equal(merged.counts, [2, 3, 3, 2])
    np.testing.assert_array_equal(merged.label, [0, 0, 1, 1])


# ----------------------------------------------------------------------------- replicates


def _marginal(table, model: int):
    keys, inverse, predicted = marginal_cells(table.candidate if model == 0 else table.champion)
    return keys, inverse, predicted


def _score_table(y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    keys, inv = np.unique(s, return_inverse=True)
    pos = np.bincount(inv, weights=y, minlength=len(keys)).astype(np.int64)
    return keys, np.bincount(inv, minlength=len(keys)) - pos, pos


def _row_cells(table, y, s, h) -> np.ndarray:
    """Index of each row's table cell, found by its key."""
    cells = list(zip(table.label.tolist(), table.candidate.tolist(), table.champion.tolist(),
                     strict=True))
    where = {c: i for i, c in enumerate(cells)}
    cand = score_codes(s, 0.5, table.level)
    champ = score_codes(h, 0.5, table.level)
    return np.array([where[(int(y[i]), int(cand[i]), int(champ[i]))] for i in range(len(y))])


def _expected_auc(pos: np.ndarray, neg: np.ndarray, twice_kappa: np.ndarray) -> float:
    """Pairs in different marginal cells counted exactly, pairs inside one at its concordance."""
    between = sum(pos[j] * neg[i] for i in range(len(pos)) for j in range(i + 1, len(pos)))
    within = sum(pos[i] * neg[i] * twice_kappa[i] / 2.0 for i in range(len(pos)))
    return (between + within) / (pos.sum() * neg.sum())


def _brute_concordance(y, s, marg_of_row: np.ndarray, k: int) -> np.ndarray:
    """Twice the share of each marginal cell's positive-negative pairs ordered right, ties half."""
    out = np.ones(k)
    for c in range(k):
        p, q = s[(marg_of_row == c) & (y == 1)], s[(marg_of_row == c) & (y == 0)]
        if len(p) and len(q):
            out[c] = 2.0 * np.mean((p[:, None] > q[None, :]) + 0.5 * (p[:, None] == q[None, :]))
    return out


@pytest.mark.parametrize("model", [0, 1])
def test_replicates_at_exact_cells_are_those_of_the_row_bootstrap(model: int) -> None:
    y, s, h = _rows(3, 72)
    table, losses = _table(y, s, h, 1 << 15)
    assert table.level == 52
    scores = (s, h)[model]
    keys, inverse, predicted = _marginal(table, model)
    sk, neg, pos = _score_table(y, scores)
    kappa = within_concordance(sk, neg, pos, 0.5, 52, keys)
    np.testing.assert_array_equal(kappa, np.ones(len(keys)))  # a cell is one score: all ties
    rng = np.random.default_rng(4)
    weights = rng.multinomial(len(y), np.full(len(y), 1.0 / len(y)), size=25)
    weights[0] = 1  # the data itself
    cell = _row_cells(table, y, s, h)
    draws = np.zeros((len(weights), len(table.counts)))
    for b, w in enumerate(weights):
        np.add.at(draws[b], cell, w)
    got = replicate_metrics(draws, table, model, kappa, inverse, predicted)
    assert set(got) == {"roc_auc", "log_loss_var", "accuracy", "precision", "recall", "f1",
                        "log_loss", "brier", "brier_var"}
    for b, w in enumerate(weights):
        yy, ss = np.repeat(y, w), np.repeat(scores, w)
        ll = np.repeat(losses[:, 2 * model], w)
        se2 = np.repeat(losses[:, 2 * model + 1], w)
        pred = (ss >= 0.5).astype(int)
        expected = {
            "roc_auc": skm.roc_auc_score(yy, ss), "accuracy": skm.accuracy_score(yy, pred),
            "precision": skm.precision_score(yy, pred), "recall": skm.recall_score(yy, pred),
            "f1": skm.f1_score(yy, pred), "log_loss": skm.log_loss(yy, ss),
            "brier": skm.brier_score_loss(yy, ss),
            "log_loss_var": np.var(ll, ddof=1) / len(ll),  # squared standard error of the mean
            "brier_var": np.var(se2, ddof=1) / len(se2),
        }
        for name, value in expected.items():
            assert got[name][b] == pytest.approx(value, rel=1e-10, abs=1e-14), (name, b)


@pytest.mark.parametrize("model", [0, 1])
def test_replicates_at_coarse_cells_count_pairs_inside_a_cell_at_its_concordance(model: int) -> None:
    y, s, h = _rows(5, 80)
    table, losses = _table(y, s, h, 24)
    assert table.level < 20
    scores = (s, h)[model]
    keys, inverse, predicted = _marginal(table, model)
    sk, neg, pos = _score_table(y, scores)
    kappa = within_concordance(sk, neg, pos, 0.5, table.level, keys)
    cell = _row_cells(table, y, s, h)
    marg = inverse[cell]
    np.testing.assert_allclose(kappa, _brute_concordance(y, scores, marg, len(keys)), rtol=1e-12)
    assert (kappa != 1.0).any()  # pairs inside a cell that are not all ties
    np.testing.assert_array_equal(predicted, [bool(np.all(scores[marg == c] >= 0.5))
                                              for c in range(len(keys))])
    rng = np.random.default_rng(6)
    weights = rng.multinomial(len(y), np.full(len(y), 1.0 / len(y)), size=20)
    weights[0] = 1
    draws = np.zeros((len(weights), len(table.counts)))
    for b, w in enumerate(weights):
        np.add.at(draws[b], cell, w)
    got = replicate_metrics(draws, table, model, kappa, inverse, predicted)
    mean_loss = np.array([losses[cell == c, 2 * model: 2 * model + 2].mean(axis=0)
                          for c in range(len(table.counts))])
    for b, w in enumerate(weights):
        yy, ss = np.repeat(y, w), np.repeat(scores, w)
        pred = (ss >= 0.5).astype(int)  # a cell never straddles the threshold: exact
        p_c = np.bincount(marg, weights=w * y, minlength=len(keys))
        n_c = np.bincount(marg, weights=w * (1 - y), minlength=len(keys))
        cell_loss = np.repeat(mean_loss[cell], w, axis=0)  # each row's loss: its cell's mean
        expected = {
            "roc_auc": _expected_auc(p_c, n_c, kappa), "accuracy": skm.accuracy_score(yy, pred),
            "precision": skm.precision_score(yy, pred), "recall": skm.recall_score(yy, pred),
            "f1": skm.f1_score(yy, pred), "log_loss": cell_loss[:, 0].mean(),
            "brier": cell_loss[:, 1].mean(),
            "log_loss_var": np.var(cell_loss[:, 0], ddof=1) / len(yy),
            "brier_var": np.var(cell_loss[:, 1], ddof=1) / len(yy),
        }
        for name, value in expected.items():
            assert got[name][b] == pytest.approx(value, rel=1e-10, abs=1e-14), (name, b)
    # on the data the replicate is the exact point estimate
    assert got["roc_auc"][0] == pytest.approx(skm.roc_auc_score(y, scores), rel=1e-12)
    assert got["log_loss"][0] == pytest.approx(skm.log_loss(y, scores), rel=1e-12)


def test_the_log_loss_variance_of_identical_losses_is_zero_not_negative() -> None:
    y, s = np.array([1, 1, 1, 0]), np.array([0.7, 0.7, 0.7, 0.1])
    table, _ = _table(y, s, None, 16)
    keys, inverse, predicted = _marginal(table, 0)
    draws = np.array([[0.0, 3.0], [0.0, 9.0]])  # every resampled row the same positive
    got = replicate_metrics(draws, table, 0, np.ones(len(keys)), inverse, predicted)
    assert got["log_loss_var"].tolist() == [0.0, 0.0]
    assert np.isnan(got["roc_auc"]).all()  # no negative


# ----------------------------------------------------------------------------- jackknife


@pytest.mark.parametrize("model", [0, 1])
def test_jackknife_at_coarse_cells_is_the_statistic_with_one_row_of_the_cell_removed(
        model: int) -> None:
    y, s, h = _rows(7, 60)
    table, losses = _table(y, s, h, 20)
    assert table.level < 52
    scores = (s, h)[model]
    keys, inverse, predicted = _marginal(table, model)
    sk, neg, pos = _score_table(y, scores)
    kappa = within_concordance(sk, neg, pos, 0.5, table.level, keys)
    cell = _row_cells(table, y, s, h)
    marg = inverse[cell]
    got = jackknife_metrics(table, model, kappa, inverse, predicted)
    mean_loss = np.array([losses[cell == c, 2 * model: 2 * model + 2].mean(axis=0)
                          for c in range(len(table.counts))])
    for c in range(len(table.counts)):
        i = np.flatnonzero(cell == c)[0]  # any row of the cell: they share label and prediction
        keep = np.arange(len(y)) != i
        yy, pred = y[keep], (scores[keep] >= 0.5).astype(int)
        p_c = np.bincount(marg[keep], weights=yy, minlength=len(keys))
        n_c = np.bincount(marg[keep], weights=1 - yy, minlength=len(keys))
        rest = np.repeat(mean_loss, table.counts - (np.arange(len(table.counts)) == c), axis=0)
        expected = {
            "roc_auc": _expected_auc(p_c, n_c, kappa), "accuracy": skm.accuracy_score(yy, pred),
            "precision": skm.precision_score(yy, pred, zero_division=np.nan),
            "recall": skm.recall_score(yy, pred), "f1": skm.f1_score(yy, pred),
            "log_loss": rest[:, 0].mean(), "brier": rest[:, 1].mean(),
        }
        assert set(got) == set(expected)
        for name, value in expected.items():
            assert got[name][c] == pytest.approx(value, rel=1e-10, abs=1e-14), (name, c)


def test_jackknife_without_the_only_predicted_positive_has_no_precision() -> None:
    y, s = np.array([0, 0, 1, 1, 1]), np.array([0.1, 0.2, 0.3, 0.4, 0.9])
    table, _ = _table(y, s, None, 16)
    keys, inverse, predicted = _marginal(table, 0)
    got = jackknife_metrics(table, 0, np.ones(len(keys)), inverse, predicted)
    # cells: (0, 0.1), (0, 0.2), (1, 0.3), (1, 0.4), (1, 0.9)
    assert np.isnan(got["precision"][4]) and got["precision"][:4].tolist() == [1.0] * 4
    assert got["recall"].tolist() == [1 / 3, 1 / 3, 0.5, 0.5, 0.0]
    assert got["accuracy"].tolist() == [0.5, 0.5, 0.75, 0.75, 0.5]


def test_jackknife_of_one_row_is_undefined_without_a_warning() -> None:
    table, _ = _table(np.array([1]), np.array([0.7]), None, 16)
    keys, inverse, predicted = _marginal(table, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "invalid value" once reached the CLI's stderr
        got = jackknife_metrics(table, 0, np.ones(len(keys)), inverse, predicted)
    assert all(np.isnan(v).all() for v in got.values()), got


# ----------------------------------------------------------------------------- DeLong, pairs


def _delong_rows(y: np.ndarray, s: np.ndarray) -> float:
    """DeLong, DeLong and Clarke-Pearson (1988) on the rows: per-row placement values."""
    p, q = s[y == 1], s[y == 0]
    psi = (p[:, None] > q[None, :]) + 0.5 * (p[:, None] == q[None, :])
    v10, v01 = psi.mean(axis=1), psi.mean(axis=0)
    return float(np.var(v10, ddof=1) / len(p) + np.var(v01, ddof=1) / len(q))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_delong_variance_from_score_counts_is_the_row_level_delong_variance(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 40 + 10 * seed
    y = (rng.random(n) < 0.3 + 0.2 * seed).astype(int)
    s = np.round(rng.normal(y * 0.8, 1.0), 1)  # ties within and across labels
    _, neg, pos = _score_table(y, s)
    assert delong_variance(neg, pos) == pytest.approx(_delong_rows(y, s), rel=1e-12)


def test_delong_variance_needs_two_of_each_class() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NaN from the guard, not from a 0/0
        assert math.isnan(delong_variance([1, 1, 0], [0, 0, 1]))  # one positive
        assert math.isnan(delong_variance([0, 1, 0], [1, 1, 1]))  # one negative
        assert math.isnan(delong_variance([0, 0], [1, 1]))
        assert math.isnan(delong_variance([2, 0], [0, 1]))
    y, s = np.array([0, 1, 0, 1]), np.array([0.1, 0.2, 0.3, 0.4])
    assert delong_variance([1, 0, 1, 0], [0, 1, 0, 1]) == pytest.approx(_delong_rows(y, s), rel=1e-12)
    assert isinstance(delong_variance([1, 1, 0], [0, 1, 1]), float)


def test_correct_pairs_count_the_rows_each_model_gets_right() -> None:
    y, s, h = _rows(8, 100)
    for t_s, t_h in ((0.5, 0.5), (0.3, 0.6)):
        table, _ = _table(y, s, h, 12, t_s, t_h)
        new, old = (s >= t_s) == (y == 1), (h >= t_h) == (y == 1)
        assert correct_pairs(table) == (int(np.sum(new & old)), int(np.sum(new & ~old)),
                                        int(np.sum(~new & old)), int(np.sum(~new & ~old)))


def test_within_concordance_of_a_cell_missing_from_the_scores_is_one() -> None:
    """A marginal cell past every score cell (and one before) gets 1."""
    keys = np.array([0.3, 0.31])
    marginal = score_codes(np.array([0.1, 0.3, 0.9]), 0.5, 2)
    got = within_concordance(keys, np.array([1, 0]), np.array([0, 1]), 0.5, 2, marginal)
    assert got.tolist() == [1.0, 2.0, 1.0]
    assert got.dtype == np.float64


def test_default_sizes() -> None:
    assert MAX_CELLS == 2 ** 15 and EXACT_LEVEL == 52


def test_the_table_is_frozen_and_slotted() -> None:
    import dataclasses

    table, _ = _table(np.array([0, 1]), np.array([0.2, 0.9]), None, 16)
    with pytest.raises(dataclasses.FrozenInstanceError):
        table.level = 3  # type: ignore[misc]
    assert not hasattr(table, "__dict__")


@pytest.mark.parametrize("distinct, champion", [(300, False), (40, True), (10**9, False)])
def test_counting_rows_into_cells_by_hashing_equals_sorting_them(distinct: int, champion: bool) -> None:
    """table_from_rows counts repeated scores by hashing; the cells, counts and loss sums must
    be those of the sort it replaces, to the last bit (10**9 distinct scores: the sort itself)."""
    from modelgate.evaluation.bootstrap_cells import _aggregate, _aggregate_rows, score_codes

    rng = np.random.default_rng(7)
    n = 50_000
    y = rng.integers(0, 2, n).astype(np.int8)
    cand = score_codes(np.round(rng.random(n) * distinct) / distinct, 0.5, 52)
    champ = (score_codes(np.round(rng.random(n) * distinct) / distinct, 0.5, 52)
             if champion else np.zeros(n, np.uint64))
    losses = rng.random((n, 4)) * 3
    want = _aggregate(y, cand, champ, np.ones(n, np.int64), losses, 52)
    got = _aggregate_rows(y, cand, champ, losses)
    for field in ("label", "candidate", "champion", "counts", "loss_sums"):
        a, b = getattr(want, field), getattr(got, field)
        assert a.dtype == b.dtype and np.array_equal(a, b), field
    assert got.level == want.level == 52
