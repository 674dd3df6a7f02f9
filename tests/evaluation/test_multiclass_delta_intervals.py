"""Multiclass paired deltas: the per-class recall delta is MOVER from the two models' Wilson
intervals (Newcombe's method 10), the per-class precision delta the delta method's t
interval, the log-loss delta a studentized bootstrap of the paired per-row differences;
oracles written here."""

from __future__ import annotations

import numpy as np
import pytest
from modelgate.evaluation.multiclass_compare import compare_multiclass
from scipy import stats
from support.row_bootstrap import row_resamples

Z = stats.norm.ppf(0.975)


def _wilson(k: int, n: int) -> tuple[float, float]:
    """Wilson score interval, textbook form (Wilson 1927)."""
    p = k / n
    centre = (p + Z**2 / (2 * n)) / (1 + Z**2 / n)
    half = Z / (1 + Z**2 / n) * np.sqrt(p * (1 - p) / n + Z**2 / (4 * n**2))
    return max(centre - half, 0.0), min(centre + half, 1.0)


def _mover(p1: float, e1: tuple[float, float], p2: float, e2: tuple[float, float],
           r: float) -> tuple[float, float]:
    """Zou and Donner (2008): the difference's ends from each estimate's own ends."""
    (l1, u1), (l2, u2) = e1, e2
    d = p1 - p2
    return (d - np.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2 - 2 * r * (p1 - l1) * (u2 - p2)),
            d + np.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2 - 2 * r * (u1 - p1) * (p2 - l2)))


def _pair(seed: int, n: int = 300) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=n)
    logits = rng.normal(size=(n, 3)) + 1.5 * np.eye(3)[y]
    noisy = logits + rng.normal(scale=0.8, size=(n, 3))  # the champion: a noisier posterior
    soft = [np.exp(x) / np.exp(x).sum(axis=1, keepdims=True) for x in (logits, noisy)]
    return y, soft[0], soft[1]


@pytest.mark.parametrize("k", [0, 1, 2])
def test_recall_delta_is_newcombe_method_10_on_the_class_rows(k: int) -> None:
    y, new, old = _pair(3)
    d = compare_multiclass(y, new, old, n_bootstrap=200, seed=1).by_name()[f"recall[{k}]"]
    rows = y == k
    a, b = new.argmax(axis=1)[rows] == k, old.argmax(axis=1)[rows] == k
    both, only_a, only_b, neither = (a & b).sum(), (a & ~b).sum(), (~a & b).sum(), (~a & ~b).sum()
    phi = (both * neither - only_a * only_b) / np.sqrt(
        float((both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)))
    n = int(rows.sum())
    expected = _mover(a.mean(), _wilson(int(a.sum()), n), b.mean(), _wilson(int(b.sum()), n), phi)
    assert d.delta == pytest.approx(a.mean() - b.mean(), abs=1e-12)
    assert (d.ci_lower, d.ci_upper) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("k", [0, 2])
def test_precision_delta_is_the_delta_method_t_interval_of_the_class(k: int) -> None:
    """Each row's influence on the class's precision ``sum(hit & called) / sum(called)``
    under the candidate minus under the champion; the delta's standard error the root of
    their sum of squares over ``n``; Student's t with Satterthwaite's (1946) ``2 V^2 /
    (sum d^4 - V^2 / n)`` degrees of freedom.  The standard error is also this test's own
    row bootstrap's."""
    y, new, old = _pair(8)
    d = compare_multiclass(y, new, old, n_bootstrap=200, seed=2).by_name()[f"precision[{k}]"]
    a, b = new.argmax(axis=1) == k, old.argmax(axis=1) == k
    hit = (y == k).astype(float)
    n = len(y)
    influence = []
    for called in (a.astype(float), b.astype(float)):
        m = (hit * called).sum() / called.sum()
        influence.append((hit * called - m * called) / called.mean())
    dev = influence[0] - influence[1]
    v = np.sum(dev**2)
    se = np.sqrt(v) / n
    half = stats.t.ppf(0.975, 2 * v * v / (np.sum(dev**4) - v * v / n)) * se
    delta = hit[a].mean() - hit[b].mean()
    assert d.delta == pytest.approx(delta, abs=1e-12)
    assert (d.ci_lower, d.ci_upper) == pytest.approx((delta - half, delta + half), abs=1e-12)
    draws = [hit[i][a[i]].mean() - hit[i][b[i]].mean() for i in row_resamples(n, 400, 77)]
    assert se == pytest.approx(np.std(draws, ddof=1), rel=0.15)


def test_a_shared_prediction_of_a_class_keeps_the_exact_zero_delta() -> None:
    """The two models call class 2 on the same rows (they differ between 0 and 1 only): its
    recall and precision deltas are [0, 0]; class 0's are not."""
    y, new, _ = _pair(4)
    old = new.copy()
    flip = new.argmax(axis=1) != 2
    old[flip] = old[flip][:, [1, 0, 2]]
    report = compare_multiclass(y, new, old, n_bootstrap=200, seed=3).by_name()
    for name in ("recall[2]", "precision[2]"):
        assert (report[name].delta, report[name].ci_lower, report[name].ci_upper) == (0, 0, 0)
    assert report["recall[0]"].ci_lower < report["recall[0]"].ci_upper


def test_log_loss_delta_of_a_constant_per_row_difference_is_that_difference() -> None:
    """The champion gives every true class half the candidate's probability: each row's
    loss is log 2 higher (by hand), and so is every resample's mean: [-log 2, -log 2]."""
    y, new, _ = _pair(5, n=200)
    old = new.copy()
    rows = np.arange(len(y))
    true = new[rows, y]
    old[rows, y] = true / 2
    others = np.ones(3, dtype=bool)[None, :] & (np.arange(3)[None, :] != y[:, None])
    old[others] = (new[others].reshape(-1, 2) * ((1 - true / 2) / (1 - true))[:, None]).ravel()
    d = compare_multiclass(y, new, old, n_bootstrap=300, seed=6).by_name()["log_loss"]
    assert (d.delta, d.ci_lower, d.ci_upper) == pytest.approx((-np.log(2),) * 3, abs=1e-9)


def test_log_loss_delta_is_close_to_a_studentized_bootstrap_written_here() -> None:
    """Bootstrap-t of the mean paired difference (Efron and Tibshirani 1993, ch. 12) on this
    test's own resamples; the module splits it into positive and negative parts (MOVER),
    which agrees within a few thousandths of a nat here."""
    y, new, old = _pair(9, n=400)
    d = compare_multiclass(y, new, old, n_bootstrap=2000, seed=7).by_name()["log_loss"]
    rows = np.arange(len(y))
    diff = np.log(old[rows, y]) - np.log(new[rows, y])
    mean, se = diff.mean(), diff.std(ddof=1) / np.sqrt(len(y))
    t = []
    for i in row_resamples(len(y), 2000, 99):
        x = diff[i]
        t.append((x.mean() - mean) / (x.std(ddof=1) / np.sqrt(len(y))))
    lo_t, hi_t = np.quantile(t, [0.025, 0.975])
    assert d.delta == pytest.approx(mean, abs=1e-12)
    assert (d.ci_lower, d.ci_upper) == pytest.approx((mean - hi_t * se, mean - lo_t * se), abs=0.004)


def test_evaluate_and_compare_equals_the_three_calls_each_model_scored_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from modelgate.evaluation import multiclass, multiclass_compare

    y, new, old = _pair(7, n=240)
    options = {"classes": ["a", "b", "c"], "n_bootstrap": 60, "seed": 3}
    apart = (multiclass.evaluate_multiclass(y, new, **options),
             multiclass.evaluate_multiclass(y, old, **options),
             multiclass_compare.compare_multiclass(y, new, old, **options))
    calls: list[int] = []
    point = multiclass_compare.model_point
    monkeypatch.setattr(multiclass_compare, "model_point", lambda *a: calls.append(1) or point(*a))
    together = multiclass_compare.evaluate_and_compare_multiclass(y, new, old, **options)
    assert len(calls) == 2  # once per model, not once per model per call
    assert together == apart


def test_precision_delta_without_spread_falls_back_to_mover_of_the_wilson_intervals() -> None:
    """Class 2's predicted rows hold none of its rows under either model (both precisions 0),
    so no row contributes to the delta method's variance: MOVER of the two Wilson intervals
    (every resample's precisions are 0 too, so their correlation is taken as 0)."""
    rng = np.random.default_rng(6)
    y = np.r_[rng.integers(0, 2, size=60), np.full(6, 2)]
    proba = np.full((66, 3), 0.1)
    proba[np.arange(66), np.r_[y[:60], np.zeros(6, int)]] = 0.8
    new, old = proba.copy(), proba.copy()
    new[:5] = [0.1, 0.1, 0.8]  # the candidate calls rows 0-4 class 2, the champion rows 3-7
    old[3:8] = [0.1, 0.1, 0.8]
    d = compare_multiclass(y, new, old, n_bootstrap=100, seed=0).by_name()["precision[2]"]
    assert d.delta == 0.0
    expected = _mover(0.0, _wilson(0, 5), 0.0, _wilson(0, 5), 0.0)
    assert (d.ci_lower, d.ci_upper) == pytest.approx(expected, abs=1e-12)
