"""The precision, F1 and Brier deltas of two models on the same rows, against oracles here.

The oracle is the textbook delta method on the rows: each row's influence on a ratio of
means ``sum(a) / sum(b)`` is ``(a_i - m b_i) / mean(b)``; the delta's variance is the mean
square of the candidate's minus the champion's influence over ``n``; the quantile
Student's t with Satterthwaite's (1946) ``2 V^2 / (sum d^4 - V^2 / n)`` degrees of
freedom for precision; for F1 the normal quantile, on the rows plus a pseudo-row of each
of the 8 kinds weighted 1/8.  The Brier delta: the t interval of
the mean per-row squared-error difference with the same degrees of freedom.  A
brute-force row bootstrap (this test's own resamples) checks the standard error, and the
8 cell counts are counted from the rows.
"""
from __future__ import annotations

import numpy as np
import pytest
from modelgate.evaluation.metrics import compare
from modelgate.evaluation.paired_ratios import paired_label_cells, ratio_delta_interval
from modelgate.evaluation.performance import performance_from_statistics
from modelgate.evaluation.sufficient import collect, merge
from scipy.special import expit
from scipy.stats import norm
from scipy.stats import t as student_t
from support.row_bootstrap import row_resamples


def _pair(seed: int, n: int, *, confident: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Labels, a candidate and a noisier champion (the bench's binary populations)."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    d, beta, beta0, tau = (4.0, 4.0, -8.0, 0.5) if confident else (1.5, 1.0, -0.75, 0.7)
    x = rng.normal(d * y + 0.4 * (rng.random(n) < 0.4), 1.0)
    return y, expit(beta * x + beta0), expit(beta * (x + rng.normal(0.0, tau, n)) + beta0)


def _ratio_rows(metric: str, y: np.ndarray, predicted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row ``a`` and ``b`` of ``metric = sum(a) / sum(b)``."""
    tp = (y * predicted).astype(float)
    if metric == "precision":  # tp / (tp + fp)
        return tp, predicted.astype(float)
    return 2 * tp, (y + predicted).astype(float)  # f1 = 2 tp / (2 tp + fp + fn)


def _delta_method(metric: str, y: np.ndarray, new: np.ndarray, old: np.ndarray,
                  weight: np.ndarray) -> tuple[float, float, np.ndarray]:
    """Delta, standard error and each row's influence difference, rows weighted."""
    n = weight.sum()
    influence, ratios = [], []
    for predicted in (new, old):
        a, b = _ratio_rows(metric, y, predicted)
        m = (weight @ a) / (weight @ b)
        ratios.append(m)
        influence.append((a - m * b) / ((weight @ b) / n))
    d = influence[0] - influence[1]
    return ratios[0] - ratios[1], float(np.sqrt(weight @ d**2) / n), d


def _oracle(metric: str, y: np.ndarray, new: np.ndarray,
            old: np.ndarray) -> tuple[float, float, float, float]:
    """``(delta, lower, upper, se)`` by the delta method on the rows; precision with t of
    Satterthwaite's df; F1 with the normal quantile on the rows plus one pseudo-row of each
    of the 8 (label, prediction, prediction) kinds weighted 1/8 (Agresti and Min's
    matched-pairs adjustment, scaled), widened to hold the rows' own delta."""
    n = len(y)
    delta, se, d = _delta_method(metric, y, new, old, np.ones(n))
    if metric == "precision":
        v = np.sum(d**2)
        half = student_t.ppf(0.975, max(2 * v * v / (np.sum(d**4) - v * v / n), 1.0)) * se
        return delta, delta - half, delta + half, se
    kinds = np.array([(k >> 2, (k >> 1) & 1, k & 1) for k in range(8)])
    centre, padded_se, _ = _delta_method(
        metric, np.r_[y, kinds[:, 0]], np.r_[new, kinds[:, 1]], np.r_[old, kinds[:, 2]],
        np.r_[np.ones(n), np.full(8, 1 / 8)])
    half = norm.ppf(0.975) * padded_se
    return delta, min(centre - half, delta), max(centre + half, delta), se


@pytest.mark.parametrize("metric", ["precision", "f1"])
@pytest.mark.parametrize("confident", [True, False], ids=["confident", "moderate"])
def test_precision_and_f1_deltas_are_the_delta_method_interval(metric: str, confident: bool) -> None:
    """Mapped over 3 parts, in one process through the cell table, and row-level
    ``compare``: the same interval, the oracle's."""
    y, s, h = _pair(31, 240, confident=confident)
    new, old = (s >= 0.5).astype(int), (h >= 0.5).astype(int)
    delta, lower, upper, _ = _oracle(metric, y, new, old)
    assert np.sum(new != old) > 0
    for parts in (1, 3):
        stats = merge([collect(y[i::parts], s[i::parts], threshold=0.5, champion_score=h[i::parts],
                               champion_threshold=0.5) for i in range(parts)])
        got = performance_from_statistics(stats, n_bootstrap=50, seed=0).comparison.by_name()[metric]
        assert got.delta == pytest.approx(delta, abs=1e-12)
        assert (got.ci_lower, got.ci_upper) == pytest.approx((lower, upper), abs=1e-12)
    rows = compare(s, h, y, n_bootstrap=50, seed=0).by_name()[metric]
    assert (rows.ci_lower, rows.ci_upper) == pytest.approx((lower, upper), abs=1e-12)


@pytest.mark.parametrize("metric", ["precision", "f1"])
def test_the_standard_error_is_the_row_bootstrap_s(metric: str) -> None:
    """At 3,000 rows the delta method's standard error and the standard deviation of the
    delta over 400 row resamples agree within their noise (about 4 % at 400 resamples)."""
    y, s, h = _pair(8, 3000, confident=False)
    new, old = (s >= 0.5).astype(int), (h >= 0.5).astype(int)
    _, lower, upper, se = _oracle(metric, y, new, old)
    idx = row_resamples(len(y), 400, seed=3)
    draws = []
    for predicted in (new, old):
        a, b = _ratio_rows(metric, y, predicted)
        draws.append(a[idx].sum(axis=1) / b[idx].sum(axis=1))
    boot_se = np.std(draws[0] - draws[1], ddof=1)
    cells = np.bincount(4 * y + 2 * new + old, minlength=8)
    assert ratio_delta_interval(metric, cells, 0.95) == pytest.approx((lower, upper), abs=1e-12)  # type: ignore[arg-type]
    assert se == pytest.approx(boot_se, rel=0.15)


def test_the_8_cells_come_from_the_two_paired_tables() -> None:
    rng = np.random.default_rng(4)
    y, new, old = (rng.random((3, 500)) < [[0.4], [0.5], [0.45]]).astype(int)
    right_new, right_old = new == y, old == y
    correct = tuple(int(np.sum(a & b)) for a, b in [(right_new, right_old), (right_new, ~right_old),
                                                    (~right_new, right_old), (~right_new, ~right_old)])
    pos, fn, fo = y == 1, new == 1, old == 1
    found = tuple(int(np.sum(pos & a & b)) for a, b in [(fn, fo), (fn, ~fo), (~fn, fo), (~fn, ~fo)])
    counted = np.bincount(4 * y + 2 * new + old, minlength=8)
    assert paired_label_cells(correct, found).tolist() == counted.tolist()  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must not exceed"):
        paired_label_cells((1, 0, 0, 0), (2, 0, 0, 0))


def test_no_interval_when_undefined_or_without_spread() -> None:
    """A model with no predicted positive has no precision; models whose differing rows
    contribute nothing (both precisions 0) leave the delta to MOVER, never a point."""
    assert ratio_delta_interval("precision", [10, 0, 0, 0, 5, 0, 0, 0], 0.95) is None
    assert ratio_delta_interval("precision", [10, 0, 2, 1, 5, 0, 0, 0], 0.95) is None
    y = np.r_[np.zeros(30, int), np.ones(10, int)]
    s = np.r_[np.full(28, 0.1), 0.9, 0.9, np.full(10, 0.2)]  # two false positives, no tp
    h = np.r_[np.full(28, 0.1), 0.9, 0.1, np.full(10, 0.2)]  # one
    d = compare(s, h, y, n_bootstrap=200, seed=0).by_name()["precision"]
    assert d.delta == 0.0 and d.ci_lower < 0.0 < d.ci_upper


@pytest.mark.parametrize("confident", [True, False], ids=["confident", "moderate"])
def test_brier_delta_is_the_t_interval_of_the_mean_difference(confident: bool) -> None:
    """Mean of ``(s - y)^2 - (h - y)^2`` -+ t with Satterthwaite's df times its standard
    error, by the formulas here; the same mapped, in one process and row-level."""
    y, s, h = _pair(17, 240, confident=confident)
    d = (s - y) ** 2 - (h - y) ** 2
    n, dev = len(d), d - d.mean()
    v = np.sum(dev**2)
    df = max(2 * v * v / (np.sum(dev**4) - v * v / n), 1.0)
    half = student_t.ppf(0.975, df) * d.std(ddof=1) / np.sqrt(n)
    expected = (d.mean() - half, d.mean() + half)
    for parts in (1, 3):
        stats = merge([collect(y[i::parts], s[i::parts], threshold=0.5, champion_score=h[i::parts],
                               champion_threshold=0.5) for i in range(parts)])
        got = performance_from_statistics(stats, n_bootstrap=50, seed=0).comparison.by_name()["brier"]
        assert got.delta == pytest.approx(d.mean(), abs=1e-12)
        assert (got.ci_lower, got.ci_upper) == pytest.approx(expected, abs=1e-12)
    rows = compare(s, h, y, n_bootstrap=50, seed=0).by_name()["brier"]
    assert (rows.ci_lower, rows.ci_upper) == pytest.approx(expected, abs=1e-12)
