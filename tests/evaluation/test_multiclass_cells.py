"""Issue #42 item 1: the multiclass bootstrap drawn over cells of rows.

The cells are checked against brute force (Python counters, exact means), the draws against
the law of the tests' own row bootstrap (:mod:`row_bootstrap`: cell counts are multinomial
with the cells' shares), and the metrics' point estimates against scikit-learn, identical
with and without resamples.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from modelgate.evaluation.multiclass import evaluate_multiclass
from modelgate.evaluation.multiclass_cells import (
    CellTable,
    class_cells,
    resampled_counts,
    value_cells,
)
from scipy.stats import rankdata
from sklearn import metrics as skm
from support.row_bootstrap import interval_agrees, row_resamples


def test_class_cells_are_the_distinct_label_prediction_triples() -> None:
    rng = np.random.default_rng(0)
    y, a, b = (rng.integers(0, 4, size=300) for _ in range(3))
    table, y_c, (a_c, b_c) = class_cells(y, [a, b], 4)
    expected = Counter(zip(y.tolist(), a.tolist(), b.tolist(), strict=True))
    got = {(int(y_c[j]), int(a_c[j]), int(b_c[j])): int(table.counts[j])
           for j in range(len(table.counts))}
    assert got == dict(expected)
    assert [(y_c[j], a_c[j], b_c[j]) for j in table.cell] == list(zip(y, a, b, strict=True))


def test_value_cells_are_exact_when_they_fit_and_share_leading_bits_when_not() -> None:
    rng = np.random.default_rng(1)
    values = -np.log(rng.random(3000))
    table, means = value_cells(values)
    assert len(table.counts) == len(np.unique(values)) == 3000  # fits: one value a cell
    assert np.array_equal(means[table.cell], values)
    table, means = value_cells(values, max_cells=64)
    assert len(table.counts) <= 64
    for j in range(len(table.counts)):
        inside = values[table.cell == j]
        assert means[j] == pytest.approx(inside.mean(), rel=1e-12)
        assert inside.max() <= 2 * inside.min()  # one binade at least: same exponent


@pytest.mark.parametrize("counts", [[200, 100, 60, 40], [3, 1, 2, 1, 1, 4, 2]],
                         ids=["multinomial", "rows"])
def test_cell_counts_have_the_row_bootstraps_law(counts: list[int]) -> None:
    """Mean n p and covariance n (diag(p) - p p') of the cell counts, as the tests' own row
    bootstrap draws them (the second table has under 8 rows a cell: rows are drawn)."""
    cell = np.repeat(np.arange(len(counts)), counts)
    table = CellTable(cell, np.array(counts))
    drawn = np.vstack(list(resampled_counts(table, n_bootstrap=4000, seed=3)))
    oracle = np.stack([np.bincount(cell[i], minlength=len(counts))
                       for i in row_resamples(len(cell), 4000, seed=33)])
    n, p = len(cell), np.array(counts) / len(cell)
    assert drawn.shape == (4000, len(counts)) and np.all(drawn.sum(axis=1) == n)
    sd = np.sqrt(n * p * (1 - p))
    assert np.all(np.abs(drawn.mean(axis=0) - n * p) < 5 * sd / np.sqrt(4000))
    want = n * (np.diag(p) - np.outer(p, p))
    for got in (np.cov(drawn.T), np.cov(oracle.T)):
        assert got == pytest.approx(want, abs=0.1 * want.max())


def _data(seed: int, n: int, c: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, c, size=n)
    logits = rng.normal(size=(n, c))
    logits[np.arange(n), y] += 2.0
    proba = np.round(np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True), 3)  # ties
    return y, proba / proba.sum(axis=1, keepdims=True)


def test_many_class_point_estimates_are_sklearns_with_or_without_resamples() -> None:
    y, proba = _data(4, 1500, 40)
    y[:40] = np.arange(40)
    with_ = evaluate_multiclass(y, np.asfortranarray(proba), n_bootstrap=30, seed=2).metrics
    without = evaluate_multiclass(y, proba, n_bootstrap=0).metrics
    assert [m.value for m in with_] == [m.value for m in without]  # bit for bit
    labels = list(range(40))
    m = {e.name: e for e in with_}
    assert m["roc_auc_ovr_macro"].value == pytest.approx(
        skm.roc_auc_score(y, proba, multi_class="ovr", labels=labels), abs=1e-12)
    assert m["log_loss"].value == pytest.approx(skm.log_loss(y, proba, labels=labels), abs=1e-12)
    pred = proba.argmax(axis=1)
    assert m["macro_f1"].value == pytest.approx(
        skm.f1_score(y, pred, labels=labels, average="macro", zero_division=np.nan), abs=1e-12)
    for e in with_:
        assert e.ci_lower <= e.value <= e.ci_upper, e.name


def _macro_auc(y: np.ndarray, proba: np.ndarray) -> float:
    """Mean one-vs-rest Mann-Whitney AUC (NaN when a class is absent or every row)."""
    aucs = []
    for k in range(proba.shape[1]):
        pos = y == k
        n_pos, n_neg = int(pos.sum()), int((~pos).sum())
        if n_pos == 0 or n_neg == 0:
            return float("nan")
        ranks = rankdata(proba[:, k])
        aucs.append((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))
    return float(np.mean(aucs))


def test_a_class_of_one_row_keeps_the_row_bootstraps_percentile_auc_interval() -> None:
    """No DeLong variance with one row in a class: the macro AUC's percentile interval of
    a row bootstrap (resamples without the class left out), as the tests' own."""
    y, proba = _data(5, 150, 3)
    y[y == 2] = 1
    y[0] = 2
    got = evaluate_multiclass(y, proba, n_bootstrap=400, seed=6).by_name()["roc_auc_ovr_macro"]
    oracle = np.array([_macro_auc(y[i], proba[i]) for i in row_resamples(len(y), 300, seed=66)])
    assert np.isfinite(got.ci_lower) and got.ci_lower < got.value < got.ci_upper
    assert interval_agrees(got.ci_lower, got.ci_upper, oracle, 0.95, n_core=400)
